// Workloads end to end: each TEST_CASE that runs a simulation is its own process (one simulation per process).
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

namespace {}  // namespace

TEST_CASE("workloads: a ring all-reduce without contention takes 2(n-1)(alpha + S/(nB))") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    // Only one n per process can run a simulation, so this checks the plan for every n and simulates n = 4 below.
    const auto s = load(fmt::format(
        "topology: {{type: hgx, gpus: {}}}\n"
        "models: {{collective: {{Simple: {{base_latency: 0us, step_latency: 1us}}}}}}\n"
        "workloads: [{{type: program, ops: [{{collective: {{op: all_reduce, bytes: 256MiB, protocol: Simple}}}}]}}]\n",
        n));
    CHECK(s.fabric().gpus().size() == static_cast<std::size_t>(n));
  }
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 1us}, stream_launch: 0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n");
  const Report r = s.run();
  const double n = 4, S = 256.0 * (1 << 20), B = 450e9 * 0.5, alpha = 1e-6 + 0.354e-6;
  CHECK(relative_error(span(r, 0), 2 * (n - 1) * (alpha + S / (n * B))) <= 1e-9);
}

TEST_CASE("workloads: with NVSwitch plane 2 down a ring all-reduce runs at 14/18 of the NVLink rate on every GPU") {
  // The ring all-reduce above with hgx's plane 2 (4 of each GPU's 18 lanes) down from the start: every step's
  // bytes see 14 lanes, the fixed costs are unchanged.
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 1us}, stream_launch: 0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n"
      "failures: [{at: 0s, plane: 2}]\n");
  const Report r = s.run();
  const double n = 4, S = 256.0 * (1 << 20), B = 450e9 * 14 / 18 * 0.5, alpha = 1e-6 + 0.354e-6;
  CHECK(relative_error(span(r, 0), 2 * (n - 1) * (alpha + S / (n * B))) <= 1e-9);
  for (int rank = 0; rank < 4; ++rank) {  // every GPU's ops end together: all of them were slowed alike
    double end = 0;
    for (const auto& o : r.ops)
      if (o.rank == rank) end = std::max(end, o.end.count());
    CHECK(relative_error(end, span(r, 0)) <= 1e-9);
  }
}

TEST_CASE("workloads: a lost GPU ends the run with a failed outcome and the failures table") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads: [{type: program, ops: [{repeat: 100, ops: [{collective: {op: all_reduce, bytes: 256MiB}}]}]}]\n"
      "failures: [{at: 0s, degraded: {gpu: 1, factor: 0.5}}, {at: 3ms, gpu_lost: 2}]\n");
  const Report r = s.run();
  CHECK(r.outcome == "failed: GPU 2 lost at 3 ms");
  CHECK(r.simulated_time.count() == doctest::Approx(3e-3));
  const auto t = std::ranges::find(r.tables, std::string("failures applied"), &Table::title);
  REQUIRE(t != r.tables.end());
  REQUIRE(t->rows.size() == 2);
  CHECK(t->rows[0][1] == "gpu1 NVLink bandwidth x 0.5");
  CHECK(t->rows[0][2] == "nvswitch[0-3]->gpu1 gpu1->nvswitch[0-3]");
  CHECK(t->rows[1][1] == "gpu2 lost");
}

TEST_CASE("workloads: a lone copy takes fixed cost + latency + size / (line rate x efficiency)") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 2us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  const double expected = 2e-6 + 0.354e-6 + 1073741824.0 / (450e9 * 0.5);
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), expected) <= 1e-9);
}

TEST_CASE("workloads: a copy engine into a GPU that lost 1 of 18 links reaches its share of the 17 left") {
  // The copy engine's cap is a share of the line rate it finds: after the loss, of 17 lanes.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 2us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n"
      "failures: [{at: 0s, link: {gpu: 1, lanes: 1}}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  const double expected = 2e-6 + 0.354e-6 + 1073741824.0 / (450e9 * 17 / 18 * 0.5);
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), expected) <= 1e-9);
}

TEST_CASE("workloads: all_to_all conserves bytes: every GPU receives (n-1)/n of every buffer") {
  const auto s = load(
      "topology: {type: hgx, gpus: 8}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: 64MiB}}]}]\n");
  const Report r = s.run();
  const std::uint64_t per_peer = (64ull << 20) / 8;
  std::uint64_t sent = 0, received = 0;
  for (const auto& l : r.links) {
    if (l.name.starts_with("gpu")) sent += l.payload_bytes.count();
    if (l.name.starts_with("nvswitch")) {
      CHECK(l.payload_bytes.count() == 7 * per_peer);
      received += l.payload_bytes.count();
    }
  }
  CHECK(sent == 8 * 7 * per_peer);
  CHECK(received == sent);
}

