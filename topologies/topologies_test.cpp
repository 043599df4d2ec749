#include <algorithm>
#include <limits>
#include <map>
#include <vector>

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

TEST_CASE("hgx: NVMe drives sit on the host's PCIe root, behind each GPU's x16, and leave GPU routes alone") {
  const Fabric f = build("topology: {type: hgx, gpus: 8, nvme_drives: 8}");
  CHECK(!f.check());
  REQUIRE(f.nvme_drives().size() == 8);
  CHECK(f.device(f.nvme_drives()[3]).kind == DeviceKind::nvme);
  // A drive read crosses its x4 link (60 us) and the GPU's x16 (0.5 us); the drive's 14 GB/s is the bottleneck.
  const auto read = f.cost(f.nvme_drives()[0], f.gpus()[2]);
  CHECK(read.latency.count() == doctest::Approx(60e-6 + 0.5e-6));
  CHECK(read.bottleneck.count() == doctest::Approx(14e9));
  // The host path costs what it does without drives, and GPU pairs still take NVLink only.
  const auto host = f.cost(f.gpus()[5], *f.host());
  CHECK(host.latency.count() == doctest::Approx(0.5e-6));
  CHECK(host.bottleneck.count() == doctest::Approx(63e9));
  const auto peer = f.route(f.gpus()[0], f.gpus()[5]);
  REQUIRE(peer);
  REQUIRE(peer->hops.size() == 2);
  CHECK(f.channel(peer->hops[0].channels[0]).kind == ChannelKind::nvlink);
  CHECK(peer->hops[0].channels.size() == 4);
}

TEST_CASE("pcie: peers talk through the switch") {
  const Fabric f = build("topology: {type: pcie, gpus: 4}");
  const auto route = f.route(f.gpus()[0], f.gpus()[3]);
  REQUIRE(route);
  CHECK(route->hops.size() == 2);
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(2 * 63e9));
}

TEST_CASE("pcie: one GPU in its host, the single-GPU machine") {
  const Fabric f = build("topology: {type: pcie, gpus: 1}");
  REQUIRE(f.gpus().size() == 1);
  REQUIRE(f.host());
  const auto to_host = f.route(f.gpus()[0], *f.host());
  REQUIRE(to_host);
  CHECK(to_host->hops.size() == 2);  // GPU -> PCIe switch -> host
  CHECK_THROWS_WITH_AS(build("topology: {type: pcie, gpus: 0}"),
                       "t.yaml:1:30: topology.gpus: must be between 1 and 8, got 0", InputError);
}

TEST_CASE("topologies: bad parameters are pinned errors") {
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpus: 9}"),
                       "t.yaml:1:29: topology.gpus: must be between 2 and 8, got 9", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, nvlink_bandwidth: 0GBps}"),
                       "t.yaml:1:41: topology.nvlink_bandwidth: must be > 0, got 0 B/s", InputError);
  CHECK_THROWS_WITH_AS(
      build("topology: {type: hgx, nvlink_bandwidth: -5GBps}"),
      "t.yaml:1:41: topology.nvlink_bandwidth: cannot parse '-5GBps' as a bandwidth: cannot be negative", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpu: a100}"),
                       "t.yaml:1:28: topology.gpu: unknown GPU 'a100'; known: b200, gb200, h100, h200", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: torus}"),
                       "t.yaml:1:18: topology.type: unknown topology 'torus'; known: file, hgx, nvidia_smi, nvl36x2, "
                       "nvl576, nvl72, pcie, superpod",
                       InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: hgx, gpu_count: 4}"),
                       "t.yaml:1:23: topology.gpu_count: unknown key; known keys: gpu, gpus, nvlink_bandwidth, "
                       "nvlink_latency, nvme_bandwidth, nvme_drives, nvme_latency, pcie_bandwidth, pcie_latency, type",
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

