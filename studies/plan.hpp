// `snsim plan`: which parallel plan to run a training job with (issue 20, item 4). Every valid plan of a model on a
// fabric is enumerated, those whose HBM footprint (workloads/training/memory.hpp) exceeds the GPU's are dropped,
// the rest ranked by a fast estimate when more than a budget remain, and the best `budget` simulated as a sweep
// (studies/sweep.hpp: one process per run, sharded, resumable), then ranked by simulated step time.
//
// A plan is valid when (Megatron-Core's rules, as parse_plan checks them, docs/training.md):
//   tp   divides the GPUs of one NVLink domain (tensor parallelism stays inside a node), model.heads, kv_heads (not
//        with MLA), ffn_hidden, the shared experts' FFN and micro_batch x sequence
//   cp   1, or 2 or 4 when 2 cp divides the sequence and each CP rank keeps at least 4096 of its tokens
//   pp   divides model.layers
//   vp   1 (1F1B), or 2 or 4 model chunks per stage (interleaved 1F1B) when pp > 1, pp x vp divides model.layers
//        and the micro-batches are a multiple of pp
//   dp   = GPUs / (tp x cp x pp), and divides the global batch
//   ep   1 for a dense model; for MoE every ep dividing model.moe.experts and dp x cp
//   etp  1 for a dense model; for MoE 1, and tp when tp > 1 divides the experts' FFN (label -etpN)
//   micro_batch  every divisor of the per-replica batch (global batch / dp); micro_batches = the quotient
//   recompute    none, selective or full
//   zero         off, or when dp x cp > 1 the distributed optimizer (ZeRO-1, label zero1) or FSDP (ZeRO-3, zero3)
// Sequence parallelism is on whenever tp > 1 (what Megatron-Core recommends with TP; it only saves memory).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/fabric.hpp"
#include "sim/units.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/model.hpp"

namespace snsim::studies {

/// One candidate: a parallel plan and its micro-batch size.
struct PlanCandidate {
  workloads::training::ParallelPlan parallel;
  int micro_batch = 1;

  /// "tp2-pp1-dp4-ep1-mb1-selective-zero1" ("tp1-pp4-vp2-..." when interleaved): the sweep's label of the point.
  std::string label() const;
};

/// What the enumeration needs to know about the job and the fabric.
struct PlanSpace {
  int gpus = 0;
  int gpus_per_domain = 0;  // GPUs one NVLink domain holds (tp's upper bound)
  int global_batch = 0;     // sequences per step
};

/// Every valid plan (the rules above), in a fixed order: tp, pp, ep, micro batch, recompute, zero.
std::vector<PlanCandidate> enumerate_plans(const workloads::training::ModelSpec& model, const PlanSpace& space);

/// The largest stage's footprint of a candidate (the model's micro_batch set to the candidate's).
workloads::training::Footprint peak_footprint(const workloads::training::ModelSpec& model,
                                              const PlanCandidate& candidate,
                                              const workloads::training::MemorySpec& memory);

/// A first-order step time, to prune before simulating (not a prediction): the model FLOPs (plus the
/// recomputation's extra forward) at the GPU's peak, stretched by the 1F1B bubble (pp - 1) / (vp m), plus the TP
/// activations' and the DP gradients' ring traffic at `intra` bandwidth inside an NVLink domain of
/// `gpus_per_domain`, at `inter` for a group that leaves it.
Seconds estimate_step(const workloads::training::ModelSpec& model, const PlanCandidate& candidate, FlopsPerSecond peak,
                      BytesPerSecond intra, BytesPerSecond inter, int gpus_per_domain);

struct PlanOptions {
  std::string model;     // a preset name, or a flow-YAML model map ({preset: llama3.1-8b, layers: 8})
  std::string topology;  // a YAML file holding the topology map (or a scenario with one), or flow YAML
  std::string scenario;  // a scenario file: its topology, models and first workload's model
  // GPU counts: none, the topology's; one, checked against it; several, one plan per count on the topology resized
  // (its `nodes` scaled, or its `gpus` set), each in a folder of its own, and the best of each side by side.
  std::vector<int> gpus;
  std::optional<int> global_batch, sequence;
  std::size_t budget = 16;
  std::optional<std::size_t> jobs;
  std::string framework_overhead;  // per GPU ("4GiB"): memory.framework_overhead of every plan
  std::string shard;               // "i/N"
  std::string out;                 // default plan-<model>
  std::size_t show = 5;            // rows of the printed table
};

/// A simulated candidate, as plan.json lists it.
struct PlanResult {
  PlanCandidate candidate;
  workloads::training::Footprint footprint;
  double estimate_s = 0;
  std::optional<double> step_time_s, tokens_per_s_per_gpu, mfu_pct, comm_ms_per_gpu;
  std::string outcome;  // the run's; "not run" when another shard has it or it is still to run
};

struct PlanOutcome {
  int gpus = 0;
  std::size_t enumerated = 0, fitting = 0;
  std::vector<PlanResult> ranked;  // simulated ones by step time, then the rest by estimate
  std::vector<std::string> failures;
  std::string dir, markdown, plot_problem;
  double hbm_gib = 0;
  std::vector<PlanOutcome> per_count;  // a range of GPU counts: each count's plan (in dir/gpus-N)
};

/// Enumerates, filters, simulates and ranks; writes DIR/base.yaml and DIR/plan.yaml (the sweep it runs),
/// results.jsonl, sweep.md, sweep.png, plan.md and plan.json. Bad input: an InputError naming the flag. No plan
/// that fits: an InputError saying what the smallest footprint was (with several GPU counts, only when none fits
/// on any count; a count where none fits says so in its row).
PlanOutcome run_plan(const PlanOptions& options);

}  // namespace snsim::studies
