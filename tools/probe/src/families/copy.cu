// Family `copy`: copy-engine and SM-driven copies between every ordered GPU pair and within each GPU.
//
// Every size from 4 B to 1 GiB is timed single-shot (one copy alone behind the gate: includes the engine's
// start-up) and pipelined (back-to-back copies on one stream: per-copy cost). Every destination is poisoned
// before and verified after each (test, pair, size).
//
// ce_concurrent / sm_concurrent: several copies at once through the switch, each on its own stream of its source
// GPU, all released together (pipelined, `depth` each; a sample is the time until the last is done, per copy):
//   pairs1, pairs2, pairs4   1, 2 or 4 disjoint pairs 0->1, 2->3, 4->5, 6->7 (where 2 x pairs <= GPUs)
//   pairs<N> (N = GPUs)      every GPU sends to the next one, i -> i+1 mod N (each GPU sends once, receives once)
//   a2a                      every GPU copies to every other GPU at once (N (N-1) copies; at 2 GPUs = pairs2)
// ranks lists the copies' (source, destination) pairs flattened, or every GPU for a2a; bytes is per copy.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
constexpr std::uint64_t kConcurrentMinBytes = 4 * KiB;  // below this, concurrent copies measure the event hand-offs

// Per-GPU buffers: one source/destination pair for the CE copy and a second one for the concurrent SM copy.
struct GpuBuffers {
  DeviceBuffer source, destination, second_source, second_destination;
  DeviceBuffer slots;  // concurrent tests: one `largest` slot per source GPU, so concurrent copies never overlap
};

struct Transfer {
  int src, dst;
};

