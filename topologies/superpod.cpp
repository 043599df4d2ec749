#include "topologies/superpod.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "sim/simulation.hpp"
#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// Node internals, as topologies/hgx.cpp and nvl72.cpp (link and switch specs in gpus.hpp): HGX 8 GPUs over 4
// NVSwitch3 planes of 5/4/4/5 NVLink4 links; NVL72 72 GPUs over 18 single-link NVLink5 planes.
struct NodeKind {
  const char* name;
  int gpus;
  std::vector<int> links_per_plane;
  BytesPerSecond lane;
  double reduction;
  int chip_ports;
  const char* gpu;
};
const NodeKind HGX{"hgx", 8, {5, 4, 4, 5}, NVLINK4_LANE, NVSWITCH3_REDUCTION, NVSWITCH3_PORTS, "h200"};
const NodeKind NVL72{
    "nvl72", 72, std::vector<int>(NVLINK5_LINKS_PER_GPU, 1), NVLINK5_LANE, RACK_NVLS_EFFICIENCY, NVLINK5_SWITCH_PORTS,
    "gb200"};

// One NIC per GPU on PCIe: ConnectX-7 (NDR) on PCIe Gen5 x16, 63 GB/s (gpus.hpp); ConnectX-8 (XDR) on PCIe Gen6 x16,
// 64 GT/s x 16 lanes, ~126 GB/s per direction [spec: PCI-SIG Gen6; ConnectX-8 SuperNIC page, "PCIe Gen6"].
constexpr BytesPerSecond PCIE6_X16 = 126_GBps;

class Superpod final : public Topology {
 public:
  NodeKind node;
  GpuSpec gpu;
  int nodes = 2;
  BytesPerSecond ib_bandwidth;
  int switch_ports = IB_NDR_SWITCH_PORTS;
  BytesPerSecond nic_pcie_bandwidth;
  Seconds ib_latency;
  bool sharp = false;           // the InfiniBand switches reduce in the network (SHARP)
  double oversubscription = 1;  // a leaf's ports down per port up
  bool rail_optimized = true;   // NIC i of every node on the leaves of rail i; else a node's NICs share leaves

  Fabric build() const override {
    Fabric fabric;
    const Seconds nvlink_latency = NVLINK_HOP;
    const BytesPerSecond lane = node.lane;
    // A leaf's ports split down:up by the oversubscription (1: half and half, non-blocking); every leaf has one
    // uplink to each spine.
    const int down = std::clamp(static_cast<int>(std::lround(switch_ports * oversubscription / (oversubscription + 1))),
                                1, switch_ports - 1);
    const int nodes_per_leaf = rail_optimized ? down : std::max(1, down / node.gpus);
    const int leaves_per_rail = (nodes + nodes_per_leaf - 1) / nodes_per_leaf;
    const int rails = rail_optimized ? node.gpus : 1;
    const int spines = switch_ports - down;
    const int leaves = rails * leaves_per_rail;
    const double reduction = sharp ? 1.0 : 0.0;  // SHARP: the switches reduce at their line rate
    // A spine position connects every leaf once; beyond `switch_ports` leaves it stands for the several spine (or
    // core) switches a real fabric needs there, so its ports are not checked.
    const int spine_ports = leaves <= switch_ports ? switch_ports : 0;
    const Channel ib{ChannelKind::ib, 1, ib_bandwidth, ib_latency};
    std::vector<DeviceId> spine;
    for (int s = 0; s < spines; ++s)
      spine.push_back(
          fabric.add_device({fmt::format("spine{}", s), DeviceKind::ib_switch, s, {}, reduction, spine_ports}));
    std::vector<DeviceId> leaf;  // [rail * leaves_per_rail + k]
    for (int l = 0; l < leaves; ++l) {
      leaf.push_back(
          fabric.add_device({fmt::format("leaf{}", l), DeviceKind::ib_switch, l, {}, reduction, switch_ports}));
      for (auto s : spine) fabric.add_duplex(leaf.back(), s, ib);
    }
    const int planes = static_cast<int>(node.links_per_plane.size());
    for (int n = 0; n < nodes; ++n) {
      std::vector<DeviceId> chips;
      for (int p = 0; p < planes; ++p) {
        const int index = n * planes + p;
        chips.push_back(fabric.add_device(
            {fmt::format("nvswitch{}", index), DeviceKind::nvswitch, index, {}, node.reduction, node.chip_ports}));
      }
      for (int i = 0; i < node.gpus; ++i) {
        const int rank = n * node.gpus + i;
        const DeviceId g = fabric.add_device({fmt::format("gpu{}", rank), DeviceKind::gpu, rank, gpu});
        for (int p = 0; p < planes; ++p)
          fabric.add_duplex(g, chips[p], {ChannelKind::nvlink, node.links_per_plane[p], lane, nvlink_latency});
        const DeviceId nic = fabric.add_device({fmt::format("nic{}", rank), DeviceKind::nic, rank, {}});
        fabric.add_duplex(g, nic, {ChannelKind::pcie, 1, nic_pcie_bandwidth, PCIE_HOP});
        fabric.add_duplex(nic, leaf[rail_optimized ? i * leaves_per_rail + n / nodes_per_leaf : n / nodes_per_leaf],
                          ib);
      }
    }
    return fabric;
  }
};

