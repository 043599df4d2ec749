#include "topologies/gpus.hpp"

#include <algorithm>
#include <map>

#include <fmt/ranges.h>

namespace snsim::topologies {
namespace {

// Dense BF16 tensor rate and HBM bandwidth are datasheet peaks (NVIDIA H100 and H200 SXM datasheets: 989 TFLOP/s
// dense BF16; HBM3 3.35 TB/s, HBM3e 4.8 TB/s). H200 memory is what `nvidia-smi` reports on our machines
// (143,771 MiB, docs/hardware.md#h200-machines); H100 SXM is 80 GiB class (81,559 MiB reported). L2: 50 MB on H100 SXM5
// [spec: NVIDIA H100 Tensor Core GPU Architecture whitepaper]; 60 MiB on our H200s (H200_L2); Blackwell L2 is not
// modelled (0).
// Blackwell [spec, docs/hardware.md#gpus]: B200 (HGX B200 datasheet) 2.25 PFLOP/s dense BF16, HBM3e 8 TB/s,
// 180 GB (1,440 GB per 8 GPUs); GB200 (GB200 NVL72 datasheet, per GPU of 72) 2.5 PFLOP/s dense BF16 (180 PFLOP/s per
// rack), 8 TB/s (576 TB/s per rack), 186 GB (13.4 TB per rack).
const std::vector<GpuSpec>& presets() {
  // Dense peaks per format (the datasheets print sparse tensor rates too: dense is half of those).
  // Hopper (H100 / H200 SXM datasheets): FP64 tensor 67 TF, FP32 67 TF, TF32 494.5 TF, FP16 989.5 TF, FP8 1,979 TF.
  const std::map<Dtype, FlopsPerSecond> hopper{{Dtype::fp64, 67_TFLOPps},
                                               {Dtype::fp32, 67_TFLOPps},
                                               {Dtype::tf32, 494.5_TFLOPps},
                                               {Dtype::fp16, 989_TFLOPps},
                                               {Dtype::fp8, 1979_TFLOPps}};
  // Blackwell (HGX B200 and GB200 NVL72 datasheets, per GPU, dense): B200 FP64 40 TF, TF32 1.1 PF, FP16 2.25 PF,
  // FP8 4.5 PF; GB200 FP64 45 TF (3,240 TF per rack), TF32 1.25 PF, FP16 2.5 PF, FP8 5 PF (360 PF dense per rack).
  // No dense FP32 figure is published for them: kernels in fp32 on these presets are refused.
  const std::map<Dtype, FlopsPerSecond> b200{
      {Dtype::fp64, 40_TFLOPps}, {Dtype::tf32, 1100_TFLOPps}, {Dtype::fp16, 2.25_PFLOPps}, {Dtype::fp8, 4.5_PFLOPps}};
  const std::map<Dtype, FlopsPerSecond> gb200{
      {Dtype::fp64, 45_TFLOPps}, {Dtype::tf32, 1.25_PFLOPps}, {Dtype::fp16, 2.5_PFLOPps}, {Dtype::fp8, 5_PFLOPps}};
  // SMs and boost clock: 132 SMs at 1,980 MHz on H100 and H200 SXM (the H100 whitepaper; our H200s report 132 SMs
  // and a 1,980 MHz maximum SM clock, validation/traces/h200/h200x1-compute.jsonl). Blackwell: 148 SMs [estimate:
  // published microbenchmarks of B200; unvalidated], boost clock not published (0: records timed at a read clock
  // cannot be compared on them).
  static const std::vector<GpuSpec> table{
      {"b200", 2.25_PFLOPps, 8_TBps, 180_GB, 0_B, b200, 148, 0},
      {"gb200", 2.5_PFLOPps, 8_TBps, 186_GB, 0_B, gb200, 148, 0},
      {"h100", 989_TFLOPps, 3.35_TBps, 81559_MiB, 50_MB, hopper, 132, 1980},
      {"h200", 989_TFLOPps, 4.8_TBps, 143771_MiB, H200_L2, hopper, 132, 1980},
  };
  return table;
}
}  // namespace

const ParamTable<Nvlink5Links>& nvlink5_params() {
  static const ParamTable<Nvlink5Links> table = [] {
    ParamTable<Nvlink5Links> params;
    params.add({.key = "nvlink_bandwidth",
                .unit = "bytes/s per link per direction",
                .fallback = NVLINK5_LANE,
                .check = positive,
                .doc = "NVLink5 line rate of one link"},
               [](Nvlink5Links& l) { return &l.bandwidth; });
    params.add({.key = "nvlink_latency",
                .unit = "time per hop",
                .fallback = NVLINK_HOP,
                .doc = "wire and switch traversal of one hop",
                .source = "NVLink4's on H200, unverified on NVLink5"},
               [](Nvlink5Links& l) { return &l.latency; });
    params.add({.key = "nvls_efficiency",
                .unit = "fraction",
                .fallback = RACK_NVLS_EFFICIENCY,
                .check = between(0.0, 1.0),
                .doc = "in-switch reduction rate share; 0 = no NVLS",
                .source = "fits the 72-GPU rack, coreweave nccl-tests PR #43; NCCL Blackwell 0.74"},
               [](Nvlink5Links& l) { return &l.nvls_efficiency; });
    return params;
  }();
  return table;
}

const ParamTable<BytesPerSecond>& c2c_params() {
  static const ParamTable<BytesPerSecond> table = [] {
    ParamTable<BytesPerSecond> params;
    params.add({.key = "c2c_bandwidth",
                .unit = "bytes/s per direction",
                .fallback = C2C,
                .check = positive,
                .doc = "NVLink-C2C to Grace, per GPU"},
               [](BytesPerSecond& c2c) { return &c2c; });
    return params;
  }();
  return table;
}

GpuSpec gpu_preset(const ConfigNode& node, const std::string& name) {
  for (const auto& p : presets())
    if (p.model == name) return p;
  node.fail_key("gpu", fmt::format("unknown GPU '{}'; known: {}", name, fmt::join(gpu_preset_names(), ", ")));
}

GpuSpec gpu_preset(const ConfigNode& node, const std::string& name, const std::vector<std::string>& fits,
                   std::string_view system, std::string_view hint) {
  GpuSpec gpu = gpu_preset(node, name);
  if (std::ranges::find(fits, name) == fits.end())
    node.fail_key("gpu", fmt::format("{} is built of {} GPUs, not {}{}", system, fmt::join(fits, " or "), name, hint));
  return gpu;
}

GpuSpec rack_gpu(const ConfigNode& node, const std::string& name, std::string_view system) {
  if (node.has("nvlink_bandwidth")) return gpu_preset(node, name);
  return gpu_preset(node, name, BLACKWELL_GPUS, system,
                    " (for another GPU's NVLink switch fabric, set its lane rate: nvlink_bandwidth: 25GBps for "
                    "Hopper's NVLink 4)");
}

std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.model);
  return names;
}

const std::vector<GpuSpec>& gpu_presets() {
  return presets();
}

}  // namespace snsim::topologies
