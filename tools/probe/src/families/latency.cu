// Family `latency`: dependent-load latency by pointer chasing, in local memory and in a peer GPU's memory.
//
// The chain visits 128-byte lines of a span in a random cyclic order (Sattolo's shuffle), so every load
// depends on the previous one and neither the prefetcher nor the access pattern helps. One thread chases; a
// sample is (kernel time) / (loads), and each sample continues where the last one stopped. Three spans: 4 MiB
// fits in the 60 MB L2 of an H200 (after a warm-up lap it measures L2 hits); 256 MiB and 1 GiB are far larger
// than L2 (DRAM), the latter also far beyond the TLB reach (DRAM plus translation misses).
// Loads use ld.global.cg (cache in L2, not L1), like nvbandwidth's latency kernel.
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "../common/cuda_util.h"
#include "families.h"

namespace probe {
namespace {

constexpr std::size_t kLineBytes = 128;

__device__ __forceinline__ std::uint64_t load_cg(const std::uint64_t* address) {
  std::uint64_t value;
  asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(value) : "l"(address));
  return value;
}

// node order[t] points to node order[t + 1] (cyclically); a node is the first word of a 128-byte line.
__global__ void link_chain_kernel(std::uint64_t* base, const std::uint32_t* order, std::size_t nodes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  constexpr std::size_t kWordsPerLine = kLineBytes / sizeof(std::uint64_t);
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < nodes; t += stride) {
    const std::size_t from = order[t];
    const std::size_t to = order[(t + 1) % nodes];
    base[from * kWordsPerLine] = reinterpret_cast<std::uint64_t>(base + to * kWordsPerLine);
  }
}

// Continues the chase from `cursor` and leaves the last node there: successive samples walk on along the
// cycle instead of re-reading lines the previous sample just pulled into L2.
__global__ void chase_kernel(std::uint64_t* cursor, std::uint64_t loads) {
  const auto* p = reinterpret_cast<const std::uint64_t*>(*cursor);
  for (std::uint64_t i = 0; i < loads; ++i) p = reinterpret_cast<const std::uint64_t*>(load_cg(p));
  *cursor = reinterpret_cast<std::uint64_t>(p);
}

class LatencyFamily {
 public:
  explicit LatencyFamily(RankContext& context) : context_(context), options_(*context.options) {}

  void run() {
    const int gpus = visible_device_count();
    std::vector<std::uint64_t> spans = {4 * MiB, 256 * MiB, 1 * GiB};
    if (options_.quick) spans = {4 * MiB, 64 * MiB};
    if (options_.max_bytes)
      for (auto& span : spans) span = std::min(span, std::max<std::uint64_t>(options_.max_bytes, 64 * KiB));
    for (int a = 0; a < gpus; ++a)
      for (int b = 0; b < gpus; ++b)
        if (a != b) enable_peer_access(a, b);

    for (std::uint64_t span : spans) {
      // One chain per GPU, built where it lives; chased locally and by every peer.
      std::vector<DeviceBuffer> chains;
      for (int gpu = 0; gpu < gpus; ++gpu) chains.push_back(build_chain(gpu, span));
      for (int reader = 0; reader < gpus; ++reader)
        for (int owner = 0; owner < gpus; ++owner)  // --pairs selects [reader, owner] pairs
          if (reader == owner || wants_pair(options_, reader, owner)) measure(reader, owner, chains[owner], span);
    }
    if (gpus < 2) std::fprintf(stderr, "latency: one GPU visible: peer_load skipped\n");
  }

 private:
  DeviceBuffer build_chain(int gpu, std::uint64_t span) {
    const std::size_t nodes = span / kLineBytes;
    std::vector<std::uint32_t> order(nodes);
    std::iota(order.begin(), order.end(), 0u);
    // Sattolo's algorithm: a uniformly random single cycle through every line.
    std::mt19937_64 random(0x5eed0000u + static_cast<unsigned>(span / kLineBytes));
    for (std::size_t i = nodes - 1; i > 0; --i) {
      std::uniform_int_distribution<std::size_t> pick(0, i - 1);
      std::swap(order[i], order[pick(random)]);
    }
    DeviceBuffer chain(gpu, span);
    DeviceBuffer order_on_gpu(gpu, nodes * sizeof(std::uint32_t));
    CHECK_CUDA(cudaMemcpy(order_on_gpu.get(), order.data(), nodes * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
    link_chain_kernel<<<1024, 256>>>(chain.as<std::uint64_t>(), order_on_gpu.as<std::uint32_t>(), nodes);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    return chain;
  }

  void measure(int reader, int owner, const DeviceBuffer& chain, std::uint64_t span) {
    CHECK_CUDA(cudaSetDevice(reader));
    Stream stream(reader);
    Event start(reader), stop(reader);
    DeviceBuffer cursor(reader, sizeof(std::uint64_t));
    const std::size_t nodes = span / kLineBytes;
    const auto head = reinterpret_cast<std::uint64_t>(chain.get());
    CHECK_CUDA(cudaMemcpy(cursor.get(), &head, sizeof head, cudaMemcpyHostToDevice));
    // Warm-up: one full lap for an L2-sized span (the samples then see L2 hits), a short walk otherwise.
    const bool fits_l2 = span <= 16 * MiB;
    chase_kernel<<<1, 1, 0, stream>>>(cursor.as<std::uint64_t>(), fits_l2 ? nodes : 4096);
    CHECK_LAUNCH();
    stream.synchronize();

    // ~20-100 ms per sample: launch overhead (~5 us) stays below 0.1 %.
    // Beyond L2, 15 x 50,000 loads visit 750,000 distinct lines of the cycle: none is re-read.
    const std::uint64_t loads = options_.quick ? 20000 : (fits_l2 ? 200000 : 50000);
    const int samples_wanted = options_.quick ? 3 : 15;
    std::vector<double> samples;
    for (int i = 0; i < samples_wanted; ++i) {
      start.record(stream);
      chase_kernel<<<1, 1, 0, stream>>>(cursor.as<std::uint64_t>(), loads);
      CHECK_LAUNCH();
      stop.record(stream);
      samples.push_back(elapsed_seconds(start, stop) / static_cast<double>(loads));
    }
    Record record;
    record.family = "latency";
    record.test = reader == owner ? "local_load" : "peer_load";
    record.variant = "chase";
    record.ranks = reader == owner ? std::vector<int>{reader} : std::vector<int>{reader, owner};
    record.bytes = span;
    record.unit = "s";
    record.samples = std::move(samples);
    record.extra("loads_per_sample", static_cast<std::int64_t>(loads));
    record.extra("stride", static_cast<std::int64_t>(kLineBytes));
    context_.emit(record);
  }

  RankContext& context_;
  const Options& options_;
};

}  // namespace

void run_latency_family(RankContext& context) {
  LatencyFamily(context).run();
}

}  // namespace probe
