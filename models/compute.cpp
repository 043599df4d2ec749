#include "models/compute.hpp"

#include <algorithm>

namespace snsim::models {
namespace {

// 788 TFLOP/s on an 8192^3 bf16 GEMM on our H200s, of 989 peak (80 %) [meas: device/KINDS.md, 2026-10-28].
constexpr double FLOP_EFFICIENCY = 0.8;
// 4.3 TB/s device-to-device copy counting reads and writes, of 4.8 TB/s (90 %) [meas: device/KINDS.md].
constexpr double HBM_EFFICIENCY = 0.9;
// Kernel launch overhead [unverified default; the probe's `launch` family measures it].
constexpr double LAUNCH_US = 2.5;
// Share of the SMs that an SM-driven copy or a collective kernel holds while it runs [estimate: NCCL runs one CTA
// per channel, one SM each, and uses 16-32 channels on NVLink4 machines (NCCL_MIN/MAX_CTAS); DeepEP's intranode
// kernels are tuned at 24 SMs (reference/hardware.md, DeepEP); 24 of the H100/H200's 132 SMs].
constexpr double COMM_SM_SHARE = 24.0 / 132.0;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<ComputeModel>();
  m->flop_efficiency = node.optional<double>("flop_efficiency", FLOP_EFFICIENCY);
  check_between(node, "flop_efficiency", m->flop_efficiency, 0.01, 1.0);
  m->hbm_efficiency = node.optional<double>("hbm_efficiency", HBM_EFFICIENCY);
  check_between(node, "hbm_efficiency", m->hbm_efficiency, 0.01, 1.0);
  m->launch = node.optional<Seconds>("launch", Seconds{LAUNCH_US * 1e-6});
  m->comm_sm_share = node.optional<double>("comm_sm_share", COMM_SM_SHARE);
  check_between(node, "comm_sm_share", m->comm_sm_share, 0.0, 0.99);
  return m;
}
}  // namespace

Seconds ComputeModel::math_time(const GpuSpec& gpu, Flops flops, double flop_rate, Dtype dtype) const {
  return flops / (gpu.peak(dtype).value_or(gpu.dense_bf16) * (flop_efficiency * flop_rate));
}

Seconds ComputeModel::memory_time(const GpuSpec& gpu, Bytes bytes, double hbm_rate) const {
  return bytes / (gpu.hbm_bandwidth * (hbm_efficiency * hbm_rate));
}

Seconds ComputeModel::time(const GpuSpec& gpu, Flops flops, Bytes bytes, double flop_rate, double hbm_rate,
                           Dtype dtype) const {
  return launch + std::max(math_time(gpu, flops, flop_rate, dtype), memory_time(gpu, bytes, hbm_rate));
}

Registry<Model>::Entry compute_model_entry() {
  return {"compute",
          "roofline GPU compute: max(flops / achieved peak, bytes / achieved HBM bandwidth) + launch",
          {
              {"flop_efficiency", "fraction", "0.8", "share of peak bf16 rate reached [meas 788/989 TFLOP/s H200]"},
              {"hbm_efficiency", "fraction", "0.9", "share of HBM bandwidth reached [meas 4.3/4.8 TB/s H200]"},
              {"launch", "time", "2.5us", "kernel launch overhead per compute op"},
              {"comm_sm_share", "fraction", "0.182",
               "share of SMs an SM copy or collective kernel takes from compute [est. 24 of 132 SMs, NCCL/DeepEP]"},
          },
          make};
}

}  // namespace snsim::models
