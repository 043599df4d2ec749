#include "workloads/training/memory.hpp"

#include <algorithm>
#include <cmath>

#include "workloads/training/schedule.hpp"

namespace snsim::workloads::training {
namespace {

/// A dense MLP of hidden f: its input, the activation's input and output (inside the TP region but the input).
double mlp_activations(const ModelSpec& m, double tokens, double f, double t, double outside, double e) {
  return e * tokens * m.hidden / outside + e * tokens * (mlp_matrices(m.mlp) - 1) * f / t + e * tokens * f / t;
}

/// Everything layer `layer` keeps without recomputation.
double kept(const ModelSpec& m, const ParallelPlan& plan, int layer) {
  const double b = m.micro_batch, s = m.sequence, h = m.hidden, a = m.heads, t = plan.tp;
  const double e = models::element_size(m.dtype), tokens = b * s;
  // Outside the TP regions (norms, residuals, the blocks' inputs, dropout masks): split only with SP.
  const double outside = plan.sequence_parallel ? t : 1;
  const auto w = attention_widths(m);
  double bytes = 2 * e * tokens * h / outside;  // the two norms' inputs
  bytes += e * tokens * h / outside;            // the QKV input (the first norm's output)
  bytes += e * tokens * (w.q + w.k + w.v) / t;  // Q, K, V
  const bool core_kept = !m.flash_attention && plan.recompute == Recompute::none;
  if (core_kept)
    bytes += b * (a / t) * s * s * (e + (m.dropout ? 1 + e : 0));  // softmax output (and dropout mask, output)
  else
    bytes += 4 * b * (a / t) * s;                    // the softmax's log-sum-exp, fp32, per row and head
  bytes += e * tokens * w.o / t;                     // the projection's input
  if (m.dropout) bytes += 2 * tokens * h / outside;  // the two dropout masks, 1 byte each
  if (!is_moe_layer(m, layer)) return bytes + mlp_activations(m, tokens, m.ffn_hidden, t, outside, e);
  const auto& moe = *m.moe;
  const double routed = tokens / t;
  bytes += e * tokens * h / outside + 4 * routed * moe.experts;  // the router's input and fp32 scores
  // Expert tensor parallelism: the ETP group's tokens gathered (etp times the rank's), each through 1 / etp of the FFN.
  // Dropless: the mean load (a rank of hot experts holds more than this).
  const double received = routed * moe.top_k * (moe.dropless ? 1.0 : moe.capacity_factor) * plan.etp;
  const double f = static_cast<double>(expert_ffn(m)) / plan.etp;
  bytes += e * received * (h + (mlp_matrices(m.mlp) - 1) * f + f);
  if (moe.shared_experts > 0)
    bytes += e * tokens * (mlp_matrices(m.mlp) - 1) * moe.shared_experts * f / t +
             e * tokens * moe.shared_experts * f / t;  // their input is the router's
  return bytes;
}

double optimizer_bytes_per_param(const ModelSpec& model) {
  const double weight = gradient_bytes(model);
  return weight < 4 ? 12 : 2 * weight;
}

/// Micro-batches (interleaved: micro-batch chunks of 1 / vp of the stage's layers) the stage holds at its peak.
int in_flight(const ParallelPlan& plan, int stage) {
  if (plan.pipeline == Pipeline::gpipe) return plan.micro_batches;
  return interleaved_in_flight(plan, stage);
}

}  // namespace

Bytes layer_activations(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  if (plan.recompute == Recompute::full) {
    const double outside = plan.sequence_parallel ? plan.tp : 1;
    return bytes_of(models::element_size(model.dtype) * model.micro_batch * model.sequence * model.hidden / outside);
  }
  return bytes_of(kept(model, plan, layer));
}

Footprint stage_footprint(const ModelSpec& model, const ParallelPlan& plan, const MemorySpec& memory, int stage) {
  if (plan.cp > 1) {
    // A CP rank is a rank of s / cp-token sequences whose weights, like a DP rank's, are reduced and sharded over
    // DP x CP (the experts' over the stage's tp x cp x dp / ep), plus the ring's communicator.
    ModelSpec local = model;
    local.sequence = model.sequence / plan.cp;
    ParallelPlan folded = plan;
    folded.dp = plan.dp * plan.cp;
    folded.cp = 1;
    Footprint f = stage_footprint(local, folded, memory, stage);
    f.communication += memory.communicator_buffers;
    return f;
  }
  Footprint f;
  f.stage = stage;
  f.in_flight = in_flight(plan, stage);
  const int layers = model.layers / plan.pp;
  const bool first_stage = stage == 0, last_stage = stage == plan.pp - 1;
  double dense = 0, experts = 0, per_micro_batch = 0, largest_layer = 0;
  for (int local = 0; local < layers; ++local) {
    const int l = global_layer(model, plan, stage, local);
    dense += dense_layer_params(model, plan, l);
    experts += expert_layer_params(model, plan, l);
    per_micro_batch += static_cast<double>(layer_activations(model, plan, l).count());
    largest_layer = std::max(largest_layer, kept(model, plan, l));
  }
  if (first_stage) dense += embedding_params(model, plan);
  if (last_stage) {
    dense += logits_params(model, plan) + mtp_dense_params(model, plan);
    experts += mtp_expert_params(model, plan);
    // The multi-token-prediction modules' layers, kept like the stage's own, and each module's two normed inputs.
    const double tokens = static_cast<double>(model.micro_batch) * model.sequence / plan.cp;
    for (int d = 0; d < model.mtp_layers; ++d) {
      const int l = model.layers + d;
      per_micro_batch += static_cast<double>(layer_activations(model, plan, l).count()) +
                         2 * tokens * model.hidden * models::element_size(model.dtype);
      largest_layer = std::max(largest_layer, kept(model, plan, l));
    }
  }
  f.params = dense + experts;
  f.weights = bytes_of(f.params * gradient_bytes(model));
  f.gradients = bytes_of(f.params * gradient_bytes(model));
  const double dp = plan.zero || plan.fsdp ? plan.dp : 1,
               expert_dp = plan.zero ? static_cast<double>(expert_dp_group(plan, 0).size()) : 1;
  f.optimizer = bytes_of((dense / dp + experts / expert_dp) * optimizer_bytes_per_param(model));
  if (plan.fsdp) {
    // A shard of every dense parameter and gradient, and whole: the unit computing and the one prefetched (their
    // gathered parameters) and the gradient of the unit being reduced.
    double largest_unit = first_stage ? embedding_params(model, plan) : 0;
    if (last_stage) largest_unit = std::max(largest_unit, logits_params(model, plan) + mtp_dense_params(model, plan));
    for (int local = 0; local < layers; ++local)
      largest_unit = std::max(largest_unit, dense_layer_params(model, plan, global_layer(model, plan, stage, local)));
    const double sharded = dense / plan.dp + experts;
    f.weights = bytes_of((sharded + 2 * largest_unit) * gradient_bytes(model));
    f.gradients = bytes_of((sharded + largest_unit) * gradient_bytes(model));
  }

  const double e = models::element_size(model.dtype), tokens = static_cast<double>(model.micro_batch) * model.sequence;
  const double outside = plan.sequence_parallel ? plan.tp : 1;
  // Interleaved, a chunk-micro-batch holds one chunk's layers: 1 / vp of the stage's (chunks alike on average).
  double activations = per_micro_batch * f.in_flight / plan.vp;
  if (plan.recompute == Recompute::full) activations += largest_layer;  // the layer being rebuilt
  if (first_stage && model.dropout) activations += tokens * model.hidden / outside * f.in_flight / plan.vp;
  if (last_stage)  // the final norm's input, the logits and the cross-entropy's fp32 copy, for the one micro-batch
    activations += (1 + model.mtp_layers) *  // and each multi-token-prediction module's
                   (e * tokens * model.hidden / outside + (e + 4) * tokens * model.vocabulary / plan.tp);
  f.activations = bytes_of(activations);

  int communicators = 0;
  if (plan.tp > 1) ++communicators;
  if (plan.dp > 1) ++communicators;
  if (!first_stage) ++communicators;
  if (!last_stage) ++communicators;
  if (plan.gpus() > 1) ++communicators;  // the gradient norm's, over every rank
  double moe_buffers = 0;
  if (model.moe) {
    if (plan.ep > 1) ++communicators;
    if (plan.etp > 1) ++communicators;
    if (expert_dp_group(plan, 0).size() > 1) ++communicators;
    const double slots =
        std::ceil((model.moe->dropless ? 1.0 : model.moe->capacity_factor) *
                  static_cast<double>(routed_tokens(model, plan)) * model.moe->top_k / model.moe->experts);
    if (plan.ep > 1) moe_buffers = 2 * model.moe->experts * slots * model.hidden * e;
  }
  f.communication = bytes_of(communicators * static_cast<double>(memory.communicator_buffers.count()) + moe_buffers);
  f.overhead = memory.framework_overhead;
  return f;
}

std::vector<Footprint> footprints(const ModelSpec& model, const ParallelPlan& plan, const MemorySpec& memory) {
  std::vector<Footprint> out;
  for (int stage = 0; stage < plan.pp; ++stage) out.push_back(stage_footprint(model, plan, memory, stage));
  return out;
}

double gib(Bytes b) {
  return static_cast<double>(b.count()) / static_cast<double>(1ull << 30);
}

}  // namespace snsim::workloads::training
