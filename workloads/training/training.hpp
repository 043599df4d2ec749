// The `training` workload: transformer training steps from a model description and a parallelism plan, emitted per
// layer on every rank, under BSP (NCCL collectives and barriers) or PGAS (one-sided puts with signals).
//
//   - type: training
//     schedule: bsp                   # bsp | pgas
//     steps: 2
//     model: {layers: 8, hidden: 4096, heads: 32, sequence: 4096, micro_batch: 1, global_batch: 32, dtype: bf16,
//             moe: {experts: 8, top_k: 2, capacity_factor: 1.25, skew: 1.0}}      # moe: optional
//     parallel: {tp: 2, pp: 1, dp: 4, ep: 1, pipeline: 1f1b, sequence_parallel: false, zero: false, bucket: 25MiB}
//     pgas: {blocks: 32, threshold: 1.0, resync_every: 4}
//
// One step on one rank (stage = its pipeline stage, workloads/training/model.hpp maps ranks):
//
//   stream 0  the pipeline schedule (1F1B as Megatron-LM's forward_backward_pipelining_without_interleaving, its
//             interleaved form over parallel.vp chunks per stage (workloads/training/schedule.hpp), or GPipe): per
//             micro-batch and layer the forward kernels (QKV, attention, projection, norms, MLP or router + experts),
//             the TP collectives between them, MoE dispatch and combine; activations and their gradients between
//             stages; the backward in reverse. The last micro-batch's backward records an event when a gradient bucket
//             is complete.
//             With context parallelism each attention is a ring of KV exchanges with the CP neighbours beside
//             its rounds (workloads/training/context.hpp).
//   stream 1  per bucket, once its event is recorded, the gradient reduction over the DP x CP group (and
//             the experts' over their expert-data-parallel group): PyTorch DDP's bucketed all-reduce overlapped
//             with the backward (Li et al. 2020, "PyTorch Distributed", §3.2.3).
//   then      the optimizer (Adam, memory-bound), and under BSP a global gradient-norm all-reduce (clipping).
//
// BSP: TP all-reduce (sequence parallel: reduce-scatter and all-gather), pipeline sends and receives as NCCL
// send/recv pairs (a broadcast between the two ranks, Megatron's batched send_forward_recv_backward as two
// concurrent streams), MoE dispatch and combine as all_to_all of GShard's capacity-padded buffers, DP all-reduce
// (ZeRO: reduce-scatter, then all-gather of the parameters after the optimizer).
// PGAS: every reduction is a put_signal of each chunk to its owner and a signal_wait of exactly the chunks it
// owns, then a put_signal of the result to every member (an all-gather); activations go by put_signal to the next
// stage; MoE dispatch puts each expert's tokens to its rank with a signal per expert and the expert starts when its
// own tokens are in, load-balanced (workloads/training/balancer.hpp) after a get of the load counters; ZeRO
// parameters are gathered by puts and waited for per layer at their first use in the next step; no global barrier
// but a shmem_barrier every `resync_every` steps; a quiet ends each step.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "workloads/training/memory.hpp"
#include "workloads/training/model.hpp"
#include "workloads/workload.hpp"

namespace snsim::workloads {

WorkloadRegistry::Entry training_entry();

namespace training {

/// The title of the (metric, value) table every training workload adds to its run's report: what sweeps and
/// `snsim compare` read its step time, MFU and throughput from (find_table, sim/report.hpp).
inline constexpr std::string_view SUMMARY_TABLE = "training summary";

enum class Schedule { bsp, pgas };

/// A training workload's parameters, parsed and checked.
struct TrainingConfig {
  ModelSpec model;
  ParallelPlan plan;
  Schedule schedule = Schedule::bsp;
  int steps = 1;
  int pgas_blocks = 32;    // thread blocks issuing a large put (NVSHMEM collectives run on many CTAs)
  double threshold = 1.0;  // the balancer keeps the router's expert while its load is under threshold x mean
  int resync_every = 4;    // PGAS: a shmem_barrier every K steps
  MemorySpec memory;
};

/// What a training op belongs to, from its record's tag.
struct OpInfo {
  enum Pass { forward, backward, step_level };
  int step = 0;
  int micro_batch = 0;
  int unit = 0;  // 0 the embedding, 1..L the stage's layers, L+1 the logits
  Pass pass = forward;
};

class Training final : public Workload {
 public:
  explicit Training(TrainingConfig config, const Fabric& fabric);
  void emit(std::vector<Program>& programs, int phase, const std::vector<bool>& needed) const override;
  void set_seed(std::uint64_t seed) override { seed_ = seed; }
  /// "does not fit: ..." when a stage's footprint exceeds the GPU's HBM and memory.allow_oversubscribe is false:
  /// then it emits no op, and its report says why with the numbers.
  std::optional<std::string> outcome() const override;
  /// Per-step times and MFU; a summary (metric, value); busy and idle time per GPU.
  std::vector<Table> summarize(const RankRecords& records, int phase) const override;
  /// The data-parallel replicas: replica d holds the ranks of dp coordinate d.
  Replicas replicas() const override;
  /// Dense steps: every replica's program is the first's with its dp coordinate (tests compare them whole). MoE steps
  /// draw their routes per rank.
  bool replicas_alike() const override { return !config_.model.moe; }
  /// What the results will not show: a parallel.bucket that changes nothing (workloads/training/training.cpp).
  std::vector<std::string> notes() const override { return notes_; }
  void add_note(std::string note) { notes_.push_back(std::move(note)); }

  const TrainingConfig& config() const { return config_; }
  /// Whether the linear layers and attention run by shape (ComputeModel::gemm_time, attention_time): the GPU preset
  /// knows its SMs and its boost clock (the Hopper presets the models are fitted on) and the model trains in a format
  /// the GEMM model has; otherwise they run on the roofline.
  bool by_shape() const { return by_shape_; }
  /// Every stage's HBM footprint per GPU (workloads/training/memory.hpp), and whether the largest fits the GPU's.
  const std::vector<Footprint>& footprints() const { return footprints_; }
  bool fits() const;
  /// The tag of an op and back.
  int tag(const OpInfo& info) const;
  OpInfo info(int tag) const;

 private:
  TrainingConfig config_;
  FlopsPerSecond peak_;  // of one GPU in the model's dtype
  Bytes hbm_;            // of one GPU
  bool by_shape_ = false;
  std::vector<Footprint> footprints_;
  std::uint64_t seed_ = 1;
  std::vector<std::string> notes_;
};

/// Parses a training workload (what the registry's factory does), for tests and tools.
std::unique_ptr<Training> make_training(const ConfigNode& node, const Fabric& fabric);

}  // namespace training
}  // namespace snsim::workloads
