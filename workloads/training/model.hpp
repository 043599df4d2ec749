// A transformer training step's shape: the model, the parallelism plan, where each rank sits in the plan, and what
// one layer costs on one rank (FLOPs and HBM bytes, for the GPU's roofline in models/compute.hpp).
//
// Rank mapping (Megatron-Core, megatron/core/parallel_state.py, its default order "tp-cp-ep-dp-pp"): tensor parallel
// innermost, then context parallel, then data parallel, then pipeline parallel:
//
//   rank = tp_rank + tp x (cp_rank + cp x (dp_rank + dp x pp_rank))
//
// so a TP group is `tp` consecutive ranks (one NVLink hop apart on every topology here), a CP group strides by tp,
// a DP group by tp x cp, and a pipeline stage is the tp x cp x dp consecutive ranks of one pp_rank. The gradients
// are reduced over DP x CP (the ranks of a stage with the same tp_rank: CP ranks hold the same weights and see
// other tokens), and the distributed optimizer shards over that group too. Expert parallelism follows
// Megatron-Core's MoE parallel folding (its expert grid "etp-ep-dp-pp"): stage index i (the rank's place among the
// tp x cp x dp ranks of its stage) is expert-tensor rank i % etp, EP rank (i / etp) % ep and expert-data rank
// i / (etp ep). An ETP group is `etp` consecutive ranks, which hold the same experts, each 1 / etp of every expert's
// FFN; an EP group is the ep ranks of one expert-data rank and one ETP rank (stride etp), rank j of it holding
// experts [j E/ep, (j+1) E/ep); the expert-data-parallel group, which reduces the experts' gradients, is the ranks
// of the stage with the same ETP and EP ranks. Hence etp x ep must divide tp x cp x dp, ep the expert count and etp
// the expert FFN. With etp 1 an EP group is ep consecutive ranks.
//
// Context parallelism (workloads/training/context.hpp): each CP rank holds s / cp of every sequence's tokens, so
// every per-token kernel, activation and collective is 1 / cp of the whole, and attention is a ring over the CP
// group.
//
// FLOPs of one layer's forward on a micro-batch of b sequences of s tokens (T = b s), hidden h, FFN hidden f, a
// query heads and kv key-value heads of head dimension d, all TP ranks together (Narayanan et al. 2021, "Efficient
// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §5.1 and appendix; GEMM m x k by k x n =
// 2mkn FLOPs):
//
//   QKV projection    2 T h (a + 2 kv) d                       (MHA, kv = a, d = h / a: 6 T h^2)
//   attention         QK^T 2 b s^2 a d  +  softmax(.)V 2 b s^2 a d = 4 b s^2 a d  (full s^2, as the paper counts)
//   output projection 2 T a d h
//   MLP               2 T h f + 2 T f h = 4 T h f; gated (SwiGLU, GeGLU: gate and up, then down) 6 T h f
//   total             24 b s h^2 + 4 b s^2 h = 24 b s h^2 (1 + s / 6h)  for MHA, GeLU, f = 4h (the paper's count)
//   logits            2 T h V (last stage)
//
// MLA (DeepSeek-V3) replaces the QKV projection by its down and up projections (model.cpp, MlaSpec) and the head
// dimensions by nope + rope for QK^T and v for PV.
//
// and the backward pass twice the forward (a GEMM's input gradient and weight gradient each cost the forward's
// FLOPs; the paper's factor 3 for forward + backward, without recomputation). Model FLOPs per step, for MFU, are
// 3 x forward over the global batch: 72 B s l h^2 (1 + s/6h + V/12lh) for f = 4h (Narayanan et al. eq. 3 without
// the recomputation pass; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", §6 defines model FLOPs utilisation this way). With tensor parallelism t every GEMM and the attention
// heads split t ways. A MoE layer replaces the MLP by a router (2 T h E), top_k experts per token, each an MLP of
// moe.ffn_hidden (Fedus et al. 2022, Switch Transformers; Lepikhin et al. 2021, GShard), run on the tokens they
// receive, and its shared experts (Dai et al. 2024, "DeepSeekMoE"), a tensor-parallel MLP every token goes through.
//
// HBM bytes: a GEMM reads both operands and writes its result once (dtype bytes each); attention is FlashAttention
// (Dao et al. 2022: Q, K, V read, O written, no s^2 matrix in HBM) unless `attention: unfused`, which writes the
// b a s^2 scores, reads and writes them in the softmax and reads them again for the product with V (4 passes);
// layer norms, residual adds and the activation are one memory-bound kernel of 10 b s h + 2 b s f / t elements (two
// norms read and write b s h, two residual adds read 2 and write 1, the GeLU reads and writes b s f / t; a gated
// activation reads 2 b s f / t and writes b s f / t; rotary reads and writes Q and K's rotated part). With
// sequence parallelism (Korthikanti et al. 2022 §4.2.2) the norms and residuals split t ways, and the TP
// all-reduces become a reduce-scatter after and an all-gather before each block.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/compute.hpp"
#include "sim/config.hpp"
#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim::workloads::training {

