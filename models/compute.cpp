#include "models/compute.hpp"

#include <algorithm>
#include <cmath>

namespace snsim::models {

const ParamTable<ComputeModel>& compute_params() {
  static const ParamTable<ComputeModel> table = [] {
    ParamTable<ComputeModel> params;
    // 788 TFLOP/s on an 8192^3 bf16 GEMM on our H200s, of 989 peak (80 %) [meas: docs/hardware.md#h200-machines,
    // 2026-10-28].
    params.add({.key = "flop_efficiency",
                .unit = "fraction",
                .fallback = 0.8,
                .check = between(0.01, 1.0),
                .doc = "share of peak bf16 rate reached",
                .source = "meas 788/989 TFLOP/s H200"},
               [](ComputeModel& m) { return &m.flop_efficiency; });
    // 4.3 TB/s device-to-device copy counting reads and writes, of 4.8 TB/s (90 %) [meas:
    // docs/hardware.md#h200-machines].
    params.add({.key = "hbm_efficiency",
                .unit = "fraction",
                .fallback = 0.9,
                .check = between(0.01, 1.0),
                .doc = "share of HBM bandwidth reached",
                .source = "meas 4.3/4.8 TB/s H200"},
               [](ComputeModel& m) { return &m.hbm_efficiency; });
    // Kernel launch overhead [unverified default; the probe's `launch` family measures it].
    params.add({.key = "launch", .fallback = 2.5_us, .doc = "kernel launch overhead per compute op"},
               [](ComputeModel& m) { return &m.launch; });
    // Device-side cost of a kernel queued behind another: 1.36 us per empty kernel released from a full queue
    // on our H200s [meas: launch/empty_kernel/back_to_back_gated, validation/traces/h200/h200x1-launch.jsonl].
    params.add({.key = "queue_gap",
                .fallback = 1.36_us,
                .doc = "per kernel queued behind another on its stream (`pipelined: true`)",
                .source = "meas H200 launch family"},
               [](ComputeModel& m) { return &m.queue_gap; });
    // Power-capped clocks: off unless a parameter set says otherwise (validation/params/h200.yaml fits them from
    // GEMMs at several duty cycles). The exponent's default is the H200 fit's; the window is a model choice
    // [estimate: shorter than a training step's phases would make the clock swing within a step, which
    // nvidia-smi does not show].
    params.add({.key = "power_duty",
                .unit = "fraction",
                .fallback = 1.0,
                .check = between(0.05, 1.0),
                .doc = "tensor duty cycle the power limit sustains at boost clock; above, clocks drop (1 = never)"},
               [](ComputeModel& m) { return &m.power_duty; });
    params.add({.key = "power_exponent",
                .unit = "number",
                .fallback = 2.5,
                .check = between(0.5, 10.0),
                .doc = "clock factor = (power_duty / duty)^(1/exponent) above it"},
               [](ComputeModel& m) { return &m.power_exponent; });
    params.add({.key = "power_window",
                .fallback = 10_ms,
                .check = positive,
                .doc = "moving-average window of the tensor duty cycle"},
               [](ComputeModel& m) { return &m.power_window; });
    // Share of the SMs that an SM-driven copy or a collective kernel holds while it runs [estimate: NCCL runs
    // one CTA per channel, one SM each, and uses 16-32 channels on NVLink4 machines (NCCL_MIN/MAX_CTAS);
    // DeepEP's intranode kernels are tuned at 24 SMs (docs/hardware.md#gpus, DeepEP); 24 of the H100/H200's
    // 132 SMs].
    params.add({.key = "comm_sm_share",
                .unit = "fraction",
                .fallback = 24.0 / 132.0,
                .check = between(0.0, 0.99),
                .doc = "share of SMs an SM copy or collective kernel takes from compute",
                .source = "est. 24 of 132 SMs, NCCL/DeepEP"},
               [](ComputeModel& m) { return &m.comm_sm_share; });
    return params;
  }();
  return table;
}

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
  return model_entry("compute",
                     "roofline GPU compute: max(flops / achieved peak, bytes / achieved HBM bandwidth) + launch",
                     compute_params());
}

}  // namespace snsim::models
