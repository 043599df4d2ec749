// GPU compute as a roofline: an op of F flops touching B bytes of HBM takes the longer of F / (peak x efficiency)
// and B / (HBM bandwidth x efficiency), plus a kernel launch. Peaks come from the GPU in the Fabric; per-GPU rate
// factors (clock and HBM variation, slow GPUs: models/jitter.hpp) scale the two sides separately.
//
// A GEMM whose shape is known is timed as cuBLAS runs it on Hopper (gemm_time): the output is cut into tiles, one
// CTA per tile on one SM, so the kernel takes as many tile times as the busiest SM holds tiles (ceil(tiles / SMs):
// a GEMM of 133 tiles on 132 SMs takes two tile times). A tile's time is its MMA work at the SM's share of the peak
// at the running clock, or the feed of its operand panels when that is longer, plus a per-tile prologue and
// epilogue; split-K cuts K into slices that add their partial sums through HBM. The tile and split are the ones the
// model finds fastest among those cuBLAS uses for the format (docs/models-and-validation.md#gemms).
//
// The Runner runs the two sides concurrently -- the FLOP side as work on the GPU's host, the HBM side as bytes
// through the GPU's HBM link -- and the kernel ends when both are done: alone, that is exactly the roofline above;
// next to a transfer that also crosses the HBM link, or next to SM-driven copies and collective kernels that take
// a share of the SMs, each side slows by what it loses (max-min), as on the chip.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.hpp"
#include "sim/fabric.hpp"