TEST_CASE("workloads: two copies into one GPU share its NVLinks max-min on wire bytes") {
  const auto s = load(
      "topology: {type: hgx, gpus: 3}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 0us}}}\n"
      "workloads: [{type: program, ranks: [0, 1], ops: [{copy: {to: 2, bytes: 1GiB}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 2);
  // Each copy alone could move 225 GB/s of payload; together they fill the 450 GB/s down-link with payload plus
  // a 16 B header per 256 B packet, half each.
  const double expected = 0.354e-6 + 2 * 1073741824.0 * (272.0 / 256) / 450e9;
  for (const auto& o : r.ops) CHECK(relative_error((o.end - o.start).count(), expected) <= 1e-9);
}

TEST_CASE("workloads: a broadcast pipelines chunks down the chain") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 0us}, broadcast_chunk: 16MiB, stream_launch: "
      "0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: broadcast, bytes: 256MiB, protocol: Simple}}]}]\n");
  const Report r = s.run();
  // 16 chunks through 3 hops: each hop forwards a chunk after receiving it, paying the wire latency once to fill the
  // pipeline, so it takes hops x latency + (hops + chunks - 1) x chunk / B.
  const double chunk = 16.0 * (1 << 20) / (450e9 * 0.5);
  CHECK(relative_error(span(r, 0), 3 * 0.354e-6 + 18 * chunk) <= 1e-9);
}

TEST_CASE("workloads: phases run one after another and repeats expand") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - {type: program, ops: [{repeat: 3, ops: [{compute: {time: 1ms}}]}]}\n"
      "  - {type: program, ops: [{compute: {time: 2ms}}]}\n");
  const Report r = s.run();
  CHECK(r.ops.size() == 2 * 3 + 2);
  CHECK(relative_error(r.simulated_time.count(), 5e-3) <= 1e-9);
}

TEST_CASE("workloads: program mistakes are pinned errors") {
  auto error = [](const std::string& ops, const std::string& extra = "") {
    try {
      load("topology: {type: hgx, gpus: 4}\nworkloads: [{type: program" + extra + ", ops: " + ops + "}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("[]") == "t.yaml:2:34: workloads[0].ops: the program is empty");
  CHECK(error("[{jump: {}}]") ==
        "t.yaml:2:35: workloads[0].ops[0]: expected an op: compute, copy, collective, barrier, put, get, "
        "signal_wait, quiet, fence, shmem_barrier, load, managed, touch, prefetch, advise, read, repeat, streams or "
        "ranks");
  CHECK(error("[{copy: {to: 9, bytes: 1MiB}}]") ==
        "t.yaml:2:47: workloads[0].ops[0].copy.to: GPU 9 does not exist (the topology has 4 GPUs: 0-3)");
  CHECK(error("[{copy: {to: sideways, bytes: 1MiB}}]") ==
        "t.yaml:2:47: workloads[0].ops[0].copy.to: expected a GPU index, next, prev, xor:K or host, found "
        "'sideways'");
  CHECK(error("[{copy: {to: next, bytes: 1EiB}}]") ==
        "t.yaml:2:60: workloads[0].ops[0].copy.bytes: 1 EiB does not fit in one GPU's memory (140.401 GiB)");
  CHECK(error("[{collective: {op: broadcast, bytes: 1MiB, root: 7}}]") ==
        "t.yaml:2:83: workloads[0].ops[0].collective.root: rank 7 is not one of the ranks 0, 1, 2, 3");
  CHECK(error("[{compute: {}}]") ==
        "t.yaml:2:45: workloads[0].ops[0].compute: expected time, or flops and bytes (for the roofline)");
  CHECK(error("[{barrier: {}}]", ", ranks: 5-6") ==
        "t.yaml:2:36: workloads[0].ranks: GPU 5 does not exist (the topology has 4 GPUs: 0-3)");
  CHECK(error("[{repeat: 0, ops: [{barrier: {}}]}]") ==
        "t.yaml:2:44: workloads[0].ops[0].repeat: must be between 1 and 1000000000, got 0");
}

TEST_CASE("workloads: sweeps reject impossible ranges") {
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_reduce, sizes: "
                            "{from: 1GiB, to: 1MiB}}]\n"),
                       "t.yaml:2:79: workloads[0].sizes.to: must be >= from (1 GiB), got 1 MiB", InputError);
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_reduce, sizes: "
                            "{from: 1B, to: 1GiB, factor: 1}}]\n"),
                       "t.yaml:2:91: workloads[0].sizes.factor: must be between 2 and 1024, got 1", InputError);
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_scream}]\n"),
                       "t.yaml:2:43: workloads[0].ops: unknown collective 'all_scream'; known: all_gather, "
                       "all_reduce, all_to_all, broadcast, reduce_scatter",
                       InputError);
}

