// The twins of the probe's `nvshmem` and `latency` families (validation/twins/nvshmem_twin.cpp, latency.cpp) and the
// PGAS fit (validation/fits/pgas_fit.cpp). No test here runs a simulation: twins are built, not simulated, and the fit
// round trip generates its records with the model's own formulas.
#include <cmath>
#include <map>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/calibrate.hpp"
#include "validation/calibration_test_support.hpp"
#include "validation/twins.hpp"
#include "validation/twins/nvshmem_twin.hpp"

namespace snsim::validation {
namespace {

using models::Scope;
using workloads::Op;

constexpr int TRACE_GPUS = 2;

Trace pgas_h200_trace() {
  Trace t;
  t.source = "synthetic.jsonl";
  for (int i = 0; i < TRACE_GPUS; ++i) t.header.gpus.push_back({i, "NVIDIA H200", "", Json::object()});
  t.complete = true;
  return t;
}

TraceRecord record(Family family, std::string test, std::string variant, std::vector<int> ranks, std::uint64_t bytes,
                   double median, Json extra, MeasureUnit unit = MeasureUnit::seconds) {
  TraceRecord r;
  r.family = family;
  r.test = std::move(test);
  r.variant = std::move(variant);
  r.ranks = std::move(ranks);
  r.bytes = Bytes{bytes};
  r.unit = unit;
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median, median};
  r.extra = std::move(extra);
  r.id = fmt::format("{}/{}/{}/{}/{}{}", to_string(family), r.test, r.variant, r.ranks.size(), bytes,
                     r.extra.contains("scope")    ? "/" + r.extra["scope"].get<std::string>()
                     : r.extra.contains("blocks") ? fmt::format("/b{}", r.extra["blocks"].get<int>())
                                                  : std::string());
  return r;
}

Twin pgas_twin_of(const TraceRecord& r) {
  const auto made = make_twin(pgas_h200_trace(), r, TRACE_GPUS, snsim::models::testing::load());
  if (const auto* reason = std::get_if<std::string>(&made)) FAIL(*reason);
  return std::get<Twin>(made);
}

/// The ops of one rank's sample with repeats unrolled.
std::vector<Op> unrolled(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const auto& o : ops) {
    if (const auto* repeat = std::get_if<workloads::RepeatOp>(&o.what)) {
      for (int i = 0; i < repeat->count; ++i)
        for (const auto& inner : unrolled(repeat->body)) out.push_back(inner);
    } else {
      out.push_back(o);
    }
  }
  return out;
}

template <class T>
std::size_t count_of(const std::vector<Op>& ops) {
  return static_cast<std::size_t>(
      std::ranges::count_if(ops, [](const Op& o) { return std::holds_alternative<T>(o.what); }));
}

}  // namespace

TEST_CASE("nvshmem twins: ping-pong, put + quiet, get and barrier repeat a few of the probe's iterations") {
  const auto pingpong = pgas_twin_of(record(Family::nvshmem, "put_signal_pingpong", "round_trip", {0, 1}, 4096, 4e-6,
                                            {{"scope", "block"}, {"iters_per_sample", 200}}));
  const auto pe0 = unrolled(pingpong.sample[0]);
  const auto pe1 = unrolled(pingpong.sample[1]);
  CHECK(pingpong.repetitions == 4);  // 4 of the 200 round trips: every one takes the same time in the model
  REQUIRE(pe0.size() == 8);
  REQUIRE(pe1.size() == 8);
  const auto& put = std::get<workloads::PutOp>(pe0[0].what);
  CHECK(put.to == 1);
  CHECK(put.bytes == Bytes{4096});
  CHECK(put.scope == Scope::block);
  CHECK(put.signal.has_value());
  CHECK(std::get<workloads::SignalWaitOp>(pe0[1].what).consume);        // each wait resets the signal it saw
  CHECK(std::holds_alternative<workloads::SignalWaitOp>(pe1[0].what));  // PE 1 answers
  CHECK(std::get<workloads::PutOp>(pe1[1].what).to == 0);
  CHECK_FALSE(pingpong.rate_bytes);

  const auto put_quiet =
      pgas_twin_of(record(Family::nvshmem, "put_latency", "thread", {0, 1}, 64, 1.5e-6, {{"iters_per_sample", 200}}));
  const auto ops = unrolled(put_quiet.sample[0]);
  CHECK(count_of<workloads::PutOp>(ops) == 4);
  CHECK(count_of<workloads::QuietOp>(ops) == 4);
  CHECK(put_quiet.sample[1].empty());
  CHECK(put_quiet.repetitions == 4);

  const auto get =
      pgas_twin_of(record(Family::nvshmem, "get_latency", "thread", {0, 1}, 64, 2e-6, {{"iters_per_sample", 2}}));
  CHECK(count_of<workloads::GetOp>(unrolled(get.sample[0])) == 2);  // fewer iterations than 4: all of them
  CHECK(get.repetitions == 2);

  const auto barrier =
      pgas_twin_of(record(Family::nvshmem, "barrier", "block", {0, 1}, 0, 3e-6, {{"iters_per_sample", 1000}}));
  for (int rank : {0, 1}) {
    const auto b = unrolled(barrier.sample[static_cast<std::size_t>(rank)]);
    REQUIRE(b.size() == 4);
    CHECK(std::get<workloads::ShmemBarrierOp>(b[0].what).scope == Scope::block);
    CHECK(*std::get<workloads::ShmemBarrierOp>(b[0].what).group == std::vector<int>{0, 1});
  }
}

