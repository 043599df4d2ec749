// What kind of work a kernel is, from its name, and how long it takes on another GPU: the recorded duration re-timed
// by the compute model, each GPU with its calibrated parameters (docs/replay.md#kernel-cost).
#pragma once

#include <memory>
#include <string_view>

#include "models/compute.hpp"
#include "sim/fabric.hpp"

namespace snsim::workloads::replay {

enum class KernelClass {
  gemm,       // tensor-core matrix multiplies (cuBLAS, cuBLASLt's nvjet, CUTLASS)
  attention,  // fused attention (FlashAttention, cuDNN SDPA, memory-efficient attention)
  memory,     // elementwise, reductions, norms, softmax, copies, optimizer updates: bound by HBM
  unknown,    // a name none of the above matches: costed as memory-bound
};

/// The class of a kernel named `name` (a demangled CUDA symbol as the profiler prints it).
KernelClass classify(std::string_view name);

/// Whether `name` is one of cuDNN's helpers around its attention kernels (dO . O, dQ's conversion, GQA's head sums:
/// `cudnn::fusion::...`): memory-bound, and part of the work the attention model's backward holds.
bool cudnn_attention_helper(std::string_view name);

/// The memory-bound kind a kernel named `name` is, for the share of HBM bandwidth it reaches (models/compute.hpp):
/// PyTorch's fused AdamW (multi_tensor_apply), layer and RMS norms, softmax, GeLU, cross-entropy, and their
/// backwards; PyTorch's unrolled (mixed-format) casts and adds as `widen` and `mixed_add`, its generic element-wise
/// kernel (non-contiguous operands) as `strided`; vectorised element-wise kernels, copies and everything else a
/// stream.
models::MemoryKind memory_kind(std::string_view name);

/// Re-times kernels recorded on `source` for `target` by the compute model, each GPU with its own parameter preset
/// (models.params h100, h200 or gb200, calibrated where our traces allow; the model's defaults for a GPU without
/// one), whatever parameters the run itself uses for communication: a kernel's class and recorded time stand for
/// the work it did, and the model says what that work takes on the other GPU.
/// - GEMM: the square bf16 GEMM that takes the recorded time on the source (its tiles in waves over the SMs), timed
///   on the target; attention likewise with the causal self-attention (2 x 16 heads, d 128) of that time, forward
///   or backward by the name. A GPU whose tiles the model does not know (Blackwell) takes the roofline's FLOP rate.
/// - memory-bound and unknown: the bytes the recorded time moves at the source's share of its HBM bandwidth for
///   the kernel's kind (after its ramp), moved at the target's; a kernel shorter than its ramp scales as the ramps.
/// On the GPU that ran the trace (the same preset) every kernel keeps its recorded time.
class KernelRetiming {
 public:
  KernelRetiming(const GpuSpec& source, const GpuSpec& target);
  Seconds time(KernelClass kind, std::string_view name, Seconds recorded) const;

 private:
  Seconds gemm(Seconds recorded) const;
  Seconds attention(Seconds recorded, bool backward) const;
  Seconds memory(models::MemoryKind kind, Seconds recorded) const;
  /// The roofline's FLOP side: the recorded time times the ratio of the two GPUs' achieved bf16 rates.
  Seconds math(Seconds recorded) const;

  GpuSpec source_, target_;
  std::shared_ptr<const models::ComputeModel> from_, to_;
  bool same_;
};

}  // namespace snsim::workloads::replay
