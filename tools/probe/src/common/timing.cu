#include "timing.h"

#include <algorithm>
#include <memory>

#include "options.h"

namespace probe {

std::vector<double> time_single(Gate& gate, const Stream& stream, int reps, const EnqueueOp& op) {
  Event start(stream.device()), stop(stream.device());
  std::vector<double> samples;
  samples.reserve(reps);
  for (int rep = 0; rep < reps; ++rep) {
    gate.hold(stream, stream.device());
    start.record(stream);
    op();
    stop.record(stream);
    gate.release();
    samples.push_back(elapsed_seconds(start, stop));
  }
  return samples;
}

std::vector<double> time_pipelined(Gate& gate, const Stream& stream, int batches, int depth, const EnqueueOp& op) {
  Event start(stream.device()), stop(stream.device());
  std::vector<double> samples;
  samples.reserve(batches);
  for (int batch = 0; batch < batches; ++batch) {
    gate.hold(stream, stream.device());
    start.record(stream);
    for (int i = 0; i < depth; ++i) op();
    stop.record(stream);
    gate.release();
    samples.push_back(elapsed_seconds(start, stop) / depth);
  }
  return samples;
}

ConcurrentTimes time_concurrent(Gate& gate, const Stream& first_stream, const Stream& second_stream, int batches,
                                int depth, const EnqueueOp& first, const EnqueueOp& second) {
  const bool same_device = first_stream.device() == second_stream.device();
  Event start(first_stream.device()), first_done(first_stream.device()), all_done(first_stream.device());
  Event second_done(second_stream.device());
  ConcurrentTimes times;
  for (int batch = 0; batch < batches; ++batch) {
    gate.hold(first_stream, first_stream.device());
    start.record(first_stream);
    // The second stream starts when the gate opens, as the first does.
    CHECK_CUDA(cudaStreamWaitEvent(second_stream, start, 0));
    CHECK_CUDA(cudaSetDevice(first_stream.device()));
    for (int i = 0; i < depth; ++i) first();
    first_done.record(first_stream);
    CHECK_CUDA(cudaSetDevice(second_stream.device()));
    for (int i = 0; i < depth; ++i) second();
    second_done.record(second_stream);
    CHECK_CUDA(cudaSetDevice(first_stream.device()));
    CHECK_CUDA(cudaStreamWaitEvent(first_stream, second_done, 0));
    all_done.record(first_stream);
    gate.release();
    times.total.push_back(elapsed_seconds(start, all_done) / depth);
    if (same_device) {
      times.first_only.push_back(elapsed_seconds(start, first_done) / depth);
      times.second_only.push_back(elapsed_seconds(start, second_done) / depth);
    }
  }
  return times;
}

std::vector<double> time_all_streams(Gate& gate, const std::vector<const Stream*>& streams, int batches, int depth,
                                     const std::vector<EnqueueOp>& ops) {
  const Stream& first = *streams.front();
  Event start(first.device()), all_done(first.device());
  std::vector<std::unique_ptr<Event>> done;
  for (const Stream* stream : streams) done.push_back(std::make_unique<Event>(stream->device()));
  std::vector<double> samples;
  samples.reserve(batches);
  for (int batch = 0; batch < batches; ++batch) {
    gate.hold(first, first.device());
    start.record(first);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const Stream& stream = *streams[i];
      CHECK_CUDA(cudaSetDevice(stream.device()));
      if (i > 0) CHECK_CUDA(cudaStreamWaitEvent(stream, start, 0));
      for (int k = 0; k < depth; ++k) ops[i]();
      done[i]->record(stream);
    }
    CHECK_CUDA(cudaSetDevice(first.device()));
    for (std::size_t i = 1; i < streams.size(); ++i) CHECK_CUDA(cudaStreamWaitEvent(first, *done[i], 0));
    all_done.record(first);
    gate.release();
    samples.push_back(elapsed_seconds(start, all_done) / depth);
  }
  return samples;
}

int pipeline_depth(std::size_t bytes) {
  const std::size_t target = 256 * MiB;
  return static_cast<int>(std::clamp<std::size_t>(target / std::max<std::size_t>(bytes, 1), 4, 100));
}

}  // namespace probe