TEST_CASE("nvshmem twins: a rate record is its kernel: every issuer's slice, iters times, then a quiet") {
  auto rate = [](const char* test, const char* scope, std::uint64_t bytes, int blocks, int iters) {
    return pgas_twin_of(record(Family::nvshmem, test, scope, {0, 1}, bytes, 1e11,
                               {{"blocks", blocks}, {"threads", 256}, {"iters_per_sample", iters}},
                               MeasureUnit::bytes_per_second));
  };
  struct Case {
    const char* test;
    const char* scope;
    std::uint64_t bytes;
    int blocks, iters, issuers;
    std::uint64_t slice;
  };
  for (const auto& c :
       {Case{"put_rate", "thread", 8, 32, 1000, 1, 8},  // one 8-byte slice: one thread puts
        Case{"put_rate", "thread", 65536, 32, 1000, 8192, 8}, Case{"put_rate", "warp", 1 << 20, 32, 1000, 256, 4096},
        Case{"put_rate", "block", 256ull << 20, 32, 4, 32, 8ull << 20},
        Case{"put_rate_blocks", "block", 64ull << 20, 4, 16, 4, 16ull << 20}}) {
    CAPTURE(c.bytes);
    CAPTURE(c.scope);
    const auto twin = rate(c.test, c.scope, c.bytes, c.blocks, c.iters);
    REQUIRE(twin.sample[0].size() == 2);
    const auto& put = std::get<workloads::PutOp>(twin.sample[0][0].what);
    CHECK(put.issuers == c.issuers);
    CHECK(put.bytes == Bytes{c.slice});
    CHECK(put.count == c.iters);
    CHECK(put.scope == *models::scope(c.scope));
    CHECK(std::holds_alternative<workloads::QuietOp>(twin.sample[0][1].what));
    CHECK(twin.sample[1].empty());
    REQUIRE(twin.rate_bytes);
    CHECK(*twin.rate_bytes == Bytes{c.bytes});  // value = bytes x iters / span, as the probe computes it
    CHECK(twin.repetitions == c.iters);
  }
  // 1000 bytes over 8192 threads: 125 full 8-byte slices; 24 bytes over 8 bytes each: 3.
  const auto layout = twins::put_rate_layout(record(Family::nvshmem, "put_rate", "thread", {0, 1}, 1004, 1e9,
                                                    {{"blocks", 32}, {"threads", 256}, {"iters_per_sample", 10}},
                                                    MeasureUnit::bytes_per_second));
  REQUIRE(layout);
  CHECK(layout->issuers == 125);
  CHECK(layout->remainder == Bytes{4});
  const auto uneven = rate("put_rate", "thread", 1004, 32, 10);
  REQUIRE(uneven.sample[0].size() == 2);
  const auto& streams = std::get<workloads::StreamsOp>(uneven.sample[0][0].what).streams;
  REQUIRE(streams.size() == 2);
  CHECK(std::get<workloads::PutOp>(streams[1][0].what).bytes == Bytes{4});
}

