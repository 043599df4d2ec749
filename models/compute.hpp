// GPU compute as a roofline: an op of F flops touching B bytes of HBM takes the longer of F / (peak x efficiency)
// and B / (HBM bandwidth x efficiency), plus a kernel launch. Peaks come from the GPU in the Fabric; per-GPU rate
// factors (clock and HBM variation, slow GPUs: models/jitter.hpp) scale the two sides separately.
//
// The Runner runs the two sides concurrently -- the FLOP side as work on the GPU's host, the HBM side as bytes
// through the GPU's HBM link -- and the kernel ends when both are done: alone, that is exactly the roofline above;
// next to a transfer that also crosses the HBM link, or next to SM-driven copies and collective kernels that take
// a share of the SMs, each side slows by what it loses (max-min), as on the chip.
#pragma once

#include "models/model.hpp"
#include "sim/fabric.hpp"

namespace snsim::models {

/// A GPU's recent tensor duty cycle: the share of time its tensor cores worked, as a moving average.
struct TensorDuty {
  double value = 0;  // 0 idle .. 1 always busy
  Seconds updated;   // simulated time of the last update
};

/// Every parameter is set by compute_params(), where its default, range and source are declared.
class ComputeModel final : public Model {
 public:
  double flop_efficiency = 0;  // achieved share of the peak tensor rate on large GEMMs
  double hbm_efficiency = 0;   // achieved share of peak HBM bandwidth on streaming kernels
  Seconds launch;              // kernel launch overhead per compute op (the host submits it)
  Seconds queue_gap;           // per kernel queued behind another on the same stream (the host is ahead)
  double comm_sm_share = 0;    // share of the SMs an SM-driven copy or a collective kernel takes from compute
  // Power-capped clocks: a GPU keeps its boost clock while its tensor duty cycle stays at or below `power_duty`
  // (what its power limit sustains at full clock); above, the clock drops to (power_duty / duty)^(1/power_exponent)
  // of boost (dynamic power grows with the clock faster than linearly). The duty is a moving average over
  // `power_window`. power_duty >= 1: never throttled.
  double power_duty = 0;
  double power_exponent = 0;
  Seconds power_window;

  /// The clock factor (<= 1) of a kernel starting at `now` on a GPU with this recent duty.
  double clock_factor(const TensorDuty& duty, Seconds now) const;
  /// Adds a kernel that ran from `start` to `end` with its tensor cores busy `tensor_share` of the time.
  void account(TensorDuty& duty, Seconds start, Seconds end, double tensor_share) const;

  /// The FLOP side alone: flops / (the dtype's peak x efficiency x flop_rate), flop_rate the GPU's rate factor. The
  /// GPU must have a peak for `dtype` (checked when programs are parsed).
  Seconds math_time(const GpuSpec& gpu, Flops flops, double flop_rate = 1, Dtype dtype = Dtype::bf16) const;
  /// The HBM side alone: bytes / (HBM bandwidth x efficiency x hbm_rate).
  Seconds memory_time(const GpuSpec& gpu, Bytes bytes, double hbm_rate = 1) const;
  /// The fixed cost of a kernel: its launch, or the queue gap when it is queued behind another (`pipelined`).
  Seconds fixed_cost(bool pipelined) const { return pipelined ? queue_gap : launch; }
  /// A lone kernel: launch + max(math_time, memory_time).
  Seconds time(const GpuSpec& gpu, Flops flops, Bytes bytes, double flop_rate = 1, double hbm_rate = 1,
               Dtype dtype = Dtype::bf16) const;
};

/// The parameters of models.compute, declared once.
const ParamTable<ComputeModel>& compute_params();
Registry<Model>::Entry compute_model_entry();

}  // namespace snsim::models
