#include "topologies/pcie.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

class PcieSwitch final : public Topology {
 public:
  std::string gpu_model;
  GpuSpec gpu;
  int gpus = 0;
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

const ParamTable<PcieSwitch>& pcie_params() {
  static const ParamTable<PcieSwitch> table = [] {
    ParamTable<PcieSwitch> params;
    params.add({.key = "gpu", .unit = "h100|h200", .fallback = std::string("h200"), .doc = "GPU model"},
               [](PcieSwitch& t) { return &t.gpu_model; });
    // One GPU is a workstation's or a cloud instance's single GPU: the machine single-GPU steps are measured on.
    params.add({.key = "gpus",
                .unit = "GPUs",
                .fallback = 8,
                .check = between(1, 8),
                .doc = "number of GPUs (1: one GPU in its host)"},
               [](PcieSwitch& t) { return &t.gpus; });
    params.add({.key = "pcie_bandwidth",
                .unit = "bytes/s per direction",
                .fallback = PCIE5_X16,
                .check = positive,
                .doc = "PCIe Gen5 x16 per device"},
               [](PcieSwitch& t) { return &t.bandwidth; });
    params.add(
        {.key = "pcie_latency", .unit = "time per hop", .fallback = PCIE_HOP, .doc = "PCIe traversal of one hop"},
        [](PcieSwitch& t) { return &t.latency; });
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_pcie(const ConfigNode& node) {
  auto t = std::make_unique<PcieSwitch>();
  pcie_params().read(node, *t);
  t->gpu = gpu_preset(node, t->gpu_model, HOPPER_GPUS, "the pcie topology");
  return t;
}
}  // namespace

Registry<Topology>::Entry pcie_entry() {
  return {"pcie", "baseline without NVLink: 2-8 GPUs and the host on one PCIe Gen5 switch", pcie_params().docs(),
          make_pcie};
}

}  // namespace snsim::topologies
