// Context parallelism as Megatron-Core runs it with TransformerEngine's ring attention (Liu et al. 2023, "Ring
// Attention with Blockwise Transformers for Near-Infinite Context"; TransformerEngine's
// AttnFuncWithCPAndKVP2P, its cp_comm_type "p2p"):
//
//   - every sequence is cut into 2 cp chunks and CP rank r holds chunks r and 2 cp - 1 - r, so that under the
//     causal mask every rank has the same attention work; every per-token kernel (the projections, the MLP, the
//     norms), activation, TP collective and pipeline transfer is 1 / cp of the whole;
//   - attention is a ring over the CP group: the rank's queries meet its own K and V, then cp - 1 times the K and V
//     its previous neighbour sends on (each rank sends its current chunk to the next, receives the next one from
//     the previous), each send and receive overlapped with the attention of the chunk in hand; its FLOPs per rank
//     are 1 / cp of the layer's;
//   - the backward passes K and V around again with their gradients dK and dV: cp - 1 rounds of twice the
//     forward's bytes, overlapped with the attention backward of the chunk in hand;
//   - the weights are the same on every CP rank: gradients are reduced over DP x CP (model.hpp's rank mapping).
#pragma once

#include "workloads/training/model.hpp"

namespace snsim::workloads::training {

/// One layer's forward kernels on one CP rank: the per-token ones on its b s / cp tokens, and 1 / cp of the
/// attention (its queries against every key), whose Q and partial O pass through HBM once per ring step.
LayerForward context_parallel_forward(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer);

/// The K and V one CP rank sends its ring neighbour per forward round: its b s / cp tokens' keys and values on its
/// TP rank's heads (GQA: 2 x kv_heads / tp x head_dim elements per token).
Bytes ring_kv_bytes(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace snsim::workloads::training