/// The MLP's activation: GeLU and squared ReLU (Nemotron-4) are two matrices, h x f and f x h; the gated ones,
/// SwiGLU (Llama, Mixtral, Qwen3, DeepSeek-V3) and GeGLU, three: a gate and an up projection, h x f each, whose
/// activated product goes through the down projection (Shazeer 2020, "GLU Variants Improve Transformer").
enum class Mlp { gelu, squared_relu, swiglu, geglu };
enum class Norm { layernorm, rmsnorm };

/// Multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §2.1.1; the config.json names):
/// Q through a rank-`q_lora_rank` down and up projection (0: one h x a(nope + rope) projection), K and V through a
/// shared rank-`kv_lora_rank` latent, plus one decoupled rotary key of `qk_rope_head_dim` shared by the heads.
struct MlaSpec {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

/// A mixture-of-experts MLP: in every `every`-th layer after the first `dense_layers` dense ones.
struct MoeSpec {
  int experts = 8;
  int top_k = 2;
  double capacity_factor = 1.25;  // an expert takes at most capacity_factor x (tokens x top_k / experts)
  double skew = 0;                // Zipf exponent of the experts' popularity: 0 uniform, 1 Zipf, larger hotter
  int ffn_hidden = 0;             // each expert's FFN hidden size; 0: the model's ffn_hidden
  int shared_experts = 0;         // experts every token goes through (DeepSeekMoE), a dense MLP of shared x ffn_hidden
  int dense_layers = 0;           // the first layers keep a dense MLP (DeepSeek-V3's first_k_dense_replace)
  int every = 1;                  // then every k-th layer is MoE (Megatron's moe_layer_freq)
  bool dropless = false;          // no capacity: every choice computed, the exchanges carry what was routed
  int groups = 1;                 // group-limited routing: experts in this many groups (DeepSeek's n_group) ...
  int group_top_k = 1;            // ... of which a token picks this many (topk_group); = groups: unlimited
};

/// Sliding-window (local) attention (Beltagy et al. 2020, "Longformer"; config.json's sliding_window): a query attends
/// to the `tokens` keys up to its own, in every layer but every `global_every`-th (layers k-1, 2k-1, ...: Gemma 3's
/// sliding_window_pattern 6), which attend to all before them; 0: every layer local (Mistral 7B v0.1). Causal only.
struct SlidingWindow {
  int tokens = 0;
  int global_every = 0;
};

struct ModelSpec {
  std::string preset;  // the named preset it started from, if any (workloads/training/presets.hpp)
  int layers = 0;
  int hidden = 0;
  int ffn_hidden = 0;  // 4 x hidden unless given
  int heads = 0;
  int kv_heads = 0;  // key and value heads: = heads (MHA), fewer (GQA), 1 (MQA)
  int head_dim = 0;  // hidden / heads unless given
  int sequence = 0;
  int vocabulary = 0;
  int micro_batch = 1;  // sequences per micro-batch
  Dtype dtype = Dtype::bf16;
  bool flash_attention = true;
  Mlp mlp = Mlp::gelu;
  Norm norm = Norm::layernorm;
  bool rotary = false;           // rotary position embeddings (RoPE) on Q and K
  bool eager_rope = false;       // RoPE as HF's eager x cos + rotate_half(x) sin (five kernels), not one fused kernel
  bool eager_glu = false;        // a gated MLP's activation as PyTorch's eager kernels, not one fused kernel each way
  bool causal = true;            // each token attends to those before it (a decoder); false: to all (BERT's encoder)
  bool tied_embeddings = false;  // the logits reuse the input embedding's V x h matrix
  bool dropout = false;          // dropout after attention and the MLP (memory: its masks)
  // PyTorch AMP (torch.autocast over fp32 parameters): weights, gradients and their reduction in fp32; each linear
  // layer's weight cast to `dtype` in every forward and its gradient cast back to fp32 in the backward; the residual
  // stream, its norms and the loss in fp32 (LayerForward says which kernels that adds).
  bool autocast = false;
  bool linear_bias =
      false;  // the linear layers of the blocks have biases (GPT-2/3, Megatron's default): bias gradients
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  std::optional<SlidingWindow> sliding_window;
  // Multi-token prediction (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" §2.2; config.json's
  // num_nextn_predict_layers): after the last layer, on the last pipeline stage, `mtp_layers` modules in turn, module
  // d predicting the token d + 1 further: the embedding of the tokens shifted by d + 1 and the previous depth's hidden
  // state, each RMSNorm-ed, concatenated and projected (2h -> h), one transformer layer (model layer `layers` + d),
  // then the shared final norm, output head and cross-entropy.
  int mtp_layers = 0;
};

/// The keys a query of layer `layer` (0-based, over the whole model) attends to at most: its sliding window, or 0
/// when it attends to every key before it.
int attention_window(const ModelSpec& model, int layer);
/// Whether layer `layer` (0-based, over the whole model) is a MoE layer.
bool is_moe_layer(const ModelSpec& model, int layer);
/// An expert's FFN hidden size.
int expert_ffn(const ModelSpec& model);
/// Weight matrices of one MLP: 2, or 3 for a gated activation.
int mlp_matrices(Mlp mlp);

/// Per token, all heads: the widths of Q, K, V and the attention output; one head's QK and V dimensions. GQA: K and
/// V of kv_heads x head_dim; MLA: K after its up projection, a x (nope + rope).
struct AttentionWidths {
  double q, k, v, o, qk_head, v_head;
};
AttentionWidths attention_widths(const ModelSpec& model);

enum class Pipeline { one_f_one_b, gpipe };
/// Activation recomputation (Korthikanti et al. 2022, §5): none; selective, the attention core (QK^T, softmax, the
/// product with V) recomputed in the backward instead of kept; full, every layer's forward recomputed from its
/// input, the only activation kept.
enum class Recompute { none, selective, full };

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1, ep = 1;
  int etp = 1;            // expert tensor parallel: each expert's FFN split etp ways (Megatron-Core's ETP)
  int vp = 1;             // model chunks per pipeline stage (interleaved 1F1B: workloads/training/schedule.hpp)
  int cp = 1;             // context parallel: each rank holds 1 / cp of every sequence (ring attention)
  int micro_batches = 1;  // per step, per pipeline (per data-parallel replica)
  Pipeline pipeline = Pipeline::one_f_one_b;
  bool sequence_parallel = false;
  // TransformerEngine's userbuffer overlap (Megatron-Core's tp_comm_overlap): each sequence-parallel all-gather and
  // reduce-scatter runs as a ring exchange of 1 / tp chunks beside the GEMM it feeds or drains, chunk by chunk.
  bool tp_overlap = false;
  Recompute recompute = Recompute::none;
  bool zero = false;          // distributed optimizer (ZeRO-1): gradients reduce-scattered, parameters all-gathered
  bool fsdp = false;          // FSDP (ZeRO-3): dense parameters, gradients and optimizer state sharded over DP x CP
  Bytes bucket{25ull << 20};  // gradient bucket (PyTorch DDP's bucket_cap_mb = 25)

