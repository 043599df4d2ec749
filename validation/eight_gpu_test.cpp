// A synthetic 8-GPU capture, as `tools/probe/capture.sh OUT x8` will write it (tools/probe/README.md, "8-GPU
// capture"), through the whole pipeline: the trace is written and read back, its platform is an 8-GPU HGX, and
// `validate` simulates the twins of records whose ranks go beyond [0, 1]. The measured values are made up; what is
// checked is that every modelled record is simulated on its GPUs, and that the concurrent copies through the
// switch behave as a non-blocking switch must.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "validation/trace.hpp"
#include "validation/validate.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

constexpr int GPUS = 8;

TraceRecord record(Family family, std::string test, std::string variant, std::vector<int> ranks, std::uint64_t bytes,
                   double median, Json extra = Json::object()) {
  TraceRecord r;
  r.family = family;
  r.test = std::move(test);
  r.variant = std::move(variant);
  r.ranks = std::move(ranks);
  r.bytes = Bytes{bytes};
  r.reps = 2;
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median};
  r.extra = std::move(extra);
  r.id = fmt::format("{}/{}/{}/{}/{}", to_string(family), r.test, r.variant, fmt::join(r.ranks, "-"), bytes);
  return r;
}

std::vector<int> every_gpu() {
  std::vector<int> all(GPUS);
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// The probe's capture of 8 H200s: pairs beyond GPU 1, the concurrency patterns of the copy family, NVSHMEM and UVM
// with far GPUs, and the multi-rank records snsim has no twin for yet.
Trace eight_gpu_trace() {
  Trace t;
  t.source = "h200x8-synthetic.jsonl";
  t.header.probe = "0.1.0";
  t.header.host = "hgx";
  for (int i = 0; i < GPUS; ++i)
    t.header.gpus.push_back({i, "NVIDIA H200", fmt::format("00000000:{:02x}:00.0", 0x18 + i), Json::object()});
  t.header.env = {{"NCCL_NVLS_ENABLE", "0"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
  t.complete = true;
  const std::uint64_t mib = 1 << 20;
  const Json depth4 = {{"depth", 4}};
  auto& rs = t.records;
  rs.push_back(record(Family::copy, "ce_peer", "single", {0, 7}, mib, 12e-6));
  rs.push_back(record(Family::copy, "ce_peer", "single", {5, 2}, mib, 12e-6));
  rs.push_back(record(Family::copy, "ce_peer_bidir", "pipelined", {3, 6}, 64 * mib, 170e-6, depth4));
  rs.push_back(record(Family::copy, "sm_pull", "pipelined", {7, 4}, 64 * mib, 180e-6, depth4));
  rs.push_back(record(Family::copy, "ce_concurrent", "pairs1", {0, 1}, 64 * mib, 170e-6, depth4));
  rs.push_back(record(Family::copy, "ce_concurrent", "pairs4", {0, 1, 2, 3, 4, 5, 6, 7}, 64 * mib, 170e-6, depth4));
  rs.push_back(record(Family::copy, "ce_concurrent", "pairs8", {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 0},
                      64 * mib, 170e-6, depth4));
  rs.push_back(record(Family::copy, "ce_concurrent", "a2a", every_gpu(), 64 * mib, 1.2e-3, depth4));
  rs.push_back(record(Family::copy, "sm_concurrent", "a2a", every_gpu(), 64 * mib, 1.3e-3, depth4));
  rs.push_back(record(Family::latency, "peer_load", "chase", {0, 7}, 4 * mib, 850e-9, {{"loads_per_sample", 1000}}));
  rs.push_back(record(Family::nvshmem, "put_signal_pingpong", "round_trip", {0, 7}, 8, 3.9e-6,
                      {{"scope", "thread"}, {"iters_per_sample", 200}}));
  rs.push_back(record(Family::nvshmem, "barrier", "block", every_gpu(), 0, 3e-6, {{"iters_per_sample", 1000}}));
  rs.push_back(record(Family::uvm, "first_touch", "gpu_to_gpu", {7, 0}, 64 * mib, 7e-3));
  rs.push_back(record(Family::uvm, "read", "peer_mapped", {0, 7}, 64 * mib, 0.18e-3));
  // No twin yet: all-PE puts, the round-robin migration, NCCL beyond 2 ranks with NVLS off.
  rs.push_back(record(Family::nvshmem, "put_rate_all", "block", every_gpu(), mib, 2e12,
                      {{"blocks", 56}, {"threads", 256}, {"iters_per_sample", 256}}));
  rs.back().unit = MeasureUnit::bytes_per_second;
  rs.push_back(record(Family::uvm, "round_robin", "prefetch", every_gpu(), 64 * mib, 0.7e-3));
  rs.push_back(record(Family::collective, "all_reduce", "out_of_place", every_gpu(), mib, 30e-6));
  return t;
}

}  // namespace

TEST_CASE("8-GPU trace: read back, simulated on an 8-GPU HGX, concurrent copies share only what they must") {
  const Trace written = eight_gpu_trace();
  const Trace trace = parse_trace(write_trace(written), written.source);
  REQUIRE(trace.records == written.records);
  CHECK(platform_of(trace).topology == fmt::format("{{type: hgx, gpu: h200, gpus: {}}}", GPUS));

  const ValidationResult result = validate({trace}, Bounds{}, TwinOptions{});
  std::map<std::string, double> predicted;  // record id -> simulated median
  for (const Comparison& c : result.comparisons) {
    CHECK_MESSAGE(c.predicted > 0, c.id);
    predicted[c.id] = c.predicted;
  }
  for (const std::string& skipped : result.skipped) MESSAGE(skipped);
  const std::set<std::string> no_twin{"nvshmem/put_rate_all/block/0-1-2-3-4-5-6-7/1048576",
                                      "uvm/round_robin/prefetch/0-1-2-3-4-5-6-7/67108864",
                                      "collective/all_reduce/out_of_place/0-1-2-3-4-5-6-7/1048576"};
  for (const TraceRecord& r : trace.records)
    if (!no_twin.contains(r.id)) CHECK_MESSAGE(predicted.contains(r.id), r.id, " was not simulated");

  // Every pair of an HGX goes GPU -> NVSwitch -> GPU: GPU 0 -> 7 costs what 5 -> 2 does.
  const double far = predicted.at("copy/ce_peer/single/0-7/1048576");
  CHECK(far == doctest::Approx(predicted.at("copy/ce_peer/single/5-2/1048576")).epsilon(0.05));
  // A non-blocking switch: 4 disjoint pairs, or every GPU sending to the next, copy as fast as one pair alone ...
  const std::uint64_t size = 64 << 20;
  const double one = predicted.at(fmt::format("copy/ce_concurrent/pairs1/0-1/{}", size));
  CHECK(predicted.at(fmt::format("copy/ce_concurrent/pairs4/0-1-2-3-4-5-6-7/{}", size)) ==
        doctest::Approx(one).epsilon(0.1));
  CHECK(predicted.at(fmt::format("copy/ce_concurrent/pairs8/0-1-1-2-2-3-3-4-4-5-5-6-6-7-7-0/{}", size)) ==
        doctest::Approx(one).epsilon(0.1));
  // ... while all-to-all puts 7 copies through each GPU's port: each takes several times longer (7x at best).
  const double all = predicted.at(fmt::format("copy/ce_concurrent/a2a/0-1-2-3-4-5-6-7/{}", size));
  CHECK(all > 4 * one);
  CHECK(all < 10 * one);
}