namespace snsim::models {

/// The operand layout of a GEMM in cuBLAS's column-major terms (op(A), op(B)): TN is both operands K-major, the
/// only layout Hopper's tensor cores read for 32-bit (tf32) and 8-bit operands without a transpose.
enum class GemmLayout { tn, nn, nt, tt };
std::string_view to_string(GemmLayout layout);
std::optional<GemmLayout> gemm_layout(std::string_view name);

/// What a kernel's operands hold, for the power they draw: a tensor core's power follows how many operand bits
/// toggle. `normal`: values with full mantissas, as a training job's activations and weights (and randomly
/// initialised benchmarks) hold; `low_entropy`: constants, small integers or other values with few mantissa bits.
enum class OperandData { normal, low_entropy };
std::string_view to_string(OperandData data);
std::optional<OperandData> operand_data(std::string_view name);

/// What a memory-bound kernel does, for the share of HBM bandwidth it reaches: on our H200, PyTorch's streaming add
/// reaches 4.4 TB/s, its row-wise softmax 1.2 (docs/models-and-validation.md#memory-kernels). `stream`: element-wise
/// kernels reading and writing as many bytes (adds, copies, casts to a narrower format); `widen`: casts to a wider
/// one (bf16 to fp32, PyTorch's unrolled, unvectorised kernel); `mixed_add`: a bf16 operand added into fp32 (autocast's
/// residual add, the same unrolled kernel with two inputs); `strided`: an element-wise kernel over a
/// non-contiguous view or with a broadcast operand (PyTorch's generic, unvectorised elementwise kernel and its
/// N-dimensional concatenation: eager RoPE on the heads of a fused QKV output, eager SwiGLU on the chunks of a fused
/// gate/up output); `adamw`: PyTorch's fused
/// AdamW over fp32 parameters, gradients and moments; `bias_grad`: a linear layer's bias gradient, the column sums of
/// its output's gradient; `embedding_grad`: an embedding table's gradient (zeroed, then the rows of the tokens summed
/// into it).
enum class MemoryKernel {
  stream,
  widen,
  layernorm,
  rmsnorm,
  softmax,
  gelu,
  strided,
  cross_entropy,
  adamw,
  bias_grad,
  embedding_grad,
  mixed_add
};
constexpr std::size_t MEMORY_KERNELS = 12;
std::string_view to_string(MemoryKernel kernel);
std::optional<MemoryKernel> memory_kernel(std::string_view name);
/// Every kind's name, and those with a backward of their own with `_backward`, for error messages.
std::string memory_kernel_names();
/// A memory-bound kernel's kind and pass (the backward of a kernel reaches its own share).
struct MemoryKind {
  MemoryKernel kernel = MemoryKernel::stream;
  bool backward = false;
};
/// Kinds with a backward of their own rate (element-wise streams, widening casts, AdamW and the gradient kernels have
/// none).
bool has_backward(MemoryKernel kernel);
/// The bytes a kind's backward moves per byte its forward moves, as the probe counts them (each input read once,
/// each output written once): a norm, softmax or GeLU reads x and dy and writes dx (3 / 2 of read x,
/// write y); cross-entropy reads the saved
/// log-probabilities and writes the logits' gradient (2 / 1). 1 for kinds without a backward.
double backward_bytes(MemoryKernel kernel);

/// One memory-bound kernel a framework launches: its kind and the bytes it reads and writes.
struct MemoryCall {
  MemoryKind kind;
  Bytes bytes;
};
/// The kernels PyTorch launches for HF Llama's eager RoPE, x cos + rotate_half(x) sin with rotate_half(x) =
/// cat(-x2, x1), on one tensor of `elements` of `element` bytes with cos and sin tables of `table` elements each.
/// Forward: x cos, -x2, the concatenation, its product with sin, the sum (five). Backward: dy sin, its half negated,
/// dy cos, then for each half of rotate_half's input a zero fill, a copy of the half's gradient into it and an
/// accumulation (nine). The fills are `stream`, the rest `strided` -- but for the sums on a `contiguous` tensor, whose
/// operands all share its layout (PyTorch vectorises them: `stream`). On the heads of a fused QKV output (a
/// transposed view) x cos keeps x's strides and the sums' operands differ in layout.
std::vector<MemoryCall> eager_rope(double elements, double table, double element, bool backward, bool contiguous);
/// The kernels PyTorch launches for a gated MLP's eager activation, act(gate) * up with [gate, up] = x.chunk(2), on
/// `elements` outputs of `element` bytes. Forward: act(gate), the product (two). Backward: dy up, dy act(gate) and
/// act's backward (three); the chunk's own backward, a concatenation of the two gradients, is the caller's. On a
/// `contiguous` x (chunked along its outer dimension) every kernel is vectorised (`stream`); chunked along the last
/// dimension, as a fused gate/up GEMM's output is, gate and up are strided views, and the kernels reading one are
/// `strided` (dy act(gate) reads only contiguous tensors).
std::vector<MemoryCall> eager_gated(double elements, double element, bool backward, bool contiguous);

/// Bytes per element of a GEMM operand in `dtype` (tf32 is stored as fp32).
double element_size(Dtype dtype);

/// A GEMM: C (m x n) = A (m x k) B (k x n), `batch` times. `backward`: the two GEMMs of its backward pass instead,
/// the input's gradient (m x k = m x n by n x k) and the weight's (k x n = k x m by m x n), as a linear layer's
/// backward runs them.
struct Gemm {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  GemmLayout layout = GemmLayout::tn;
  bool backward = false;

  /// 2 m n k per GEMM, twice for `backward`.
  Flops flops() const;
  /// Elements of A, B and C of one pass (all batches; twice for `backward`), as a double: no 64-bit overflow.
  double operand_elements() const;
  /// Every dimension a 16-byte multiple in `dtype`: TMA feeds the tensor cores; otherwise cuBLAS falls back to
  /// kernels without it.
  bool tma_aligned(Dtype dtype) const;
  /// A, B and C read or written once per GEMM, `element` bytes each.
  Bytes operand_bytes(double element) const;
};

/// How the model runs one GEMM: its tile, split-K and the tiles the busiest SM runs.
struct GemmPlan {
  int tile_m = 0, tile_n = 0;
  int split_k = 1;
  std::int64_t tiles = 0;   // CTAs: tiles x batch x split_k
  std::int64_t per_sm = 0;  // ceil(tiles / SMs): the kernel's length in tile times
  Seconds time;             // the kernel, at the clock it was planned for (no launch)
};

/// Fused attention, as FlashAttention and cuDNN's SDPA kernels run it: softmax(Q K^T / sqrt(d)) V over `batch`
/// sequences of `seq` queries against as many keys, `heads` query heads of `head_dim` (K and V heads do not change
/// the work: GQA only reads fewer), causal or not; `backward`: its gradient, which recomputes the scores (2.5 times
/// the forward's MMA work: Q K^T again, dV, dP, dQ and dK).
struct Attention {
  std::int64_t batch = 1, heads = 1, seq = 0, head_dim = 128;
  std::int64_t kv_heads = 0;  // 0: as many as `heads`; fewer (GQA) adds the backward's reduction of dK and dV
  bool causal = true;
  // Causal sliding-window (local) attention: each query attends to the `window` keys up to its own (0: all before
  // it). FlashAttention and cuDNN skip the key blocks wholly outside the window.
  std::int64_t window = 0;
  bool backward = false;