  int gpus() const { return tp * cp * pp * dp; }
};

/// Where a rank sits in the plan.
struct Coord {
  int tp = 0, dp = 0, pp = 0, cp = 0;
};
int rank_of(const ParallelPlan& plan, Coord c);
Coord coord_of(const ParallelPlan& plan, int rank);
/// The sorted ranks of `rank`'s groups.
std::vector<int> tp_group(const ParallelPlan& plan, int rank);
std::vector<int> dp_group(const ParallelPlan& plan, int rank);
std::vector<int> cp_group(const ParallelPlan& plan, int rank);
/// DP x CP: the ranks that reduce the rank's (dense) gradients and shard its optimizer state.
std::vector<int> dp_cp_group(const ParallelPlan& plan, int rank);
std::vector<int> ep_group(const ParallelPlan& plan, int rank);
std::vector<int> etp_group(const ParallelPlan& plan, int rank);
std::vector<int> expert_dp_group(const ParallelPlan& plan, int rank);
/// The rank's place in its EP group (which experts it holds).
int ep_rank(const ParallelPlan& plan, int rank);
/// Which EP group of its stage the rank is in: 0 .. tp x cp x dp / ep - 1 (its routing's draw).
int ep_group_index(const ParallelPlan& plan, int rank);

/// One kernel's work on one rank.
struct Kernel {
  Flops flops{};
  Bytes bytes{};
  // A linear layer of the transformer layer (QKV, projection, MLP, experts): in fp8 when the model trains in fp8, as
  // TransformerEngine's linear layers; attention, the memory-bound kernels, the router and the logits stay in bf16.
  bool fp8 = false;
  // The GEMM's shape (its forward pass) when the kernel is one GEMM of known shape: timed by its tiles
  // (ComputeModel::gemm_time) rather than the roofline; its backward is the same shape with `backward` set.
  std::optional<models::Gemm> gemm{};
  // Fused attention of known shape (its forward): timed by its score blocks (ComputeModel::attention_time), its
  // backward the same shape with `backward` set.
  std::optional<models::Attention> attention{};
  // What its memory side does, when it is a memory-bound kernel (its backward reaches that kind's backward share).
  models::MemoryKernel memory = models::MemoryKernel::stream;
  // What the step's report of time by kernel calls it ("gemm", "attention", "residual", ...); empty: its memory kind.
  std::string_view name{};
  // The bytes its backward moves per byte of its forward (memory-bound kernels: their kind's models::backward_bytes;
  // GEMMs and attention run twice the FLOPs).
  double backward = 2;
  // A linear layer with a bias: the bytes of its output's gradient, which the bias gradient's column sums read.
  Bytes bias_grad{0};
};

