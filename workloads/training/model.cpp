#include "workloads/training/model.hpp"

#include <cmath>

#include <fmt/format.h>

#include "workloads/training/context.hpp"
#include "workloads/training/presets.hpp"

namespace snsim::workloads::training {
namespace {

// Sanity limits: far beyond any published model, small enough that products stay exact in doubles.
constexpr int MAX_LAYERS = 1024;
constexpr int MAX_WIDTH = 1 << 20;  // hidden, ffn_hidden, sequence, vocabulary
constexpr int MAX_EXPERTS = 1024;
constexpr int MAX_MICRO_BATCHES = 4096;  // per step and pipeline
constexpr int MAX_ROUTING_GROUPS = 16;
constexpr int MAX_MTP_LAYERS = 8;  // group-limited routing's subsets are enumerated: 2^16 at most

/// The ranks of `rank`'s pipeline stage (every group lies within one: ranks are pp-major) for which `same` holds,
/// sorted. Scanning the stage, not every rank, keeps building all ranks' groups O(gpus x stage).
std::vector<int> ranks_where(const ParallelPlan& plan, int rank, auto same) {
  std::vector<int> out;
  const Coord me = coord_of(plan, rank);
  const int stage = plan.tp * plan.cp * plan.dp;
  for (int r = me.pp * stage; r < (me.pp + 1) * stage; ++r)
    if (same(me, coord_of(plan, r), r)) out.push_back(r);
  return out;
}

/// `rank`'s group along one coordinate (the others fixed), sorted: rank_of grows with each coordinate.
std::vector<int> ranks_along(const ParallelPlan& plan, int rank, int Coord::*along, int size) {
  std::vector<int> out;
  Coord c = coord_of(plan, rank);
  for (int i = 0; i < size; ++i) {
    c.*along = i;
    out.push_back(rank_of(plan, c));
  }
  return out;
}

/// The rank's index among the tp x dp ranks of its stage.
int stage_index(const ParallelPlan& plan, int rank) {
  return rank % (plan.tp * plan.cp * plan.dp);
}

/// A GEMM (m x k) by (k x n): 2mkn FLOPs; both operands read and the result written once. Its shape is cuBLAS's view
/// of a linear layer y = x W^T on m tokens (PyTorch's F.linear): TN, with cuBLAS's m the n output features and its n
/// the m tokens.
Kernel gemm(double m, double k, double n, double element) {
  Kernel out{Flops{2 * m * k * n}, Bytes{static_cast<std::uint64_t>(std::llround((m * k + k * n + m * n) * element))}};
  models::Gemm g;
  g.m = std::llround(n);
  g.n = std::llround(m);
  g.k = std::llround(k);
  if (g.m >= 1 && g.n >= 1 && g.k >= 1) out.gemm = g;
  out.name = "gemm";
  return out;
}

int positive_int(const ConfigNode& node, std::string_view key, int high) {
  const int v = node.required<int>(key);
  check_between(node, key, v, 1, high);
  return v;
}

}  // namespace

int rank_of(const ParallelPlan& plan, Coord c) {
  return c.tp + plan.tp * (c.cp + plan.cp * (c.dp + plan.dp * c.pp));
}

Coord coord_of(const ParallelPlan& plan, int rank) {
  const int tp_cp = plan.tp * plan.cp;
  return {rank % plan.tp, (rank / tp_cp) % plan.dp, rank / (tp_cp * plan.dp), (rank / plan.tp) % plan.cp};
}

std::vector<int> tp_group(const ParallelPlan& plan, int rank) {
  return ranks_along(plan, rank, &Coord::tp, plan.tp);
}

std::vector<int> dp_group(const ParallelPlan& plan, int rank) {
  return ranks_along(plan, rank, &Coord::dp, plan.dp);
}

std::vector<int> cp_group(const ParallelPlan& plan, int rank) {
  return ranks_along(plan, rank, &Coord::cp, plan.cp);
}

std::vector<int> dp_cp_group(const ParallelPlan& plan, int rank) {
  return ranks_where(plan, rank, [](Coord a, Coord b, int) { return a.tp == b.tp && a.pp == b.pp; });
}

std::vector<int> ep_group(const ParallelPlan& plan, int rank) {
  const int i = stage_index(plan, rank), etp = plan.etp, span = plan.etp * plan.ep;
  return ranks_where(plan, rank, [&](Coord a, Coord b, int r) {
    const int j = stage_index(plan, r);
    return a.pp == b.pp && j % etp == i % etp && j / span == i / span;
  });
}

std::vector<int> etp_group(const ParallelPlan& plan, int rank) {
  const int i = stage_index(plan, rank);
  return ranks_where(plan, rank, [&](Coord a, Coord b, int r) {
    return a.pp == b.pp && stage_index(plan, r) / plan.etp == i / plan.etp;
  });
}

std::vector<int> expert_dp_group(const ParallelPlan& plan, int rank) {
  const int span = plan.etp * plan.ep, place = stage_index(plan, rank) % span;
  return ranks_where(plan, rank,
                     [&](Coord a, Coord b, int r) { return a.pp == b.pp && stage_index(plan, r) % span == place; });
}

int ep_rank(const ParallelPlan& plan, int rank) {
  return stage_index(plan, rank) / plan.etp % plan.ep;
}

int ep_group_index(const ParallelPlan& plan, int rank) {
  const int i = stage_index(plan, rank);
  return i / (plan.etp * plan.ep) * plan.etp + i % plan.etp;
}

double gradient_bytes(const ModelSpec& model) {
  if (model.autocast) return 4;
  return model.dtype == Dtype::fp8 ? 2 : models::element_size(model.dtype);
}

double activation_bytes(Dtype dtype) {
  return dtype == Dtype::fp8 ? 2 : models::element_size(dtype);
}

std::uint64_t routed_tokens(const ModelSpec& model, const ParallelPlan& plan) {
  return static_cast<std::uint64_t>(model.micro_batch) * static_cast<std::uint64_t>(model.sequence) /
         static_cast<std::uint64_t>(plan.cp * plan.tp);
}

int attention_window(const ModelSpec& model, int layer) {
  if (!model.sliding_window || model.sliding_window->tokens >= model.sequence) return 0;
  const int every = model.sliding_window->global_every;
  return every > 0 && (layer + 1) % every == 0 ? 0 : model.sliding_window->tokens;
}

bool is_moe_layer(const ModelSpec& model, int layer) {
  if (!model.moe || layer < model.moe->dense_layers) return false;
  return (layer - model.moe->dense_layers) % model.moe->every == 0;
}

int expert_ffn(const ModelSpec& model) {
  return model.moe && model.moe->ffn_hidden > 0 ? model.moe->ffn_hidden : model.ffn_hidden;
}

int mlp_matrices(Mlp mlp) {
  return mlp == Mlp::swiglu || mlp == Mlp::geglu ? 3 : 2;
}

AttentionWidths attention_widths(const ModelSpec& m) {
  const double a = m.heads;
  if (m.mla) {
    const double qk = m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim, v = m.mla->v_head_dim;
    return {a * qk, a * qk, a * v, a * v, qk, v};
  }
  // A spec built in code may leave these 0: MHA of hidden / heads.
  const double d = m.head_dim > 0 ? m.head_dim : static_cast<double>(m.hidden) / m.heads;
  const double kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  return {a * d, kv * d, kv * d, a * d, d, d};
}

namespace {

/// MLA's down projections (h to the Q and KV latents and the shared rotary key): replicated on every TP rank, as
/// Megatron-Core's MLA does; its up projections split by heads.
double mla_down_width(const MlaSpec& mla) {
  return mla.q_lora_rank + mla.kv_lora_rank + mla.qk_rope_head_dim;
}

/// The Q, K, V projections' parameters on one rank (all of them when t = 1).
double qkv_params(const ModelSpec& m, double t) {
  const auto w = attention_widths(m);
  const double h = m.hidden;
  if (!m.mla) return h * (w.q + w.k + w.v) / t;
  const auto& l = *m.mla;
  const double a = m.heads;
  double p = h * (l.kv_lora_rank + l.qk_rope_head_dim) + l.kv_lora_rank * a * (l.qk_nope_head_dim + l.v_head_dim) / t;
  p += l.q_lora_rank > 0 ? h * l.q_lora_rank + l.q_lora_rank * w.q / t : h * w.q / t;
  return p + l.q_lora_rank + l.kv_lora_rank;  // the latents' RMSNorm weights
}

double norm_params(const ModelSpec& m) {
  return (m.norm == Norm::layernorm ? 2.0 : 1.0) * m.hidden;  // LayerNorm: weight and bias; RMSNorm: weight
}

double shared_ffn(const ModelSpec& m) {
  return m.moe ? static_cast<double>(m.moe->shared_experts) * expert_ffn(m) : 0;
}

/// One rank's forward of the Q, K, V projections on `tokens` tokens.
Kernel qkv_forward(const ModelSpec& m, double tokens, double t, double e) {
  const auto w = attention_widths(m);
  const double h = m.hidden;
  if (!m.mla) return gemm(tokens, h, (w.q + w.k + w.v) / t, e);
  const auto& l = *m.mla;
  const double a = m.heads;
  std::vector<Kernel> parts{gemm(tokens, h, mla_down_width(l), e),
                            gemm(tokens, l.kv_lora_rank, a * (l.qk_nope_head_dim + l.v_head_dim) / t, e)};
  if (l.q_lora_rank > 0)
    parts.push_back(gemm(tokens, l.q_lora_rank, w.q / t, e));
  else
    parts.push_back(gemm(tokens, h, w.q / t, e));
  Kernel sum{Flops{0}, Bytes{0}};
  sum.name = "gemm";  // three GEMMs, timed as one by the roofline
  for (const auto& k : parts) {
    sum.flops = Flops{sum.flops.count() + k.flops.count()};
    sum.bytes += k.bytes;
  }
  return sum;
}

/// Elements an MLP's activation reads and writes per token and FFN column: GeLU and squared ReLU read and write f;
/// a gated one reads the gate and the up projection and writes their product.
double activation_passes(Mlp mlp) {
  return mlp_matrices(mlp) == 3 ? 3 : 2;
}

/// Tokens of one micro-batch on one rank: its sequences, split over the CP ranks.
double rank_tokens(const ModelSpec& model, const ParallelPlan& plan) {
  return static_cast<double>(model.micro_batch) * model.sequence / plan.cp;
}

/// A framework's kernels (models::eager_rope, eager_gated) as the step's kernels named `name`, each moving its own
/// bytes (its backward ratio 1: a backward's kernels are listed apart).
void append(std::vector<Kernel>& out, const std::vector<models::MemoryCall>& calls, std::string_view name) {
  for (const auto& call : calls)
    out.push_back(Kernel{.bytes = call.bytes, .memory = call.kind.kernel, .name = name, .backward = 1});
}

/// RoPE on this rank's Q and K heads: the rotated part of each head (all of it, or MLA's decoupled rotary part on
/// every query head and the one shared key head). Fused: one kernel each way reading and writing it; eager: PyTorch's
/// kernels on Q, then on K, with cos and sin tables of a sequence's positions.
void rotary_kernels(const ModelSpec& model, const ParallelPlan& plan, LayerForward& l) {
  const double tokens = rank_tokens(model, plan), t = plan.tp, e = models::element_size(model.dtype);
  const auto w = attention_widths(model);
  const double head = model.mla ? model.mla->qk_rope_head_dim : w.qk_head;
  const double q = model.mla ? model.heads * head / t : w.q / t, k = model.mla ? head : w.k / t;
  if (!model.eager_rope) {
    Kernel fused{.bytes = bytes_of(2 * tokens * (q + k) * e), .name = "rotary", .backward = 1};
    l.rope = {fused};
    l.rope_grad = {fused};
    return;
  }
  const double table = static_cast<double>(model.sequence) / plan.cp * head;
  for (const bool backward : {false, true})
    for (const double width : {q, k})
      append(backward ? l.rope_grad : l.rope, models::eager_rope(tokens * width, table, e, backward, false), "rotary");
}

/// The MLP's activation on `outputs` elements, forward and backward. GeLU and squared ReLU: one kernel reading and
/// writing f per token (at the `gelu` kind's share; its backward reads x and dy and writes dx). A gated MLP fused
/// (Megatron's bias_swiglu_fusion): one streaming kernel reading gate and up and writing their product, and a
/// backward reading the three and writing both gradients (5 / 3). Eager: PyTorch's kernels on the chunks of the
/// fused gate/up output (models::eager_gated), then the chunk's backward, a concatenation (`mlp_split`).
void activation_kernels(const ModelSpec& model, double outputs, LayerForward& l) {
  const double e = models::element_size(model.dtype);
  if (mlp_matrices(model.mlp) != 3) {
    const Kernel gelu{.bytes = bytes_of(2 * outputs * e),
                      .memory = models::MemoryKernel::gelu,
                      .name = "activation",
                      .backward = models::backward_bytes(models::MemoryKernel::gelu)};
    l.activation = l.activation_grad = {gelu};
    return;
  }
  if (!model.eager_glu) {
    const Kernel fused{.bytes = bytes_of(3 * outputs * e), .name = "activation", .backward = 5.0 / 3.0};
    l.activation = l.activation_grad = {fused};
    return;
  }
  for (const bool backward : {false, true})
    append(backward ? l.activation_grad : l.activation, models::eager_gated(outputs, e, backward, false), "activation");
  l.mlp_split = Kernel{.bytes = bytes_of(4 * outputs * e), .name = "mlp_split", .backward = 1};
}

/// The (query, key) pairs one head of one sequence attends to, as the model FLOPs count them (full s^2, Megatron's
/// count, whether causal or not): with a causal window w < s, twice the s w - w^2 / 2 pairs attended.
double counted_pairs(const ModelSpec& model, int window) {
  const double s = model.sequence, w = window;
  return window > 0 && window < model.sequence ? 2 * s * w - w * w : s * s;
}

/// The attention core on one rank, all its heads: QK^T and softmax(.)V over a / t heads, 2 b s^2 (a / t)(d_qk + d_v)
/// FLOPs (4 b s^2 h / t for MHA; with a sliding window of `window` tokens, counted_pairs for s^2).
Kernel attention_forward(const ModelSpec& model, const ParallelPlan& plan, int window) {
  const double b = model.micro_batch, s = model.sequence, a = model.heads;
  const double t = plan.tp, e = models::element_size(model.dtype);
  const auto w = attention_widths(model);
  Kernel k;
  k.flops = Flops{2 * b * counted_pairs(model, window) * (a / t) * (w.qk_head + w.v_head)};
  double bytes = (w.q + w.k + w.v + w.o) * b * s / t * e;  // Q, K, V read, O written
  // Unfused (eager) attention writes every score and masks the ones outside the window: the window saves nothing.
  if (!model.flash_attention) bytes += 4 * b * (a / t) * s * s * e;
  k.bytes = bytes_of(bytes);
  k.name = "attention";
  // FlashAttention's kernels by shape: this rank's heads, causal or not. MLA's Q K^T runs on d_qk and its
  // P V on d_v: their mean is the block's MMA work.
  if (model.flash_attention)
    k.attention = models::Attention{.batch = model.micro_batch,
                                    .heads = std::max<std::int64_t>(1, std::llround(a / t)),
                                    .seq = model.sequence,
                                    .head_dim = std::llround((w.qk_head + w.v_head) / 2),
                                    .kv_heads = std::max<std::int64_t>(
                                        1, std::llround((model.mla || model.kv_heads == 0 ? a : model.kv_heads) / t)),
                                    .causal = model.causal,
                                    .window = window};
  return k;
}

}  // namespace

LayerForward layer_forward(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer) {
  if (plan.cp > 1) return context_parallel_forward(model, plan, moe_layer);
  const double b = model.micro_batch, s = model.sequence, h = model.hidden;
  const double t = plan.tp, e = models::element_size(model.dtype);
  const double tokens = b * s;
  const auto w = attention_widths(model);
  const double f = moe_layer ? shared_ffn(model) : model.ffn_hidden;
  const int mats = mlp_matrices(model.mlp);
  LayerForward l;
  l.qkv = qkv_forward(model, tokens, t, e);
  l.attention = attention_forward(model, plan, 0);
  if (model.sliding_window) l.local_attention = attention_forward(model, plan, model.sliding_window->tokens);
  l.projection = gemm(tokens, w.o / t, h, e);
  // Per token: a norm reads and writes h, a residual add reads 2 h and writes h (over 1 / t of the tokens with
  // sequence parallelism); each runs twice a layer. Autocast keeps the residual stream in fp32 (the embedding's
  // output is fp32, and a bf16 output added to it stays fp32): a norm reads and writes 4 B, an add reads 4 + e and
  // writes 4 (PyTorch's unrolled mixed-type kernel: `mixed_add`), and the gradients' adds are fp32.
  const double per_token = plan.sequence_parallel ? h / t : h;
  const double r = model.autocast ? 4 : e;  // bytes per element of the residual stream
  l.norm.bytes = bytes_of(2 * tokens * per_token * r);
  l.norm.memory = model.norm == Norm::rmsnorm ? models::MemoryKernel::rmsnorm : models::MemoryKernel::layernorm;
  l.norm.backward = models::backward_bytes(l.norm.memory);
  const double residual = model.autocast ? (r + e + r) * tokens * per_token : 3 * tokens * per_token * e;
  const double residual_grad = 3 * tokens * per_token * r;  // a residual's gradient: one add of two into one
  if (model.rotary) rotary_kernels(model, plan, l);
  l.residual.bytes = bytes_of(residual);
  l.residual.name = "residual";
  if (model.autocast) l.residual.memory = models::MemoryKernel::mixed_add;
  l.residual_grad.bytes = bytes_of(residual_grad);
  l.residual_grad.name = "residual";
  if (!model.mla) {  // torch.split of the fused QKV output: its backward concatenates the three gradients
    l.qkv_split.bytes = bytes_of(2 * tokens * (w.q + w.k + w.v) / t * e);
    l.qkv_split.name = "qkv_split";
  }
  if (model.autocast) {
    // A cast of a [tokens, h] activation between fp32 and `dtype`, reading one and writing the other; each of the
    // three runs twice a layer (once for attention, once for the MLP).
    const Bytes casts = bytes_of(tokens * h * (4 + e));
    l.input_casts.bytes = l.input_grad_casts.bytes = l.output_grad_casts.bytes = casts;
    l.input_casts.name = l.input_grad_casts.name = l.output_grad_casts.name = "cast";
    l.input_grad_casts.memory = models::MemoryKernel::widen;
  }
  if (f > 0) activation_kernels(model, tokens * f / t, l);
  if (moe_layer) l.router = gemm(static_cast<double>(routed_tokens(model, plan)), h, model.moe->experts, e);
  if (f > 0) {
    l.mlp_up = gemm(tokens, h, (mats - 1) * f / t, e);
    l.mlp_down = gemm(tokens, f / t, h, e);
  }
  for (Kernel* linear : {&l.qkv, &l.projection, &l.mlp_up, &l.mlp_down}) linear->fp8 = true;
  if (model.linear_bias) {  // a bias gradient reads the output's gradient: column-parallel outputs are 1 / t wide
    l.qkv.bias_grad = bytes_of(tokens * (w.q + w.k + w.v) / t * e);
    l.projection.bias_grad = bytes_of(tokens * h * e);
    if (f > 0) {
      l.mlp_up.bias_grad = bytes_of(tokens * (mats - 1) * f / t * e);
      l.mlp_down.bias_grad = bytes_of(tokens * h * e);
    }
  }
  return l;
}

Kernel expert_forward(const ModelSpec& model, std::uint64_t tokens, int etp) {
  const double n = static_cast<double>(tokens), h = model.hidden, f = static_cast<double>(expert_ffn(model)) / etp;
  const double e = models::element_size(model.dtype);
  const Kernel up = gemm(n, h, (mlp_matrices(model.mlp) - 1) * f, e), down = gemm(n, f, h, e);
  // The expert's GEMMs and its activation, timed as one by the roofline.
  return {.flops = Flops{up.flops.count() + down.flops.count()},
          .bytes = up.bytes + down.bytes + bytes_of(activation_passes(model.mlp) * n * f * e),
          .fp8 = true,
          .name = "expert"};
}

Kernel logits_forward(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = rank_tokens(model, plan);
  // Megatron pads the vocabulary to a multiple of 128 x TP (--make-vocab-size-divisible-by 128), so that every TP
  // shard of the logits GEMM has aligned, tile-friendly columns.
  const std::int64_t multiple = 128 * std::int64_t{plan.tp};
  const double padded = static_cast<double>((model.vocabulary + multiple - 1) / multiple * multiple);
  return gemm(tokens, model.hidden, padded / plan.tp, models::element_size(model.dtype));
}

Kernel loss_forward(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = rank_tokens(model, plan);
  // Reads this rank's share of the logits (vocabulary-parallel cross-entropy with TP): in fp32, as Megatron casts
  // them; under autocast PyTorch's log-softmax reads them as they are (fp32 accumulation inside), after a cast.
  const double element = model.autocast ? models::element_size(model.dtype) : 4;
  Kernel k{Flops{0}, Bytes{static_cast<std::uint64_t>(std::llround(tokens * model.vocabulary / plan.tp * element))}};
  k.memory = models::MemoryKernel::cross_entropy;
  k.backward = models::backward_bytes(k.memory);
  return k;
}

Kernel loss_cast(const ModelSpec& model, const ParallelPlan& plan) {
  if (!model.autocast) return {};
  // Autocast runs cross_entropy in fp32: the logits are widened before it, their gradient narrowed after it.
  const double tokens = rank_tokens(model, plan);
  Kernel k{Flops{0}, bytes_of(tokens * model.vocabulary / plan.tp * (4 + models::element_size(model.dtype)))};
  k.memory = models::MemoryKernel::widen;
  k.name = "cast";
  return k;
}

Kernel embedding_forward(const ModelSpec& model, const ParallelPlan& plan) {
  // The gather: each token's row read and written, in the table's format (fp32 under autocast).
  const double tokens = rank_tokens(model, plan);
  const double element = model.autocast ? 4 : activation_bytes(model.dtype);
  Kernel k{Flops{0}, bytes_of(2 * tokens * model.hidden * element)};
  k.name = "embedding";
  return k;
}

Kernel embedding_grad(const ModelSpec& model, const ParallelPlan& plan) {
  // The table's gradient (this rank's V / t rows) zeroed, then each token's gradient row summed into its row
  // (PyTorch sorts the tokens, then sums each run): the probe's embedding_bwd counts the rows read and the table
  // written.
  const double tokens = rank_tokens(model, plan);
  const double rows = tokens + static_cast<double>(model.vocabulary) / plan.tp;
  Kernel k{Flops{0}, bytes_of(rows * model.hidden * gradient_bytes(model))};
  k.memory = models::MemoryKernel::embedding_grad;
  k.name = "embedding";
  return k;
}

Flops layer_model_flops(const ModelSpec& model, int layer) {
  const double b = model.micro_batch, s = model.sequence, h = model.hidden, a = model.heads;
  const double tokens = b * s;
  const auto w = attention_widths(model);
  const double mats = mlp_matrices(model.mlp);
  double flops = 2 * tokens * qkv_params(model, 1) +
                 2 * b * counted_pairs(model, attention_window(model, layer)) * a * (w.qk_head + w.v_head) +
                 2 * tokens * w.o * h;
  if (model.mla) flops -= 2 * tokens * (model.mla->q_lora_rank + model.mla->kv_lora_rank);  // norms, not GEMMs
  if (is_moe_layer(model, layer))
    flops += 2 * tokens * h * model.moe->experts + model.moe->top_k * 2 * mats * tokens * h * expert_ffn(model) +
             2 * mats * tokens * h * shared_ffn(model);
  else
    flops += 2 * mats * tokens * h * model.ffn_hidden;
  return Flops{flops};
}

Flops step_model_flops(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = static_cast<double>(model.micro_batch) * model.sequence, h = model.hidden;
  double forward = 2.0 * tokens * h * model.vocabulary;
  for (int l = 0; l < model.layers; ++l) forward += layer_model_flops(model, l).count();
  // Each multi-token-prediction module: its projection, its layer and its pass through the output head.
  for (int d = 0; d < model.mtp_layers; ++d)
    forward += 2 * tokens * 2 * h * h + layer_model_flops(model, model.layers + d).count() +
               2.0 * tokens * h * model.vocabulary;
  return Flops{3 * forward * plan.micro_batches * plan.dp};
}

double dense_layer_params(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  const double h = model.hidden, t = plan.tp, mats = mlp_matrices(model.mlp);
  // Norm weights and the router's h x E are replicated on every TP rank; the rest splits t ways.
  const double attention = qkv_params(model, t) + attention_widths(model).o * h / t + 2 * norm_params(model);
  if (!is_moe_layer(model, layer)) return attention + mats * h * model.ffn_hidden / t;
  return attention + h * model.moe->experts + mats * h * shared_ffn(model) / t;
}

double expert_layer_params(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  if (!is_moe_layer(model, layer)) return 0;
  return static_cast<double>(model.moe->experts / plan.ep) * mlp_matrices(model.mlp) * model.hidden *
         expert_ffn(model) / plan.etp;
}

double mtp_dense_params(const ModelSpec& model, const ParallelPlan& plan) {
  double p = 0;
  for (int d = 0; d < model.mtp_layers; ++d)
    p += dense_layer_params(model, plan, model.layers + d) + 2.0 * model.hidden * model.hidden / plan.tp +
         3 * norm_params(model);
  if (model.mtp_layers > 0 && plan.pp > 1) p += embedding_params(model, plan);
  return p;
}

double mtp_expert_params(const ModelSpec& model, const ParallelPlan& plan) {
  double p = 0;
  for (int d = 0; d < model.mtp_layers; ++d) p += expert_layer_params(model, plan, model.layers + d);
  return p;
}

Kernel mtp_projection(const ModelSpec& model, const ParallelPlan& plan) {
  Kernel k = gemm(rank_tokens(model, plan), 2.0 * model.hidden, static_cast<double>(model.hidden) / plan.tp,
                  models::element_size(model.dtype));
  k.fp8 = true;
  return k;
}

double embedding_params(const ModelSpec& model, const ParallelPlan& plan) {
  return static_cast<double>(model.vocabulary) * model.hidden / plan.tp;
}

double logits_params(const ModelSpec& model, const ParallelPlan& plan) {
  // Tied on one stage, the logits are the embedding's matrix; on several, the last stage holds its own copy.
  const bool shared = model.tied_embeddings && plan.pp == 1;
  return (shared ? 0 : embedding_params(model, plan)) + norm_params(model);
}

double total_params(const ModelSpec& model) {
  const ParallelPlan one;
  double p = embedding_params(model, one) + (model.tied_embeddings ? norm_params(model) : logits_params(model, one));
  for (int l = 0; l < model.layers; ++l) p += dense_layer_params(model, one, l) + expert_layer_params(model, one, l);
  return p;
}

double active_params(const ModelSpec& model) {
  double p = total_params(model);
  for (int l = 0; l < model.layers; ++l)
    if (is_moe_layer(model, l))
      p -= static_cast<double>(model.moe->experts - model.moe->top_k) * mlp_matrices(model.mlp) * model.hidden *
           expert_ffn(model);
  return p;
}

namespace {

/// A count from the map, the preset's value its default; required (no default) when the preset has none (0).
int count(const ConfigNode& node, std::string_view key, int fallback, int low, int high) {
  if (fallback <= 0 && low > 0) return positive_int(node, key, high);
  const int v = node.optional<int>(key, fallback);
  check_between(node, key, v, low, high);
  return v;
}

template <class Enum>
Enum choice(const ConfigNode& node, std::string_view key, Enum fallback,
            const std::vector<std::pair<std::string_view, Enum>>& names) {
  std::string known, current;
  for (const auto& [name, value] : names) {
    known += (known.empty() ? "" : ", ") + std::string(name);
    if (value == fallback) current = name;
  }
  const auto found = node.optional<std::string>(key, current);
  for (const auto& [name, value] : names)
    if (name == found) return value;
  node.fail_key(key, fmt::format("expected one of {}, found '{}'", known, found));
}

const std::vector<std::pair<std::string_view, Mlp>> MLP_NAMES{
    {"gelu", Mlp::gelu}, {"squared_relu", Mlp::squared_relu}, {"swiglu", Mlp::swiglu}, {"geglu", Mlp::geglu}};
const std::vector<std::pair<std::string_view, Norm>> NORM_NAMES{{"layernorm", Norm::layernorm},
                                                                {"rmsnorm", Norm::rmsnorm}};

/// A `fused|eager` key (`rope`, `glu`): whether the kernels are PyTorch's eager ones; `current` without the key. A key
/// for a part the model does not have (`applies` false) is an error saying `why`.
bool eager(const ConfigNode& node, const char* key, bool current, bool applies, std::string_view why) {
  if (!node.has(key)) return current;
  const auto value = node.required<std::string>(key);
  if (value != "fused" && value != "eager")
    node.fail_key(key, fmt::format("expected fused or eager, found '{}'", value));
  if (!applies) node.fail_key(key, std::string(why));
  return value == "eager";
}

ModelSpec start_from(const ConfigNode& name_node, const std::string& name) {
  const ModelSpec* preset = find_preset(name);
  if (!preset) name_node.fail(fmt::format("unknown model preset '{}'; known: {}", name, preset_names()));
  return *preset;
}

}  // namespace

ModelSpec parse_model(const ConfigNode& node, const Fabric& fabric) {
  if (node.is_scalar()) {  // `model: llama3.1-8b`: the preset as published
    ModelSpec m = start_from(node, node.as<std::string>());
    const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
    if (!gpu.peak(m.dtype)) node.fail(fmt::format("the {} preset has no published dense bf16 rate", gpu.model));
    return m;
  }
  ModelSpec m;
  if (const auto preset = node.maybe_child("preset")) m = start_from(*preset, preset->as<std::string>());
  m.layers = count(node, "layers", m.layers, 1, MAX_LAYERS);
  m.hidden = count(node, "hidden", m.hidden, 1, MAX_WIDTH);
  m.heads = count(node, "heads", m.heads, 1, MAX_WIDTH);
  const bool own_width = node.has("hidden") || node.has("heads");  // a preset's head_dim holds for its own widths
  m.head_dim = node.has("head_dim") || !own_width ? m.head_dim : 0;
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    node.fail_key("heads", fmt::format("must divide hidden ({}), got {} (or give head_dim)", m.hidden, m.heads));
  m.head_dim = count(node, "head_dim", m.head_dim > 0 ? m.head_dim : m.hidden / m.heads, 1, MAX_WIDTH);
  m.kv_heads = count(node, "kv_heads", m.kv_heads > 0 && !node.has("heads") ? m.kv_heads : m.heads, 1, MAX_WIDTH);
  if (m.heads % m.kv_heads != 0)
    node.fail_key("kv_heads", fmt::format("must divide heads ({}), got {}", m.heads, m.kv_heads));
  m.ffn_hidden = count(node, "ffn_hidden", m.ffn_hidden > 0 ? m.ffn_hidden : 4 * m.hidden, 1, MAX_WIDTH);
  m.sequence = count(node, "sequence", m.sequence, 1, MAX_WIDTH);
  // GPT-2's 50,257 padded to a multiple of 128 (Megatron)
  m.vocabulary = count(node, "vocabulary", m.vocabulary > 0 ? m.vocabulary : 50304, 1, MAX_WIDTH);
  m.micro_batch = count(node, "micro_batch", m.micro_batch, 1, MAX_MICRO_BATCHES);
  const auto dtype_name = node.optional<std::string>("dtype", std::string(to_string(m.dtype)));
  const auto dtype = dtype_from_string(dtype_name);
  if (!dtype)
    node.fail_key("dtype", fmt::format("unknown number format '{}'; known: {}", dtype_name, known_dtype_names()));
  const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
  if (!gpu.peak(*dtype))
    node.fail_key("dtype", fmt::format("the {} preset has no published dense {} rate", gpu.model, dtype_name));
  m.dtype = *dtype;
  const auto attention = node.optional<std::string>("attention", m.flash_attention ? "flash" : "unfused");
  if (attention != "flash" && attention != "unfused")
    node.fail_key("attention", fmt::format("expected flash or unfused, found '{}'", attention));
  m.flash_attention = attention == "flash";
  m.mlp = choice(node, "mlp", m.mlp, MLP_NAMES);
  m.norm = choice(node, "norm", m.norm, NORM_NAMES);
  m.rotary = node.optional<bool>("rotary", m.rotary);
  m.eager_rope = eager(node, "rope", m.eager_rope, m.rotary, "applies to rotary embeddings: set rotary: true");
  m.eager_glu =
      eager(node, "glu", m.eager_glu, mlp_matrices(m.mlp) == 3, "applies to gated MLPs: set mlp: swiglu or geglu");
  m.causal = node.optional<bool>("causal", m.causal);
  m.tied_embeddings = node.optional<bool>("tied_embeddings", m.tied_embeddings);
  m.linear_bias = node.optional<bool>("linear_bias", m.linear_bias);
  m.dropout = node.optional<bool>("dropout", m.dropout);
  m.autocast = node.optional<bool>("autocast", m.autocast);
  if (m.autocast && m.dtype != Dtype::bf16 && m.dtype != Dtype::fp16)
    node.fail_key("autocast", fmt::format("casts fp32 parameters to bf16 or fp16, not to {}", to_string(m.dtype)));
  if (const auto mla = node.maybe_child("mla")) {
    MlaSpec l = m.mla.value_or(MlaSpec{});
    l.q_lora_rank = count(*mla, "q_lora_rank", l.q_lora_rank, 0, MAX_WIDTH);
    l.kv_lora_rank = count(*mla, "kv_lora_rank", l.kv_lora_rank, 1, MAX_WIDTH);
    l.qk_nope_head_dim = count(*mla, "qk_nope_head_dim", l.qk_nope_head_dim, 1, MAX_WIDTH);
    l.qk_rope_head_dim = count(*mla, "qk_rope_head_dim", l.qk_rope_head_dim, 1, MAX_WIDTH);
    l.v_head_dim = count(*mla, "v_head_dim", l.v_head_dim, 1, MAX_WIDTH);
    m.mla = l;
  }
  if (const auto moe = node.maybe_child("moe")) {
    MoeSpec e = m.moe.value_or(MoeSpec{0, 2, 1.25, 0});
    e.experts = count(*moe, "experts", e.experts, 1, MAX_EXPERTS);
    e.top_k = count(*moe, "top_k", e.top_k, 1, MAX_EXPERTS);
    if (e.experts < e.top_k) moe->fail_key("top_k", fmt::format("must be <= experts ({}), got {}", e.experts, e.top_k));
    e.capacity_factor = moe->optional<double>("capacity_factor", e.capacity_factor);
    check_between(*moe, "capacity_factor", e.capacity_factor, 0.01, 1000.0);
    e.groups = count(*moe, "groups", e.groups, 1, MAX_ROUTING_GROUPS);
    if (e.experts % e.groups != 0)
      moe->fail_key("groups", fmt::format("must divide experts ({}), got {}", e.experts, e.groups));
    e.group_top_k = count(*moe, "group_top_k", moe->has("groups") ? e.groups : e.group_top_k, 1, e.groups);
    if (e.top_k > e.group_top_k * (e.experts / e.groups))
      moe->fail_key("group_top_k", fmt::format("leaves {} x {} experts to a token, fewer than top_k ({})",
                                               e.group_top_k, e.experts / e.groups, e.top_k));
    e.dropless = moe->optional<bool>("dropless", e.dropless);
    if (e.dropless && moe->has("capacity_factor"))
      moe->fail_key("capacity_factor",
                    "a dropless MoE has no capacity: give capacity_factor or dropless: true, not both");
    e.skew = moe->optional<double>("skew", e.skew);
    check_between(*moe, "skew", e.skew, 0.0, 10.0);
    e.ffn_hidden = count(*moe, "ffn_hidden", e.ffn_hidden > 0 ? e.ffn_hidden : m.ffn_hidden, 1, MAX_WIDTH);
    e.shared_experts = count(*moe, "shared_experts", e.shared_experts, 0, MAX_EXPERTS);
    e.dense_layers = count(*moe, "dense_layers", e.dense_layers, 0, m.layers - 1);
    e.every = count(*moe, "every", e.every, 1, m.layers);
    m.moe = e;
  }
  if (const auto window = node.maybe_child("sliding_window")) {
    SlidingWindow w = m.sliding_window.value_or(SlidingWindow{});
    w.tokens = count(*window, "tokens", w.tokens, 1, MAX_WIDTH);
    w.global_every = count(*window, "global_every", w.global_every, 0, m.layers);
    m.sliding_window = w;
  }
  if (m.sliding_window && !m.causal)
    node.fail_key("sliding_window",
                  "a sliding window is causal attention's (a query sees the keys before it): needs "
                  "causal: true");
  m.mtp_layers = count(node, "mtp_layers", m.mtp_layers, 0, MAX_MTP_LAYERS);
  if (m.moe && m.moe->dense_layers >= m.layers)
    node.fail_key("layers",
                  fmt::format("leaves no MoE layer: the first {} are dense (moe.dense_layers)", m.moe->dense_layers));
  return m;
}

namespace {
/// parallel.vp: the interleaved 1F1B's model chunks per stage (Megatron's virtual_pipeline_model_parallel_size).
void parse_virtual_pipeline(const ConfigNode& parallel, const ModelSpec& spec, ParallelPlan& p) {
  p.vp = parallel.optional<int>("vp", 1);
  check_between(parallel, "vp", p.vp, 1, std::max(1, spec.layers));
  if (p.vp == 1) return;
  if (p.pp < 2)
    parallel.fail_key("vp", fmt::format("interleaves pipeline stages: needs parallel.pp > 1, got {}", p.pp));
  if (p.pipeline != Pipeline::one_f_one_b)
    parallel.fail_key("vp", "the interleaved schedule is a 1F1B one: needs parallel.pipeline 1f1b");
  if (spec.layers % (p.pp * p.vp) != 0)
    parallel.fail_key("vp", fmt::format("pp x vp = {} x {} = {} must divide model.layers ({})", p.pp, p.vp, p.pp * p.vp,
                                        spec.layers));
}

/// parallel.cp: context parallelism, as Megatron-Core and TransformerEngine run it (workloads/training/context.hpp).
void parse_context_parallel(const ConfigNode& parallel, const ModelSpec& spec, ParallelPlan& p) {
  if (p.cp == 1) return;
  // Each rank takes two of the sequence's 2 cp chunks (the causal load balance).
  if (spec.sequence % (2 * p.cp) != 0)
    parallel.fail_key("cp", fmt::format("2 x cp = {} must divide model.sequence ({}): each CP rank takes two of its "
                                        "2 x cp chunks",
                                        2 * p.cp, spec.sequence));
  if (!spec.flash_attention)
    parallel.fail_key("cp", "ring attention runs on FlashAttention's partial results: needs model.attention flash");
  if (spec.sliding_window && spec.sliding_window->tokens < spec.sequence)
    parallel.fail_key("cp", "ring attention over a sliding window (model.sliding_window) is not modelled: use cp 1");
}
}  // namespace

ParallelPlan parse_plan(const ConfigNode& parallel, const ConfigNode& model, const ModelSpec& spec,
                        const Fabric& fabric) {
  ParallelPlan p;
  const int gpus = static_cast<int>(fabric.gpus().size());
  p.tp = parallel.optional<int>("tp", 1);
  check_between(parallel, "tp", p.tp, 1, gpus);
  p.pp = parallel.optional<int>("pp", 1);
  check_between(parallel, "pp", p.pp, 1, gpus);
  p.cp = parallel.optional<int>("cp", 1);
  check_between(parallel, "cp", p.cp, 1, gpus);
  const int rest = gpus / (p.tp * p.cp * p.pp) > 0 ? gpus / (p.tp * p.cp * p.pp) : 1;
  p.dp = parallel.optional<int>("dp", rest);
  check_between(parallel, "dp", p.dp, 1, gpus);
  if (p.gpus() != gpus && p.cp == 1)
    parallel.fail_key("dp", fmt::format("tp x pp x dp must equal the topology's {} GPUs, got {} x {} x {} = {}", gpus,
                                        p.tp, p.pp, p.dp, p.gpus()));
  if (p.gpus() != gpus)
    parallel.fail_key(
        "dp", fmt::format("tp x cp x pp x dp must equal the topology's {} GPUs, got {} x {} x {} x {} = {}", gpus, p.tp,
                          p.cp, p.pp, p.dp, p.gpus()));
  p.ep = parallel.optional<int>("ep", 1);
  check_between(parallel, "ep", p.ep, 1, gpus);
  if (p.ep > 1 && !spec.moe) parallel.fail_key("ep", "expert parallelism needs model.moe");
  if ((p.tp * p.cp * p.dp) % p.ep != 0)
    parallel.fail_key("ep", fmt::format("must divide {} = {} (the ranks of a pipeline stage), got {}",
                                        p.cp > 1 ? "tp x cp x dp" : "tp x dp", p.tp * p.cp * p.dp, p.ep));
  if (spec.moe && spec.moe->experts % p.ep != 0)
    parallel.fail_key("ep", fmt::format("must divide model.moe.experts ({}), got {}", spec.moe->experts, p.ep));
  p.etp = parallel.optional<int>("etp", 1);
  check_between(parallel, "etp", p.etp, 1, gpus);
  if (p.etp > 1 && !spec.moe) parallel.fail_key("etp", "expert tensor parallelism needs model.moe");
  if ((p.tp * p.cp * p.dp) % (p.etp * p.ep) != 0)
    parallel.fail_key("etp", fmt::format("etp x ep = {} x {} must divide {} = {} (the ranks of a pipeline stage)",
                                         p.etp, p.ep, p.cp > 1 ? "tp x cp x dp" : "tp x dp", p.tp * p.cp * p.dp));
  if (spec.moe && expert_ffn(spec) % p.etp != 0)
    parallel.fail_key("etp", fmt::format("must divide the experts' FFN ({}), got {}", expert_ffn(spec), p.etp));
  if (spec.heads % p.tp != 0)
    parallel.fail_key("tp", fmt::format("must divide model.heads ({}), got {}", spec.heads, p.tp));
  // Megatron-Core splits K and V by heads too: each TP rank holds whole KV heads (MQA runs on one rank per group).
  if (!spec.mla && spec.kv_heads % p.tp != 0)
    parallel.fail_key("tp", fmt::format("must divide model.kv_heads ({}), got {}", spec.kv_heads, p.tp));
  if (spec.ffn_hidden % p.tp != 0)
    parallel.fail_key("tp", fmt::format("must divide model.ffn_hidden ({}), got {}", spec.ffn_hidden, p.tp));
  if (spec.moe && (spec.moe->shared_experts * expert_ffn(spec)) % p.tp != 0)
    parallel.fail_key(
        "tp", fmt::format("must divide the shared experts' FFN ({} x {})", spec.moe->shared_experts, expert_ffn(spec)));
  if (spec.layers % p.pp != 0)
    parallel.fail_key("pp", fmt::format("must divide model.layers ({}), got {}", spec.layers, p.pp));
  parse_context_parallel(parallel, spec, p);
  if ((static_cast<long long>(spec.micro_batch) * spec.sequence / p.cp) % p.tp != 0)
    parallel.fail_key("tp", p.cp > 1 ? fmt::format("must divide a CP rank's micro_batch x sequence / cp ({}) tokens",
                                                   spec.micro_batch * spec.sequence / p.cp)
                                     : fmt::format("must divide micro_batch x sequence ({}) tokens",
                                                   spec.micro_batch * spec.sequence));
  const auto pipeline = parallel.optional<std::string>("pipeline", "1f1b");
  if (pipeline != "1f1b" && pipeline != "gpipe")
    parallel.fail_key("pipeline", fmt::format("expected 1f1b or gpipe, found '{}'", pipeline));
  p.pipeline = pipeline == "1f1b" ? Pipeline::one_f_one_b : Pipeline::gpipe;
  parse_virtual_pipeline(parallel, spec, p);
  p.sequence_parallel = parallel.optional<bool>("sequence_parallel", false);
  p.tp_overlap = parallel.optional<bool>("tp_overlap", false);
  if (p.tp_overlap && (!p.sequence_parallel || p.tp == 1))
    parallel.fail_key("tp_overlap",
                      "overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs: "
                      "needs sequence_parallel: true and tp > 1");
  if (p.tp_overlap && spec.autocast)
    parallel.fail_key("tp_overlap",
                      "is TransformerEngine's, whose GEMMs take no PyTorch autocast casts: needs "
                      "model.autocast false");
  p.recompute = choice(parallel, "recompute", Recompute::none,
                       {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  p.zero = parallel.optional<bool>("zero", false);
  p.fsdp = parallel.optional<bool>("fsdp", false);
  if (p.fsdp && p.dp * p.cp == 1)
    parallel.fail_key("fsdp", "shards over dp x cp: needs dp x cp > 1, got dp 1 and cp 1");
  p.bucket = parallel.optional<Bytes>("bucket", Bytes{25ull << 20});
  check_between(parallel, "bucket", p.bucket, Bytes{1ull << 10}, Bytes{1ull << 40});

  // The batch: micro-batches per step and pipeline, given directly or from the global batch in sequences.
  const auto micro_batches = model.is_map() ? model.maybe<int>("micro_batches") : std::nullopt;
  const auto global = model.is_map() ? model.maybe<int>("global_batch") : std::nullopt;
  if (micro_batches && global) model.fail_key("global_batch", "give either global_batch or micro_batches, not both");
  if (global) {
    const int per_step = spec.micro_batch * p.dp;
    if (*global <= 0 || *global % per_step != 0)
      model.fail_key("global_batch",
                     fmt::format("must be a positive multiple of micro_batch x dp = {} x {} = {}, got {}",
                                 spec.micro_batch, p.dp, per_step, *global));
    p.micro_batches = *global / per_step;
  } else {
    p.micro_batches = micro_batches.value_or(p.pp);
  }
  if (p.micro_batches < 1 || p.micro_batches > MAX_MICRO_BATCHES)
    model.fail_key(
        global ? "global_batch" : "micro_batches",
        fmt::format("gives {} micro-batches per step; expected 1 to {}", p.micro_batches, MAX_MICRO_BATCHES));
  // Megatron-Core's interleaved schedule runs the micro-batches in groups of pp through every chunk.
  if (p.vp > 1 && p.micro_batches % p.pp != 0)
    model.fail_key(global ? "global_batch" : "micro_batches",
                   fmt::format("gives {} micro-batches per step; the interleaved pipeline (parallel.vp {}) needs a "
                               "multiple of parallel.pp ({})",
                               p.micro_batches, p.vp, p.pp));
  return p;
}

}  // namespace snsim::workloads::training
