#include "topologies/pcie.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

class PcieSwitch final : public Topology {
 public:
  GpuSpec gpu;
  int gpus = 8;
  BytesPerSecond bandwidth;
  Seconds latency;

  Fabric build() const override {
    Fabric fabric;
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    const DeviceId pcie = fabric.add_device({"pcie_switch", DeviceKind::pcie_switch, 0, std::nullopt});
    fabric.add_duplex(host, pcie, {ChannelKind::pcie, 1, bandwidth, latency});
    for (int g = 0; g < gpus; ++g) {
      const DeviceId id = fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, g, gpu});
      fabric.add_duplex(id, pcie, {ChannelKind::pcie, 1, bandwidth, latency});
    }
    return fabric;
  }
};

std::unique_ptr<Topology> make_pcie(const ConfigNode& node) {
  auto t = std::make_unique<PcieSwitch>();
  t->gpu = gpu_preset(node, node.optional<std::string>("gpu", "h200"));
  t->gpus = node.optional<int>("gpus", 8);
  check_between(node, "gpus", t->gpus, 2, 8);
  t->bandwidth = node.optional<BytesPerSecond>("pcie_bandwidth", BytesPerSecond{PCIE5_X16_GBPS * 1e9});
  check_positive(node, "pcie_bandwidth", t->bandwidth);
  t->latency = node.optional<Seconds>("pcie_latency", Seconds{PCIE_HOP_NS * 1e-9});
  return t;
}
}  // namespace

Registry<Topology>::Entry pcie_entry() {
  return {"pcie",
          "baseline without NVLink: 2-8 GPUs and the host on one PCIe Gen5 switch",
          {
              {"gpu", "h100|h200", "h200", "GPU model"},
              {"gpus", "GPUs", "8", "number of GPUs, 2-8"},
              {"pcie_bandwidth", "bytes/s per direction", "63GBps", "PCIe Gen5 x16 per device"},
              {"pcie_latency", "time per hop", "500ns", "PCIe traversal of one hop"},
          },
          make_pcie};
}

}  // namespace snsim::topologies