/// One layer's kernels on one rank for one micro-batch (the MLP ones are 0 for a MoE layer): the forward's, whose
/// backward is the same kernel at `Kernel::backward`, and the kernels only one pass has. The memory-bound ones: a
/// norm and a residual add (each twice a layer, before and after attention and the MLP), RoPE, and the MLP's
/// activation. Autocast adds casts around the linear layers whose input or output gradient is the fp32 residual
/// stream (QKV and MLP-up read a norm's fp32 output; the projection's and MLP-down's output gradient is fp32).
struct LayerForward {
  Kernel qkv, attention, projection, mlp_up, mlp_down, norm, residual, router;
  Kernel local_attention;  // the attention of a sliding-window layer (model.sliding_window); none without one
  // The MLP's activation, forward and backward: one kernel each way, or a gated MLP's eager kernels
  // (models::eager_gated); none for a MoE layer without a dense MLP.
  std::vector<Kernel> activation, activation_grad;
  // RoPE on Q and K, forward and backward: one fused kernel each way, or HF's eager kernels on Q, then on K
  // (models::eager_rope); none without rotary embeddings.
  std::vector<Kernel> rope, rope_grad;
  Kernel residual_grad;      // backward: a residual gradient's accumulation (twice a layer)
  Kernel qkv_split;          // backward: the fused QKV output's split undone (dq, dk and dv concatenated)
  Kernel mlp_split;          // backward: a gated MLP's fused gate/up output's chunk undone (the two concatenated)
  Kernel input_casts;        // autocast, forward: a norm's fp32 output cast for QKV, and again for MLP-up
  Kernel input_grad_casts;   // autocast, backward: those inputs' gradients cast back to fp32
  Kernel output_grad_casts;  // autocast, backward: the residual's fp32 gradient cast for the projection and MLP-down
};

