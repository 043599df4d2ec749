#include "workloads/training/model.hpp"

#include <cmath>

#include <fmt/format.h>

namespace snsim::workloads::training {
namespace {

// Sanity limits: far beyond any published model, small enough that products stay exact in doubles.
constexpr int MAX_LAYERS = 1024;
constexpr int MAX_WIDTH = 1 << 20;  // hidden, ffn_hidden, sequence, vocabulary
constexpr int MAX_EXPERTS = 1024;
constexpr int MAX_MICRO_BATCHES = 4096;  // per step and pipeline

std::vector<int> ranks_where(const ParallelPlan& plan, int rank, auto same) {
  std::vector<int> out;
  const Coord me = coord_of(plan, rank);
  for (int r = 0; r < plan.gpus(); ++r)
    if (same(me, coord_of(plan, r), r)) out.push_back(r);
  return out;
}

/// The rank's index among the tp x dp ranks of its stage.
int stage_index(const ParallelPlan& plan, int rank) {
  const Coord c = coord_of(plan, rank);
  return c.tp + plan.tp * c.dp;
}

/// A GEMM (m x k) by (k x n): 2mkn FLOPs; both operands read and the result written once.
Kernel gemm(double m, double k, double n, double element) {
  return {Flops{2 * m * k * n}, Bytes{static_cast<std::uint64_t>(std::llround((m * k + k * n + m * n) * element))}};
}

int positive_int(const ConfigNode& node, std::string_view key, int high) {
  const int v = node.required<int>(key);
  check_between(node, key, v, 1, high);
  return v;
}

}  // namespace

int rank_of(const ParallelPlan& plan, Coord c) {
  return c.tp + plan.tp * (c.dp + plan.dp * c.pp);
}

Coord coord_of(const ParallelPlan& plan, int rank) {
  return {rank % plan.tp, (rank / plan.tp) % plan.dp, rank / (plan.tp * plan.dp)};
}

std::vector<int> tp_group(const ParallelPlan& plan, int rank) {
  return ranks_where(plan, rank, [](Coord a, Coord b, int) { return a.dp == b.dp && a.pp == b.pp; });
}

std::vector<int> dp_group(const ParallelPlan& plan, int rank) {
  return ranks_where(plan, rank, [](Coord a, Coord b, int) { return a.tp == b.tp && a.pp == b.pp; });
}

std::vector<int> ep_group(const ParallelPlan& plan, int rank) {
  const int block = stage_index(plan, rank) / plan.ep;
  return ranks_where(plan, rank,
                     [&](Coord a, Coord b, int r) { return a.pp == b.pp && stage_index(plan, r) / plan.ep == block; });
}

std::vector<int> expert_dp_group(const ParallelPlan& plan, int rank) {
  const int place = ep_rank(plan, rank);
  return ranks_where(plan, rank, [&](Coord a, Coord b, int r) { return a.pp == b.pp && ep_rank(plan, r) == place; });
}

int ep_rank(const ParallelPlan& plan, int rank) {
  return stage_index(plan, rank) % plan.ep;
}

double element_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64:
      return 8;
    case Dtype::fp32:
    case Dtype::tf32:
      return 4;
    case Dtype::bf16:
    case Dtype::fp16:
      return 2;
    case Dtype::fp8:
      return 1;
  }
  return 2;
}

double gradient_bytes(Dtype dtype) {
  return dtype == Dtype::fp8 ? 2 : element_bytes(dtype);
}

std::uint64_t routed_tokens(const ModelSpec& model, const ParallelPlan& plan) {
  return static_cast<std::uint64_t>(model.micro_batch) * static_cast<std::uint64_t>(model.sequence) /
         static_cast<std::uint64_t>(plan.tp);
}

LayerForward layer_forward(const ModelSpec& model, const ParallelPlan& plan) {
  const double b = model.micro_batch, s = model.sequence, h = model.hidden, f = model.ffn_hidden, a = model.heads;
  const double t = plan.tp, e = element_bytes(model.dtype);
  const double tokens = b * s;
  LayerForward l;
  l.qkv = gemm(tokens, h, 3 * h / t, e);
  // QK^T and softmax(.)V over this rank's a / t heads: 4 b s^2 h / t FLOPs.
  l.attention.flops = Flops{4 * b * s * s * h / t};
  double attention_bytes = 4 * tokens * h / t * e;  // Q, K, V read, O written
  if (!model.flash_attention) attention_bytes += 4 * b * (a / t) * s * s * e;
  l.attention.bytes = Bytes{static_cast<std::uint64_t>(std::llround(attention_bytes))};
  l.projection = gemm(tokens, h / t, h, e);
  const double norms = (plan.sequence_parallel ? 10 * tokens * h / t : 10 * tokens * h) + 2 * tokens * f / t;
  if (model.moe) {
    const double routed = static_cast<double>(routed_tokens(model, plan));
    l.router = gemm(routed, h, model.moe->experts, e);
    l.elementwise.bytes = Bytes{
        static_cast<std::uint64_t>(std::llround((plan.sequence_parallel ? 10 * tokens * h / t : 10 * tokens * h) * e))};
  } else {
    l.mlp_up = gemm(tokens, h, f / t, e);
    l.mlp_down = gemm(tokens, f / t, h, e);
    l.elementwise.bytes = Bytes{static_cast<std::uint64_t>(std::llround(norms * e))};
  }
  return l;
}