namespace {
/// Builds and checks a fabric the way scenarios load it: the Fabric::check problem, if any, as the error.
Fabric build_checked(const std::string& yaml) {
  Fabric f = build(yaml);
  if (auto problem = f.check()) throw InputError(*problem);
  return f;
}
}  // namespace

TEST_CASE("file: an inline graph of two GPUs on one switch") {
  const Fabric f = build_checked(R"(topology:
  type: file
  devices:
    - {name: a, kind: gpu, gpu: h100}
    - {name: b, kind: gpu}
    - {name: sw, kind: nvswitch, ports: 64, reduction: 0.85}
    - {name: cpu, kind: host}
  links:
    - {between: [a, sw], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps}
    - {between: [b, sw], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps, latency: 200ns}
    - {between: [a, cpu], kind: pcie, lane_bandwidth: 63GBps}
)");
  REQUIRE(f.gpus().size() == 2);
  CHECK(f.device(f.gpus()[0]).gpu->model == "h100");
  CHECK(f.device(f.gpus()[1]).gpu->model == "h200");
  const auto cost = f.cost(f.gpus()[0], f.gpus()[1]);
  CHECK(cost.bottleneck.count() == doctest::Approx(450e9));
  CHECK(cost.latency.count() == doctest::Approx(177e-9 + 200e-9));  // the slower channel of each hop
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(450e9));
  CHECK(f.lanes_attached(*f.find("sw")) == 36);
}

TEST_CASE("file: errors name the file, line and column") {
  CHECK_THROWS_WITH_AS(
      build("topology: {type: file, devices: [{name: a, kind: gpu}, {name: s, kind: router}], "
            "links: []}"),
      "t.yaml:1:72: topology.devices[1].kind: unknown kind 'router'; known: gpu, host, ib_switch, nic, "
      "nvswitch, pcie_switch",
      InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: file, devices: [{name: a, kind: gpu}], links: [{between: [a, zz], "
                             "kind: nvlink, lane_bandwidth: 1GBps}]}"),
                       "t.yaml:1:79: topology.links[0].between[1]: no device named 'zz'", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: file, path: no-such-file.yaml}"),
                       "t.yaml:1:30: topology.path: no file 'no-such-file.yaml'", InputError);
}

TEST_CASE("fabric check: unreachable GPUs and switches over their radix") {
  CHECK_THROWS_WITH_AS(build_checked(R"(topology:
  type: file
  devices: [{name: a, kind: gpu}, {name: b, kind: gpu}, {name: s1, kind: nvswitch}, {name: s2, kind: nvswitch}]
  links:
    - {between: [a, s1], kind: nvlink, lane_bandwidth: 25GBps}
    - {between: [b, s2], kind: nvlink, lane_bandwidth: 25GBps}
)"),
                       "a cannot reach b: no switch or direct link joins them", InputError);
  CHECK_THROWS_WITH_AS(build_checked(R"(topology:
  type: file
  devices: [{name: a, kind: gpu}, {name: b, kind: gpu}, {name: s, kind: nvswitch, ports: 32}]
  links:
    - {between: [a, s], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps}
    - {between: [b, s], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps}
)"),
                       "s has 36 lanes attached, more than its 32 ports", InputError);
  // A direct link is enough: no switch needed.
  CHECK_NOTHROW(
      build_checked("topology: {type: file, devices: [{name: a, kind: gpu}, {name: b, kind: gpu}], links: "
                    "[{between: [a, b], kind: nvlink, lanes: 4, lane_bandwidth: 25GBps}]}"));
}

