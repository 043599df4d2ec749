// Failure what-ifs end to end (scenario/failures.hpp): each TEST_CASE that runs a simulation is its own process (one
// simulation per process). Expected times are written out by hand: the part before the failure at the healthy rate,
// the rest at the rate the failure leaves; the example scenarios' (workloads/examples/failure*.yaml) against the
// collective model's own prediction for the lanes left.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <cmath>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {
constexpr double HOP = 0.354e-6;  // two NVLink hops of 177 ns (topologies/gpus.hpp)

double duration(const OpRecord& o) {
  return (o.end - o.start).count();
}

/// The end of a rank's last op.
double end_of(const Report& report, int rank) {
  double end = 0;
  for (const auto& o : report.ops)
    if (o.rank == rank) end = std::max(end, o.end.count());
  return end;
}

Scenario load_example(const std::string& name) {
  return Scenario::load(ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/" + name));
}

std::string error(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// What the collective model predicts for a lone all-reduce of `bytes` over `ranks` GPUs of `s`, from GPU 0's view
/// of the fabric (as the runner plans it), with every link at `line_rate`.
double predicted_all_reduce(const Scenario& s, Bytes bytes, int ranks, BytesPerSecond planned_at,
                            BytesPerSecond line_rate, std::optional<models::Algorithm> algorithm = {},
                            std::optional<models::Protocol> protocol = {}) {
  const Fabric& f = s.fabric();
  const auto& model = *s.models().collective;
  models::CollectivePlatform platform{planned_at, s.models().copy->efficiency(models::CopyEngine::sm), Seconds{HOP},
                                      models::switch_links(f, f.gpus()[0]), models::switch_reduction(f)};
  const models::CollectiveRequest request{
      models::CollectiveKind::all_reduce, bytes, ranks, algorithm, protocol, std::nullopt, models::Launch::stream};
  const auto plan = model.plan(request, platform);
  platform.line_rate = line_rate;
  return model.predict(plan, platform).count();
}
}  // namespace

// ---- a GPU slowed ------------------------------------------------------------------------------------------------

TEST_CASE("failures: a compute loop on a GPU slowed mid-kernel finishes that kernel at its rate, the rest slower") {
  // Ten kernels of 100 us on every GPU. GPU 2 slows at 350 us (compute x 1.2): its kernel of 300-400 us keeps its
  // rate, the 6 left take 120 us. GPU 1's HBM factor does not touch fixed-time (SM) kernels.
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads: [{type: program, ops: [{repeat: 10, ops: [{compute: {time: 100us}}]}]}]\n"
      "failures: [{at: 350us, slowed: {gpu: 2, compute: 1.2}}, {at: 350us, slowed: {gpu: 1, hbm: 1.5}}]\n");
  const Report r = s.run();
  CHECK(relative_error(end_of(r, 2), 400e-6 + 6 * 100e-6 * 1.2) <= 1e-9);
  CHECK(relative_error(duration(record(r, 2, "compute", 3)), 100e-6) <= 1e-9);
  CHECK(relative_error(duration(record(r, 2, "compute", 4)), 120e-6) <= 1e-9);
  for (int rank : {0, 1, 3}) {
    CAPTURE(rank);
    CHECK(relative_error(end_of(r, rank), 1e-3) <= 1e-9);
  }
  const auto& applied = table(r, "failures applied");
  REQUIRE(applied.rows.size() == 2);
  CHECK(applied.rows[0][1] == "gpu2 kernels: compute time x 1.2, HBM time x 1");
  CHECK(applied.rows[1][1] == "gpu1 kernels: compute time x 1, HBM time x 1.5");
}

