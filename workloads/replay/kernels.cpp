#include "workloads/replay/kernels.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>
#include <string>

namespace snsim::workloads::replay {
namespace {

bool contains_any(const std::string& lower, std::span<const std::string_view> words) {
  return std::ranges::any_of(words, [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

}  // namespace

KernelClass classify(std::string_view name) {
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Attention first: FlashAttention's and cuDNN's kernels also contain "gemm"-like tile names.
  static constexpr std::array<std::string_view, 6> attention{"flash", "fmha", "attention", "sdpa", "attn", "mha_"};
  static constexpr std::array<std::string_view, 8> gemm{"gemm",   "nvjet",  "cutlass", "xmma",
                                                        "cublas", "matmul", "wgmma",   "_mma"};
  // PyTorch's elementwise, reduction and indexing kernels, CUB's sorts and scans (the embedding's backward), cuDNN's
  // helpers around its attention (cudnn::fusion).
  static constexpr std::array<std::string_view, 28> memory{
      "elementwise", "reduce",        "softmax",   "norm",    "copy",        "fill",          "memset",
      "memcpy",      "index",         "embedding", "gather",  "scatter",     "adam",          "multi_tensor",
      "cat",         "cross_entropy", "nll_loss",  "dropout", "gelu",        "silu",          "gammabeta",
      "cub::",       "sort",          "scan",      "segment", "grad_weight", "cudnn::fusion", "unique"};
  if (contains_any(lower, attention)) return KernelClass::attention;
  if (contains_any(lower, gemm)) return KernelClass::gemm;
  if (contains_any(lower, memory)) return KernelClass::memory;
  return KernelClass::unknown;
}

double slowdown(KernelClass kind, const GpuSpec& source, const GpuSpec& target) {
  if (kind == KernelClass::gemm || kind == KernelClass::attention)
    return source.dense_bf16.count() / target.dense_bf16.count();
  return source.hbm_bandwidth.count() / target.hbm_bandwidth.count();
}

}  // namespace snsim::workloads::replay
