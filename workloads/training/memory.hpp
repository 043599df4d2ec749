// What one GPU of a training plan holds in HBM at its peak, by pipeline stage (every rank of a stage holds the
// same): weights, gradients, optimizer state, the activations kept for the backward, communication buffers and a
// framework allowance.
//
//   weights      the rank's parameters (model.hpp) in the training dtype (bf16 for fp8, whose master copy is bf16)
//   gradients    as many, in the dtype the generator reduces them in (gradient_bytes)
//   optimizer    Adam: an fp32 master weight, momentum and variance, 12 B per parameter for 16-bit training (8 B,
//                m and v, when the weights are already fp32 or wider): Rajbhandari et al. 2020, "ZeRO", §3.1.
//                `zero` (the distributed optimizer, ZeRO-1) shards it over the data-parallel group, the experts'
//                over their expert-data-parallel group; gradients and weights stay whole
//   activations  per layer and micro-batch, Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//                Transformer Models", §4 (s b h (34 + 5 a s / h) bytes for a GPT layer in 16-bit with
//                dropout), term by term for this model:
//                  norm inputs         2 x e T h                                  (T = b s tokens, e element bytes)
//                  QKV input           e T h
//                  Q, K, V             e T (q + k + v)                            (q, k, v: their widths; GQA: fewer)
//                  attention core      e b a s^2 (softmax output) unfused; with dropout also its 1-byte mask and
//                                      its e-byte output; FlashAttention or selective recomputation keep none of it
//                                      but the 4-byte log-sum-exp per row and head
//                  projection input    e T o
//                  MLP                 its input e T h, the activation's input e T (m - 1) f, its output e T f
//                                      (m = 3 matrices for a gated MLP, else 2)
//                  dropout masks       2 x T h (1 byte each), when model.dropout
//                MoE layer: the router's input and fp32 scores (4 T E / tp), and per routed token on this rank
//                (T / tp x top_k x capacity_factor, the capacity-padded dispatch) the expert's input, activation
//                input and output; shared experts as a dense MLP. Tensor parallelism divides what lives inside
//                the TP regions by tp; sequence parallelism divides the rest too (§4.2.2). Full recomputation keeps
//                only each layer's input (e T h, / tp with SP) and rebuilds one layer at a time, so one layer's
//                activations are added once.
//                In flight: 1F1B (PipeDream-Flush) stage i holds min(pp - i, m) micro-batches (stage 0: pp, the
//                most, §4.2.3); GPipe all m; interleaved 1F1B its warm-up forwards plus one, in chunks of 1 / vp
//                of its layers (workloads/training/schedule.hpp; the chunks' activations taken as equal). The last
//                stage adds one micro-batch's logits (e T V / tp) and their fp32 copy in the cross-entropy, the first
//                the embedding's dropout mask.
//   communication  NCCL's buffers per communicator the rank is in (TP, DP, the pipeline neighbours, EP, expert DP,
//                the global norm's), `memory.communicator_buffers` each, and the MoE all-to-all's send and receive
//                buffers (E x slots x h x e each)
//   overhead     `memory.framework_overhead`: the CUDA context, cuBLAS workspaces, the allocator's fragmentation;
//                snsim measures none of it
//
// FSDP (ZeRO-3): the dense weights and gradients are a 1 / dp shard plus the units held whole (two units' weights,
// the one computing and the one prefetched, and one unit's gradient); the optimizer state is sharded.
//
// Context parallelism: a CP rank counts as a rank of s / cp-token sequences whose optimizer state shards over DP x
// CP, with one more communicator (the ring's).
//
// Left out: the pipeline's send and receive staging (the received activation is counted as the next layer's
// input), temporary buffers inside a kernel (GEMM workspaces, FlashAttention's tiles), the tied embedding's extra
// gradient copy, and any offloading.
#pragma once

#include <string>
#include <vector>

#include "workloads/training/model.hpp"

namespace snsim::workloads::training {

struct MemorySpec {
  Bytes framework_overhead{0};
  // NCCL_BUFFSIZE's 4 MiB default (NCCL's environment-variable documentation) for each of a ring's two neighbours
  // on each of 16 channels: an estimate of one communicator's Simple-protocol buffers.
  Bytes communicator_buffers{128ull << 20};
  bool allow_oversubscribe = false;  // simulate a plan that does not fit
};

struct Footprint {
  int stage = 0;
  int in_flight = 0;  // micro-batches (interleaved: micro-batch chunks) whose activations the stage holds at its peak
  double params = 0;  // on one rank
  Bytes weights, gradients, optimizer, activations, communication, overhead;
  Bytes total() const { return weights + gradients + optimizer + activations + communication + overhead; }
};

/// A footprint's size in GiB, as the memory tables and plan reports print it.
double gib(Bytes b);

/// Activations that layer `layer` (0-based, whole model) keeps for its backward, one micro-batch, one rank.
Bytes layer_activations(const ModelSpec& model, const ParallelPlan& plan, int layer);
/// One rank of `stage`.
Footprint stage_footprint(const ModelSpec& model, const ParallelPlan& plan, const MemorySpec& memory, int stage);
/// Every stage's, first to last.
std::vector<Footprint> footprints(const ModelSpec& model, const ParallelPlan& plan, const MemorySpec& memory);

}  // namespace snsim::workloads::training