  /// 4 b h d times the (query, key) pairs attended: s^2, s^2 / 2 when causal, s w - w^2 / 2 with a window w < s;
  /// 2.5 times that for `backward`.
  Flops flops() const;
};

/// Whether the GEMM and attention models apply on `gpu` for kernels of `dtype`: their tiles and rates are Hopper's,
/// fitted at its published boost clock, so a preset without one (the Blackwell ones, whose tiles also differ) and
/// fp32 / fp64 work (no tensor cores) keep the roofline.
bool kernels_by_shape(const GpuSpec& gpu, Dtype dtype);

/// How the model runs fused attention: one CTA per (sequence, head, block of queries), each walking the blocks of
/// keys it attends to (all, or up to its diagonal when causal), handed out in grid order to whichever SM frees first;
/// the SM that finishes last sets the time (a causal head's longest rows come last: a tail of up to one row).
struct AttentionPlan {
  std::int64_t ctas = 0;         // batch x heads x query blocks
  std::int64_t per_sm_ctas = 0;  // the CTAs of the SM that finishes last
  double blocks = 0;             // block times of all CTAs: a causal row's masked diagonal block counts 1 + diagonal
  double per_sm_blocks = 0;      // its block times: CTAs handed out in grid order to whichever SM frees first
  Seconds helpers;               // backward: its helper kernels' HBM time (dO . O, dQ's conversion, GQA's reductions)
  Seconds time;                  // the kernel(s), at the clock it was planned for (no launch)
};

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
  // The share other memory-bound kinds reach, forward and backward (MemoryKernel order; stream's is hbm_efficiency),
  // and what every memory-bound kernel adds to its bytes' time: its first wave's start and its last one's drain.
  std::array<double, MEMORY_KERNELS> memory_efficiency{};
  std::array<double, MEMORY_KERNELS> memory_efficiency_backward{};
  Seconds memory_ramp;
  Seconds launch;            // kernel launch overhead per compute op (the host submits it)
  Seconds queue_gap;         // per kernel queued behind another on the same stream (the host is ahead)
  double comm_sm_share = 0;  // share of the SMs an SM-driven copy or a collective kernel takes from compute
  // Power-capped clocks: a GPU keeps its boost clock while its tensor duty cycle stays at or below `power_duty`
  // (what its power limit sustains at full clock); above, the clock drops to (power_duty / duty)^(1/power_exponent)
  // of boost (dynamic power grows with the clock faster than linearly). The duty is a moving average over
  // `power_window`. power_duty >= 1: never throttled. The duty counts a kernel's tensor time at the power its
  // operands draw: normal data at 1, low-entropy data at `low_entropy_power`.
  double power_duty = 0;
  double power_exponent = 0;
  Seconds power_window;
  double low_entropy_power = 0;
  // What a clock reading says of a tensor kernel's rate. Under the power cap the SM clock NVML reports is not the
  // rate the tensor cores run at: on our H100, 8192^3 GEMMs took the same time at 1410, 1560 and 1665 MHz (each read
  // 20 times), and on our H200, GEMMs back to back at a reported 1965-1980 MHz run ~10 % below the rate of GEMM
  // bursts with idle gaps between them (which never reach the cap). A kernel timed with a clock reading f (a probe
  // record's sm_clock_mhz) runs at boost_reading_rate x (f / boost)^clock_elasticity of its unthrottled rate; the
  // power model's clock factor is such a rate already.
  double clock_elasticity = 1;
  double boost_reading_rate = 1;
  // GEMMs by shape (gemm_time): the share of the SM's peak MMA rate a tile reaches, per operand format (bf16 and
  // fp16 share one). Hopper's tensor cores read tf32 operands K-major only, so a tf32 GEMM with one operand to
  // transpose (NN, TT) and one with both (NT) have their own.
  double gemm_efficiency = 0;
  double gemm_efficiency_fp8 = 0;
  double gemm_efficiency_tf32 = 0;
  double gemm_efficiency_tf32_one_transpose = 0;
  double gemm_efficiency_tf32_two_transposes = 0;
  // Shapes whose leading dimensions are not 16-byte multiples run without TMA and wgmma, at this share of the peak.
  double gemm_efficiency_unaligned = 0;
  BytesPerSecond gemm_operand_feed_tf32;  // the whole GPU's rate of tf32 operand panels into the SMs
  Seconds gemm_tile_overhead;             // per tile at boost clock: prologue (pipeline fill) and epilogue
  Seconds gemm_ramp;                      // per kernel: the first wave's start and the last one's drain
  // Fused attention by shape (attention_time), forward and backward: the share of the SM's peak MMA rate its score
  // blocks' matrix products reach, the time a block's softmax takes at boost clock (the exponentials and rescaling,
  // the same for any head dimension; overlapped with the next block's MMA, so d = 64 runs at the softmax's pace and
  // a lower share of the peak than d = 128), and the kernel's start and drain (backward: with its helper kernels,
  // dO . O before and dQ's conversion after).
  // A causal row's diagonal block runs the masked path: it takes 1 + diagonal block times. Each CTA adds its
  // prologue and epilogue (loading its queries, writing its output and softmax statistics) at boost clock.
  struct AttentionPass {
    double efficiency = 0;
    Seconds block;
    double diagonal = 0;
    Seconds cta;
    Seconds ramp;
  };
  std::array<AttentionPass, 2> attention{};  // [0] forward, [1] backward