TEST_CASE("nvshmem twins: both PEs run the rate kernel towards each other, then PE1 signals PE0, which waits") {
  const auto twin =
      pgas_twin_of(record(Family::nvshmem, "put_rate_bidir", "block", {0, 1}, 256ull << 20, 3e11,
                          {{"blocks", 32}, {"threads", 256}, {"iters_per_sample", 4}}, MeasureUnit::bytes_per_second));
  for (int pe : {0, 1}) {
    CAPTURE(pe);
    const auto& ops = twin.sample[static_cast<std::size_t>(pe)];
    REQUIRE(ops.size() == 3);
    const auto& put = std::get<workloads::PutOp>(ops[0].what);
    CHECK(put.to == 1 - pe);
    CHECK(put.issuers == 32);
    CHECK(put.bytes == Bytes{8ull << 20});
    CHECK(put.count == 4);
    CHECK(std::holds_alternative<workloads::QuietOp>(ops[1].what));
  }
  // PE1's "done" signal after its quiet; PE0's span ends when it has seen it.
  CHECK(std::get<workloads::PutOp>(twin.sample[1][2].what).signal.has_value());
  CHECK(std::get<workloads::PutOp>(twin.sample[1][2].what).to == 0);
  CHECK(std::holds_alternative<workloads::SignalWaitOp>(twin.sample[0][2].what));
  REQUIRE(twin.rate_bytes);
  CHECK(*twin.rate_bytes == Bytes{256ull << 20});
  CHECK(twin.repetitions == 4);
  // A PE putting to itself is a reference, not a route: no twin.
  const auto self =
      make_twin(pgas_h200_trace(),
                record(Family::nvshmem, "put_rate_self", "block", {0}, 1 << 20, 1e12,
                       {{"blocks", 32}, {"threads", 256}, {"iters_per_sample", 1000}}, MeasureUnit::bytes_per_second),
                TRACE_GPUS, snsim::models::testing::load());
  CHECK(std::holds_alternative<std::string>(self));
}

TEST_CASE("latency twins: a chase is loads_per_sample dependent loads in a few ops, divided by the count") {
  const auto local = pgas_twin_of(record(Family::latency, "local_load", "chase", {1}, 4 << 20, 1.4e-7,
                                         {{"loads_per_sample", 200000}, {"stride", 128}}));
  CHECK(local.sample[0].empty());
  std::uint64_t loads = 0;
  for (const auto& o : local.sample[1]) {
    const auto& load = std::get<workloads::LoadOp>(o.what);
    CHECK(load.from == 1);
    CHECK(load.pattern == models::LoadPattern::chase);
    CHECK(load.bytes == Bytes{4 << 20});
    loads += load.count;
  }
  CHECK(local.sample[1].size() == 16);
  CHECK(loads == 200000);
  CHECK(local.repetitions == 200000);

  const auto peer = pgas_twin_of(record(Family::latency, "peer_load", "chase", {1, 0}, 1ull << 30, 9.5e-7,
                                        {{"loads_per_sample", 50003}, {"stride", 128}}));
  loads = 0;
  for (const auto& o : peer.sample[1]) {
    CHECK(std::get<workloads::LoadOp>(o.what).from == 0);  // reader 1 chases GPU 0's memory
    loads += std::get<workloads::LoadOp>(o.what).count;
  }
  CHECK(loads == 50003);
  CHECK(peer.repetitions == 50003);

  const auto odd = make_twin(pgas_h200_trace(), record(Family::latency, "local_load", "stream", {0}, 4096, 1e-7, {}),
                             TRACE_GPUS, snsim::models::testing::load());
  CHECK(std::get<std::string>(odd) == "no twin for latency variant 'stream'");
}

