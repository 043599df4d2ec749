// Family `copy`: copy-engine and SM-driven copies between every ordered GPU pair and within each GPU.
//
// Every size from 4 B to 1 GiB is timed single-shot (one copy alone behind the gate: includes the engine's
// start-up) and pipelined (back-to-back copies on one stream: per-copy cost). Every destination is poisoned
// before and verified after each (test, pair, size).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../common/cuda_util.h"
#include "../common/timing.h"
#include "families.h"

namespace probe {
namespace {

constexpr std::uint64_t kMinBytes = 4;
constexpr std::uint64_t kMaxBytes = 1 * GiB;

// Per-GPU buffers: one source/destination pair for the CE copy and a second one for the concurrent SM copy.
struct GpuBuffers {
  DeviceBuffer source, destination, second_source, second_destination;
};

std::uint32_t source_seed(int gpu) {
  return 1 + gpu;
}
std::uint32_t second_source_seed(int gpu) {
  return 101 + gpu;
}

class CopyFamily {
 public:
  explicit CopyFamily(RankContext& context) : context_(context), options_(*context.options) {}

  void run() {
    gpus_ = visible_device_count();
    sizes_ = size_sweep(kMinBytes, kMaxBytes, options_);
    const std::uint64_t largest = sizes_.back();
    for (int gpu = 0; gpu < gpus_; ++gpu) {
      streams_.emplace_back(std::make_unique<Stream>(gpu));
      second_streams_.emplace_back(std::make_unique<Stream>(gpu));
      GpuBuffers buffers;
      buffers.source = DeviceBuffer(gpu, largest);
      buffers.destination = DeviceBuffer(gpu, largest);
      fill_pattern(buffers.source.get(), largest, source_seed(gpu), *streams_[gpu]);
      if (gpus_ > 1) {
        buffers.second_source = DeviceBuffer(gpu, largest);
        buffers.second_destination = DeviceBuffer(gpu, largest);
        fill_pattern(buffers.second_source.get(), largest, second_source_seed(gpu), *streams_[gpu]);
      }
      streams_[gpu]->synchronize();
      buffers_.push_back(std::move(buffers));
    }
    for (int a = 0; a < gpus_; ++a)
      for (int b = 0; b < gpus_; ++b)
        if (a != b) enable_peer_access(a, b);

    for (int src = 0; src < gpus_; ++src)
      for (int dst = 0; dst < gpus_; ++dst)
        if (src != dst) ce_peer(src, dst);
    for (int a = 0; a < gpus_; ++a)
      for (int b = a + 1; b < gpus_; ++b) ce_peer_bidirectional(a, b);
    for (int gpu = 0; gpu < gpus_; ++gpu) ce_local(gpu);
    for (int src = 0; src < gpus_; ++src)
      for (int dst = 0; dst < gpus_; ++dst)
        if (src != dst) {
          sm_peer(src, dst, /*push=*/true);
          sm_peer(src, dst, /*push=*/false);
        }
    for (int gpu = 0; gpu < gpus_; ++gpu) sm_local(gpu);
    for (int src = 0; src < gpus_; ++src)
      for (int dst = 0; dst < gpus_; ++dst)
        if (src != dst) ce_and_sm_sharing(src, dst);
    if (gpus_ < 2) std::fprintf(stderr, "copy: one GPU visible: peer tests skipped\n");
  }

 private:
  // Poisons on the owning GPU, so a destination that a copy failed to write never holds the pattern.
  void poison_buffer(const DeviceBuffer& buffer, std::uint64_t bytes) {
    CHECK_CUDA(cudaSetDevice(buffer.device()));
    poison(buffer.get(), bytes, *streams_[buffer.device()]);
    streams_[buffer.device()]->synchronize();
  }

  void verify_buffer(const DeviceBuffer& buffer, std::uint64_t bytes, std::uint32_t seed, const std::string& test) {
    verify_pattern(buffer.get(), bytes, seed, *streams_[buffer.device()], buffer.device(),
                   test + " " + std::to_string(bytes) + " B into GPU " + std::to_string(buffer.device()));
  }

  int single_reps() const { return reps(50, options_); }
  int pipelined_batches() const { return reps(20, options_); }

