#include "topologies/nvl72.hpp"

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// NVLink5: 50 GB/s per link per direction, 18 links per GPU, 900 GB/s per GPU per direction; 18 NVLink5 switch
// chips, each GPU with exactly one link to each chip, one switch hop [spec: nvidia.com/data-center/nvlink, NVIDIA
// NVL72 docs; reference/hardware.md §1.1-1.2].
constexpr int PLANES = 18;
// 72 NVLink5 ports per switch chip (144 per tray of 2, 9 trays: NVL_TRAY_CHIPS) [spec: hardware.md §1.2].
constexpr int CHIP_PORTS = 72;

class Nvl72 final : public Topology {
 public:
  GpuSpec gpu;
  int gpus = 72;
  Nvlink5Links links;
  BytesPerSecond c2c_bandwidth;

  Fabric build() const override {
    Fabric fabric;
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    std::vector<DeviceId> planes;
    for (int p = 0; p < PLANES; ++p) {
      Device chip{fmt::format("nvswitch{}", p), DeviceKind::nvswitch, p, {}, links.nvls_efficiency, CHIP_PORTS};
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

std::unique_ptr<Topology> make_nvl72(const ConfigNode& node) {
  auto t = std::make_unique<Nvl72>();
  t->gpu = gpu_preset(node, node.optional<std::string>("gpu", "gb200"));
  t->gpus = node.optional<int>("gpus", 72);
  check_between(node, "gpus", t->gpus, 2, 72);
  t->links = parse_nvlink5_links(node);
  t->c2c_bandwidth = parse_c2c_bandwidth(node);
  return t;
}
}  // namespace

Registry<Topology>::Entry nvl72_entry() {
  return {"nvl72",
          "GB200 NVL72: 2-72 GPUs, 18 NVLink5 links each, one to each of 18 NVLink switch chips (planes) in 9 switch "
          "trays, in-switch reduction; NVLink-C2C to the Grace host",
          {
              {"gpu", "gb200|b200", "gb200", "GPU model (sets compute rate, HBM bandwidth and memory)"},
              {"gpus", "GPUs", "72", "number of GPUs, 2-72"},
              {"nvlink_bandwidth", "bytes/s per link per direction", "50GBps", "NVLink5 line rate of one link"},
              {"nvlink_latency", "time per hop", "177ns", "wire and switch traversal of one hop [unverified]"},
              {"nvls_efficiency", "fraction", "0.58",
               "in-switch reduction rate share (NCCL Blackwell 0.74; 0.58 fits the 72-GPU rack, coreweave nccl-tests "
               "PR #43); 0 = no NVLS"},
              {"c2c_bandwidth", "bytes/s per direction", "225GBps", "NVLink-C2C to Grace, per GPU"},
          },
          make_nvl72};
}

}  // namespace snsim::topologies