std::unique_ptr<Topology> make_superpod(const ConfigNode& node) {
  auto t = std::make_unique<Superpod>();
  const auto kind = node.optional<std::string>("node", "hgx");
  if (kind == "hgx")
    t->node = HGX;
  else if (kind == "nvl72")
    t->node = NVL72;
  else
    node.fail_key("node", fmt::format("unknown node '{}'; known: hgx, nvl72", kind));
  t->gpu =
      gpu_preset(node, node.optional<std::string>("gpu", t->node.gpu), kind == "hgx" ? HOPPER_GPUS : BLACKWELL_GPUS,
                 kind == "hgx" ? "a superpod of hgx nodes" : "a superpod of nvl72 nodes");
  t->nodes = node.optional<int>("nodes", 2);
  check_between(node, "nodes", t->nodes, 1, 2048);
  // Said before building a fabric of up to 73,728 GPUs (seconds, and gigabytes) that could not run: each GPU is an
  // actor, and the kernel's memory maps bound the actors of one process (sim/simulation.hpp).
  if (const auto gpus = static_cast<std::uint64_t>(t->nodes) * static_cast<std::uint64_t>(t->node.gpus);
      gpus > max_actors())
    node.fail_key("nodes", fmt::format("{} {} nodes are {} GPUs, more than the {} actors (one per GPU) this machine "
                                       "allows (two memory maps per actor's stack, vm.max_map_count; raise it with "
                                       "sysctl, or simulate fewer nodes)",
                                       t->nodes, kind, gpus, max_actors()));
  const auto ib = node.optional<std::string>("ib", "ndr");
  if (ib == "ndr") {
    t->ib_bandwidth = IB_NDR_PORT;
    t->switch_ports = IB_NDR_SWITCH_PORTS;
    t->nic_pcie_bandwidth = PCIE5_X16;
  } else if (ib == "xdr") {
    t->ib_bandwidth = IB_XDR_PORT;
    t->switch_ports = IB_XDR_SWITCH_PORTS;
    t->nic_pcie_bandwidth = PCIE6_X16;
  } else if (ib == "roce") {
    // 400 GbE RoCE: the NDR line rate on Ethernet; Spectrum-4 switches carry 128 x 400 GbE ports [spec: NVIDIA
    // Spectrum SN5600, 64 x 800 GbE].
    t->ib_bandwidth = IB_NDR_PORT;
    t->switch_ports = 128;
    t->nic_pcie_bandwidth = PCIE5_X16;
  } else {
    node.fail_key("ib", fmt::format("unknown network '{}'; known: ndr, xdr, roce", ib));
  }
  t->ib_latency = node.optional<Seconds>("ib_latency", IB_HOP);
  t->sharp = node.optional<bool>("sharp", false);
  t->oversubscription = node.optional<double>("oversubscription", 1.0);
  check_between(node, "oversubscription", t->oversubscription, 1.0, 16.0);
  t->rail_optimized = node.optional<bool>("rail_optimized", true);
  return t;
}
}  // namespace

Registry<Topology>::Entry superpod_entry() {
  return {"superpod",
          "N HGX or NVL72 nodes on InfiniBand NDR/XDR, one NIC per GPU, rail-optimised two-tier fat tree",
          {
              {"node", "hgx|nvl72", "hgx", "what each node is (8 or 72 GPUs on NVLink)"},
              {"gpu", "h100|h200|b200|gb200", "h200 (hgx), gb200 (nvl72)", "GPU model"},
              {"nodes", "nodes", "2", "number of nodes, 1-2048"},
              {"ib", "ndr|xdr|roce", "ndr",
               "NDR: 50 GB/s per port, 64-port switches; XDR: 100 GB/s, 144-port; RoCE: 400 GbE, 128-port"},
              {"ib_latency", "time per hop", "300ns", "NIC-to-switch and switch-to-switch hop [unverified]"},
              {"sharp", "bool", "false", "the switches reduce in the network (SHARP: NCCL's CollNet)"},
              {"oversubscription", "ratio", "1", "a leaf's ports down per port up, 1-16 (1: non-blocking)"},
              {"rail_optimized", "bool", "true",
               "NIC i of every node on rail i's leaves; false: a node's NICs share a leaf"},
          },
          make_superpod};
}

}  // namespace snsim::topologies