TEST_CASE("nvidia_smi: the H200 x2 capture's matrix is two GPUs on an NVSwitch with 18 links each") {
  const Fabric f = build_checked("topology: {type: nvidia_smi, trace: validation/traces/h200/h200x2-copy.jsonl}");
  REQUIRE(f.gpus().size() == 2);
  const auto route = f.route(f.gpus()[0], f.gpus()[1]);
  REQUIRE(route);
  CHECK(route->hops.size() == 2);  // through the switch: NV18 is all 18 links of a GPU
  CHECK(f.cost(f.gpus()[0], f.gpus()[1]).bottleneck.count() == doctest::Approx(18 * 25e9));
  CHECK(f.device(*f.find("nvswitch0")).in_switch_reduction == doctest::Approx(0.85));
}

TEST_CASE("nvidia_smi: direct NVLink bonds and PCIe-only matrices") {
  // An NV4 bond is not all of a GPU's 18 links: a direct link, one hop.
  const std::string pairs =
      "topology: {type: nvidia_smi, text: \"\\tGPU0\\tGPU1\\nGPU0\\t X \\tNV4\\nGPU1\\tNV4\\t X \\n\"}";
  const Fabric direct = build_checked(pairs);
  const auto r = direct.route(direct.gpus()[0], direct.gpus()[1]);
  REQUIRE(r);
  CHECK(r->hops.size() == 1);
  CHECK(direct.cost(direct.gpus()[0], direct.gpus()[1]).bottleneck.count() == doctest::Approx(4 * 25e9));
  // PCIe only: GPU0 and GPU1 behind one switch (PIX), GPU2 across the CPU (SYS).
  const Fabric pcie = build_checked(
      "topology: {type: nvidia_smi, text: \"GPU0 GPU1 GPU2\\nGPU0 X PIX SYS\\nGPU1 PIX X SYS\\nGPU2 SYS SYS X\\n\"}");
  CHECK(pcie.route(pcie.gpus()[0], pcie.gpus()[1])->hops.size() == 2);
  CHECK(pcie.route(pcie.gpus()[0], pcie.gpus()[2])->hops.size() == 4);
  CHECK_THROWS_WITH_AS(build("topology: {type: nvidia_smi, text: \"GPU0 GPU1\\nGPU0 X NV2\\nGPU1 NV3 X\\n\"}"),
                       "t.yaml:1:36: topology.text: line 2: GPU0 -> GPU1 shows NV2 but GPU1 -> GPU0 NV3", InputError);
  CHECK_THROWS_WITH_AS(build("topology: {type: nvidia_smi, text: \"GPU0 GPU1\\nGPU0 X QQ\\nGPU1 QQ X\\n\"}"),
                       "t.yaml:1:36: topology.text: line 2: unknown cell 'QQ' in column GPU1; expected X, NV#, PIX, "
                       "PXB, PHB, NODE or SYS",
                       InputError);
}

TEST_CASE("nvl36x2: two racks of 36, one switch hop inside a rack, two across, full bisection") {
  const Fabric f = build_checked("topology: {type: nvl36x2}");
  CHECK(f.gpus().size() == 72);
  CHECK(f.device_count() == 72 + 36 + 1);
  CHECK(f.route(f.gpus()[0], f.gpus()[35])->hops.size() == 2);
  const auto across = f.route(f.gpus()[0], f.gpus()[36]);
  REQUIRE(across);
  CHECK(across->hops.size() == 3);
  CHECK(across->hops[1].channels.size() == 18);  // the 18 chip-to-twin trunks
  // Rack 0 to rack 1: 18 trunks of 36 x 50 GB/s = 36 GPUs x 900 GB/s.
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(18 * 36 * 50e9));
  const auto hops = f.gpu_hop_counts();
  CHECK(hops.min == 2);
  CHECK(hops.max == 3);
  CHECK(f.lanes_attached(*f.find("nvswitch0")) == 72);  // 36 GPUs + a 36-lane trunk: every port used
}