TEST_CASE("failures: memory-bound kernels on a GPU whose HBM slows take the HBM factor from the next kernel on") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {compute: {launch: 0us}}\n"
      "workloads: [{type: program, ops: [{repeat: 10, ops: [{compute: {bytes: 1GiB}}]}]}]\n"
      "failures: [{at: 0s, slowed: {gpu: 0, hbm: 1.5}}, {at: 1ms, slowed: {gpu: 1, hbm: 2}}]\n");
  const Report r = s.run();
  const auto& spec = *s.fabric().device(s.fabric().gpus()[0]).gpu;
  const double k = s.models().compute->memory_time(spec, Bytes{1ull << 30}, 1.0).count();  // one kernel alone
  CHECK(relative_error(end_of(r, 0), 10 * k * 1.5) <= 1e-9);  // at 0 s: before the first kernel
  const int before = static_cast<int>(std::ceil(1e-3 / k));   // kernels started before 1 ms keep their rate
  CHECK(relative_error(end_of(r, 1), before * k + (10 - before) * k * 2) <= 1e-9);
}

// ---- rate caps follow the lanes left -----------------------------------------------------------------------------

TEST_CASE("failures: a long copy-engine copy across a link failure ends at the time computed by hand") {
  // The copy engine reaches half the line: 225 GB/s of payload until GPU 1 loses 9 of its 18 lanes at 1 ms, then
  // half of the 225 GB/s line left. A cap kept at its start value would run on at the new line's full 225 GB/s.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 2us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n"
      "failures: [{at: 1ms, link: {gpu: 1, lanes: 9}}]\n");
  const Report r = s.run();
  const double start = 2e-6 + HOP;  // setup and wire latency, then the bytes
  CHECK(relative_error(record(r, 0, "copy").end.count(), 1e-3 + (GIB - 225e9 * (1e-3 - start)) / 112.5e9) <= 1e-9);
}

TEST_CASE("failures: a put stream across a plane failure moves at the line left once the plane is gone") {
  // 64 blocks put 16 x 1 MiB each at 20 GB/s apiece: 1.28 TB/s of stores, more than the line, so the stream is
  // link-bound: 450 GB/s of wire (payload / 0.5) until plane 0 (5 of 18 lanes) goes at 1 ms, then 13/18 of it. The
  // issuers' own rates are per-SM limits, which lanes do not change.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {pgas: {block: {efficiency: 0.5, put_bandwidth: 20GBps}, write_latency: 0us, quiet: 0us}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{put: {to: 1, bytes: 1MiB, scope: block, issuers: 64, count: "
      "16}}, {quiet: {}}]}]\n"
      "failures: [{at: 1ms, plane: 0}]\n");
  const Report r = s.run();
  const double wire = 2 * GIB, start = HOP;  // the bytes flow once the wire latency has passed
  const double arrival = 1e-3 + (wire - 450e9 * (1e-3 - start)) / (450e9 * 13 / 18);
  CHECK(relative_error((record(r, 0, "quiet").end - record(r, 0, "put").start).count(), arrival + HOP) <= 1e-9);
}

TEST_CASE("failures: a ring all-reduce during which a plane fails takes the healthy part plus the degraded part") {
  // 4 GPUs, 6 ring steps of 64 MiB, each a 1.354 us latency then the bytes at 225 GB/s (SM copies at half the
  // line). Plane 2 (4 of 18 lanes) fails at 1 ms, inside step 3's bytes: they finish at 14/18 of the rate, and the
  // 2 steps left run at it too.
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 1us}, stream_launch: 0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n"
      "failures: [{at: 1ms, plane: 2}]\n");
  const Report r = s.run();
  const double alpha = 1e-6 + HOP, chunk = 64 * 1048576.0, B = 225e9, degraded = B * 14 / 18, t = 1e-3;
  const double step = alpha + chunk / B;
  const int k = static_cast<int>(t / step);  // the step under way at 1 ms
  REQUIRE(k == 3);
  REQUIRE(t - k * step > alpha);  // in its bytes, not its latency
  const double left = chunk - B * (t - k * step - alpha);
  const double expected = t + left / degraded + (6 - k - 1) * (alpha + chunk / degraded);
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    CHECK(relative_error(record(r, rank, "collective").end.count(), expected) <= 1e-9);
  }
}

