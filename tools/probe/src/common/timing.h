// Timing loops shared by the copy-like families. Every loop gates the stream first (see Gate), so the events
// bracket device work only; `op` enqueues one operation on the stream it was built for.
#pragma once

#include <functional>
#include <vector>

#include "cuda_util.h"

namespace probe {

using EnqueueOp = std::function<void()>;

// One operation per sample, alone on an idle engine: its time includes the engine's start-up cost.
std::vector<double> time_single(Gate& gate, const Stream& stream, int reps, const EnqueueOp& op);

// `depth` operations back to back per sample; each sample is the batch time divided by `depth` (the
// pipelined per-operation cost).
std::vector<double> time_pipelined(Gate& gate, const Stream& stream, int batches, int depth, const EnqueueOp& op);

// `first` and `second` run at the same time, `depth` operations each, on two streams (same or different GPUs)
// released together. `total` is the time until both are done, per operation pair. When both streams are on
// one GPU, `first_only` and `second_only` give each stream's own finish time from the common start.
struct ConcurrentTimes {
  std::vector<double> total, first_only, second_only;
};
ConcurrentTimes time_concurrent(Gate& gate, const Stream& first_stream, const Stream& second_stream, int batches,
                                int depth, const EnqueueOp& first, const EnqueueOp& second);

// Any number of streams, on any GPUs, released together by the gate on `streams[0]`: `ops[i]` enqueues one
// operation on `streams[i]`, `depth` times per sample. A sample is the time from the gate's opening until the
// last stream is done, per operation (the others start through a cross-GPU event wait on the first's start).
std::vector<double> time_all_streams(Gate& gate, const std::vector<const Stream*>& streams, int batches, int depth,
                                     const std::vector<EnqueueOp>& ops);

// How many operations of `bytes` one pipelined sample enqueues: enough that the batch lasts far longer than
// the event resolution (~0.5 us), few enough that enqueueing never fills the stream's queue behind the gate.
int pipeline_depth(std::size_t bytes);

}  // namespace probe