  Record make(const std::string& test, const std::string& variant, std::vector<int> ranks, std::uint64_t bytes,
              std::vector<double> samples) const {
    Record record;
    record.family = "copy";
    record.test = test;
    record.variant = variant;
    record.ranks = std::move(ranks);
    record.bytes = bytes;
    record.unit = "s";
    record.samples = std::move(samples);
    return record;
  }

  // Single-shot and pipelined records for one copy operation on one stream.
  void time_and_emit(const std::string& test, std::vector<int> ranks, std::uint64_t bytes, const Stream& stream,
                     const EnqueueOp& op, const std::vector<std::pair<std::string, ExtraValue>>& extras = {}) {
    CHECK_CUDA(cudaSetDevice(stream.device()));
    op();  // warm-up: first-use costs (peer mappings, module load) stay out of the samples
    stream.synchronize();
    Record single = make(test, "single", ranks, bytes, time_single(gate_, stream, single_reps(), op));
    Record pipelined = make(test, "pipelined", ranks, bytes,
                            time_pipelined(gate_, stream, pipelined_batches(), pipeline_depth(bytes), op));
    pipelined.extra("depth", static_cast<std::int64_t>(pipeline_depth(bytes)));
    for (const auto& [key, value] : extras) {
      single.extra(key, value);
      pipelined.extra(key, value);
    }
    context_.emit(single);
    context_.emit(pipelined);
  }

  void ce_peer(int src, int dst) {
    const Stream& stream = *streams_[src];  // issued by the source GPU (a "write" in nvbandwidth's terms)
    for (std::uint64_t bytes : sizes_) {
      void* to = buffers_[dst].destination.get();
      const void* from = buffers_[src].source.get();
      poison_buffer(buffers_[dst].destination, bytes);
      time_and_emit("ce_peer", {src, dst}, bytes, stream,
                    [&] { CHECK_CUDA(cudaMemcpyPeerAsync(to, dst, from, src, bytes, stream)); });
      verify_buffer(buffers_[dst].destination, bytes, source_seed(src), "ce_peer");
    }
  }

  void ce_peer_bidirectional(int a, int b) {
    for (std::uint64_t bytes : sizes_) {
      void* to_b = buffers_[b].destination.get();
      void* to_a = buffers_[a].destination.get();
      const void* from_a = buffers_[a].source.get();
      const void* from_b = buffers_[b].source.get();
      poison_buffer(buffers_[b].destination, bytes);
      poison_buffer(buffers_[a].destination, bytes);
      const EnqueueOp a_to_b = [&] { CHECK_CUDA(cudaMemcpyPeerAsync(to_b, b, from_a, a, bytes, *streams_[a])); };
      const EnqueueOp b_to_a = [&] { CHECK_CUDA(cudaMemcpyPeerAsync(to_a, a, from_b, b, bytes, *streams_[b])); };
      CHECK_CUDA(cudaSetDevice(a));
      a_to_b();
      CHECK_CUDA(cudaSetDevice(b));
      b_to_a();
      streams_[a]->synchronize();
      streams_[b]->synchronize();
      const int depth = pipeline_depth(bytes);
      for (const auto& [variant, n] : {std::pair<const char*, int>{"single", 1}, {"pipelined", depth}}) {
        const int batches = n == 1 ? single_reps() : pipelined_batches();
        ConcurrentTimes times = time_concurrent(gate_, *streams_[a], *streams_[b], batches, n, a_to_b, b_to_a);
        Record record = make("ce_peer_bidir", variant, {a, b}, bytes, std::move(times.total));
        record.extra("depth", static_cast<std::int64_t>(n));
        record.extra("sum_bw", 2.0 * static_cast<double>(bytes) / summarize(record.samples).median);
        context_.emit(record);
      }
      verify_buffer(buffers_[b].destination, bytes, source_seed(a), "ce_peer_bidir");
      verify_buffer(buffers_[a].destination, bytes, source_seed(b), "ce_peer_bidir");
    }
  }

  void ce_local(int gpu) {
    const Stream& stream = *streams_[gpu];
    for (std::uint64_t bytes : sizes_) {
      void* to = buffers_[gpu].destination.get();
      const void* from = buffers_[gpu].source.get();
      poison_buffer(buffers_[gpu].destination, bytes);
      time_and_emit("ce_local", {gpu}, bytes, stream,
                    [&] { CHECK_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream)); });
      verify_buffer(buffers_[gpu].destination, bytes, source_seed(gpu), "ce_local");
    }
  }

