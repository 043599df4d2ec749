// Family `uvm`: managed (unified) memory, 2 MiB to 4 GiB regions, on GPU 0 (and the other GPUs where visible).
//
//   first_touch/host_to_gpu   region resident on the host; a kernel on GPU 0 touches one word per 4 KiB page:
//                             fault-driven migration host -> GPU 0
//   first_touch/gpu_to_gpu    the same with the region resident on GPU 1: fault-driven migration GPU 1 -> GPU 0
//   prefetch/host_to_gpu      cudaMemPrefetchAsync host -> GPU 0
//   prefetch/gpu_to_host      cudaMemPrefetchAsync GPU 0 -> host
//   prefetch/gpu_to_gpu       cudaMemPrefetchAsync GPU 1 -> GPU 0
//   read/local                a kernel on GPU 0 reads every byte of a region resident on GPU 0
//   read/peer_mapped          ... of a region kept on GPU 1 (preferred location GPU 1, accessed-by GPU 0): remote
//                             reads over NVLink, no migration
//   read/host_mapped          ... of a region kept on the host (preferred location host, accessed-by GPU 0)
// With more than 2 GPUs, gpu_to_gpu and peer_mapped also run with the last GPU (N-1) in GPU 1's place (the
// farthest on topologies where GPUs differ), and with 2 or more:
//   round_robin/prefetch      the region, on GPU 0, prefetched to GPU 1, 2, ... N-1 and back to GPU 0 (N hops, on
//                             GPU 0's stream); a sample is the chain's time per hop
//   round_robin/touch         the same chain by first touch: a page-touching kernel on GPU 1, then GPU 2 ... then
//                             GPU 0, each started by an event from the one before; per hop
// Every sample is event-timed on GPU 0's stream from a state set up (and synchronised) before it; `bw` is
// bytes / median. Every kernel checks the words it reads against the pattern written at allocation (word i
// holds i), so each test also verifies that migration preserved the data.
//
// Managed memory is sized from what the GPUs have free (at most 1/8 of it, never above 4 GiB): a program
// that asks for more managed memory than the card has free can hang the GPU.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../common/cuda_util.h"
#include "families.h"

namespace probe {
namespace {

constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kWordsPerPage = kPageBytes / sizeof(std::uint32_t);

struct Location {
  bool host;
  int device;
};
constexpr Location kHost{true, -1};
Location gpu(int device) {
  return {false, device};
}

#if CUDART_VERSION >= 13000
cudaMemLocation to_cuda(Location where) {
  cudaMemLocation location{};
  location.type = where.host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = where.host ? 0 : where.device;
  return location;
}
#endif

void prefetch(void* region, std::size_t bytes, Location to, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  CHECK_CUDA(cudaMemPrefetchAsync(region, bytes, to_cuda(to), 0, stream));
#else
  CHECK_CUDA(cudaMemPrefetchAsync(region, bytes, to.host ? cudaCpuDeviceId : to.device, stream));
#endif
}

void advise(void* region, std::size_t bytes, cudaMemoryAdvise advice, Location where) {
#if CUDART_VERSION >= 13000
  CHECK_CUDA(cudaMemAdvise(region, bytes, advice, to_cuda(where)));
#else
  CHECK_CUDA(cudaMemAdvise(region, bytes, advice, where.host ? cudaCpuDeviceId : where.device));
#endif
}

__global__ void write_index_kernel(std::uint32_t* words, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
    words[i] = static_cast<std::uint32_t>(i);
}

// One thread per 4 KiB page reads that page's first word.
__global__ void touch_pages_kernel(const std::uint32_t* words, std::size_t pages, unsigned long long* wrong) {
  const std::size_t page = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (page >= pages) return;
  const std::size_t index = page * kWordsPerPage;
  if (words[index] != static_cast<std::uint32_t>(index)) atomicAdd(wrong, 1ull);
}

// Streams through every 16-byte vector of the region.
__global__ void read_all_kernel(const uint4* vectors, std::size_t count, unsigned long long* wrong) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride) {
    const uint4 v = vectors[i];
    const auto first = static_cast<std::uint32_t>(4 * i);
    local += (v.x != first) + (v.y != first + 1) + (v.z != first + 2) + (v.w != first + 3);
  }
  if (local) atomicAdd(wrong, local);
}

class UvmFamily {
 public:
  explicit UvmFamily(RankContext& context) : context_(context), options_(*context.options) {}

