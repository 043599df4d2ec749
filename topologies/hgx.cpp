#include "topologies/hgx.hpp"

#include <array>

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {
using namespace snsim::literals;

// NVLink4: 25 GB/s per link per direction, 18 links per GPU, 450 GB/s per GPU per direction [spec: NVIDIA NVLink
// page; reference/hardware.md §1.1]. The 5/4/4/5 split of a GPU's links over the 4 NVSwitch3 chips is reported for
// HGX H100 [unverified from a primary source, hardware.md §1.2]; it matters only when a plane fails.
constexpr std::array<int, 4> LINKS_PER_PLANE{5, 4, 4, 5};
constexpr double NVLINK4_LANE_GBPS = 25.0;
// NVSwitch3 reduces in the switch (NVLink SHARP, NVLS) [spec: hardware.md §1.2]; NCCL enables NVLS on Hopper HGX and
// models its rate at nvlsEfficiency = 0.85 of the link rate [model: NVIDIA/nccl src/graph/tuning.cc].
constexpr double NVSWITCH3_REDUCTION = 0.85;
// NVSwitch3: 64 NVLink4 ports per chip [spec: hardware.md §1.2]; HGX uses at most 8 x 5 = 40 of them.
constexpr int NVSWITCH3_PORTS = 64;
// NVMe drive: a PCIe Gen5 x4 enterprise SSD reads 14 GB/s sequentially (writes 10 GB/s, taken as 14 here: one rate
// per link) with a typical read latency of 60 us [spec: Micron 9550 datasheet, via the StorageReview 9550 MAX review].
constexpr double NVME_GEN5_X4_GBPS = 14.0;
constexpr double NVME_READ_LATENCY_US = 60.0;

class Hgx final : public Topology {
 public:
  GpuSpec gpu;
  int gpus = 8;
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

std::unique_ptr<Topology> make_hgx(const ConfigNode& node) {
  auto t = std::make_unique<Hgx>();
  t->gpu = gpu_preset(node, node.optional<std::string>("gpu", "h200"));
  t->gpus = node.optional<int>("gpus", 8);
  check_between(node, "gpus", t->gpus, 2, 8);
  t->nvlink_bandwidth = node.optional<BytesPerSecond>("nvlink_bandwidth", BytesPerSecond{NVLINK4_LANE_GBPS * 1e9});
  check_positive(node, "nvlink_bandwidth", t->nvlink_bandwidth);
  t->nvlink_latency = node.optional<Seconds>("nvlink_latency", Seconds{NVLINK_HOP_NS * 1e-9});
  t->pcie_bandwidth = node.optional<BytesPerSecond>("pcie_bandwidth", BytesPerSecond{PCIE5_X16_GBPS * 1e9});
  check_positive(node, "pcie_bandwidth", t->pcie_bandwidth);
  t->pcie_latency = node.optional<Seconds>("pcie_latency", Seconds{PCIE_HOP_NS * 1e-9});
  t->nvme_drives = node.optional<int>("nvme_drives", 0);
  check_between(node, "nvme_drives", t->nvme_drives, 0, 64);
  t->nvme_bandwidth = node.optional<BytesPerSecond>("nvme_bandwidth", BytesPerSecond{NVME_GEN5_X4_GBPS * 1e9});
  check_positive(node, "nvme_bandwidth", t->nvme_bandwidth);
  t->nvme_latency = node.optional<Seconds>("nvme_latency", Seconds{NVME_READ_LATENCY_US * 1e-6});
  return t;
}
}  // namespace

Registry<Topology>::Entry hgx_entry() {
  return {"hgx",
          "HGX H100/H200 SXM: 2-8 GPUs, 18 NVLink4 links each over 4 NVSwitch planes (5/4/4/5), PCIe Gen5 to the host",
          {
              {"gpu", "h100|h200", "h200", "GPU model (sets compute rate, HBM bandwidth and memory)"},
              {"gpus", "GPUs", "8", "number of GPUs, 2-8"},
              {"nvlink_bandwidth", "bytes/s per link per direction", "25GBps", "NVLink4 line rate of one link"},
              {"nvlink_latency", "time per hop", "177ns", "wire and switch traversal of one hop"},
              {"pcie_bandwidth", "bytes/s per direction", "63GBps", "PCIe Gen5 x16 to the host"},
              {"pcie_latency", "time per hop", "500ns", "PCIe traversal of one hop"},
              {"nvme_drives", "drives", "0",
               "NVMe drives on the host's PCIe root, read and written with copy from/to nvme"},
              {"nvme_bandwidth", "bytes/s per drive per direction", "14GBps", "PCIe Gen5 x4 drive, sequential read"},
              {"nvme_latency", "time", "60us", "a drive's typical read latency"},
          },
          make_hgx};
}

}  // namespace snsim::topologies
