#include "topologies/nvl72.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// NVLink5: 50 GB/s per link per direction, 18 links per GPU, 900 GB/s per GPU per direction; 18 NVLink5 switch
// chips, each GPU with exactly one link to each chip, one switch hop [spec: nvidia.com/data-center/nvlink, NVIDIA
// NVL72 docs; docs/hardware.md#nvswitch].
constexpr int NVL72_PLANES = NVLINK5_LINKS_PER_GPU;
constexpr int NVL72_CHIP_PORTS = NVLINK5_SWITCH_PORTS;

class Nvl72 final : public Topology {
 public:
  std::string gpu_model;
  GpuSpec gpu;
  int gpus = 0;
  Nvlink5Links links;
  BytesPerSecond c2c_bandwidth;

  Fabric build() const override {
    Fabric fabric;
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    std::vector<DeviceId> planes;
    for (int p = 0; p < NVL72_PLANES; ++p) {
      Device chip{fmt::format("nvswitch{}", p), DeviceKind::nvswitch, p, {}, links.nvls_efficiency, NVL72_CHIP_PORTS};
      chip.tray = p / NVL_TRAY_CHIPS;
      planes.push_back(fabric.add_device(std::move(chip)));
    }
    for (int g = 0; g < gpus; ++g) {
      const DeviceId id = fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, g, gpu});
      for (auto plane : planes) fabric.add_duplex(id, plane, {ChannelKind::nvlink, 1, links.bandwidth, links.latency});
      fabric.add_duplex(id, host, {ChannelKind::nvlink, 1, c2c_bandwidth, links.latency});
    }
    return fabric;
  }
};

const ParamTable<Nvl72>& nvl72_params() {
  static const ParamTable<Nvl72> table = [] {
    ParamTable<Nvl72> params;
    params.add({.key = "gpu",
                .unit = "gb200|b200",
                .fallback = std::string("gb200"),
                .doc = "GPU model (sets compute rate, HBM bandwidth and memory)"},
               [](Nvl72& t) { return &t.gpu_model; });
    params.add({.key = "gpus", .unit = "GPUs", .fallback = 72, .check = between(2, 72), .doc = "number of GPUs"},
               [](Nvl72& t) { return &t.gpus; });
    params.include([](Nvl72& t) { return &t.links; }, nvlink5_params());
    params.include([](Nvl72& t) { return &t.c2c_bandwidth; }, c2c_params());
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_nvl72(const ConfigNode& node) {
  auto t = std::make_unique<Nvl72>();
  nvl72_params().read(node, *t);
  t->gpu = rack_gpu(node, t->gpu_model, "an nvl72");
  return t;
}
}  // namespace

Registry<Topology>::Entry nvl72_entry() {
  return {"nvl72",
          "GB200 NVL72: 2-72 GPUs, 18 NVLink5 links each, one to each of 18 NVLink switch chips (planes) in 9 switch "
          "trays, in-switch reduction; NVLink-C2C to the Grace host",
          nvl72_params().docs(), make_nvl72};
}

}  // namespace snsim::topologies