// ---- switch trays ------------------------------------------------------------------------------------------------

TEST_CASE("failures: an NVL72 switch tray down leaves every GPU 16 of its 18 NVLinks, and C2C is not a fabric lane") {
  const auto s = load(
      "topology: {type: nvl72, gpus: 8}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 2us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n"
      "failures: [{at: 0s, tray: 4}, {at: 0s, link: {gpu: 3, lanes: 1}}]\n");
  const Report r = s.run();
  CHECK(relative_error(duration(record(r, 0, "copy")), 2e-6 + HOP + GIB / (16 * 50e9 * 0.5)) <= 1e-9);
  const auto& applied = table(r, "failures applied");
  REQUIRE(applied.rows.size() == 2);
  CHECK(applied.rows[0][1] == "switch tray 4 down (nvswitch8, nvswitch9)");
  CHECK(applied.rows[1][1] == "gpu3 loses 1 of 18 NVLink lanes");
  CHECK(applied.rows[1][2] == "nvswitch[0-17]->gpu3 gpu3->nvswitch[0-17]");  // not gpu3->host
}

TEST_CASE("failures: a tray on a topology without trays, or one out of range, is an input error") {
  CHECK(error("topology: {type: hgx, gpus: 8}\n"
              "workloads: [{type: program, ops: [{compute: {time: 1us}}]}]\n"
              "failures: [{at: 1ms, tray: 1}]\n") ==
        "t.yaml:3:28: failures[0].tray: tray 1 on a topology without switch trays (nvl72 and nvl36x2 have them); one "
        "switch chip down is plane: N");
  CHECK(error("topology: {type: nvl72, gpus: 8}\n"
              "workloads: [{type: program, ops: [{compute: {time: 1us}}]}]\n"
              "failures: [{at: 1ms, tray: 9}]\n") ==
        "t.yaml:3:28: failures[0].tray: switch tray 9 does not exist (the topology has 9 trays: 0-8)");
  CHECK(error("topology: {type: nvl36x2}\n"
              "workloads: [{type: program, ops: [{compute: {time: 1us}}]}]\n"
              "failures: [{at: 1ms, tray: 18}]\n") ==
        "t.yaml:3:28: failures[0].tray: switch tray 18 does not exist (the topology has 18 trays: 0-17)");
  CHECK(error("topology: {type: hgx, gpus: 8}\n"
              "workloads: [{type: program, ops: [{compute: {time: 1us}}]}]\n"
              "failures: [{at: 1ms, slowed: {gpu: 1, compute: 1.2, clock: 2}}]\n") ==
        "t.yaml:3:53: failures[0].slowed.clock: unknown key; known keys: compute, gpu, hbm");
}

// ---- the example scenarios ---------------------------------------------------------------------------------------

TEST_CASE("failures: in failures.yaml the slowest GPU paces every ring all-reduce") {
  const auto s = load_example("failures.yaml");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const Bytes S{256ull << 20};
  const auto ring = models::Algorithm::ring;
  const auto simple = models::Protocol::simple;
  // Within 1e-7: with the default (non-round) SM efficiency each of the 14 steps ends a few ns off the prediction,
  // SimGrid's timing precision (surf/precision, 1 ns). Plane 2 down from the start: 14 of 18 lanes everywhere, until
  // GPU 3 loses one at 2 ms.
  const BytesPerSecond planned{14 * 25e9};
  CHECK(relative_error(duration(record(r, 0, "collective", 0)),
                       predicted_all_reduce(s, S, 8, planned, planned, ring, simple)) <= 1e-7);
  // From 4 ms GPU 5 has half of its 14: 7 lanes' worth pace every step of every rank.
  int after = 0;
  for (int i = 0; i < 20; ++i)
    if (record(r, 0, "collective", i).start.count() >= 4e-3) {
      CAPTURE(i);
      ++after;
      CHECK(relative_error(duration(record(r, 0, "collective", i)),
                           predicted_all_reduce(s, S, 8, planned, BytesPerSecond{7 * 25e9}, ring, simple)) <= 1e-7);
    }
  CHECK(after >= 15);
  REQUIRE(record(r, 0, "collective", 0).end.count() < 2e-3);
}

