// The order of a pipeline stage's work in Megatron-Core's interleaved 1F1B schedule
// (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving; Narayanan et al.
// 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §2.2.2), and where a
// stage's layers sit in the model when each of the p stages holds v chunks.
//
// Chunks: the model's L layers are cut into p x v chunks of L / (p v) consecutive layers; stage i holds chunks
// i, i + p, ..., i + (v - 1) p, so an activation goes around the stages v times (stage p - 1's chunk c sends to stage
// 0's chunk c + 1). Chunk c of a stage is its local layers [c L / (p v), (c + 1) L / (p v)).
//
// Order: the m micro-batches of each chunk run in groups of p (Megatron-Core's microbatch_group_size_per_vp_stage
// default), all chunks of a group before the next group: the k-th forward is micro-batch (k / (p v)) p + k % p of
// chunk (k % (p v)) / p; the k-th backward the same micro-batch of chunk v - 1 - (k % (p v)) / p. Stage i first runs
// (p - i - 1) x 2 + (v - 1) x p warm-up forwards (all m v when m = p), then one forward and one backward in turn,
// then the remaining backwards. Hence m must be a multiple of p.
//
// The bubble on uniform stages: (p - 1) / (v m) of the ideal step, v times smaller than 1F1B's (p - 1) / m, for v
// times as many pipeline transfers per micro-batch; stage 0 holds the activations of (p - 1) x 2 + (v - 1) p + 1
// chunk-micro-batches at its peak, (1 + (p - 1) / (p v)) times 1F1B's p stages' worth (Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", §4.2.3).
#pragma once

#include <vector>

#include "workloads/training/model.hpp"

namespace snsim::workloads::training {

/// One forward or backward of one micro-batch through one of a stage's chunks.
struct PipelineTask {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;
  bool operator==(const PipelineTask&) const = default;
};

/// Forwards that stage `stage` runs before its first backward.
int interleaved_warmup(const ParallelPlan& plan, int stage);
/// Stage `stage`'s forwards and backwards of one step, in the order it runs them (plan.vp chunks; 1F1B when vp 1).
std::vector<PipelineTask> interleaved_order(const ParallelPlan& plan, int stage);
/// Micro-batch chunks whose activations stage `stage` holds at its peak (each 1 / vp of the stage's layers).
int interleaved_in_flight(const ParallelPlan& plan, int stage);

/// The model layer (0-based) of stage `stage`'s local layer `local` (0-based over its layers / pp, chunk by chunk).
int global_layer(const ModelSpec& model, const ParallelPlan& plan, int stage, int local);

}  // namespace snsim::workloads::training
