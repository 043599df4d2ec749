#include <doctest/doctest.h>

#include "topologies/register.hpp"

using namespace snsim;
using namespace snsim::literals;

namespace {
Fabric build(const std::string& yaml) {
  Registry<Topology> registry("topology");
  topologies::register_topologies(registry);
  auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  auto fabric = registry.create(doc->root().child("topology"))->build();
  doc->reject_unknown_keys();
  return fabric;
}
}  // namespace

TEST_CASE("hgx: 8 GPUs, 4 NVSwitch planes, 18 links per GPU") {
  const Fabric f = build("topology: {type: hgx, gpu: h200, gpus: 8}");
  CHECK(f.gpus().size() == 8);
  CHECK(f.device_count() == 8 + 4 + 1);
  const auto gpu0 = f.gpus()[0];
  // 450 GB/s of NVLink plus 63 GB/s of PCIe leave each GPU.
  CHECK(f.egress_bandwidth(gpu0).count() == doctest::Approx(450e9 + 63e9));
  const auto route = f.route(gpu0, f.gpus()[5]);
  REQUIRE(route);
  REQUIRE(route->hops.size() == 2);
  CHECK(route->hops[0].channels.size() == 4);  // striped over the 4 planes
  CHECK(route->hops[1].channels.size() == 4);
  // Half the GPUs send 4 x 450 GB/s to the other half.
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(4 * 450e9));
}

TEST_CASE("hgx: GPU to host goes over PCIe, not through another GPU") {
  const Fabric f = build("topology: {type: hgx, gpus: 2}");
  const auto route = f.route(f.gpus()[1], *f.host());
  REQUIRE(route);
  REQUIRE(route->hops.size() == 1);
  CHECK(f.channel(route->hops[0].channels[0]).kind == ChannelKind::pcie);
}

TEST_CASE("pcie: peers talk through the switch") {
  const Fabric f = build("topology: {type: pcie, gpus: 4}");
  const auto route = f.route(f.gpus()[0], f.gpus()[3]);
  REQUIRE(route);
  CHECK(route->hops.size() == 2);
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(2 * 63e9));
}

TEST_CASE("topologies: bad parameters are pinned errors") {
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpus: 9}"),
                       "t.yaml:1:29: topology.gpus: must be between 2 and 8, got 9", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, nvlink_bandwidth: 0GBps}"),
                       "t.yaml:1:41: topology.nvlink_bandwidth: must be > 0, got 0 B/s", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, nvlink_bandwidth: -5GBps}"),
                       "t.yaml:1:41: topology.nvlink_bandwidth: must be > 0, got -5 GB/s", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpu: a100}"),
                       "t.yaml:1:28: topology.gpu: unknown GPU 'a100'; known: b200, gb200, h100, h200", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: torus}"),
                       "t.yaml:1:18: topology.type: unknown topology 'torus'; known: hgx, nvl72, pcie", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpu_count: 4}"),
                       "t.yaml:1:23: topology.gpu_count: unknown key; known keys: gpu, gpus, nvlink_bandwidth, "
                       "nvlink_latency, pcie_bandwidth, pcie_latency, type",
                       InputError);
}

TEST_CASE("nvl72: 72 GPUs, 18 single-link planes, 900 GB/s per GPU, switches that reduce") {
  const Fabric f = build("topology: {type: nvl72}");
  CHECK(f.gpus().size() == 72);
  CHECK(f.device_count() == 72 + 18 + 1);
  // 18 x 50 GB/s of NVLink5 plus 225 GB/s of C2C leave each GPU.
  CHECK(f.egress_bandwidth(f.gpus()[0]).count() == doctest::Approx(900e9 + 225e9));
  const auto route = f.route(f.gpus()[0], f.gpus()[71]);
  REQUIRE(route);
  REQUIRE(route->hops.size() == 2);
  CHECK(route->hops[0].channels.size() == 18);  // striped over the 18 planes
  CHECK(f.device(*f.find("nvswitch17")).in_switch_reduction == doctest::Approx(0.58));
  CHECK_THROWS_WITH_AS(build("topology: {type: nvl72, gpus: 73}"),
                       "t.yaml:1:31: topology.gpus: must be between 2 and 72, got 73", InputError);
}
