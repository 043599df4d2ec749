// Kernels and copies end to end (runtime/device_executor.hpp): each TEST_CASE that runs a simulation is its own
// process (one simulation per process).
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <algorithm>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

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

TEST_CASE("workloads: a kernel's dtype picks the GPU's peak for that number format") {
  const auto s = load(
      "topology: {type: hgx, gpu: h200, gpus: 2}\n"
      "models: {compute: {launch: 0us, flop_efficiency: 1, power_duty: 1}}\n"  // clocks held at boost
      "workloads: [{type: program, ranks: 0, ops: [{compute: {flops: 1979TFLOP, dtype: fp8}},\n"
      "                                            {compute: {flops: 67TFLOP, dtype: fp64}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 2);
  CHECK(r.ops[0].label == "compute 1.979 PFLOP 0 B fp8");
  CHECK(relative_error((r.ops[0].end - r.ops[0].start).count(), 1.0) <= 1e-9);  // 1,979 TFLOP/s dense fp8
  CHECK(relative_error((r.ops[1].end - r.ops[1].start).count(), 1.0) <= 1e-9);  // 67 TFLOP/s fp64 tensor
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