  // push: the kernel runs on the source GPU and stores into peer memory; pull: on the destination GPU,
  // loading from peer memory. `ranks` is always [source, destination].
  void sm_peer(int src, int dst, bool push) {
    const int runner = push ? src : dst;
    const Stream& stream = *streams_[runner];
    for (std::uint64_t bytes : sizes_) {
      void* to = buffers_[dst].destination.get();
      const void* from = buffers_[src].source.get();
      const int blocks = sm_copy_blocks(runner, bytes);
      poison_buffer(buffers_[dst].destination, bytes);
      time_and_emit(
          push ? "sm_push" : "sm_pull", {src, dst}, bytes, stream,
          [&] { launch_sm_copy(to, from, bytes, blocks, stream); },
          {{"blocks", static_cast<std::int64_t>(blocks)}, {"threads", static_cast<std::int64_t>(kSmCopyThreads)}});
      verify_buffer(buffers_[dst].destination, bytes, source_seed(src), push ? "sm_push" : "sm_pull");
    }
  }

  void sm_local(int gpu) {
    const Stream& stream = *streams_[gpu];
    for (std::uint64_t bytes : sizes_) {
      void* to = buffers_[gpu].destination.get();
      const void* from = buffers_[gpu].source.get();
      const int blocks = sm_copy_blocks(gpu, bytes);
      poison_buffer(buffers_[gpu].destination, bytes);
      time_and_emit(
          "sm_local", {gpu}, bytes, stream, [&] { launch_sm_copy(to, from, bytes, blocks, stream); },
          {{"blocks", static_cast<std::int64_t>(blocks)}, {"threads", static_cast<std::int64_t>(kSmCopyThreads)}});
      verify_buffer(buffers_[gpu].destination, bytes, source_seed(gpu), "sm_local");
    }
  }

  // A copy-engine copy and an SM push copy of the same size, both src -> dst, started together: how the two
  // engines share one direction of the link. Records each one's own time and the time until both are done.
  void ce_and_sm_sharing(int src, int dst) {
    const Stream& ce_stream = *streams_[src];
    const Stream& sm_stream = *second_streams_[src];
    for (std::uint64_t bytes : sizes_) {
      void* ce_to = buffers_[dst].destination.get();
      const void* ce_from = buffers_[src].source.get();
      void* sm_to = buffers_[dst].second_destination.get();
      const void* sm_from = buffers_[src].second_source.get();
      const int blocks = sm_copy_blocks(src, bytes);
      poison_buffer(buffers_[dst].destination, bytes);
      poison_buffer(buffers_[dst].second_destination, bytes);
      const EnqueueOp ce = [&] { CHECK_CUDA(cudaMemcpyPeerAsync(ce_to, dst, ce_from, src, bytes, ce_stream)); };
      const EnqueueOp sm = [&] { launch_sm_copy(sm_to, sm_from, bytes, blocks, sm_stream); };
      CHECK_CUDA(cudaSetDevice(src));
      ce();
      sm();
      ce_stream.synchronize();
      sm_stream.synchronize();
      const int depth = pipeline_depth(bytes);
      ConcurrentTimes times = time_concurrent(gate_, ce_stream, sm_stream, pipelined_batches(), depth, ce, sm);
      for (auto [variant, samples] :
           {std::pair{"ce", &times.first_only}, std::pair{"sm", &times.second_only}, std::pair{"both", &times.total}}) {
        Record record = make("ce_sm_shared", variant, {src, dst}, bytes, *samples);
        record.extra("depth", static_cast<std::int64_t>(depth));
        record.extra("blocks", static_cast<std::int64_t>(blocks));
        context_.emit(record);
      }
      verify_buffer(buffers_[dst].destination, bytes, source_seed(src), "ce_sm_shared (ce)");
      verify_buffer(buffers_[dst].second_destination, bytes, second_source_seed(src), "ce_sm_shared (sm)");
    }
  }

  RankContext& context_;
  const Options& options_;
  int gpus_ = 0;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::unique_ptr<Stream>> streams_, second_streams_;
  std::vector<GpuBuffers> buffers_;
  Gate gate_;
};

}  // namespace

void run_copy_family(RankContext& context) {
  CopyFamily(context).run();
}

}  // namespace probe
