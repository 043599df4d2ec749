#include "topologies/gpus.hpp"

#include <map>

#include <fmt/ranges.h>

namespace snsim::topologies {
namespace {
using namespace snsim::literals;

struct Preset {
  std::string name;
  GpuSpec spec;
};

// Dense BF16 tensor rate and HBM bandwidth are datasheet peaks (NVIDIA H100 and H200 SXM datasheets: 989 TFLOP/s
// dense BF16; HBM3 3.35 TB/s, HBM3e 4.8 TB/s). H200 memory is what `nvidia-smi` reports on our machines
// (143,771 MiB, reference/gpu-machine.md); H100 SXM is 80 GiB class (81,559 MiB reported). L2: 50 MB on H100 SXM5
// [spec: NVIDIA H100 Tensor Core GPU Architecture whitepaper]; 60 MiB on our H200s (the probe's trace headers,
// cudaDeviceProp::l2CacheSize); Blackwell L2 is not modelled (0).
// Blackwell [spec, not in reference/hardware.md]: B200 (HGX B200 datasheet) 2.25 PFLOP/s dense BF16, HBM3e 8 TB/s,
// 180 GB (1,440 GB per 8 GPUs); GB200 (GB200 NVL72 datasheet, per GPU of 72) 2.5 PFLOP/s dense BF16 (180 PFLOP/s per
// rack), 8 TB/s (576 TB/s per rack), 186 GB (13.4 TB per rack).
const std::vector<Preset>& presets() {
  // Dense peaks per format (the datasheets print sparse tensor rates too: dense is half of those).
  // Hopper (H100 / H200 SXM datasheets): FP64 tensor 67 TF, FP32 67 TF, TF32 494.5 TF, FP16 989.5 TF, FP8 1,979 TF.
  const std::map<Dtype, FlopsPerSecond> hopper{{Dtype::fp64, FlopsPerSecond{67e12}},
                                               {Dtype::fp32, FlopsPerSecond{67e12}},
                                               {Dtype::tf32, FlopsPerSecond{494.5e12}},
                                               {Dtype::fp16, FlopsPerSecond{989e12}},
                                               {Dtype::fp8, FlopsPerSecond{1979e12}}};
  // Blackwell (HGX B200 and GB200 NVL72 datasheets, per GPU, dense): B200 FP64 40 TF, TF32 1.1 PF, FP16 2.25 PF,
  // FP8 4.5 PF; GB200 FP64 45 TF (3,240 TF per rack), TF32 1.25 PF, FP16 2.5 PF, FP8 5 PF (360 PF dense per rack).
  // No dense FP32 figure is published for them: kernels in fp32 on these presets are refused.
  const std::map<Dtype, FlopsPerSecond> b200{{Dtype::fp64, FlopsPerSecond{40e12}},
                                             {Dtype::tf32, FlopsPerSecond{1.1e15}},
                                             {Dtype::fp16, FlopsPerSecond{2.25e15}},
                                             {Dtype::fp8, FlopsPerSecond{4.5e15}}};
  const std::map<Dtype, FlopsPerSecond> gb200{{Dtype::fp64, FlopsPerSecond{45e12}},
                                              {Dtype::tf32, FlopsPerSecond{1.25e15}},
                                              {Dtype::fp16, FlopsPerSecond{2.5e15}},
                                              {Dtype::fp8, FlopsPerSecond{5e15}}};
  static const std::vector<Preset> table{
      {"b200", {"b200", FlopsPerSecond{2.25e15}, BytesPerSecond{8e12}, Bytes{180'000'000'000ull}, Bytes{0}, b200}},
      {"gb200", {"gb200", FlopsPerSecond{2.5e15}, BytesPerSecond{8e12}, Bytes{186'000'000'000ull}, Bytes{0}, gb200}},
      {"h100",
       {"h100", FlopsPerSecond{989e12}, BytesPerSecond{3.35e12}, Bytes{81559ull << 20}, Bytes{50'000'000}, hopper}},
      {"h200",
       {"h200", FlopsPerSecond{989e12}, BytesPerSecond{4.8e12}, Bytes{143771ull << 20}, Bytes{60ull << 20}, hopper}},
  };
  return table;
}
}  // namespace

Nvlink5Links parse_nvlink5_links(const ConfigNode& node) {
  Nvlink5Links links;
  links.bandwidth = node.optional<BytesPerSecond>("nvlink_bandwidth", BytesPerSecond{NVLINK5_LANE_GBPS * 1e9});
  check_positive(node, "nvlink_bandwidth", links.bandwidth);
  links.latency = node.optional<Seconds>("nvlink_latency", Seconds{NVLINK_HOP_NS * 1e-9});
  links.nvls_efficiency = node.optional<double>("nvls_efficiency", RACK_NVLS_EFFICIENCY);
  check_between(node, "nvls_efficiency", links.nvls_efficiency, 0.0, 1.0);
  return links;
}

BytesPerSecond parse_c2c_bandwidth(const ConfigNode& node) {
  const auto c2c = node.optional<BytesPerSecond>("c2c_bandwidth", BytesPerSecond{C2C_GBPS * 1e9});
  check_positive(node, "c2c_bandwidth", c2c);
  return c2c;
}

GpuSpec gpu_preset(const ConfigNode& node, const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p.spec;
  node.fail_key("gpu", fmt::format("unknown GPU '{}'; known: {}", name, fmt::join(gpu_preset_names(), ", ")));
}

std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

}  // namespace snsim::topologies