TEST_CASE("nvl576: 576 GPUs on a two-tier switch tree, non-blocking by default") {
  const Fabric f = build_checked("topology: {type: nvl576}");
  CHECK(f.gpus().size() == 576);
  CHECK(f.device_count() == 576 + 288 + 162);
  CHECK(f.route(f.gpus()[0], f.gpus()[35])->hops.size() == 2);  // same L1 chips
  const auto far = f.route(f.gpus()[0], f.gpus()[575]);
  REQUIRE(far);
  CHECK(far->hops.size() == 4);
  CHECK(far->hops[1].channels.size() == 18 * 9);  // up to every L2 chip of every plane
  CHECK(f.cost(*far).bottleneck.count() == doctest::Approx(900e9));
  // Racks 0-3 to racks 4-7: 144 L1 chips x 36 up-lanes x 50 GB/s = 288 GPUs x 900 GB/s.
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(288 * 900e9));
  const Fabric thin = build_checked("topology: {type: nvl576, uplink_lanes: 2}");
  CHECK(thin.bisection_bandwidth().count() == doctest::Approx(288 * 900e9 / 2));
}

TEST_CASE("superpod: 4 HGX nodes on NDR, rail-optimised: 2, 4 or 6 hops") {
  const Fabric f = build_checked("topology: {type: superpod, nodes: 4}");
  CHECK(f.gpus().size() == 32);
  // 32 GPUs + 32 NICs + 4 x 4 NVSwitch planes + 8 leaves (one per rail) + 32 spine positions.
  CHECK(f.device_count() == 32 + 32 + 16 + 8 + 32);
  CHECK(f.route(f.gpus()[0], f.gpus()[1])->hops.size() == 2);  // NVLink inside the node
  CHECK(f.route(f.gpus()[0], f.gpus()[8])->hops.size() == 4);  // rail 0 of node 1: one leaf
  CHECK(f.route(f.gpus()[0], f.gpus()[9])->hops.size() == 6);  // rail 1: up to the spines
  CHECK(f.cost(f.gpus()[0], f.gpus()[8]).bottleneck.count() == doctest::Approx(50e9));
  // Nodes 0-1 to nodes 2-3: 16 NICs x 50 GB/s (NVLink stays inside a node).
  CHECK(f.bisection_bandwidth().count() == doctest::Approx(16 * 50e9));
  const auto hops = f.gpu_hop_counts();
  CHECK(hops.min == 2);
  CHECK(hops.max == 6);
  const Fabric xdr = build_checked("topology: {type: superpod, nodes: 2, node: nvl72, ib: xdr}");
  CHECK(xdr.gpus().size() == 144);
  CHECK(xdr.bisection_bandwidth().count() == doctest::Approx(72 * 100e9));
  CHECK_THROWS_WITH_AS(build("topology: {type: superpod, ib: hdr}"),
                       "t.yaml:1:32: topology.ib: unknown network 'hdr'; known: ndr, xdr, roce", InputError);
}

TEST_CASE("superpod: up to 2,048 HGX nodes, 16,384 GPUs on 512 leaves") {
  const Fabric f = build("topology: {type: superpod, gpu: h100, nodes: 2048}");
  CHECK(f.gpus().size() == 16384);
  // 16,384 GPUs and NICs, 4 NVSwitch planes per node, 8 rails x 64 leaves of 32 nodes, 32 spine positions.
  CHECK(f.device_count() == 2 * 16384 + 4 * 2048 + 8 * 64 + 32);
  CHECK(f.route(f.gpus()[0], f.gpus()[16383 - 7])->hops.size() == 6);  // rail 0, the last leaf: through a spine
  CHECK_THROWS_WITH_AS(build("topology: {type: superpod, nodes: 2049}"),
                       "t.yaml:1:35: topology.nodes: must be between 1 and 2048, got 2049", InputError);
}