  /// The fastest plan for `gemm` in `dtype` on `gpu` at `clock` (the share of the boost clock the SMs run at).
  /// The GPU must know its SMs (GpuSpec::sms).
  GemmPlan plan_gemm(const GpuSpec& gpu, const Gemm& gemm, Dtype dtype, double clock = 1) const;
  /// The kernels of `gemm` (both for `backward`), without launch or queue gap.
  Seconds gemm_time(const GpuSpec& gpu, const Gemm& gemm, Dtype dtype, double clock = 1) const;

  /// How `attention` runs on `gpu` at `clock`; the GPU must know its SMs.
  AttentionPlan plan_attention(const GpuSpec& gpu, const Attention& attention, double clock = 1) const;
  /// Its kernel (or its backward's), without launch or queue gap.
  Seconds attention_time(const GpuSpec& gpu, const Attention& shape, double clock = 1) const;

  /// The rate factor (of the unthrottled rate at boost) of a tensor kernel that ran while NVML reported
  /// `reported_share` of the boost clock.
  double rate_at_reported_clock(double reported_share) const;
  /// The clock factor (<= 1) of a kernel starting at `now` on a GPU with this recent duty.
  double clock_factor(const TensorDuty& duty, Seconds now) const;
  /// Adds a kernel that ran from `start` to `end` with its tensor cores busy `tensor_share` of the time on
  /// operands holding `data`.
  void account(TensorDuty& duty, Seconds start, Seconds end, double tensor_share,
               OperandData data = OperandData::normal) const;

  /// The FLOP side alone: flops / (the dtype's peak x efficiency x flop_rate), flop_rate the GPU's rate factor. The
  /// GPU must have a peak for `dtype` (checked when programs are parsed).
  Seconds math_time(const GpuSpec& gpu, Flops flops, double flop_rate = 1, Dtype dtype = Dtype::bf16) const;
  /// The share of HBM bandwidth a memory-bound kernel of `kind` reaches.
  double efficiency(MemoryKind kind) const;
  /// The HBM side alone: bytes / (HBM bandwidth x efficiency(kind) x hbm_rate), plus memory_ramp when there are bytes.
  Seconds memory_time(const GpuSpec& gpu, Bytes bytes, double hbm_rate = 1, MemoryKind kind = {}) const;
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