  void run() {
    gpus_ = visible_device_count();
    int concurrent = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
    if (!concurrent) {
      std::fprintf(stderr, "uvm: GPU 0 lacks concurrent managed access: family skipped\n");
      return;
    }
    // GPU 0 with every GPU: peer-mapped reads, and round_robin/touch's kernels counting errors on GPU 0.
    for (int device = 1; device < gpus_; ++device) {
      enable_peer_access(0, device);
      enable_peer_access(device, 0);
    }

    std::uint64_t limit = std::min<std::uint64_t>(options_.uvm_max_bytes, 4 * GiB);
    for (int device = 0; device < gpus_; ++device) {
      std::size_t free_bytes = 0, total_bytes = 0;
      CHECK_CUDA(cudaSetDevice(device));
      CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
      limit = std::min<std::uint64_t>(limit, free_bytes / 8);
    }
    if (options_.quick) limit = std::min<std::uint64_t>(limit, 64 * MiB);
    if (options_.max_bytes) limit = std::min(limit, std::max<std::uint64_t>(options_.max_bytes, 2 * MiB));
    std::fprintf(stderr, "uvm: largest managed region %llu MiB\n", static_cast<unsigned long long>(limit / MiB));

    CHECK_CUDA(cudaSetDevice(0));
    stream_ = std::make_unique<Stream>(0);
    chain_start_ = std::make_unique<Event>(0);
    for (int device = 1; device < gpus_; ++device) {
      chain_streams_.push_back(std::make_unique<Stream>(device));
      chain_done_.push_back(std::make_unique<Event>(device));
    }
    wrong_ = DeviceBuffer(0, sizeof(unsigned long long));
    for (std::uint64_t bytes : size_sweep(2 * MiB, limit, options_)) measure_region(bytes);
    if (gpus_ < 2) std::fprintf(stderr, "uvm: one GPU visible: gpu_to_gpu, peer_mapped and round_robin skipped\n");
  }

 private:
  int reps_for(std::uint64_t bytes) const {
    if (options_.quick) return 2;
    return bytes <= 256 * MiB ? 10 : bytes <= 1 * GiB ? 5 : 3;
  }

  // Moves the whole region to `where` and waits, outside any timing.
  void place(Location where) {
    prefetch(region_, bytes_, where, *stream_);
    stream_->synchronize();
  }

  void reset_wrong() { CHECK_CUDA(cudaMemsetAsync(wrong_.get(), 0, sizeof(unsigned long long), *stream_)); }

  void check_wrong(const std::string& what) {
    unsigned long long wrong = 0;
    CHECK_CUDA(cudaMemcpy(&wrong, wrong_.get(), sizeof wrong, cudaMemcpyDeviceToHost));
    if (wrong)
      throw ProbeError("verification failed: uvm " + what + " " + std::to_string(bytes_) +
                       " B: " + std::to_string(wrong) + " words wrong");
  }

  void launch_touch() { launch_touch_on(*stream_); }

  // On the current device, which must be `stream`'s.
  void launch_touch_on(cudaStream_t stream) {
    const std::size_t pages = bytes_ / kPageBytes;
    touch_pages_kernel<<<static_cast<unsigned>((pages + 255) / 256), 256, 0, stream>>>(
        static_cast<const std::uint32_t*>(region_), pages, wrong_.as<unsigned long long>());
    CHECK_LAUNCH();
  }

  void launch_read() {
    read_all_kernel<<<2 * sm_count(0), 512, 0, *stream_>>>(static_cast<const uint4*>(region_), bytes_ / 16,
                                                           wrong_.as<unsigned long long>());
    CHECK_LAUNCH();
  }

  // Times `timed` `reps` times on GPU 0's stream, calling `setup` (untimed, synchronised) before each.
  // Every rep's kernel result is checked (prefetch-only reps leave the counter at zero).
  std::vector<double> time_reps(const std::string& what, int reps, const std::function<void()>& setup,
                                const std::function<void()>& timed) {
    Event start(0), stop(0);
    std::vector<double> samples;
    for (int rep = 0; rep < reps; ++rep) {
      CHECK_CUDA(cudaSetDevice(0));
      setup();
      reset_wrong();
      stream_->synchronize();
      start.record(*stream_);
      timed();
      stop.record(*stream_);
      samples.push_back(elapsed_seconds(start, stop));
      check_wrong(what);
    }
    return samples;
  }

  // round_robin/touch's timed part: GPU 1 .. N-1 touch in turn (each waiting for the one before), then GPU 0.
  void touch_round_robin() {
    chain_start_->record(*stream_);  // right after time_reps' start event, on the same stream
    cudaEvent_t before = *chain_start_;
    for (int device = 1; device < gpus_; ++device) {
      const Stream& stream = *chain_streams_[device - 1];
      CHECK_CUDA(cudaSetDevice(device));
      CHECK_CUDA(cudaStreamWaitEvent(stream, before, 0));
      launch_touch_on(stream);
      chain_done_[device - 1]->record(stream);
      before = *chain_done_[device - 1];
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaStreamWaitEvent(*stream_, before, 0));
    launch_touch();
  }