Kernel expert_forward(const ModelSpec& model, std::uint64_t tokens) {
  const double n = static_cast<double>(tokens), h = model.hidden, f = model.ffn_hidden;
  const double e = element_bytes(model.dtype);
  const Kernel up = gemm(n, h, f, e), down = gemm(n, f, h, e);
  // The GeLU between them reads and writes n f elements.
  return {Flops{up.flops.count() + down.flops.count()},
          up.bytes + down.bytes + Bytes{static_cast<std::uint64_t>(std::llround(2 * n * f * e))}};
}

Kernel logits_forward(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = static_cast<double>(model.micro_batch) * model.sequence;
  Kernel k = gemm(tokens, model.hidden, static_cast<double>(model.vocabulary) / plan.tp, element_bytes(model.dtype));
  // The softmax cross-entropy reads the logits once more (fp32).
  k.bytes += Bytes{static_cast<std::uint64_t>(std::llround(tokens * model.vocabulary / plan.tp * 4))};
  return k;
}

Flops layer_model_flops(const ModelSpec& model) {
  const double b = model.micro_batch, s = model.sequence, h = model.hidden, f = model.ffn_hidden;
  double flops = 6 * b * s * h * h + 4 * b * s * s * h + 2 * b * s * h * h;
  if (model.moe)
    flops += 2 * b * s * h * model.moe->experts + model.moe->top_k * 4 * b * s * h * f;
  else
    flops += 4 * b * s * h * f;
  return Flops{flops};
}

Flops step_model_flops(const ModelSpec& model, const ParallelPlan& plan) {
  const double forward = model.layers * layer_model_flops(model).count() +
                         2.0 * model.micro_batch * model.sequence * model.hidden * model.vocabulary;
  return Flops{3 * forward * plan.micro_batches * plan.dp};
}

double dense_layer_params(const ModelSpec& model, const ParallelPlan& plan) {
  const double h = model.hidden, f = model.ffn_hidden;
  // The router's h x E weights are replicated on every TP rank; the rest splits t ways.
  return 4 * h * h / plan.tp + (model.moe ? h * model.moe->experts : 2 * h * f / plan.tp);
}

double expert_layer_params(const ModelSpec& model, const ParallelPlan& plan) {
  if (!model.moe) return 0;
  return static_cast<double>(model.moe->experts / plan.ep) * 2.0 * model.hidden * model.ffn_hidden;
}

double vocabulary_params(const ModelSpec& model, const ParallelPlan& plan) {
  return static_cast<double>(model.vocabulary) * model.hidden / plan.tp;
}

ModelSpec parse_model(const ConfigNode& node, const Fabric& fabric) {
  ModelSpec m;
  m.layers = positive_int(node, "layers", MAX_LAYERS);
  m.hidden = positive_int(node, "hidden", MAX_WIDTH);
  m.heads = positive_int(node, "heads", MAX_WIDTH);
  m.ffn_hidden = node.optional<int>("ffn_hidden", 4 * m.hidden);
  check_between(node, "ffn_hidden", m.ffn_hidden, 1, MAX_WIDTH);
  m.sequence = positive_int(node, "sequence", MAX_WIDTH);
  m.vocabulary = node.optional<int>("vocabulary", 50304);  // GPT-2's 50,257 padded to a multiple of 128 (Megatron)
  check_between(node, "vocabulary", m.vocabulary, 1, MAX_WIDTH);
  m.micro_batch = node.optional<int>("micro_batch", 1);
  check_between(node, "micro_batch", m.micro_batch, 1, MAX_MICRO_BATCHES);
  if (m.hidden % m.heads != 0)
    node.fail_key("heads", fmt::format("must divide hidden ({}), got {}", m.hidden, m.heads));
  const auto dtype_name = node.optional<std::string>("dtype", "bf16");
  const auto dtype = dtype_from_string(dtype_name);
  if (!dtype)
    node.fail_key("dtype", fmt::format("unknown number format '{}'; known: {}", dtype_name, known_dtype_names()));
  const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
  if (!gpu.peak(*dtype))
    node.fail_key("dtype", fmt::format("the {} preset has no published dense {} rate", gpu.model, dtype_name));
  m.dtype = *dtype;
  const auto attention = node.optional<std::string>("attention", "flash");
  if (attention != "flash" && attention != "unfused")
    node.fail_key("attention", fmt::format("expected flash or unfused, found '{}'", attention));
  m.flash_attention = attention == "flash";
  if (const auto moe = node.maybe_child("moe")) {
    MoeSpec e;
    e.experts = positive_int(*moe, "experts", MAX_EXPERTS);
    e.top_k = moe->optional<int>("top_k", 2);
    check_between(*moe, "top_k", e.top_k, 1, MAX_EXPERTS);
    if (e.experts < e.top_k) moe->fail_key("top_k", fmt::format("must be <= experts ({}), got {}", e.experts, e.top_k));
    e.capacity_factor = moe->optional<double>("capacity_factor", 1.25);
    check_between(*moe, "capacity_factor", e.capacity_factor, 0.01, 1000.0);
    e.skew = moe->optional<double>("skew", 0.0);
    check_between(*moe, "skew", e.skew, 0.0, 10.0);
    m.moe = e;
  }
  return m;
}