TEST_CASE("workloads: the README's scenario parses and runs") {
  std::ifstream in(std::string(SNSIM_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto begin = readme.find("```yaml\n");
  REQUIRE(begin != std::string::npos);
  const auto end = readme.find("```", begin + 8);
  const auto s = Scenario::load(ConfigDocument::load_string(readme.substr(begin + 8, end - begin - 8), "README.md"));
  const Report r = s.run();
  CHECK(r.outcome == "completed");
  CHECK(r.ops.size() == 8 * 10 * 3);
}

TEST_CASE("workloads: streams run concurrently: a CE and an SM copy share one link and end later than alone") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {copy: {ce: {efficiency: 0.9, setup: 0us}, sm: {efficiency: 0.8, setup: 0us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{streams: [[{copy: {to: 1, bytes: 1GiB, engine: ce}}],\n"
      "                                                      [{copy: {to: 1, bytes: 1GiB, engine: sm}}]]}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 2);
  // Alone each would move 405 / 360 GB/s; together they share the 450 GB/s up-link max-min on wire bytes
  // (256 B + 16 B packets for CE, 128 B + 16 B for SM): equal wire shares of 225 GB/s until the first ends.
  const double gib = 1073741824.0, ce_wire = gib * 272 / 256, sm_wire = gib * 144 / 128;
  const double first = 0.354e-6 + ce_wire / 225e9;                                // the CE copy has fewer wire bytes
  const double second = first + (sm_wire - ce_wire) / (450e9 * 0.8 * 144 / 128);  // then the SM copy alone
  std::vector<double> ends;
  for (const auto& o : r.ops)
    if (o.kind == "copy") ends.push_back(o.end.count());
  std::ranges::sort(ends);
  CHECK(relative_error(ends[0], first) <= 1e-9);
  CHECK(relative_error(ends[1], second) <= 1e-9);
}

TEST_CASE("workloads: streams needs at least two op lists") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{streams: [[{compute: {time: 1us}}]]}]}]\n"),
                    "t.yaml:2:45: workloads[0].ops[0].streams: expected a list of 2 or more op lists, found 1");
}

TEST_CASE("workloads: a pull copy moves data from the peer and pays the pull setup") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {copy: {sm: {efficiency: 0.5, setup: 1us, pull_setup: 3us}}}\n"
      "workloads: [{type: program, ranks: 1, ops: [{copy: {from: 0, bytes: 1GiB, engine: sm}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  CHECK(r.ops[0].rank == 1);
  CHECK(r.ops[0].label == "copy 1 GiB from gpu0 sm");
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), 3e-6 + 0.354e-6 + 1073741824.0 / (450e9 * 0.5)) <=
        1e-9);
  for (const auto& l : r.links)  // the bytes went 0 -> 1
    if (l.name == "gpu0->nvswitch[0-3]") CHECK(l.payload_bytes == Bytes{1ull << 30});
}

TEST_CASE("workloads: a lone NVMe read takes setup + latency + size / (drive rate x efficiency)") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2, nvme_drives: 1, nvme_latency: 50us}\n"
      "models: {copy: {ce: {efficiency: 0.5, pull_setup: 3us}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {from: nvme, bytes: 1GiB, engine: ce}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  CHECK(r.ops[0].label == "copy 1 GiB from nvme ce");
  // The drive's link (50 us) and the GPU's PCIe link (0.5 us); the drive's 14 GB/s is the bottleneck.
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), 3e-6 + 50e-6 + 0.5e-6 + 1073741824.0 / (14e9 * 0.5)) <=
        1e-9);
}

TEST_CASE("workloads: a copy to nvme stripes the bytes evenly over every drive, concurrently") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2, nvme_drives: 4, nvme_bandwidth: 10GBps, nvme_latency: 50us}\n"
      "models: {copy: {ce: {efficiency: 0.5, setup: 2us}}}\n"
      "workloads: [{type: program, ranks: 1, ops: [{copy: {to: nvme, bytes: 1GiB, engine: ce}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  // 4 x 10 GB/s = 40 GB/s, under the GPU's 63 GB/s x16: each drive writes its quarter at its own rate.
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), 2e-6 + 50e-6 + 0.5e-6 + 268435456.0 / (10e9 * 0.5)) <=
        1e-9);
  int drives = 0;
  for (const auto& l : r.links)
    if (l.name.starts_with("pcie_root->nvme")) {
      ++drives;
      CHECK(l.payload_bytes == Bytes{1ull << 28});
    }
  CHECK(drives == 4);
}

TEST_CASE("workloads: nvme on a topology without drives says to set topology.nvme_drives") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{copy: {from: nvme, bytes: 1MiB}}]}]\n"),
                    "t.yaml:2:49: workloads[0].ops[0].copy.from: the topology has no NVMe drives; set "
                    "topology.nvme_drives");
}

