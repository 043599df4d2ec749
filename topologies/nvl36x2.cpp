#include "topologies/nvl36x2.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// Per rack: 9 compute trays x 4 GPUs = 36 GPUs and 9 NVLink switch trays x 2 chips = 18 chips; each GPU has one
// NVLink5 link (50 GB/s per direction) to each of its rack's 18 chips, as in NVL72 [spec: docs/hardware.md#nvswitch].
// The chips have 72 ports: 36 face the rack's GPUs, the other 36 are cabled to the twin chip of the other rack
// [anec: SemiAnalysis "GB200 Hardware Architecture" describes NVL36x2 as two racks whose switch trays are joined by
// cross-rack cables; the port split is our reading, no NVIDIA document gives it]. That makes the domain non-blocking:
// 36 x 50 GB/s of trunk per chip pair carries all 36 GPUs' share of that plane.
constexpr int NVL36X2_RACKS = 2;
constexpr int NVL36X2_GPUS_PER_RACK = 36;
constexpr int NVL36X2_PLANES = NVLINK5_LINKS_PER_GPU;
constexpr int NVL36X2_CHIP_PORTS = NVLINK5_SWITCH_PORTS;
// NVLINK5_LANE, RACK_NVLS_EFFICIENCY (in-switch reduction) and C2C as in NVL72: topologies/gpus.hpp.

class Nvl36x2 final : public Topology {
 public:
  std::string gpu_model;
  GpuSpec gpu;
  Nvlink5Links links;
  BytesPerSecond c2c_bandwidth;

  Fabric build() const override {
    Fabric fabric;
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    std::vector<DeviceId> chips;
    for (int c = 0; c < NVL36X2_RACKS * NVL36X2_PLANES; ++c) {  // trays 0-8 in rack 0, 9-17 in rack 1
      Device chip{fmt::format("nvswitch{}", c), DeviceKind::nvswitch, c, {}, links.nvls_efficiency, NVL36X2_CHIP_PORTS};
      chip.tray = c / NVL_TRAY_CHIPS;
      chips.push_back(fabric.add_device(std::move(chip)));
    }
    for (int p = 0; p < NVL36X2_PLANES; ++p)
      fabric.add_duplex(
          chips[p], chips[NVL36X2_PLANES + p],
          {ChannelKind::nvlink, NVL36X2_CHIP_PORTS - NVL36X2_GPUS_PER_RACK, links.bandwidth, links.latency});
    for (int g = 0; g < NVL36X2_RACKS * NVL36X2_GPUS_PER_RACK; ++g) {
      const DeviceId id = fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, g, gpu});
      const int rack = g / NVL36X2_GPUS_PER_RACK;
      for (int p = 0; p < NVL36X2_PLANES; ++p)
        fabric.add_duplex(id, chips[rack * NVL36X2_PLANES + p],
                          {ChannelKind::nvlink, 1, links.bandwidth, links.latency});
      fabric.add_duplex(id, host, {ChannelKind::nvlink, 1, c2c_bandwidth, links.latency});
    }
    return fabric;
  }
};

const ParamTable<Nvl36x2>& nvl36x2_params() {
  static const ParamTable<Nvl36x2> table = [] {
    ParamTable<Nvl36x2> params;
    params.add({.key = "gpu", .unit = "gb200|b200", .fallback = std::string("gb200"), .doc = "GPU model"},
               [](Nvl36x2& t) { return &t.gpu_model; });
    params.include([](Nvl36x2& t) { return &t.links; }, nvlink5_params());
    params.include([](Nvl36x2& t) { return &t.c2c_bandwidth; }, c2c_params());
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_nvl36x2(const ConfigNode& node) {
  auto t = std::make_unique<Nvl36x2>();
  nvl36x2_params().read(node, *t);
  t->gpu = rack_gpu(node, t->gpu_model, "an nvl36x2");
  return t;
}
}  // namespace

Registry<Topology>::Entry nvl36x2_entry() {
  return {"nvl36x2",
          "GB200 NVL36x2: 2 racks x 36 GPUs, 18 switch chips per rack, twin chips joined by 36-lane trunks "
          "(one switch hop in a rack, two across)",
          nvl36x2_params().docs(), make_nvl36x2};
}

}  // namespace snsim::topologies