ParallelPlan parse_plan(const ConfigNode& parallel, const ConfigNode& model, const ModelSpec& spec,
                        const Fabric& fabric) {
  ParallelPlan p;
  const int gpus = static_cast<int>(fabric.gpus().size());
  p.tp = parallel.optional<int>("tp", 1);
  check_between(parallel, "tp", p.tp, 1, gpus);
  p.pp = parallel.optional<int>("pp", 1);
  check_between(parallel, "pp", p.pp, 1, gpus);
  const int rest = gpus / (p.tp * p.pp) > 0 ? gpus / (p.tp * p.pp) : 1;
  p.dp = parallel.optional<int>("dp", rest);
  check_between(parallel, "dp", p.dp, 1, gpus);
  if (p.gpus() != gpus)
    parallel.fail_key("dp", fmt::format("tp x pp x dp must equal the topology's {} GPUs, got {} x {} x {} = {}", gpus,
                                        p.tp, p.pp, p.dp, p.gpus()));
  p.ep = parallel.optional<int>("ep", 1);
  check_between(parallel, "ep", p.ep, 1, gpus);
  if (p.ep > 1 && !spec.moe) parallel.fail_key("ep", "expert parallelism needs model.moe");
  if ((p.tp * p.dp) % p.ep != 0)
    parallel.fail_key(
        "ep", fmt::format("must divide tp x dp = {} (the ranks of a pipeline stage), got {}", p.tp * p.dp, p.ep));
  if (spec.moe && spec.moe->experts % p.ep != 0)
    parallel.fail_key("ep", fmt::format("must divide model.moe.experts ({}), got {}", spec.moe->experts, p.ep));
  if (spec.heads % p.tp != 0)
    parallel.fail_key("tp", fmt::format("must divide model.heads ({}), got {}", spec.heads, p.tp));
  if (spec.ffn_hidden % p.tp != 0)
    parallel.fail_key("tp", fmt::format("must divide model.ffn_hidden ({}), got {}", spec.ffn_hidden, p.tp));
  if (spec.layers % p.pp != 0)
    parallel.fail_key("pp", fmt::format("must divide model.layers ({}), got {}", spec.layers, p.pp));
  if ((static_cast<long long>(spec.micro_batch) * spec.sequence) % p.tp != 0)
    parallel.fail_key("tp",
                      fmt::format("must divide micro_batch x sequence ({}) tokens", spec.micro_batch * spec.sequence));
  const auto pipeline = parallel.optional<std::string>("pipeline", "1f1b");
  if (pipeline != "1f1b" && pipeline != "gpipe")
    parallel.fail_key("pipeline", fmt::format("expected 1f1b or gpipe, found '{}'", pipeline));
  p.pipeline = pipeline == "1f1b" ? Pipeline::one_f_one_b : Pipeline::gpipe;
  p.sequence_parallel = parallel.optional<bool>("sequence_parallel", false);
  p.zero = parallel.optional<bool>("zero", false);
  p.bucket = parallel.optional<Bytes>("bucket", Bytes{25ull << 20});
  check_between(parallel, "bucket", p.bucket, Bytes{1ull << 10}, Bytes{1ull << 40});

  // The batch: micro-batches per step and pipeline, given directly or from the global batch in sequences.
  const auto micro_batches = model.maybe<int>("micro_batches");
  const auto global = model.maybe<int>("global_batch");
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
  return p;
}

}  // namespace snsim::workloads::training