// The concurrency patterns of `gpus` GPUs (see the file comment), by variant name.
std::vector<std::pair<std::string, std::vector<Transfer>>> concurrency_patterns(int gpus) {
  std::vector<std::pair<std::string, std::vector<Transfer>>> patterns;
  for (int pairs : {1, 2, 4, 8}) {
    std::vector<Transfer> transfers;
    if (2 * pairs <= gpus)
      for (int i = 0; i < pairs; ++i) transfers.push_back({2 * i, 2 * i + 1});
    else if (pairs == gpus)
      for (int i = 0; i < gpus; ++i) transfers.push_back({i, (i + 1) % gpus});
    if (!transfers.empty()) patterns.emplace_back("pairs" + std::to_string(pairs), std::move(transfers));
  }
  std::vector<Transfer> all;
  for (int src = 0; src < gpus; ++src)
    for (int dst = 0; dst < gpus; ++dst)
      if (src != dst) all.push_back({src, dst});
  patterns.emplace_back("a2a", std::move(all));
  return patterns;
}

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
    // The concurrent tests' sweep starts at 4 KiB, so in a coarse sweep (--quick, --size-step 8) it can end above
    // the pairwise tests' sweep: the buffers hold the larger of the two.
    const std::uint64_t largest = std::max(sizes_.back(), concurrent_largest());
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
        if (wants_test(options_, "ce_concurrent") || wants_test(options_, "sm_concurrent"))
          buffers.slots = DeviceBuffer(gpu, static_cast<std::size_t>(gpus_) * concurrent_largest());
      }
      streams_[gpu]->synchronize();
      buffers_.push_back(std::move(buffers));
    }
    concurrent_streams_.resize(gpus_);
    for (int a = 0; a < gpus_; ++a)
      for (int b = 0; b < gpus_; ++b)
        if (a != b) enable_peer_access(a, b);

    // --pairs selects the ordered pairs of the pairwise tests (all 56 of 8 GPUs take minutes); --tests the tests.
    auto pair_tests = [&](const char* test, auto&& body) {
      if (!wants_test(options_, test)) return;
      for (int src = 0; src < gpus_; ++src)
        for (int dst = 0; dst < gpus_; ++dst)
          if (wants_pair(options_, src, dst)) body(src, dst);
    };
    auto local_tests = [&](const char* test, auto&& body) {
      if (!wants_test(options_, test)) return;
      for (int gpu = 0; gpu < gpus_; ++gpu) body(gpu);
    };
    pair_tests("ce_peer", [&](int src, int dst) { ce_peer(src, dst); });
    pair_tests("ce_peer_bidir", [&](int a, int b) {  // each unordered pair once, if either direction is selected
      if (a < b || !wants_pair(options_, b, a)) ce_peer_bidirectional(std::min(a, b), std::max(a, b));
    });
    local_tests("ce_local", [&](int gpu) { ce_local(gpu); });
    for (int src = 0; src < gpus_; ++src)
      for (int dst = 0; dst < gpus_; ++dst)
        if (wants_pair(options_, src, dst)) {
          if (wants_test(options_, "sm_push")) sm_peer(src, dst, /*push=*/true);
          if (wants_test(options_, "sm_pull")) sm_peer(src, dst, /*push=*/false);
        }
    local_tests("sm_local", [&](int gpu) { sm_local(gpu); });
    pair_tests("ce_sm_shared", [&](int src, int dst) { ce_and_sm_sharing(src, dst); });
    for (const bool sm : {false, true})
      if (gpus_ > 1 && wants_test(options_, sm ? "sm_concurrent" : "ce_concurrent"))
        for (const auto& [variant, transfers] : concurrency_patterns(gpus_)) concurrent(sm, variant, transfers);
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

  std::uint64_t concurrent_largest() const { return size_sweep(kConcurrentMinBytes, kMaxBytes, options_).back(); }

  // Where the copy from `src` lands on `dst` in the concurrent tests.
  void* slot(int dst, int src) const {
    return static_cast<char*>(buffers_[dst].slots.get()) + static_cast<std::size_t>(src) * concurrent_largest();
  }

  // Every transfer of a pattern at once, each on its own stream of its source GPU (CE copies, or SM push kernels
  // sharing the source's SMs: blocks split between the kernels a GPU runs).
  void concurrent(bool sm, const std::string& variant, const std::vector<Transfer>& transfers) {
    std::vector<int> sends(gpus_, 0);
    std::vector<const Stream*> streams;
    for (const Transfer& t : transfers) {
      auto& pool = concurrent_streams_[t.src];
      if (static_cast<int>(pool.size()) <= sends[t.src]) pool.push_back(std::make_unique<Stream>(t.src));
      streams.push_back(pool[sends[t.src]++].get());
    }
    std::vector<int> ranks;
    if (variant == "a2a")
      for (int gpu = 0; gpu < gpus_; ++gpu) ranks.push_back(gpu);
    else
      for (const Transfer& t : transfers) ranks.insert(ranks.end(), {t.src, t.dst});
    const std::string test = sm ? "sm_concurrent" : "ce_concurrent";
    for (std::uint64_t bytes : size_sweep(kConcurrentMinBytes, kMaxBytes, options_)) {
      std::vector<EnqueueOp> ops;
      int most_blocks = 0;
      for (std::size_t i = 0; i < transfers.size(); ++i) {
        const Transfer t = transfers[i];
        void* to = slot(t.dst, t.src);
        const void* from = buffers_[t.src].source.get();
        const Stream& stream = *streams[i];
        poison_buffer_range(t.dst, to, bytes);
        if (sm) {
          const int blocks = std::max(1, sm_copy_blocks(t.src, bytes) / sends[t.src]);
          most_blocks = std::max(most_blocks, blocks);
          ops.push_back([=, &stream] { launch_sm_copy(to, from, bytes, blocks, stream); });
        } else {
          ops.push_back([=, &stream] { CHECK_CUDA(cudaMemcpyPeerAsync(to, t.dst, from, t.src, bytes, stream)); });
        }
      }
      for (std::size_t i = 0; i < transfers.size(); ++i) {  // warm-up: peer mappings, module load
        CHECK_CUDA(cudaSetDevice(streams[i]->device()));
        ops[i]();
      }
      for (const Stream* stream : streams) stream->synchronize();
      const int depth = pipeline_depth(bytes);
      Record record =
          make(test, variant, ranks, bytes, time_all_streams(gate_, streams, pipelined_batches(), depth, ops));
      record.extra("depth", static_cast<std::int64_t>(depth));
      record.extra("copies", static_cast<std::int64_t>(transfers.size()));
      record.extra("sum_bw", static_cast<double>(transfers.size() * bytes) / summarize(record.samples).median);
      record.extra("max_connections", static_cast<std::int64_t>(std::atoi(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"))));
      if (sm) {
        record.extra("blocks", static_cast<std::int64_t>(most_blocks));
        record.extra("threads", static_cast<std::int64_t>(kSmCopyThreads));
      }
      context_.emit(record);
      for (const Transfer& t : transfers)
        verify_pattern(slot(t.dst, t.src), bytes, source_seed(t.src), *streams_[t.dst], t.dst,
                       test + " " + variant + " " + std::to_string(bytes) + " B " + std::to_string(t.src) + "->" +
                           std::to_string(t.dst));
    }
  }

  void poison_buffer_range(int device, void* start, std::uint64_t bytes) {
    CHECK_CUDA(cudaSetDevice(device));
    poison(start, bytes, *streams_[device]);
    streams_[device]->synchronize();
  }

  RankContext& context_;
  const Options& options_;
  int gpus_ = 0;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::unique_ptr<Stream>> streams_, second_streams_;
  std::vector<std::vector<std::unique_ptr<Stream>>> concurrent_streams_;  // per source GPU, one per copy it sends
  std::vector<GpuBuffers> buffers_;
  Gate gate_;
};

}  // namespace

void run_copy_family(RankContext& context) {
  // The concurrent tests run up to 9 streams per GPU (7 copies, the two of the pairwise tests): with CUDA's
  // default of 8 hardware queues per GPU, streams would share queues and serialise copies meant to overlap. Set in
  // this forked process before its first CUDA call; a value the caller set is kept (records carry it).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  CopyFamily(context).run();
}

}  // namespace probe