  // Both round_robin variants over every GPU, per hop.
  void round_robin(int reps) {
    std::vector<int> ranks;
    for (int device = 0; device < gpus_; ++device) ranks.push_back(device);
    auto per_hop = [&](std::vector<double> samples) {
      for (double& sample : samples) sample /= gpus_;
      return samples;
    };
    Record prefetched = make("round_robin", "prefetch", ranks,
                             per_hop(time_reps(
                                 "round_robin/prefetch", reps, [&] { place(gpu(0)); },
                                 [&] {
                                   for (int hop = 1; hop <= gpus_; ++hop)
                                     prefetch(region_, bytes_, gpu(hop % gpus_), *stream_);
                                 })));
    prefetched.extra("hops", static_cast<std::int64_t>(gpus_));
    context_.emit(prefetched);
    Record touched = make("round_robin", "touch", ranks,
                          per_hop(time_reps(
                              "round_robin/touch", reps, [&] { place(gpu(0)); }, [&] { touch_round_robin(); })));
    touched.extra("hops", static_cast<std::int64_t>(gpus_));
    context_.emit(touched);
  }

  Record make(const char* test, const char* variant, std::vector<int> ranks, std::vector<double> samples) const {
    Record record;
    record.family = "uvm";
    record.test = test;
    record.variant = variant;
    record.ranks = std::move(ranks);
    record.bytes = bytes_;
    record.unit = "s";
    record.samples = std::move(samples);
    record.extra("bw", static_cast<double>(bytes_) / summarize(record.samples).median);
    return record;
  }

  void emit(const char* test, const char* variant, std::vector<int> ranks, std::vector<double> samples) {
    context_.emit(make(test, variant, std::move(ranks), std::move(samples)));
  }

  void measure_region(std::uint64_t bytes) {
    bytes_ = bytes;
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMallocManaged(&region_, bytes, cudaMemAttachGlobal));
    // Written by GPU 0 (pages are populated there), far faster than a host loop over gigabytes.
    write_index_kernel<<<2 * sm_count(0), 512, 0, *stream_>>>(static_cast<std::uint32_t*>(region_),
                                                              bytes / sizeof(std::uint32_t));
    CHECK_LAUNCH();
    stream_->synchronize();
    const int reps = reps_for(bytes);
    // The other GPU of the GPU-pair tests: GPU 1, and the last GPU where there are more than 2.
    std::vector<int> peers;
    if (gpus_ > 1) peers.push_back(1);
    if (gpus_ > 2) peers.push_back(gpus_ - 1);

    emit("first_touch", "host_to_gpu", {0},
         time_reps(
             "first_touch/host_to_gpu", reps, [&] { place(kHost); }, [&] { launch_touch(); }));
    for (int peer : peers)
      emit("first_touch", "gpu_to_gpu", {peer, 0},
           time_reps(
               "first_touch/gpu_to_gpu", reps, [&] { place(gpu(peer)); }, [&] { launch_touch(); }));
    emit(
        "prefetch", "host_to_gpu", {0},
        time_reps(
            "prefetch/host_to_gpu", reps, [&] { place(kHost); }, [&] { prefetch(region_, bytes_, gpu(0), *stream_); }));
    emit(
        "prefetch", "gpu_to_host", {0},
        time_reps(
            "prefetch/gpu_to_host", reps, [&] { place(gpu(0)); }, [&] { prefetch(region_, bytes_, kHost, *stream_); }));
    for (int peer : peers)
      emit("prefetch", "gpu_to_gpu", {peer, 0},
           time_reps(
               "prefetch/gpu_to_gpu", reps, [&] { place(gpu(peer)); },
               [&] { prefetch(region_, bytes_, gpu(0), *stream_); }));

    place(gpu(0));
    launch_read();  // warm-up
    emit("read", "local", {0},
         time_reps(
             "read/local", reps, [] {}, [&] { launch_read(); }));

    for (int peer : peers) {
      advise(region_, bytes_, cudaMemAdviseSetPreferredLocation, gpu(peer));
      advise(region_, bytes_, cudaMemAdviseSetAccessedBy, gpu(0));
      place(gpu(peer));
      launch_read();  // warm-up: establishes GPU 0's mappings of the peer's pages
      emit("read", "peer_mapped", {0, peer},
           time_reps(
               "read/peer_mapped", reps, [] {}, [&] { launch_read(); }));
      advise(region_, bytes_, cudaMemAdviseUnsetAccessedBy, gpu(0));
      advise(region_, bytes_, cudaMemAdviseUnsetPreferredLocation, gpu(peer));
    }
    if (gpus_ > 1) round_robin(reps);

    advise(region_, bytes_, cudaMemAdviseSetPreferredLocation, kHost);
    advise(region_, bytes_, cudaMemAdviseSetAccessedBy, gpu(0));
    place(kHost);
    launch_read();
    emit("read", "host_mapped", {0},
         time_reps(
             "read/host_mapped", reps, [] {}, [&] { launch_read(); }));

    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(region_));
    region_ = nullptr;
  }

  RankContext& context_;
  const Options& options_;
  int gpus_ = 0;
  std::unique_ptr<Stream> stream_;
  std::vector<std::unique_ptr<Stream>> chain_streams_;  // round_robin/touch: GPU 1 .. N-1
  std::vector<std::unique_ptr<Event>> chain_done_;
  std::unique_ptr<Event> chain_start_;
  DeviceBuffer wrong_;
  void* region_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace

void run_uvm_family(RankContext& context) {
  UvmFamily(context).run();
}

}  // namespace probe
