#include "models/compute.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <tuple>

#include <fmt/format.h>

namespace snsim::models {
namespace {

constexpr MemoryKernel ALL_MEMORY_KERNELS[] = {
    MemoryKernel::stream,  MemoryKernel::widen,     MemoryKernel::layernorm,      MemoryKernel::rmsnorm,
    MemoryKernel::softmax, MemoryKernel::gelu,      MemoryKernel::strided,        MemoryKernel::cross_entropy,
    MemoryKernel::adamw,   MemoryKernel::bias_grad, MemoryKernel::embedding_grad, MemoryKernel::mixed_add};
static_assert(std::size(ALL_MEMORY_KERNELS) == MEMORY_KERNELS);

}  // namespace

const ParamTable<ComputeModel>& compute_params() {
  static const ParamTable<ComputeModel> table = [] {
    ParamTable<ComputeModel> params;
    // 788 TFLOP/s on an 8192^3 bf16 GEMM on our H200s, of 989 peak (80 %) [meas: docs/hardware.md#h200-machines,
    // 2026-10-28].
    params.add({.key = "flop_efficiency",
                .unit = "fraction",
                .fallback = 0.889972,
                .check = between(0.01, 1.0),
                .doc = "share of peak bf16 rate reached at boost clock",
                .source = "fit H200 step bursts at boost clock"},
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
    // The other memory-bound kinds: like a streaming kernel unless a parameter set says otherwise
    // (validation/params/h200.yaml fits them on PyTorch's kernels, compute/memory_bound).
    // Bias and embedding gradients, the mixed add and strided kernels: no H200 probe records yet (the autocast_ops
    // capture ran on an H100: validation/traces/h100); their defaults are what our H200 reached in the kernels of
    // profile_steps.py's profiled steps (validation/traces/h200-replay/*.shapes.kineto.json.gz, 2-layer GPT and Llama
    // steps of 4,096 tokens: the bias gradients' column sums of [4096, 2048-16384] bf16, 24 kernels, 2.72 GB in 1.27 ms
    // less the ramps; the embeddings' backward, the table zeroed and the rows summed, 15 of them, 5.45 GB in 4.47 ms;
    // fp32 + bf16 residual adds, 36 of them, 4.03 GB in 1.53 ms; the strided kernels of eager RoPE on the Llama step's
    // q and k heads, 144 of them, 2.92 GB in 2.08 ms) -- not the 8-layer steps the train_step twins validate on.
    const auto profiled = [](MemoryKernel kernel) -> std::optional<double> {
      if (kernel == MemoryKernel::strided) return 0.29;
      if (kernel == MemoryKernel::bias_grad) return 0.46;
      if (kernel == MemoryKernel::embedding_grad) return 0.255;
      if (kernel == MemoryKernel::mixed_add) return 0.55;
      return std::nullopt;
    };
    for (const auto kernel : ALL_MEMORY_KERNELS) {
      if (kernel == MemoryKernel::stream) continue;
      const auto index = static_cast<std::size_t>(kernel);
      const auto share = profiled(kernel);
      params.add({.key = fmt::format("memory_efficiency.{}", to_string(kernel)),
                  .unit = "fraction",
                  .fallback = share.value_or(0.9),
                  .check = between(0.01, 1.0),
                  .doc = fmt::format("share of HBM bandwidth a {} kernel reaches", to_string(kernel)),
                  .source = share ? "meas H200 profiled steps (h200-replay kineto)" : ""},
                 [index](ComputeModel& m) { return &m.memory_efficiency[index]; });
      if (!has_backward(kernel)) continue;
      params.add({.key = fmt::format("memory_efficiency.{}_backward", to_string(kernel)),
                  .unit = "fraction",
                  .fallback = 0.9,
                  .check = between(0.01, 1.0),
                  .doc = fmt::format("share of HBM bandwidth a {} backward kernel reaches", to_string(kernel))},
                 [index](ComputeModel& m) { return &m.memory_efficiency_backward[index]; });
    }
    params.add({.key = "memory_ramp",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "per memory-bound kernel: the first wave's start and the last one's drain"},
               [](ComputeModel& m) { return &m.memory_ramp; });
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
    // Power-capped clocks: the defaults are our H200 fit (validation/params/h200.yaml: the exponent from GEMM bursts at
    // several duty cycles, the duty from sustained GEMMs on normal data), as the GEMM model's are; a parameter set
    // without data for its GPU turns them off (power_duty: 1, gb200.yaml). The window is a model choice
    // [estimate: shorter than a training step's phases would make the clock swing within a step, which
    // nvidia-smi does not show].
    params.add({.key = "power_duty",
                .unit = "fraction",
                .fallback = 0.462124,
                .check = between(0.05, 1.0),
                .doc = "tensor duty cycle the power limit sustains at boost clock; above, clocks drop (1 = never)"},
               [](ComputeModel& m) { return &m.power_duty; });
    params.add({.key = "power_exponent",
                .unit = "number",
                .fallback = 2.41202,
                .check = between(0.5, 10.0),
                .doc = "clock factor = (power_duty / duty)^(1/exponent) above it"},
               [](ComputeModel& m) { return &m.power_exponent; });
    params.add({.key = "power_window",
                .fallback = 10_ms,
                .check = positive,
                .doc = "moving-average window of the tensor duty cycle"},
               [](ComputeModel& m) { return &m.power_window; });
    // A tensor core's power follows its operands' toggling bits: on H200, bf16 GEMMs of constants or small
    // integers hold higher clocks than on normal data at the same power cap (docs/models-and-validation.md#power-data).
    params.add(
        {.key = "low_entropy_power",
         .unit = "fraction",
         .fallback = 0.622126,
         .check = between(0.05, 1.0),
         .doc = "power per tensor duty on low-entropy operands (constants, small integers), relative to normal data"},
        [](ComputeModel& m) { return &m.low_entropy_power; });
    // What a probe record's clock reading says of the tensor rate (ComputeModel::boost_reading_rate): the H200 fit,
    // the elasticity with the GEMM model, the rate at a reported boost clock from the GEMM bursts that never reach the
    // power cap (validation/fits/compute_fit.cpp, docs/models-and-validation.md#clock-readings). Only twins of
    // records with a reading use them.
    params.add({.key = "clock_elasticity",
                .unit = "number",
                .fallback = 0.556484,
                .check = between(0.0, 1.0),
                .doc = "a tensor kernel timed with a clock reading runs at a rate ~ (the SM clock NVML reported / "
                       "boost)^this (1: the reading is the rate)",
                .source = "fit H200 compute/gemm"},
               [](ComputeModel& m) { return &m.clock_elasticity; });
    params.add({.key = "boost_reading_rate",
                .unit = "fraction",
                .fallback = 0.883799,
                .check = between(0.3, 1.0),
                .doc = "rate, as a share of the unthrottled one, of a tensor kernel while NVML reports the boost clock "
                       "under load",
                .source = "fit H200 step/gemm bursts"},
               [](ComputeModel& m) { return &m.boost_reading_rate; });
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
    // GEMMs by shape: fitted on cuBLASLt GEMMs of transformer shapes, grids and skinny shapes on our H200 (the
    // calibration half of compute/gemm in validation/traces/h200/h200x1-compute*.jsonl, validation/fits/
    // compute_fit.cpp; the defaults are that fit's values).
    const auto gemm_efficiency = [&](std::string key, double fallback, std::string doc, double ComputeModel::*field) {
      params.add({.key = std::move(key),
                  .unit = "fraction",
                  .fallback = fallback,
                  .check = between(0.01, 1.2),
                  .doc = std::move(doc),
                  .source = "fit H200 compute/gemm"},
                 [field](ComputeModel& m) { return &(m.*field); });
    };
    gemm_efficiency("gemm_efficiency", 0.9652, "share of an SM's peak MMA rate a bf16/fp16 GEMM tile reaches",
                    &ComputeModel::gemm_efficiency);
    gemm_efficiency("gemm_efficiency_fp8", 0.9483, "the same for fp8 operands", &ComputeModel::gemm_efficiency_fp8);
    gemm_efficiency("gemm_efficiency_tf32", 0.9888, "the same for tf32 operands, both K-major (TN)",
                    &ComputeModel::gemm_efficiency_tf32);
    gemm_efficiency("gemm_efficiency_tf32_one_transpose", 0.9326, "tf32 with one operand to transpose (NN, TT)",
                    &ComputeModel::gemm_efficiency_tf32_one_transpose);
    gemm_efficiency("gemm_efficiency_tf32_two_transposes", 0.5954, "tf32 with both operands to transpose (NT)",
                    &ComputeModel::gemm_efficiency_tf32_two_transposes);
    gemm_efficiency("gemm_efficiency_unaligned", 0.1551,
                    "share of the peak a GEMM reaches when a dimension is no 16-byte multiple (no TMA)",
                    &ComputeModel::gemm_efficiency_unaligned);
    params.add({.key = "gemm_operand_feed_tf32",
                .unit = "bytes/s",
                .fallback = 11.48_TBps,
                .check = positive,
                .doc = "rate at which the SMs together take in tf32 operand panels (binds skinny tf32 tiles)",
                .source = "fit H200 compute/gemm"},
               [](ComputeModel& m) { return &m.gemm_operand_feed_tf32; });
    params.add({.key = "gemm_tile_overhead",
                .fallback = 1.613_us,
                .check = non_negative,
                .doc = "per GEMM tile at boost clock: pipeline fill and epilogue",
                .source = "fit H200 compute/gemm"},
               [](ComputeModel& m) { return &m.gemm_tile_overhead; });
    params.add({.key = "gemm_ramp",
                .fallback = 1.382_us,
                .check = non_negative,
                .doc = "per GEMM kernel: the first wave's start and the last one's drain",
                .source = "fit H200 compute/gemm"},
               [](ComputeModel& m) { return &m.gemm_ramp; });
    // Fused attention by shape: the H200 fit on PyTorch's cuDNN SDPA kernels (validation/traces/h200,
    // h200x1-compute-torch.jsonl and h200x1-compute-4-torch.jsonl: compute/attention cudnn_fwd and cudnn_bwd, sequences
    // 1k-32k, head dims 64 and 128, causal and not, MHA and GQA).
    for (const bool backward : {false, true}) {
      const std::string pass = backward ? "_backward" : "";
      const std::string what = backward ? "fused attention's backward" : "fused attention";
      params.add({.key = "attention_efficiency" + pass,
                  .unit = "fraction",
                  .fallback = backward ? 0.713048 : 0.800585,
                  .check = between(0.01, 1.2),
                  .doc = "share of an SM's peak MMA rate the score blocks of " + what + " reach",
                  .source = "fit H200 compute/attention (cuDNN)"},
                 [backward](ComputeModel& m) { return &m.attention[backward].efficiency; });
      params.add({.key = "attention_block" + pass,
                  .fallback = backward ? 2.499_us : 0.9744_us,
                  .check = non_negative,
                  .doc = "per 128 x 128 score block of " + what +
                         " at boost clock: its softmax, overlapped with the "
                         "next block's MMA",
                  .source = "fit H200 compute/attention (cuDNN)"},
                 [backward](ComputeModel& m) { return &m.attention[backward].block; });
      params.add({.key = "attention_diagonal" + pass,
                  .unit = "fraction",
                  .fallback = backward ? 0.588538 : 0.582703,
                  .check = between(0.0, 8.0),
                  .doc = "extra block times a causal row's masked diagonal block takes in " + what,
                  .source = "fit H200 compute/attention (cuDNN)"},
                 [backward](ComputeModel& m) { return &m.attention[backward].diagonal; });
      params.add({.key = "attention_cta" + pass,
                  .fallback = backward ? 3.146_us : 0.4741_us,
                  .check = non_negative,
                  .doc = "per CTA of " + what + " at boost clock: loading its queries, writing its results",
                  .source = "fit H200 compute/attention (cuDNN)"},
                 [backward](ComputeModel& m) { return &m.attention[backward].cta; });
      params.add({.key = "attention_ramp" + pass,
                  .fallback = backward ? 9.182_us : 4.124_us,
                  .check = non_negative,
                  .doc = "per " + what + " kernel: the first wave's start, the last one's drain" +
                         (backward ? " and the helper kernels" : ""),
                  .source = "fit H200 compute/attention (cuDNN)"},
                 [backward](ComputeModel& m) { return &m.attention[backward].ramp; });
    }
    return params;
  }();
  return table;
}

namespace {

struct Tile {
  int m, n;
};

// The output tiles cuBLASLt's Hopper kernels use (the tiles its heuristic picked for our H200 records:
// validation/traces/h200/h200x1-compute.jsonl, algo_tile_id, with the CTA counts algo_waves x 132 they imply).
// tf32 runs only the four classic tiles and never splits K there.
constexpr Tile TILES_16BIT[] = {{128, 64},  {64, 128},  {96, 128},  {128, 128}, {128, 160}, {128, 192},
                                {192, 128}, {128, 256}, {256, 128}, {192, 192}, {160, 256}};
constexpr Tile TILES_TF32[] = {{128, 64}, {128, 128}, {128, 256}, {256, 128}};
constexpr int MAX_SPLIT_K = 4;
// The query rows of a fused attention CTA and the keys of one step of its loop (FlashAttention's and cuDNN's 128 for
// head dimensions up to 128).
constexpr std::int64_t ATTENTION_BLOCK = 128;
// A split-K GEMM writes and reads back one fp32 partial sum of C per slice.
constexpr double PARTIAL_BYTES = 4;

std::int64_t ceil_div_count(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

double element_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp8:
      return 1;
    case Dtype::bf16:
    case Dtype::fp16:
      return 2;
    case Dtype::tf32:
    case Dtype::fp32:
      return 4;
    case Dtype::fp64:
      return 8;
  }
  return 2;
}

std::string_view to_string(GemmLayout layout) {
  switch (layout) {
    case GemmLayout::tn:
      return "TN";
    case GemmLayout::nn:
      return "NN";
    case GemmLayout::nt:
      return "NT";
    case GemmLayout::tt:
      return "TT";
  }
  return "TN";
}

std::optional<GemmLayout> gemm_layout(std::string_view name) {
  for (const auto l : {GemmLayout::tn, GemmLayout::nn, GemmLayout::nt, GemmLayout::tt})
    if (to_string(l) == name) return l;
  return std::nullopt;
}

std::string_view to_string(MemoryKernel kernel) {
  switch (kernel) {
    case MemoryKernel::stream:
      return "stream";
    case MemoryKernel::widen:
      return "widen";
    case MemoryKernel::layernorm:
      return "layernorm";
    case MemoryKernel::rmsnorm:
      return "rmsnorm";
    case MemoryKernel::softmax:
      return "softmax";
    case MemoryKernel::gelu:
      return "gelu";
    case MemoryKernel::strided:
      return "strided";
    case MemoryKernel::cross_entropy:
      return "cross_entropy";
    case MemoryKernel::adamw:
      return "adamw";
    case MemoryKernel::bias_grad:
      return "bias_grad";
    case MemoryKernel::embedding_grad:
      return "embedding_grad";
    case MemoryKernel::mixed_add:
      return "mixed_add";
  }
  return "stream";
}

std::optional<MemoryKernel> memory_kernel(std::string_view name) {
  for (const auto k : ALL_MEMORY_KERNELS)
    if (to_string(k) == name) return k;
  return std::nullopt;
}

std::string memory_kernel_names() {
  std::string names;
  for (const auto k : ALL_MEMORY_KERNELS) names += fmt::format("{}{}", names.empty() ? "" : ", ", to_string(k));
  for (const auto k : ALL_MEMORY_KERNELS)
    if (has_backward(k)) names += fmt::format(", {}_backward", to_string(k));
  return names;
}

bool has_backward(MemoryKernel kernel) {
  return kernel != MemoryKernel::stream && kernel != MemoryKernel::widen && kernel != MemoryKernel::adamw &&
         kernel != MemoryKernel::bias_grad && kernel != MemoryKernel::embedding_grad &&
         kernel != MemoryKernel::mixed_add && kernel != MemoryKernel::strided;
}

double backward_bytes(MemoryKernel kernel) {
  switch (kernel) {
    case MemoryKernel::cross_entropy:
      return 2;
    default:
      return has_backward(kernel) ? 1.5 : 1;
  }
}

namespace {

/// A kernel of `kernel`'s kind moving `elements` of `element` bytes.
MemoryCall moving(MemoryKernel kernel, double elements, double element) {
  return MemoryCall{{kernel, false}, bytes_of(elements * element)};
}

}  // namespace

std::vector<MemoryCall> eager_rope(double elements, double table, double element, bool backward, bool contiguous) {
  const auto call = [element](MemoryKernel kernel, double moved) { return moving(kernel, moved, element); };
  const double n = elements, half = elements / 2;
  const MemoryCall product = call(MemoryKernel::strided, 2 * n + table);  // x (or dy) and a table in, n out
  const MemoryCall negate = call(MemoryKernel::strided, 2 * half);
  const MemoryCall sum = call(contiguous ? MemoryKernel::stream : MemoryKernel::strided, 3 * n);
  if (!backward) return {product, negate, call(MemoryKernel::strided, 2 * n), product, sum};
  // Each slice's backward zero-fills a tensor of x's shape and copies the half's gradient into it; the gradients of
  // x's three uses (x cos, x1, x2) accumulate in place.
  const MemoryCall fill = call(MemoryKernel::stream, n), copy = call(MemoryKernel::strided, 2 * half);
  return {product, negate, product, fill, copy, sum, fill, copy, sum};
}

std::vector<MemoryCall> eager_gated(double elements, double element, bool backward, bool contiguous) {
  const double n = elements;
  const MemoryKernel views = contiguous ? MemoryKernel::stream : MemoryKernel::strided;
  if (!backward) return {moving(views, 2 * n, element), moving(views, 3 * n, element)};
  // dy up and act's backward read a strided view (up, gate); dy act(gate) reads dy and the saved product's operand.
  return {moving(views, 3 * n, element), moving(MemoryKernel::stream, 3 * n, element), moving(views, 3 * n, element)};
}

std::string_view to_string(OperandData data) {
  return data == OperandData::normal ? "normal" : "low_entropy";
}

std::optional<OperandData> operand_data(std::string_view name) {
  for (const auto d : {OperandData::normal, OperandData::low_entropy})
    if (to_string(d) == name) return d;
  return std::nullopt;
}

Flops Gemm::flops() const {
  const double one = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return Flops{one * static_cast<double>(batch) * (backward ? 2 : 1)};
}

double Gemm::operand_elements() const {
  const double mk = static_cast<double>(m) * static_cast<double>(k),
               kn = static_cast<double>(k) * static_cast<double>(n),
               mn = static_cast<double>(m) * static_cast<double>(n);
  return (mk + kn + mn) * static_cast<double>(batch) * (backward ? 2 : 1);
}

Bytes Gemm::operand_bytes(double element) const {
  return Bytes{static_cast<std::uint64_t>(std::llround(operand_elements() * element))};
}

bool Gemm::tma_aligned(Dtype dtype) const {
  const double element = element_size(dtype);
  const auto aligned = [element](std::int64_t d) {
    return static_cast<std::int64_t>(static_cast<double>(d) * element) % 16 == 0;
  };
  return aligned(m) && aligned(n) && aligned(k);
}

GemmPlan ComputeModel::plan_gemm(const GpuSpec& gpu, const Gemm& g, Dtype dtype, double clock) const {
  const bool tf32 = dtype == Dtype::tf32 || dtype == Dtype::fp32 || dtype == Dtype::fp64;
  const double element = element_size(dtype);
  const double sms = gpu.sms > 0 ? gpu.sms : 1;
  const auto tf32_efficiency = [this](GemmLayout layout) {
    switch (layout) {
      case GemmLayout::tn:
        return gemm_efficiency_tf32;
      case GemmLayout::nn:
      case GemmLayout::tt:
        return gemm_efficiency_tf32_one_transpose;
      case GemmLayout::nt:
        return gemm_efficiency_tf32_two_transposes;
    }
    return gemm_efficiency_tf32;
  };
  const double efficiency = !g.tma_aligned(dtype) ? gemm_efficiency_unaligned
                            : dtype == Dtype::fp8 ? gemm_efficiency_fp8
                            : tf32                ? tf32_efficiency(g.layout)
                                                  : gemm_efficiency;
  const double sm_rate = gpu.peak(dtype).value_or(gpu.dense_bf16).count() / sms * clock * efficiency;
  // Operand panels feed the tiles at a rate that binds 32-bit operands only: with 16- and 8-bit ones, no record of
  // ours ran slower than its MMA work (a fitted bound drifted past 200 TB/s).
  const double sm_feed = tf32 ? gemm_operand_feed_tf32.count() / sms : std::numeric_limits<double>::infinity();
  const double overhead = gemm_tile_overhead.count() / clock;
  const double hbm = gpu.hbm_bandwidth.count() * hbm_efficiency;
  const std::span<const Tile> tiles = tf32 ? std::span<const Tile>(TILES_TF32) : std::span<const Tile>(TILES_16BIT);
  GemmPlan best;
  for (const Tile& t : tiles) {
    for (int split = 1; split <= (tf32 ? 1 : MAX_SPLIT_K); ++split) {
      if (split > 1 && g.k < 2 * split * 128) break;  // each slice keeps a few K steps of its own
      const std::int64_t ctas = ceil_div_count(g.m, t.m) * ceil_div_count(g.n, t.n) * g.batch * split;
      const std::int64_t per_sm = ceil_div_count(ctas, static_cast<std::int64_t>(sms));
      const double k_slice = static_cast<double>(ceil_div_count(g.k, split));
      const double mma = 2.0 * t.m * t.n * k_slice / sm_rate;
      const double feed = (t.m + t.n) * k_slice * element / sm_feed;
      double time = static_cast<double>(per_sm) * (std::max(mma, feed) + overhead) + gemm_ramp.count();
      if (split > 1)
        time += 2 * PARTIAL_BYTES * split * static_cast<double>(g.m) * static_cast<double>(g.n) *
                static_cast<double>(g.batch) / hbm;
      if (best.tiles == 0 || time < best.time.count()) best = {t.m, t.n, split, ctas, per_sm, Seconds{time}};
    }
  }
  return best;
}

Seconds ComputeModel::gemm_time(const GpuSpec& gpu, const Gemm& g, Dtype dtype, double clock) const {
  if (!g.backward) return plan_gemm(gpu, g, dtype, clock).time;
  // The input's gradient: (m x n) by (n x k); the weight's: (k x m) by (m x n).
  const Gemm input{g.m, g.k, g.n, g.batch, g.layout}, weight{g.k, g.n, g.m, g.batch, g.layout};
  return plan_gemm(gpu, input, dtype, clock).time + plan_gemm(gpu, weight, dtype, clock).time;
}

bool kernels_by_shape(const GpuSpec& gpu, Dtype dtype) {
  return gpu.sms > 0 && gpu.boost_mhz > 0 && dtype != Dtype::fp32 && dtype != Dtype::fp64;
}

Flops Attention::flops() const {
  const double s = static_cast<double>(seq), w = static_cast<double>(window);
  const double pairs = !causal ? s * s : (window > 0 && window < seq ? s * w - w * w / 2 : s * s / 2);
  const double forward =
      4.0 * static_cast<double>(batch) * static_cast<double>(heads) * pairs * static_cast<double>(head_dim);
  return Flops{forward * (backward ? 2.5 : 1.0)};
}

namespace {

/// The SM that finishes last when the GPU's block scheduler hands `heads` x n CTAs to `sms` SMs in grid order (the
/// query blocks of one head in turn, then the next head's), each CTA to the SM that frees first: query block i takes
/// row_blocks block times, plus `cta` (in block times). Its blocks and CTAs.
struct LastSm {
  double blocks = 0;
  std::int64_t ctas = 0;
};

/// The key blocks query block i of n walks, in block times: all n; up to its diagonal when causal (`reach` < 0), the
/// diagonal one masked; with a sliding window the `reach` blocks before it at most, the window's far edge masked too.
double row_blocks(std::int64_t i, std::int64_t n, bool causal, std::int64_t reach, double diagonal) {
  if (!causal) return static_cast<double>(n);
  if (reach < 0 || i < reach) return static_cast<double>(i + 1) + diagonal;
  return static_cast<double>(reach + 1) + (reach > 0 ? 2 : 1) * diagonal;
}

/// The blocks of all n rows of one head: row_blocks summed.
double head_blocks(std::int64_t n, bool causal, std::int64_t reach, double diagonal) {
  const double nd = static_cast<double>(n);
  if (!causal) return nd * nd;
  if (reach < 0 || reach >= n) return nd * (nd + 1) / 2 + nd * diagonal;
  const double r = static_cast<double>(reach);
  return r * (r + 1) / 2 + r * diagonal + (nd - r) * (r + 1 + (reach > 0 ? 2 : 1) * diagonal);
}

/// The blocks before its own that a query block reaches with a window of `window` tokens: ceil((window - 1) / block)
/// (a query attends to itself and the window - 1 keys before it); -1 without a window.
std::int64_t window_reach(std::int64_t window, std::int64_t block) {
  return window > 0 ? (window - 1 + block - 1) / block : -1;
}

LastSm list_schedule(std::int64_t heads, std::int64_t n, bool causal, std::int64_t reach, double diagonal, double cta,
                     int sms) {
  // Memoised: a training step asks for the same few shapes thousands of times. The key holds every input; a fit
  // that moves the costs leaves stale keys behind, so the table is dropped when it grows large.
  using Key = std::tuple<std::int64_t, std::int64_t, bool, std::int64_t, double, double, int>;
  thread_local std::map<Key, LastSm> memo;
  const Key key{heads, n, causal, reach, diagonal, cta, sms};
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  struct Sm {
    double finish = 0;
    double blocks = 0;
    std::int64_t ctas = 0;
  };
  const auto later = [](const Sm& a, const Sm& b) { return a.finish > b.finish; };
  // Past a few hundred CTAs an SM the SMs stay within one row of each other, so the heads before the last
  // SIMULATED_CTAS' worth are spread evenly and only those are handed out one by one: the time stays bounded for any
  // shape a scenario may give (up to 2^24 sequences x 2^24 heads), within a fraction of a row of the full schedule.
  constexpr std::int64_t SIMULATED_CTAS = 1 << 16;
  const std::int64_t simulated =
      std::min(heads, std::max<std::int64_t>(1, SIMULATED_CTAS / std::max<std::int64_t>(1, n)));
  const double nd = static_cast<double>(n), sm_count = std::max(1, sms);
  const double one_head = head_blocks(n, causal, reach, diagonal);
  const double spread = static_cast<double>(heads - simulated) / sm_count;  // earlier heads per SM
  const Sm even{.finish = spread * (one_head + nd * cta), .blocks = spread * one_head, .ctas = 0};
  std::vector<Sm> free(static_cast<std::size_t>(sm_count), even);  // a min-heap on finish
  for (std::int64_t h = 0; h < simulated; ++h)
    for (std::int64_t i = 0; i < n; ++i) {
      std::ranges::pop_heap(free, later);
      Sm& sm = free.back();
      const double blocks = row_blocks(i, n, causal, reach, diagonal);
      sm.finish += blocks + cta;
      sm.blocks += blocks;
      ++sm.ctas;
      std::ranges::push_heap(free, later);
    }
  const Sm& last = *std::ranges::max_element(free, {}, &Sm::finish);
  constexpr std::size_t MEMO_LIMIT = 4096;
  if (memo.size() >= MEMO_LIMIT) memo.clear();
  return memo[key] = LastSm{last.blocks, last.ctas + std::llround(spread * nd)};
}

}  // namespace

AttentionPlan ComputeModel::plan_attention(const GpuSpec& gpu, const Attention& a, double clock) const {
  const std::int64_t n = ceil_div_count(a.seq, ATTENTION_BLOCK);  // query blocks, and key blocks per row
  const AttentionPass& pass = attention[a.backward];
  const double diagonal = pass.diagonal;
  // Causal: query block i attends to key blocks 0..i (or its window's), the diagonal one masked.
  const std::int64_t reach =
      a.causal && a.window > 0 && a.window < a.seq ? window_reach(a.window, ATTENTION_BLOCK) : -1;
  AttentionPlan plan;
  const double rows = static_cast<double>(a.batch) * static_cast<double>(a.heads);
  plan.ctas = a.batch * a.heads * n;
  plan.blocks = rows * head_blocks(n, a.causal, reach, a.causal ? diagonal : 0.0);
  const double sms = gpu.sms > 0 ? gpu.sms : 1;
  // A block's pace at boost clock: the softmax of one block overlaps the MMA of the next (two warp groups take
  // turns), so the slower of the two sets it.
  const double sm_rate = gpu.peak(Dtype::bf16).value_or(gpu.dense_bf16).count() / sms * pass.efficiency;
  const double mma =
      4.0 * ATTENTION_BLOCK * ATTENTION_BLOCK * static_cast<double>(a.head_dim) * (a.backward ? 2.5 : 1.0) / sm_rate;
  const double boost_pace = std::max(mma, pass.block.count());
  // The SM that finishes last sets the kernel's time. Every cost scales with 1 / clock, so the schedule is the same
  // at any clock: it is found in block times at boost (one memoised schedule per shape, whatever the clock).
  const double pace = boost_pace / clock;
  const double cta_blocks = boost_pace > 0 ? pass.cta.count() / boost_pace : 0.0;
  const LastSm last = list_schedule(a.batch * a.heads, n, a.causal, reach, a.causal ? diagonal : 0.0, cta_blocks,
                                    static_cast<int>(sms));
  plan.per_sm_blocks = last.blocks;
  plan.per_sm_ctas = last.ctas;
  if (a.backward) {
    // dO . O (reads both), dQ accumulated in fp32 and converted (reads 4 B, writes 2 B), and with GQA the per-query-
    // head dK and dV in fp32 summed over each KV head's group: kernels of their own, at the streaming rate.
    const double q = rows * static_cast<double>(a.seq) * static_cast<double>(a.head_dim);
    const double e = 2;  // bf16 or fp16
    const bool gqa = a.kv_heads > 0 && a.kv_heads < a.heads;
    plan.helpers = Bytes{static_cast<std::uint64_t>(std::llround(q * (2 * e + 4 + e + (gqa ? 8 : 0))))} /
                   (gpu.hbm_bandwidth * hbm_efficiency);
  }
  plan.time = Seconds{plan.per_sm_blocks * pace + pass.cta.count() / clock * static_cast<double>(plan.per_sm_ctas)} +
              plan.helpers + pass.ramp;
  return plan;
}

Seconds ComputeModel::attention_time(const GpuSpec& gpu, const Attention& shape, double clock) const {
  return plan_attention(gpu, shape, clock).time;
}

Seconds ComputeModel::math_time(const GpuSpec& gpu, Flops flops, double flop_rate, Dtype dtype) const {
  return flops / (gpu.peak(dtype).value_or(gpu.dense_bf16) * (flop_efficiency * flop_rate));
}

double ComputeModel::efficiency(MemoryKind kind) const {
  if (kind.kernel == MemoryKernel::stream) return hbm_efficiency;
  const auto index = static_cast<std::size_t>(kind.kernel);
  return kind.backward && has_backward(kind.kernel) ? memory_efficiency_backward[index] : memory_efficiency[index];
}

Seconds ComputeModel::memory_time(const GpuSpec& gpu, Bytes bytes, double hbm_rate, MemoryKind kind) const {
  if (bytes.count() == 0) return Seconds{0};
  return memory_ramp + bytes / (gpu.hbm_bandwidth * (efficiency(kind) * hbm_rate));
}

double ComputeModel::rate_at_reported_clock(double reported_share) const {
  return boost_reading_rate * std::pow(reported_share, clock_elasticity);
}

double ComputeModel::clock_factor(const TensorDuty& duty, Seconds now) const {
  if (power_duty >= 1) return 1.0;  // never throttled: no duty to follow
  const double d = duty.value * std::exp(-(now - duty.updated).count() / power_window.count());
  return d <= power_duty ? 1.0 : std::pow(power_duty / d, 1 / power_exponent);
}

void ComputeModel::account(TensorDuty& duty, Seconds start, Seconds end, double tensor_share, OperandData data) const {
  if (power_duty >= 1) return;
  const double span = (end - duty.updated).count();
  if (!(span > 0)) return;
  const double power = data == OperandData::normal ? 1.0 : low_entropy_power;
  const double busy = std::min(1.0, tensor_share * power * (end - start).count() / span);
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