/// Bytes per weight and gradient element as the model keeps and reduces them: 16-bit formats (and fp8, whose master
/// weights are bf16) in bf16, autocast's fp32 parameters in fp32.
double gradient_bytes(const ModelSpec& model);
/// Bytes per element of the activations between kernels, as the TP collectives, the pipeline and the CP ring move
/// them: bf16 for fp8 training (TransformerEngine casts to fp8 inside its GEMMs only), else the dtype's.
double activation_bytes(Dtype dtype);

/// One layer's forward kernels on one rank: a dense layer's MLP, or a MoE layer's router and its shared experts' MLP
/// (tensor-parallel like a dense one; none without shared experts). The routed experts are expert_forward's.
LayerForward layer_forward(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer);
/// Experts' forward (up, activation and down) on `tokens` routed tokens together, on one rank: 1 / etp of their FFN.
Kernel expert_forward(const ModelSpec& model, std::uint64_t tokens, int etp = 1);
/// The logits GEMM on the last stage, one rank, one micro-batch (the vocabulary padded to 128 x TP, as Megatron).
Kernel logits_forward(const ModelSpec& model, const ParallelPlan& plan);
/// The softmax cross-entropy over those logits (fp32), its own kernel.
Kernel loss_forward(const ModelSpec& model, const ParallelPlan& plan);
/// Autocast's casts of the logits around the loss (forward: widened to fp32; backward: the gradient narrowed, the
/// same bytes); nothing without autocast.
Kernel loss_cast(const ModelSpec& model, const ParallelPlan& plan);
/// The embedding's gather (forward) and its table's gradient (backward: the table zeroed, then the tokens' gradient
/// rows summed into it), on one rank for one micro-batch.
Kernel embedding_forward(const ModelSpec& model, const ParallelPlan& plan);
Kernel embedding_grad(const ModelSpec& model, const ParallelPlan& plan);
/// Tokens of one micro-batch that one rank routes in a MoE layer: b s / (cp tp) (its sequence-parallel shard).
std::uint64_t routed_tokens(const ModelSpec& model, const ParallelPlan& plan);

/// All-TP-ranks forward FLOPs of layer `layer` on one micro-batch, by the formulas above (MoE: top_k experts per
/// token, and the shared experts).
Flops layer_model_flops(const ModelSpec& model, int layer);
/// Model FLOPs of one step over the global batch: 3 x forward (layers and logits), for MFU.
Flops step_model_flops(const ModelSpec& model, const ParallelPlan& plan);

/// Parameters on one rank: of layer `layer`'s dense part (attention, norms, the MLP or the router and shared
/// experts), of its routed experts, of the input embedding (first stage) and of the final norm and logits (last
/// stage; none when tied to the embedding on a single stage).
double dense_layer_params(const ModelSpec& model, const ParallelPlan& plan, int layer);
double expert_layer_params(const ModelSpec& model, const ParallelPlan& plan, int layer);
double embedding_params(const ModelSpec& model, const ParallelPlan& plan);
double logits_params(const ModelSpec& model, const ParallelPlan& plan);

/// The multi-token-prediction modules' parameters on the last stage's ranks: their layers' dense part (the
/// projection, the two input norms and a final norm with it, and with pp > 1 a copy of the embedding, which the
/// module looks up and the first stage holds) and their routed experts; 0 without them.
double mtp_dense_params(const ModelSpec& model, const ParallelPlan& plan);
double mtp_expert_params(const ModelSpec& model, const ParallelPlan& plan);
/// A module's projection of the concatenated norms (2h -> h, column-parallel) on one rank and micro-batch.
Kernel mtp_projection(const ModelSpec& model, const ParallelPlan& plan);

/// The model's parameters, every weight once (a tied embedding once): what model cards call its size; and those a
/// token goes through (top_k routed and the shared experts of a MoE layer, the whole embedding): its active size.
/// Without the multi-token-prediction modules, as DeepSeek-V3's 671B and 37B count it.
double total_params(const ModelSpec& model);
double active_params(const ModelSpec& model);

/// Parses `model` and `parallel` of a training workload and checks them against each other and the fabric.
ModelSpec parse_model(const ConfigNode& node, const Fabric& fabric);
ParallelPlan parse_plan(const ConfigNode& parallel, const ConfigNode& model, const ModelSpec& spec,
                        const Fabric& fabric);

}  // namespace snsim::workloads::training