TEST_CASE("failures: in failure_tray_nvl72.yaml the all-reduces after the tray went run at 16/18 of the line") {
  const auto s = load_example("failure_tray_nvl72.yaml");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const Bytes S{1ull << 30};
  const BytesPerSecond full{18 * 50e9}, left{16 * 50e9};
  int before = 0, after = 0;
  for (int i = 0; i < 8; ++i) {
    CAPTURE(i);
    const auto& o = record(r, 0, "collective", i);
    if (o.end.count() <= 5e-3) {
      ++before;
      CHECK(relative_error(duration(o), predicted_all_reduce(s, S, 72, full, full)) <= 1e-9);
    } else if (o.start.count() >= 5e-3) {
      ++after;
      CHECK(relative_error(duration(o), predicted_all_reduce(s, S, 72, left, left)) <= 1e-9);
    }
  }
  CHECK(before >= 1);
  CHECK(after >= 5);
  // The bandwidth-bound step takes 18/16 as long, less the fixed costs.
  const double ratio = duration(record(r, 0, "collective", 7)) / duration(record(r, 0, "collective", 0));
  CHECK(ratio > 1.1);
  CHECK(ratio < 18.0 / 16);
}

TEST_CASE("failures: in failure_slowed_gpu.yaml every step after GPU 3 slows waits 0.5 ms for it") {
  const Report r = load_example("failure_slowed_gpu.yaml").run();
  REQUIRE(r.outcome == "completed");
  for (int step = 0; step < 10; ++step) {
    CAPTURE(step);
    // The others reach the all-reduce as early as GPU 3 did, then 0.5 ms earlier once its kernels are slow. Step 2's
    // kernel was running at 7 ms and kept its rate.
    const bool slowed = record(r, 3, "compute", step).start.count() >= 7e-3;
    const double waited = duration(record(r, 0, "collective", step)) - duration(record(r, 3, "collective", step));
    CHECK(std::abs(waited - (slowed ? 0.5e-3 : 0.0)) <= 1e-9);
    CHECK((step >= 3) == slowed);
  }
}

TEST_CASE("failures: in failure_link_copies.yaml the copy in flight and the ones after follow the lane lost") {
  const auto s = load_example("failure_link_copies.yaml");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const auto& copy = *s.models().copy;
  const double fixed = copy.fixed_cost(models::CopyEngine::ce).count() + HOP;
  const double rate = 450e9 * copy.efficiency(models::CopyEngine::ce), left = rate * 17 / 18, bytes = 2 * GIB;
  CHECK(relative_error(duration(record(r, 0, "copy", 0)), fixed + bytes / rate) <= 1e-9);
  const auto& second = record(r, 0, "copy", 1);
  REQUIRE(second.start.count() + fixed < 6e-3);
  REQUIRE(second.end.count() > 6e-3);
  const double moved = rate * (6e-3 - second.start.count() - fixed);
  CHECK(relative_error(second.end.count(), 6e-3 + (bytes - moved) / left) <= 1e-9);
  for (int i : {2, 3}) CHECK(relative_error(duration(record(r, 0, "copy", i)), fixed + bytes / left) <= 1e-9);
}

TEST_CASE("failures: in failure_gpu_lost.yaml the job ends at 3 ms, failed, with the failures table") {
  const Report r = load_example("failure_gpu_lost.yaml").run();
  CHECK(r.outcome == "failed: GPU 4 lost at 3 ms");
  CHECK(relative_error(r.simulated_time.count(), 3e-3) <= 1e-12);
  const auto& applied = table(r, "failures applied");
  REQUIRE(applied.rows.size() == 1);
  CHECK(applied.rows[0][0].get<double>() == doctest::Approx(3000));
  CHECK(applied.rows[0][1] == "gpu4 lost");
}