TEST_CASE("pgas fit: recovers known parameters from records the model's own formulas generate") {
  // The truth: every fitted parameter moved off its default.
  const auto defaults = snsim::models::testing::load();
  models::PgasModel truth = *defaults.pgas;
  auto& thread = truth.scopes[static_cast<std::size_t>(Scope::thread)];
  auto& warp = truth.scopes[static_cast<std::size_t>(Scope::warp)];
  auto& block = truth.scopes[static_cast<std::size_t>(Scope::block)];
  thread.issue = Seconds{300e-9};
  warp.issue = Seconds{260e-9};
  block.issue = Seconds{250e-9};
  thread.put_bandwidth = BytesPerSecond{0.2e9};
  block.put_bandwidth = BytesPerSecond{12e9};
  thread.get_bandwidth = BytesPerSecond{0.04e9};
  // Not 0.4 or 0.8: a put moves ceil(S / efficiency) wire bytes, and 8 / 0.4 = 20 would round to 21 with an
  // efficiency fitted a millionth lower, 5 % more for 8 bytes.
  thread.efficiency = 0.37;
  block.efficiency = 0.78;
  thread.barrier_round = Seconds{2.0e-6};
  block.barrier_round = Seconds{2.5e-6};
  truth.quiet = Seconds{400e-9};
  truth.signal = Seconds{600e-9};
  truth.read_latency = Seconds{250e-9};
  truth.load_l2_latency = Seconds{150e-9};
  truth.load_hbm_latency = Seconds{350e-9};

  // The route calibrate() uses: the hgx preset's GPU 0 -> GPU 1.
  auto document = ConfigDocument::load_string("topology: {type: hgx, gpu: h200, gpus: 2}\n", "<test>");
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  const Fabric fabric = topologies.create(document->root().child("topology"))->build();
  const auto there = fabric.cost(fabric.gpus()[0], fabric.gpus()[1]);
  const auto back = fabric.cost(fabric.gpus()[1], fabric.gpus()[0]);
  const models::PgasRoute route{there.latency, back.latency, there.bottleneck};

  Trace trace = pgas_h200_trace();
  auto add = [&](TraceRecord r) { trace.records.push_back(std::move(r)); };
  for (std::uint64_t s = 8; s <= 65536; s *= 2) {
    const Bytes size{s};
    add(record(Family::nvshmem, "put_latency", "thread", {0, 1}, s,
               truth.put_quiet_time(Scope::thread, size, 1, 1, route).count(), {{"iters_per_sample", 200}}));
    add(record(Family::nvshmem, "get_latency", "thread", {0, 1}, s, truth.get_time(Scope::thread, size, route).count(),
               {{"iters_per_sample", 200}}));
    add(record(Family::nvshmem, "put_signal_pingpong", "round_trip", {0, 1}, s,
               2 * truth.put_signal_time(Scope::thread, size, route).count(),
               {{"scope", "thread"}, {"iters_per_sample", 200}}));
  }
  auto rate = [&](const char* test, const char* scope, std::uint64_t bytes, int blocks) {
    const int iters = static_cast<int>(std::clamp<std::uint64_t>((1ull << 30) / bytes, 2, 1000));
    TraceRecord r =
        record(Family::nvshmem, test, scope, {0, 1}, bytes, 1,
               {{"blocks", blocks}, {"threads", 256}, {"iters_per_sample", iters}}, MeasureUnit::bytes_per_second);
    const auto l = *twins::put_rate_layout(r);
    const double time = truth.put_quiet_time(l.scope, l.slice, l.issuers, l.count, route).count();
    r.median = r.p01 = r.p99 = r.min = r.max = static_cast<double>(bytes) * iters / time;
    r.samples = {r.median};
    add(std::move(r));
  };
  for (const char* scope : {"thread", "warp", "block"})
    for (std::uint64_t s = 8; s <= (256ull << 20); s *= 2) rate("put_rate", scope, s, 32);
  for (int blocks = 1; blocks <= 128; blocks *= 2) rate("put_rate_blocks", "block", 64ull << 20, blocks);
  for (const char* scope : {"thread", "block"})
    add(record(Family::nvshmem, "barrier", scope, {0, 1}, 0,
               truth.barrier_time(*models::scope(scope), 2, route.latency).count(), {{"iters_per_sample", 1000}}));
  for (std::uint64_t span : {4ull << 20, 256ull << 20, 1ull << 30}) {
    const double local = truth.chase_time(1, Bytes{span}, Seconds{0}).count();
    add(record(Family::latency, "local_load", "chase", {0}, span, local, {{"loads_per_sample", 50000}}));
  }

  const auto calibration = calibrate({trace});
  const auto fitted = testing::fitted_values(calibration);
  const std::vector<std::pair<std::string, double>> expected{{"pgas.thread.issue", 300e-9},
                                                             {"pgas.warp.issue", 260e-9},
                                                             {"pgas.block.issue", 250e-9},
                                                             {"pgas.thread.put_bandwidth", 0.2e9},
                                                             {"pgas.block.put_bandwidth", 12e9},
                                                             {"pgas.thread.get_bandwidth", 0.04e9},
                                                             {"pgas.thread.efficiency", 0.37},
                                                             {"pgas.block.efficiency", 0.78},
                                                             {"pgas.thread.barrier_round", 2.0e-6},
                                                             {"pgas.block.barrier_round", 2.5e-6},
                                                             {"pgas.quiet", 400e-9},
                                                             {"pgas.signal", 600e-9},
                                                             {"pgas.read_latency", 250e-9},
                                                             {"pgas.load_l2_latency", 150e-9},
                                                             {"pgas.load_hbm_latency", 350e-9}};
  testing::check_fitted(fitted, expected);
  // What these records cannot tell apart keeps its default, and the notes say so.
  CHECK_FALSE(fitted.contains("pgas.write_latency"));
  CHECK_FALSE(fitted.contains("pgas.warp.put_bandwidth"));
  CHECK(std::ranges::any_of(calibration.notes, [](const std::string& n) { return n.starts_with("pgas.fence"); }));
  // The written file loads: every key is one the model reads.
  CHECK_NOTHROW(check_params(calibration.to_yaml("test"), "params.yaml"));
}

}  // namespace snsim::validation
