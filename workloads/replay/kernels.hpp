// What kind of work a kernel is, from its name, and how much faster or slower it runs on another GPU: the recorded
// duration scaled by the ratio of the two GPUs' peaks for that kind (docs/replay.md#kernel-cost).
#pragma once

#include <string_view>

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

/// How many times longer a kernel of `kind` runs on `target` than on `source`: the ratio of their dense BF16 peaks
/// for GEMM and attention, of their HBM bandwidths for the rest.
double slowdown(KernelClass kind, const GpuSpec& source, const GpuSpec& target);

}  // namespace snsim::workloads::replay
