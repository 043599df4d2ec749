#include "workloads/replay/kernels.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <span>
#include <string>

#include "models/models.hpp"
#include "models/params.hpp"
#include "sim/config.hpp"

namespace snsim::workloads::replay {
namespace {

std::string lowercase(std::string_view name) {
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

bool contains_any(const std::string& lower, std::span<const std::string_view> words) {
  return std::ranges::any_of(words, [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

}  // namespace

KernelClass classify(std::string_view name) {
  const std::string lower = lowercase(name);
  // Attention first: FlashAttention's and cuDNN's kernels also contain "gemm"-like tile names.
  static constexpr std::array<std::string_view, 6> attention{"flash", "fmha", "attention", "sdpa", "attn", "mha_"};
  static constexpr std::array<std::string_view, 8> gemm{"gemm",   "nvjet",  "cutlass", "xmma",
                                                        "cublas", "matmul", "wgmma",   "_mma"};
  // PyTorch's elementwise, reduction and indexing kernels, CUB's sorts and scans (the embedding's backward), cuDNN's
  // helpers around its attention (cudnn::fusion).
  static constexpr std::array<std::string_view, 27> memory{
      "elementwise", "reduce", "softmax",   "norm",  "copy",         "fill", "memset",        "memcpy",      "index",
      "embedding",   "gather", "scatter",   "adam",  "multi_tensor", "cat",  "cross_entropy", "nll_loss",    "dropout",
      "gelu",        "silu",   "gammabeta", "cub::", "sort",         "scan", "segment",       "grad_weight", "unique"};
  // Before attention: GQA's head sums are `fmha_reduce_head`.
  if (cudnn_attention_helper(name)) return KernelClass::memory;
  if (contains_any(lower, attention)) return KernelClass::attention;
  if (contains_any(lower, gemm)) return KernelClass::gemm;
  if (contains_any(lower, memory)) return KernelClass::memory;
  return KernelClass::unknown;
}

bool cudnn_attention_helper(std::string_view name) {
  return name.find("cudnn::fusion") != std::string_view::npos;
}

models::MemoryKind memory_kind(std::string_view name) {
  const std::string lower = lowercase(name);
  const auto has = [&](std::string_view w) { return lower.find(w) != std::string::npos; };
  const bool backward = has("backward") || has("grad") || has("bwd");
  using models::MemoryKernel;
  if (has("multi_tensor") || has("adam")) return {MemoryKernel::adamw, false};
  if (has("rms")) return {MemoryKernel::rmsnorm, backward};
  if (has("layer_norm") || has("layernorm")) return {MemoryKernel::layernorm, backward};
  if (has("gammabeta")) return {MemoryKernel::layernorm, true};  // the layer norm's weight and bias gradients
  if (has("softmax")) return {MemoryKernel::softmax, backward};
  if (has("gelu")) return {MemoryKernel::gelu, backward};
  if (has("cross_entropy") || has("nll_loss")) return {MemoryKernel::cross_entropy, backward};
  if (has("embedding")) return {MemoryKernel::embedding_grad, false};
  // PyTorch's unrolled (unvectorised) kernels are its mixed-format ones: a cast copy (bf16 to fp32, autocast's
  // gradient and master copies) and an add with operands of two formats.
  if (has("unrolled_elementwise") && has("copy")) return {MemoryKernel::widen, false};
  if (has("unrolled_elementwise") && has("add")) return {MemoryKernel::mixed_add, false};
  // Its generic element-wise kernel (neither vectorised nor unrolled) is the path for non-contiguous operands: the
  // strided views of a fused gate/up output that SwiGLU reads, rotary's halves.
  if (has("native::elementwise_kernel<")) return {MemoryKernel::strided, false};
  return {};
}

namespace {

/// The compute model of `gpu`'s parameter preset (models.params), or the defaults when it has none.
std::shared_ptr<const models::ComputeModel> preset_compute(const std::string& gpu) {
  const bool known =
      std::ranges::any_of(models::params_presets(), [&](const models::ParamsPreset& p) { return p.name == gpu; });
  auto doc = ConfigDocument::load_string(known ? "models: {params: " + gpu + "}\n" : "models: {}\n",
                                         "<the " + gpu + " parameter preset>");
  models::apply_params(*doc);
  return models::Models::load(doc->root().section("models")).compute;
}

/// The `x` in [lo, hi] (geometrically) at which the increasing `time(x)` reaches `target`; an end when outside.
template <class F>
double solve(F time, double lo, double hi, Seconds target) {
  if (time(lo) >= target) return lo;
  if (time(hi) <= target) return hi;
  for (int i = 0; i < 40 && hi / lo > 1.001; ++i) {
    const double mid = std::sqrt(lo * hi);
    (time(mid) < target ? lo : hi) = mid;
  }
  return std::sqrt(lo * hi);
}

}  // namespace

KernelRetiming::KernelRetiming(const GpuSpec& source, const GpuSpec& target)
    : source_{source},
      target_{target},
      from_{preset_compute(source.model)},
      to_{source.model == target.model ? from_ : preset_compute(target.model)},
      same_{source.model == target.model && source.dense_bf16 == target.dense_bf16 &&
            source.hbm_bandwidth == target.hbm_bandwidth && source.sms == target.sms} {}

Seconds KernelRetiming::time(KernelClass kind, std::string_view name, Seconds recorded) const {
  if (same_ || recorded <= Seconds{0}) return recorded;
  switch (kind) {
    case KernelClass::gemm:
      return gemm(recorded);
    case KernelClass::attention: {
      const std::string lower = lowercase(name);
      return attention(recorded, lower.find("bprop") != std::string::npos || lower.find("bwd") != std::string::npos ||
                                     lower.find("backward") != std::string::npos);
    }
    case KernelClass::memory:
    case KernelClass::unknown:
      return memory(memory_kind(name), recorded);
  }
  return recorded;
}

Seconds KernelRetiming::math(Seconds recorded) const {
  const Flops work{1e12};
  return recorded * (to_->math_time(target_, work) / from_->math_time(source_, work));
}

Seconds KernelRetiming::gemm(Seconds recorded) const {
  if (!models::kernels_by_shape(source_, Dtype::bf16) || !models::kernels_by_shape(target_, Dtype::bf16))
    return math(recorded);
  const auto square = [](double n) {
    const auto side = static_cast<std::int64_t>(std::llround(n));
    return models::Gemm{side, side, side};
  };
  const double n =
      solve([&](double x) { return from_->gemm_time(source_, square(x), Dtype::bf16); }, 16, 65536, recorded);
  return recorded *
         (to_->gemm_time(target_, square(n), Dtype::bf16) / from_->gemm_time(source_, square(n), Dtype::bf16));
}

Seconds KernelRetiming::attention(Seconds recorded, bool backward) const {
  if (!models::kernels_by_shape(source_, Dtype::bf16) || !models::kernels_by_shape(target_, Dtype::bf16))
    return math(recorded);
  const auto shape = [&](double seq) {
    return models::Attention{.batch = 2,
                             .heads = 16,
                             .seq = static_cast<std::int64_t>(std::llround(seq)),
                             .head_dim = 128,
                             .causal = true,
                             .backward = backward};
  };
  const double seq = solve([&](double s) { return from_->attention_time(source_, shape(s)); }, 128, 262144, recorded);
  return recorded * (to_->attention_time(target_, shape(seq)) / from_->attention_time(source_, shape(seq)));
}

Seconds KernelRetiming::memory(models::MemoryKind kind, Seconds recorded) const {
  const Seconds ramp = from_->memory_ramp;
  if (recorded <= ramp || ramp <= Seconds{0})
    return ramp > Seconds{0} ? recorded * (to_->memory_ramp / ramp) : recorded;
  const Bytes bytes{
      static_cast<std::uint64_t>((recorded - ramp).count() * source_.hbm_bandwidth.count() * from_->efficiency(kind))};
  return to_->memory_time(target_, bytes, 1, kind);
}

}  // namespace snsim::workloads::replay