TEST_CASE("non-binding channels: the spine tier of a non-blocking leaf-spine network, and nothing else") {
  auto count = [](const Fabric& f) { return std::ranges::count(f.non_binding_channels(), true); };
  auto between_switches = [](const Fabric& f) {
    std::ptrdiff_t n = 0;
    for (auto c : f.channels())
      n += f.device(f.source(c)).kind == DeviceKind::ib_switch && f.device(f.target(c)).kind == DeviceKind::ib_switch;
    return n;
  };
  // 64 nodes: 8 rails x 2 leaves of 32 nodes, each leaf 32 ports down and one up to each of 32 spines.
  const Fabric open = build_checked("topology: {type: superpod, gpu: h100, nodes: 64}");
  CHECK(between_switches(open) == 2 * 16 * 32);
  CHECK(count(open) == between_switches(open));
  // Fewer ports up than down (43 and 21): a full leaf's up-channels can fill before its NICs' ports do.
  const Fabric blocking = build_checked("topology: {type: superpod, gpu: h100, nodes: 86, oversubscription: 2}");
  CHECK(between_switches(blocking) > 0);
  CHECK(count(blocking) == 0);
  // A partly filled leaf has room to spare: still non-binding.
  CHECK(count(build_checked("topology: {type: superpod, nodes: 3, rail_optimized: false}")) > 0);
  // No InfiniBand tiers: nothing.
  CHECK(count(build_checked("topology: {type: hgx, gpus: 8}")) == 0);
  CHECK(count(build_checked("topology: {type: nvl576}")) == 0);
}

TEST_CASE("crossbar domains: a node's GPUs behind one switch stage, never across tiers or nodes") {
  SUBCASE("hgx: the 8 GPUs on the 4 planes") {
    const auto domains = build("topology: {type: hgx, gpus: 8}").crossbar_domains();
    REQUIRE(domains.size() == 1);
    CHECK(domains[0].size() == 8);
  }
  SUBCASE("hgx with NVMe drives: a PCIe switch per GPU joins no two of them") {
    CHECK(build("topology: {type: hgx, gpus: 8, nvme_drives: 2}").crossbar_domains().size() == 1);
  }
  SUBCASE("nvl72: the whole rack") {
    const auto domains = build("topology: {type: nvl72}").crossbar_domains();
    REQUIRE(domains.size() == 1);
    CHECK(domains[0].size() == 72);
  }
  SUBCASE("nvl36x2: each rack, not the pair") {
    const auto domains = build("topology: {type: nvl36x2}").crossbar_domains();
    REQUIRE(domains.size() == 2);
    CHECK(domains[0].size() == 36);
  }
  SUBCASE("nvl576: each half-rack under its 18 L1 chips") {
    const Fabric f = build("topology: {type: nvl576}");
    const auto domains = f.crossbar_domains();
    REQUIRE(domains.size() == 16);
    for (const auto& d : domains) CHECK(d.size() == 36);
    CHECK(domains[1][0] == f.gpus()[36]);
  }
  SUBCASE("superpod: each node, not the InfiniBand fabric") {
    const Fabric f = build("topology: {type: superpod, nodes: 3}");
    const auto domains = f.crossbar_domains();
    REQUIRE(domains.size() == 3);
    CHECK(domains[2] == std::vector<DeviceId>(f.gpus().begin() + 16, f.gpus().end()));
  }
  SUBCASE("pcie and direct NVLink bonds: none") {
    CHECK(build("topology: {type: pcie, gpus: 4}").crossbar_domains().empty());
    CHECK(build("topology: {type: nvidia_smi, text: \"\\tGPU0\\tGPU1\\nGPU0\\t X \\tNV4\\nGPU1\\tNV4\\t X \\n\"}")
              .crossbar_domains()
              .empty());
  }
}

TEST_CASE("nvlink domain: the GPUs reached through NVSwitches, each superpod node its own") {
  const Fabric pod = build("topology: {type: superpod, nodes: 2}");
  const auto g = pod.gpus();
  CHECK(pod.nvlink_domain(g[9]) == std::vector<DeviceId>(g.begin() + 8, g.end()));
  const Fabric rack = build("topology: {type: nvl576}");
  CHECK(rack.nvlink_domain(rack.gpus()[0]).size() == 576);  // one NVLink domain over both switch tiers
}

