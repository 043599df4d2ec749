#include "topologies/hgx.hpp"

#include <array>

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// NVLink4 lanes and NVSwitch3 chips: topologies/gpus.hpp. The 5/4/4/5 split of a GPU's 18 links over the 4 NVSwitch3
// chips is reported for HGX H100 [unverified from a primary source, docs/hardware.md#nvswitch]; it matters only when a
// plane fails.
constexpr std::array<int, 4> LINKS_PER_PLANE{5, 4, 4, 5};
// NVMe drive: a PCIe Gen5 x4 enterprise SSD reads 14 GB/s sequentially (writes 10 GB/s, taken as 14 here: one rate
// per link) with a typical read latency of 60 us [spec: Micron 9550 datasheet, via the StorageReview 9550 MAX review].
constexpr BytesPerSecond NVME_GEN5_X4 = 14_GBps;
constexpr Seconds NVME_READ_LATENCY = 60_us;

class Hgx final : public Topology {
 public:
  std::string gpu_model;
  GpuSpec gpu;
  int gpus = 0;
  BytesPerSecond nvlink_bandwidth;
  Seconds nvlink_latency;
  BytesPerSecond pcie_bandwidth;
  Seconds pcie_latency;
  int nvme_drives = 0;
  BytesPerSecond nvme_bandwidth;
  Seconds nvme_latency;

  Fabric build() const override {
    Fabric fabric;
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    std::array<DeviceId, LINKS_PER_PLANE.size()> planes{};
    for (std::size_t p = 0; p < planes.size(); ++p)
      planes[p] = fabric.add_device({fmt::format("nvswitch{}", p),
                                     DeviceKind::nvswitch,
                                     static_cast<int>(p),
                                     {},
                                     NVSWITCH3_REDUCTION,
                                     NVSWITCH3_PORTS});
    for (int g = 0; g < gpus; ++g) {
      const DeviceId id = fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, g, gpu});
      for (std::size_t p = 0; p < planes.size(); ++p)
        fabric.add_duplex(id, planes[p], {ChannelKind::nvlink, LINKS_PER_PLANE[p], nvlink_bandwidth, nvlink_latency});
      if (nvme_drives == 0) fabric.add_duplex(id, host, {ChannelKind::pcie, 1, pcie_bandwidth, pcie_latency});
    }
    if (nvme_drives > 0) add_pcie_tree(fabric, host);
    return fabric;
  }

  // With drives, the GPUs' PCIe links meet them in a PCIe tree (only switches forward): gpu -> its PCIe switch ->
  // the root complex -> host, drives on the root, so that GPUDirect Storage reads cross the drive's link and the
  // GPU's x16 and share both. The host path keeps its cost: the switch's uplink repeats the GPU's x16 and the root's
  // host port is one x16 per GPU, both without latency. A switch per GPU keeps GPU-to-GPU PCIe routes (4 hops)
  // longer than NVLink's (2), so peer traffic stays on NVLink.
  void add_pcie_tree(Fabric& fabric, DeviceId host) const {
    const DeviceId root = fabric.add_device({"pcie_root", DeviceKind::pcie_switch, 0, std::nullopt});
    fabric.add_duplex(root, host, {ChannelKind::pcie, gpus, pcie_bandwidth, Seconds{0}});
    for (int g = 0; g < gpus; ++g) {
      const DeviceId sw =
          fabric.add_device({fmt::format("pcie_switch{}", g + 1), DeviceKind::pcie_switch, g + 1, std::nullopt});
      fabric.add_duplex(fabric.gpus()[static_cast<std::size_t>(g)], sw,
                        {ChannelKind::pcie, 1, pcie_bandwidth, pcie_latency});
      fabric.add_duplex(sw, root, {ChannelKind::pcie, 1, pcie_bandwidth, Seconds{0}});
    }
    for (int d = 0; d < nvme_drives; ++d) {
      const DeviceId drive = fabric.add_device({fmt::format("nvme{}", d), DeviceKind::nvme, d, std::nullopt});
      fabric.add_duplex(drive, root, {ChannelKind::pcie, 1, nvme_bandwidth, nvme_latency});
    }
  }
};

const ParamTable<Hgx>& hgx_params() {
  static const ParamTable<Hgx> table = [] {
    ParamTable<Hgx> params;
    params.add({.key = "gpu",
                .unit = "h100|h200",
                .fallback = std::string("h200"),
                .doc = "GPU model (sets compute rate, HBM bandwidth and memory)"},
               [](Hgx& t) { return &t.gpu_model; });
    params.add({.key = "gpus", .unit = "GPUs", .fallback = 8, .check = between(2, 8), .doc = "number of GPUs"},
               [](Hgx& t) { return &t.gpus; });
    params.add({.key = "nvlink_bandwidth",
                .unit = "bytes/s per link per direction",
                .fallback = NVLINK4_LANE,
                .check = positive,
                .doc = "NVLink4 line rate of one link"},
               [](Hgx& t) { return &t.nvlink_bandwidth; });
    params.add({.key = "nvlink_latency",
                .unit = "time per hop",
                .fallback = NVLINK_HOP,
                .doc = "wire and switch traversal of one hop"},
               [](Hgx& t) { return &t.nvlink_latency; });
    params.add({.key = "pcie_bandwidth",
                .unit = "bytes/s per direction",
                .fallback = PCIE5_X16,
                .check = positive,
                .doc = "PCIe Gen5 x16 to the host"},
               [](Hgx& t) { return &t.pcie_bandwidth; });
    params.add(
        {.key = "pcie_latency", .unit = "time per hop", .fallback = PCIE_HOP, .doc = "PCIe traversal of one hop"},
        [](Hgx& t) { return &t.pcie_latency; });
    params.add({.key = "nvme_drives",
                .unit = "drives",
                .fallback = 0,
                .check = between(0, 64),
                .doc = "NVMe drives on the host's PCIe root, read and written with copy from/to nvme"},
               [](Hgx& t) { return &t.nvme_drives; });
    params.add({.key = "nvme_bandwidth",
                .unit = "bytes/s per drive per direction",
                .fallback = NVME_GEN5_X4,
                .check = positive,
                .doc = "PCIe Gen5 x4 drive, sequential read"},
               [](Hgx& t) { return &t.nvme_bandwidth; });
    params.add({.key = "nvme_latency", .fallback = NVME_READ_LATENCY, .doc = "a drive's typical read latency"},
               [](Hgx& t) { return &t.nvme_latency; });
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_hgx(const ConfigNode& node) {
  auto t = std::make_unique<Hgx>();
  hgx_params().read(node, *t);
  t->gpu = gpu_preset(node, t->gpu_model, HOPPER_GPUS, "an HGX baseboard");
  return t;
}
}  // namespace

Registry<Topology>::Entry hgx_entry() {
  return {"hgx",
          "HGX H100/H200 SXM: 2-8 GPUs, 18 NVLink4 links each over 4 NVSwitch planes (5/4/4/5), PCIe Gen5 to the host",
          hgx_params().docs(), make_hgx};
}

}  // namespace snsim::topologies
