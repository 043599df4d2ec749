#include "topologies/nvl576.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// NVIDIA: the fifth-generation NVLink switch connects up to 576 GPUs in one NVLink domain [spec: nvidia.com
// data-center/nvlink; docs/hardware.md#nvswitch, "up to 576 GPUs per NVLink domain (multi-rack)"]. How is not
// published. Our assumption: a non-blocking two-tier Clos of the same 72-port NVLink5 switch chip
// (docs/hardware.md#nvswitch). Each GPU keeps 18 links, one per plane; a first-tier (L1) chip serves 36 GPUs (half a
// rack) with 36 ports and sends 36 up; each plane has 9 second-tier (L2) chips and every L1 chip of the plane has 4
// lanes to each (9 x 4 = 36 up; an L2 chip uses 16 x 4 = 64 of its 72 ports). Chips: 8 racks x 2 halves x 18 planes =
// 288 L1 + 18 x 9 = 162 L2. `uplink_lanes` below 4 thins the uplinks (oversubscription 4 / uplink_lanes).
constexpr int NVL576_RACKS = 8;
constexpr int NVL576_GPUS_PER_RACK = 72;
constexpr int NVL576_GPUS_PER_L1 = 36;
constexpr int NVL576_PLANES = NVLINK5_LINKS_PER_GPU;
constexpr int NVL576_L2_PER_PLANE = 9;
constexpr int NVL576_FULL_UPLINK_LANES = 4;
constexpr int NVL576_CHIP_PORTS = NVLINK5_SWITCH_PORTS;
// NVLINK5_LANE and the in-switch reduction (RACK_NVLS_EFFICIENCY, the NVL72 rack figure; not measured at 576)
// as in NVL72: topologies/gpus.hpp.

class Nvl576 final : public Topology {
 public:
  std::string gpu_model;
  GpuSpec gpu;
  int uplink_lanes = NVL576_FULL_UPLINK_LANES;
  Nvlink5Links links;

  Fabric build() const override {
    Fabric fabric;
    const Channel lane{ChannelKind::nvlink, 1, links.bandwidth, links.latency};
    const int groups = NVL576_RACKS * NVL576_GPUS_PER_RACK / NVL576_GPUS_PER_L1;
    std::vector<DeviceId> l1;  // [group * NVL576_PLANES + plane]
    for (int g = 0; g < groups; ++g)
      for (int p = 0; p < NVL576_PLANES; ++p) {
        const int index = g * NVL576_PLANES + p;
        l1.push_back(fabric.add_device({fmt::format("nvswitch{}", index),
                                        DeviceKind::nvswitch,
                                        index,
                                        {},
                                        links.nvls_efficiency,
                                        NVL576_CHIP_PORTS}));
      }
    for (int p = 0; p < NVL576_PLANES; ++p)
      for (int s = 0; s < NVL576_L2_PER_PLANE; ++s) {
        const int index = groups * NVL576_PLANES + p * NVL576_L2_PER_PLANE + s;
        const DeviceId l2 = fabric.add_device({fmt::format("nvswitch{}", index),
                                               DeviceKind::nvswitch,
                                               index,
                                               {},
                                               links.nvls_efficiency,
                                               NVL576_CHIP_PORTS});
        for (int g = 0; g < groups; ++g)
          fabric.add_duplex(l1[g * NVL576_PLANES + p], l2,
                            {ChannelKind::nvlink, uplink_lanes, links.bandwidth, links.latency});
      }
    for (int g = 0; g < NVL576_RACKS * NVL576_GPUS_PER_RACK; ++g) {
      const DeviceId id = fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, g, gpu});
      for (int p = 0; p < NVL576_PLANES; ++p)
        fabric.add_duplex(id, l1[(g / NVL576_GPUS_PER_L1) * NVL576_PLANES + p], lane);
    }
    return fabric;
  }
};

const ParamTable<Nvl576>& nvl576_params() {
  static const ParamTable<Nvl576> table = [] {
    ParamTable<Nvl576> params;
    params.add({.key = "gpu", .unit = "gb200|b200", .fallback = std::string("gb200"), .doc = "GPU model"},
               [](Nvl576& t) { return &t.gpu_model; });
    params.add({.key = "uplink_lanes",
                .unit = "lanes",
                .fallback = NVL576_FULL_UPLINK_LANES,
                .check = between(1, NVL576_FULL_UPLINK_LANES),
                .doc = "lanes from an L1 chip to each of its plane's 9 L2 chips (4 = 1:1)"},
               [](Nvl576& t) { return &t.uplink_lanes; });
    params.include([](Nvl576& t) { return &t.links; }, nvlink5_params());
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_nvl576(const ConfigNode& node) {
  auto t = std::make_unique<Nvl576>();
  nvl576_params().read(node, *t);
  t->gpu = rack_gpu(node, t->gpu_model, "an nvl576");
  return t;
}
}  // namespace

Registry<Topology>::Entry nvl576_entry() {
  return {"nvl576",
          "NVL576: 8 x 72 GPUs, two-tier NVLink5 switch fat tree (288 L1 + 162 L2 chips, 18 planes), non-blocking "
          "by default [assumed wiring, see docs/hardware.md#nvl576]",
          nvl576_params().docs(), make_nvl576};
}

}  // namespace snsim::topologies
