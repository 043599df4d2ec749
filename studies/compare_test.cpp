// BSP vs PGAS in process: the bytes over the GPUs' own links come from the links' kinds, not their names (the
// comparison itself runs through the binary in tools/).
#include "studies/compare.hpp"

#include <string>

#include <doctest/doctest.h>

#include "scenario/scenario.hpp"
#include "sim/config.hpp"

using namespace snsim;
using namespace snsim::studies;
using namespace snsim::literals;

TEST_CASE("compare: bytes out of the GPUs count the links leaving a GPU, whatever the GPUs and switches are called") {
  // Two GPUs called g0 and g1 behind two switches called gpu_sw0 and gpu_sw1; each GPU copies 1 MiB to the other.
  // Matching link names ("gpu..." with "->") took the switches' links for the GPUs' and missed the GPUs' own: it
  // counted 4 MiB out of the GPUs, and none of what left them.
  const auto scenario = workloads::Scenario::load(ConfigDocument::load_string(R"(name: custom
topology:
  type: file
  devices:
    - {name: g0, kind: gpu}
    - {name: g1, kind: gpu}
    - {name: gpu_sw0, kind: nvswitch}
    - {name: gpu_sw1, kind: nvswitch}
  links:
    - {between: [g0, gpu_sw0], kind: nvlink, lanes: 2, lane_bandwidth: 25GBps}
    - {between: [gpu_sw0, gpu_sw1], kind: nvlink, lanes: 4, lane_bandwidth: 25GBps}
    - {between: [gpu_sw1, g1], kind: nvlink, lanes: 2, lane_bandwidth: 25GBps}
workloads:
  - {type: program, ops: [{copy: {to: next, bytes: 1MiB}}]}
)",
                                                                              "custom.yaml"));
  const Report report = scenario.run();
  REQUIRE(report.outcome == "completed");
  const GpuLinkBytes bytes = gpu_link_bytes(report.links);
  const double mib = static_cast<double>((1_MiB).count());
  CHECK(bytes.out_of_gpus_payload == 2 * mib);  // one copy out of each GPU
  double wire_out = 0, by_name = 0, hbm = 0;
  for (const auto& l : report.links) {
    CAPTURE(l.name);
    const bool leaves_a_gpu = l.name.starts_with("g0->") || l.name.starts_with("g1->");
    CHECK((l.kind == LinkKind::gpu_egress) == leaves_a_gpu);
    CHECK((l.kind == LinkKind::hbm) == l.name.starts_with("hbm:"));
    if (leaves_a_gpu) wire_out += static_cast<double>(l.wire_bytes.count());
    if (l.kind == LinkKind::hbm) hbm += static_cast<double>(l.wire_bytes.count());
    if (l.name.starts_with("gpu") && l.name.find("->") != std::string::npos)
      by_name += static_cast<double>(l.payload_bytes.count());
  }
  CHECK(bytes.out_of_gpus_wire == wire_out);
  CHECK(bytes.out_of_gpus_wire >= bytes.out_of_gpus_payload);
  CHECK(bytes.hbm == hbm);
  CHECK(bytes.hbm > 0);
  CHECK(by_name == 4 * mib);  // what the names said
}