namespace {
/// Every shortest path between two endpoints, from the distances of every device to both ends over the whole fabric
/// (what the Router computed before it searched from both ends and stopped where they met): the reference its routes
/// must equal, channel for channel and in order.
std::optional<Route> reference_route(const Fabric& f, DeviceId from, DeviceId to) {
  if (from == to) return Route{};
  auto forwards = [&](DeviceId v) {
    const auto kind = f.device(v).kind;
    return kind == DeviceKind::nvswitch || kind == DeviceKind::pcie_switch || kind == DeviceKind::nic ||
           kind == DeviceKind::ib_switch;
  };
  constexpr std::size_t far = std::numeric_limits<std::size_t>::max();
  auto distances = [&](DeviceId end, bool forward) {
    std::vector<std::size_t> d(f.device_count(), far);
    d[end] = 0;
    std::vector<DeviceId> frontier{end};
    for (std::size_t level = 0; !frontier.empty(); ++level) {
      std::vector<DeviceId> next;
      for (auto u : frontier) {
        if (u != end && !forwards(u)) continue;
        auto visit = [&](DeviceId v) {
          if (d[v] == far) {
            d[v] = level + 1;
            next.push_back(v);
          }
        };
        if (forward)
          for (auto c : f.out_channels(u)) visit(f.target(c));
        else
          for (auto c : f.in_channels(u)) visit(f.source(c));
      }
      frontier = std::move(next);
    }
    return d;
  };
  const auto from_source = distances(from, true), to_target = distances(to, false);
  if (from_source[to] == far) return std::nullopt;
  const std::size_t length = from_source[to];
  Route route;
  route.hops.resize(length);
  std::vector<DeviceId> level{from};
  for (std::size_t k = 0; k < length; ++k) {
    std::vector<DeviceId> next;
    for (auto u : level)
      for (auto c : f.out_channels(u)) {
        const DeviceId v = f.target(c);
        if (v != to && !forwards(v)) continue;
        if (to_target[v] == far || to_target[v] + k + 1 != length) continue;
        route.hops[k].channels.push_back(c);
        next.push_back(v);
      }
    std::ranges::sort(next);
    next.erase(std::unique(next.begin(), next.end()), next.end());
    level = std::move(next);
  }
  return route;
}

std::vector<std::vector<ChannelId>> channels_of(const std::optional<Route>& route) {
  std::vector<std::vector<ChannelId>> hops;
  if (route)
    for (const auto& hop : route->hops) hops.push_back(hop.channels);
  return hops;
}
}  // namespace

