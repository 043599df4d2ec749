#include "models/compute.hpp"

#include <algorithm>
#include <cmath>

namespace snsim::models {
namespace {

// 788 TFLOP/s on an 8192^3 bf16 GEMM on our H200s, of 989 peak (80 %) [meas: device/KINDS.md, 2026-10-28].
constexpr double FLOP_EFFICIENCY = 0.8;
// 4.3 TB/s device-to-device copy counting reads and writes, of 4.8 TB/s (90 %) [meas: device/KINDS.md].
constexpr double HBM_EFFICIENCY = 0.9;
// Kernel launch overhead [unverified default; the probe's `launch` family measures it].
constexpr double LAUNCH_US = 2.5;
// Device-side cost of a kernel queued behind another: 1.36 us per empty kernel released from a full queue on our
// H200s [meas: launch/empty_kernel/back_to_back_gated, validation/traces/h200/h200x1-launch.jsonl].
constexpr double QUEUE_GAP_US = 1.36;
// Share of the SMs that an SM-driven copy or a collective kernel holds while it runs [estimate: NCCL runs one CTA
// per channel, one SM each, and uses 16-32 channels on NVLink4 machines (NCCL_MIN/MAX_CTAS); DeepEP's intranode
// kernels are tuned at 24 SMs (reference/hardware.md, DeepEP); 24 of the H100/H200's 132 SMs].
constexpr double COMM_SM_SHARE = 24.0 / 132.0;
// Power-capped clocks: off unless a parameter set says otherwise (validation/params/h200.yaml fits them from GEMMs at
// several duty cycles). The exponent's default is the H200 fit's; the window is a model choice [estimate: shorter
// than a training step's phases would make the clock swing within a step, which nvidia-smi does not show].
constexpr double POWER_DUTY = 1;
constexpr double POWER_EXPONENT = 2.5;
constexpr double POWER_WINDOW_MS = 10;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<ComputeModel>();
  m->flop_efficiency = node.optional<double>("flop_efficiency", FLOP_EFFICIENCY);
  check_between(node, "flop_efficiency", m->flop_efficiency, 0.01, 1.0);
  m->hbm_efficiency = node.optional<double>("hbm_efficiency", HBM_EFFICIENCY);
  check_between(node, "hbm_efficiency", m->hbm_efficiency, 0.01, 1.0);
  m->launch = node.optional<Seconds>("launch", Seconds{LAUNCH_US * 1e-6});
  m->queue_gap = node.optional<Seconds>("queue_gap", Seconds{QUEUE_GAP_US * 1e-6});
  m->comm_sm_share = node.optional<double>("comm_sm_share", COMM_SM_SHARE);
  check_between(node, "comm_sm_share", m->comm_sm_share, 0.0, 0.99);
  m->power_duty = node.optional<double>("power_duty", POWER_DUTY);
  check_between(node, "power_duty", m->power_duty, 0.05, 1.0);
  m->power_exponent = node.optional<double>("power_exponent", POWER_EXPONENT);
  check_between(node, "power_exponent", m->power_exponent, 0.5, 10.0);
  m->power_window = node.optional<Seconds>("power_window", Seconds{POWER_WINDOW_MS * 1e-3});
  if (!(m->power_window.count() > 0)) node.fail_key("power_window", "must be > 0");
  return m;
}
}  // namespace

Seconds ComputeModel::math_time(const GpuSpec& gpu, Flops flops, double flop_rate, Dtype dtype) const {
  return flops / (gpu.peak(dtype).value_or(gpu.dense_bf16) * (flop_efficiency * flop_rate));
}

Seconds ComputeModel::memory_time(const GpuSpec& gpu, Bytes bytes, double hbm_rate) const {
  return bytes / (gpu.hbm_bandwidth * (hbm_efficiency * hbm_rate));
}

double ComputeModel::clock_factor(const TensorDuty& duty, Seconds now) const {
  if (power_duty >= 1) return 1.0;  // never throttled: no duty to follow
  const double d = duty.value * std::exp(-(now - duty.updated).count() / power_window.count());
  return d <= power_duty ? 1.0 : std::pow(power_duty / d, 1 / power_exponent);
}

void ComputeModel::account(TensorDuty& duty, Seconds start, Seconds end, double tensor_share) const {
  if (power_duty >= 1) return;
  const double span = (end - duty.updated).count();
  if (!(span > 0)) return;
  const double busy = std::min(1.0, tensor_share * (end - start).count() / span);
  const double keep = std::exp(-span / power_window.count());
  duty.value = duty.value * keep + busy * (1 - keep);
  duty.updated = end;
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
              {"queue_gap", "time", "1.36us",
               "per kernel queued behind another on its stream (`pipelined: true`) [meas H200 launch family]"},
              {"power_duty", "fraction", "1",
               "tensor duty cycle the power limit sustains at boost clock; above, clocks drop (1 = never)"},
              {"power_exponent", "number", "2.5", "clock factor = (power_duty / duty)^(1/exponent) above it"},
              {"power_window", "time", "10ms", "moving-average window of the tensor duty cycle"},
              {"comm_sm_share", "fraction", "0.182",
               "share of SMs an SM copy or collective kernel takes from compute [est. 24 of 132 SMs, NCCL/DeepEP]"},
          },
          make};
}

}  // namespace snsim::models