TEST_CASE("workloads: a copy names exactly one of to and from") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{copy: {to: 1, from: 0, bytes: 1MiB}}]}]\n"),
                    "t.yaml:2:42: workloads[0].ops[0].copy: expected one of `to` (a push) or `from` (a pull)");
}

TEST_CASE("workloads: a kernel's dtype picks the GPU's peak for that number format") {
  const auto s = load(
      "topology: {type: hgx, gpu: h200, gpus: 2}\n"
      "models: {compute: {launch: 0us, flop_efficiency: 1}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{compute: {flops: 1979TFLOP, dtype: fp8}},\n"
      "                                            {compute: {flops: 67TFLOP, dtype: fp64}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 2);
  CHECK(r.ops[0].label == "compute 1.979 PFLOP 0 B fp8");
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), 1.0) <= 1e-9);  // 1,979 TFLOP/s dense fp8
  CHECK(relative_error((r.ops[1].end - r.ops[1].start).count(), 1.0) <= 1e-9);  // 67 TFLOP/s fp64 tensor
}

TEST_CASE("workloads: an unknown dtype or one the GPU has no rate for is an input error") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{compute: {flops: 1TFLOP, dtype: int4}}]}]\n"),
                    "t.yaml:2:68: workloads[0].ops[0].compute.dtype: unknown number format 'int4'; known: bf16, fp16, "
                    "fp32, fp64, fp8, tf32");
  CHECK_THROWS_WITH(
      load("topology: {type: nvl72, gpus: 4}\n"
           "workloads: [{type: program, ops: [{compute: {flops: 1TFLOP, dtype: fp32}}]}]\n"),
      "t.yaml:2:68: workloads[0].ops[0].compute.dtype: the gb200 preset has no published dense fp32 rate");
}

TEST_CASE("workloads: a pull's bytes leave the source, sharing its up-link with the source's own push") {
  // GPU 1 pulls 1 GiB from GPU 0 while GPU 0 pushes 1 GiB to GPU 2: both cross gpu0's up-link, half each.
  const auto s = load(
      "topology: {type: hgx, gpus: 3}\n"
      "models: {copy: {sm: {efficiency: 1, setup: 0us, pull_setup: 0us}}}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 1, ops: [{copy: {from: 0, bytes: 1GiB, engine: sm}}]}\n"
      "      - {ranks: 0, ops: [{copy: {to: 2, bytes: 1GiB, engine: sm}}]}\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 2);
  const double wire = 1073741824.0 * 144 / 128;  // 16 B header per 128 B SM payload
  for (const auto& o : r.ops) CHECK(relative_error((o.end - o.start).count(), 0.354e-6 + 2 * wire / 450e9) <= 1e-9);
}

TEST_CASE("workloads: sustained GEMMs slow to the power-capped clock, queued kernels pay only the queue gap") {
  // 4096^3 bf16 GEMMs back to back on an H200 (989 TFLOP/s peak): at boost each takes 1.5us + F / (989T x 0.9);
  // busy all but the queue gaps, the clock settles at (0.75 / duty)^(1/2.5) of boost. Unqueued, a kernel pays the 5 us
  // launch instead.
  const auto s = load(
      "topology: {type: hgx, gpu: h200, gpus: 2}\n"
      "models: {compute: {flop_efficiency: 0.9, launch: 5us, queue_gap: 1.5us, power_duty: 0.75, power_exponent: "
      "2.5, power_window: 10ms}}\n"
      "workloads:\n"
      "  - {type: program, ranks: 0, ops: [{repeat: 400, ops: [{compute: {flops: 137.438953472GFLOP, pipelined: "
      "true}}]}]}\n"
      "  - {type: program, ranks: 0, ops: [{compute: {flops: 137.438953472GFLOP}}]}\n");
  const Report r = s.run();
  std::vector<double> gemms;
  for (const auto& o : r.ops)
    if (o.phase == 0 && o.kind == "compute") gemms.push_back((o.end - o.start).count());
  REQUIRE(gemms.size() == 400);
  const double boost = 137.438953472e9 / (989e12 * 0.9);
  CHECK(relative_error(gemms.front(), 1.5e-6 + boost) <= 1e-6);  // a cold GPU starts at boost
  // Steady state: the duty d is the GEMMs' share of time between queue gaps, at the clock d itself sets.
  double d = 1;
  for (int i = 0; i < 100; ++i) {
    const double kernel = boost * std::pow(d / 0.75, 1 / 2.5);
    d = kernel / (kernel + 1.5e-6);
  }
  CHECK(relative_error(gemms.back(), 1.5e-6 + boost * std::pow(d / 0.75, 1 / 2.5)) <= 1e-3);
  double lone = 0;
  for (const auto& o : r.ops)
    if (o.phase == 1) lone = (o.end - o.start).count();
  CHECK(lone > 5e-6 + boost);  // the launch, and a clock still above boost duty after 400 GEMMs
}