TEST_CASE("Router: the search from both ends finds every shortest path, as a search of the whole fabric does") {
  for (const char* yaml : {"topology: {type: hgx}", "topology: {type: pcie, gpus: 4}", "topology: {type: nvl72}",
                           "topology: {type: nvl36x2}", "topology: {type: superpod, nodes: 4}",
                           "topology: {type: superpod, nodes: 40, rail_optimized: false, oversubscription: 3}",
                           "topology: {type: superpod, nodes: 33}", "topology: {type: superpod, nodes: 3, node: nvl72}",
                           "topology: {type: nvl576}",
                           "topology: {type: nvidia_smi, text: \"GPU0 GPU1 GPU2\\nGPU0 X PIX SYS\\nGPU1 PIX X "
                           "SYS\\nGPU2 SYS SYS X\\n\"}"}) {
    CAPTURE(yaml);
    const Fabric f = build_checked(yaml);
    std::vector<DeviceId> endpoints;
    for (auto v : f.devices()) {
      const auto kind = f.device(v).kind;
      if (kind == DeviceKind::gpu || kind == DeviceKind::host || kind == DeviceKind::nvme) endpoints.push_back(v);
    }
    // Every pair on small fabrics; on large ones the pairs of a spread of 8 sources (and their reverses): each
    // reference route searches the whole fabric, and 8 sources already reach every tier of the largest.
    const std::size_t stride = std::max<std::size_t>(1, endpoints.size() / 8);
    Router router(f);
    std::size_t routes = 0, multi_hop = 0;
    for (std::size_t i = 0; i < endpoints.size(); i += stride)
      for (auto to : endpoints)
        for (const auto& [a, b] : {std::pair{endpoints[i], to}, std::pair{to, endpoints[i]}}) {
          const auto expected = reference_route(f, a, b);
          const auto found = router.route(a, b);
          REQUIRE(found.has_value() == expected.has_value());
          CHECK(channels_of(found) == channels_of(expected));
          ++routes;
          if (expected && expected->hops.size() > 2) ++multi_hop;
        }
    CHECK(routes > 0);
    if (std::string_view(yaml).find("superpod") != std::string_view::npos) CHECK(multi_hop > 0);
  }
  // Unconnected endpoints: no route, as before.
  Fabric split;
  const DeviceId a = split.add_device({"a", DeviceKind::gpu, 0, {}});
  const DeviceId b = split.add_device({"b", DeviceKind::gpu, 1, {}});
  CHECK_FALSE(Router(split).route(a, b).has_value());
  CHECK(Router(split).route(a, a).has_value());
}

TEST_CASE("Fabric: devices, channels and each device's out- and in-channels are listed in the order they were added") {
  // Routes list a hop's channels in out_channels order, and maps keyed by ChannelId (failures' bandwidth shares)
  // iterate by id: both must follow insertion, whatever the ids' values.
  Fabric f;
  const DeviceId sw = f.add_device({"nvswitch0", DeviceKind::nvswitch, 0, {}});
  const DeviceId g0 = f.add_device({"gpu0", DeviceKind::gpu, 0, {}});
  const DeviceId g1 = f.add_device({"gpu1", DeviceKind::gpu, 1, {}});
  const Channel nvlink{ChannelKind::nvlink, 2, BytesPerSecond{25e9}, Seconds{1e-7}};
  const ChannelId to_g1 = f.add_channel(sw, g1, nvlink);
  const ChannelId from_g0 = f.add_channel(g0, sw, nvlink);
  const ChannelId to_g0 = f.add_channel(sw, g0, nvlink);
  const ChannelId from_g1 = f.add_channel(g1, sw, nvlink);
  const ChannelId direct = f.add_channel(g0, g1, nvlink);

  std::vector<DeviceId> devices;
  for (auto v : f.devices()) devices.push_back(v);
  CHECK(devices == std::vector<DeviceId>{sw, g0, g1});
  std::vector<ChannelId> channels;
  for (auto c : f.channels()) channels.push_back(c);
  CHECK(channels == std::vector<ChannelId>{to_g1, from_g0, to_g0, from_g1, direct});
  CHECK(f.channel_count() == 5);
  CHECK(f.out_channels(sw) == std::vector<ChannelId>{to_g1, to_g0});
  CHECK(f.out_channels(g0) == std::vector<ChannelId>{from_g0, direct});
  CHECK(f.in_channels(sw) == std::vector<ChannelId>{from_g0, from_g1});
  CHECK(f.in_channels(g1) == std::vector<ChannelId>{to_g1, direct});
  CHECK(f.source(direct) == g0);
  CHECK(f.target(direct) == g1);
  CHECK(f.channel(direct).lanes == 2);

  const std::map<ChannelId, int> by_channel{{direct, 4}, {to_g1, 0}, {from_g1, 3}, {from_g0, 1}};
  std::vector<ChannelId> keys;
  for (const auto& entry : by_channel) keys.push_back(entry.first);
  CHECK(keys == std::vector<ChannelId>{to_g1, from_g0, from_g1, direct});
}
