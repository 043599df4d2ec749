// Managed memory between the host and one GPU (family `uvm`), and long runs of one copy (family `jitter`).
//
// uvm, ranks [gpu], 64 KiB - 4 GiB (one region at a time, freed after its size):
//   first_touch/host_to_gpu  region resident on the host (prefetched there before each sample); a kernel touches
//                            one word per 4 KiB page and checks it (word 0 of page p holds p)
//   prefetch/host_to_gpu     cudaMemPrefetchAsync of the region, host -> GPU
//   prefetch/gpu_to_host     ... GPU -> host (the region prefetched to the GPU before each sample)
// Methods: events_single, host_sync, and kernel_clock for first_touch (the touching kernel's own span).
// jitter, ranks [gpu]: ce_local and sm_local at 1 MiB and 64 MiB, Config::jitter_samples single copies each,
// timed by events_single and gate. The record keeps every k-th sample (samples_stride) and the statistics of all
// (p999 too); every sample goes to a side file `<samples_dir>/<method>-<test>-<bytes>.txt` (ns, one a line).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "suites.hpp"

namespace xc {

namespace {

constexpr std::uint64_t kPage = 4096;

__global__ void touch_pages(const volatile unsigned* region, unsigned long long pages, unsigned long long* bad,
                            unsigned long long* clock) {
  if (clock && threadIdx.x == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    atomicMin(&clock[0], t);
  }
  const unsigned long long p = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (p < pages && region[p * (kPage / 4)] != static_cast<unsigned>(p)) atomicAdd(bad, 1ull);
  if (clock) {
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      atomicMax(&clock[1], t);
    }
  }
}

}  // namespace

void launch_touch_pages(const void* region, std::uint64_t pages, unsigned long long* bad, unsigned long long* clock,
                        cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((pages + 255) / 256);
  touch_pages<<<blocks, 256, 0, stream>>>(static_cast<const volatile unsigned*>(region), pages, bad, clock);
  launched("touch_pages");
}

namespace {

cudaMemLocation where(bool host, int device) {
  cudaMemLocation l{};
  l.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  l.id = host ? 0 : device;
  return l;
}

void prefetch(void* p, std::uint64_t bytes, bool to_host, int device, cudaStream_t s) {
#if CUDART_VERSION >= 13000
  must(cudaMemPrefetchAsync(p, bytes, where(to_host, device), 0, s), "cudaMemPrefetchAsync");
#else
  must(cudaMemPrefetchAsync(p, bytes, to_host ? cudaCpuDeviceId : device, s), "cudaMemPrefetchAsync");
#endif
}

int uvm_samples(std::uint64_t bytes, bool quick) {
  if (quick) return 2;
  return bytes <= 64 * MiB ? 10 : bytes <= 256 * MiB ? 5 : bytes <= 1 * GiB ? 4 : 3;
}

}  // namespace

void run_uvm(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  int concurrent = 0;
  must(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device), "cudaDeviceGetAttribute");
  if (!concurrent) {
    std::fprintf(stderr, "crosscheck: uvm: no concurrent managed access on GPU %d: skipped\n", device);
    return;
  }
  size_t free_bytes = 0, total = 0;
  must(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  // Managed memory far below what is free: asking for more than the card has can hang it.
  const std::uint64_t cap = std::min<std::uint64_t>(config.uvm_max_bytes, free_bytes / 8);
  cudaStream_t s = lane.stream();
  unsigned long long* bad = nullptr;
  must(cudaMalloc(reinterpret_cast<void**>(&bad), sizeof *bad), "cudaMalloc");
  for (std::uint64_t bytes : sweep(config, 64 * KiB, cap)) {
    if (deadline.passed()) {
      std::fprintf(stderr, "crosscheck: uvm: deadline passed at %llu B\n", static_cast<unsigned long long>(bytes));
      break;
    }
    void* region = nullptr;
    must(cudaMallocManaged(&region, bytes), "cudaMallocManaged");
    const std::uint64_t pages = bytes / kPage;
    auto* words = static_cast<unsigned*>(region);
    for (std::uint64_t p = 0; p < pages; ++p) words[p * (kPage / 4)] = static_cast<unsigned>(p);  // host first touch
    const int samples = uvm_samples(bytes, config.quick);
    auto on_host = [=] {
      prefetch(region, bytes, true, device, s);
      must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    };
    auto on_gpu = [=] {
      prefetch(region, bytes, false, device, s);
      must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    };
    Op touch;
    touch.family = "uvm";
    touch.test = "first_touch";
    touch.ranks = {device};
    touch.bytes = bytes;
    touch.single_only = true;
    touch.capturable = false;
    touch.warmup = 1;
    touch.prepare = on_host;
    touch.enqueue = [=](cudaStream_t st) { launch_touch_pages(region, pages, bad, nullptr, st); };
    touch.enqueue_clocked = [=](cudaStream_t st, unsigned long long* clock) {
      launch_touch_pages(region, pages, bad, clock, st);
    };
    touch.extras = {extra("page_bytes", kPage)};
    Op to_gpu = touch;
    to_gpu.test = "prefetch";
    to_gpu.enqueue_clocked = nullptr;
    to_gpu.enqueue = [=](cudaStream_t st) { prefetch(region, bytes, false, device, st); };
    to_gpu.extras = {};
    Op to_host = to_gpu;
    to_host.prepare = on_gpu;
    to_host.enqueue = [=](cudaStream_t st) { prefetch(region, bytes, true, device, st); };
    must(cudaMemset(bad, 0, sizeof *bad), "cudaMemset");
    struct Case {
      Op* op;
      const char* variant;
    };
    for (Case c : {Case{&touch, "host_to_gpu"}, Case{&to_gpu, "host_to_gpu"}, Case{&to_host, "gpu_to_host"}}) {
      for (Method m : {Method::events_single, Method::host_sync, Method::kernel_clock}) {
        if (!method_wanted(config, m) || !lane.applies(m, Shape::single, *c.op)) continue;
        auto times = lane.time(m, Shape::single, *c.op, samples, 1);
        std::vector<Extra> more;
        if (!times.empty()) {
          std::vector<double> sorted = times;
          std::sort(sorted.begin(), sorted.end());
          more.push_back(extra("bw", static_cast<double>(bytes) / quantile_sorted(sorted, 0.5)));
        }
        emit(out, m, *c.op, c.variant, std::move(times), std::move(more));
      }
    }
    unsigned long long mismatches = 0;
    must(cudaMemcpy(&mismatches, bad, sizeof mismatches, cudaMemcpyDeviceToHost), "cudaMemcpy");
    must(cudaFree(region), "cudaFree");
    if (mismatches) throw Failure("uvm: touched pages lost their contents (" + std::to_string(mismatches) + ")");
  }
  cudaFree(bad);
}

void write_all_samples(const Config& config, const char* method, const Op& op, const std::vector<double>& samples) {
  if (config.samples_dir.empty()) return;
  std::string ranks;
  for (std::size_t i = 0; i < op.ranks.size(); ++i) ranks += (i ? "-" : "") + std::to_string(op.ranks[i]);
  const std::string path =
      config.samples_dir + "/" + method + "-" + op.test + "-" + ranks + "-" + std::to_string(op.bytes) + ".txt";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Failure("cannot write " + path);
  for (double v : samples) std::fprintf(f, "%.1f\n", v * 1e9);
  std::fclose(f);
}

std::vector<Extra> jitter_extras(const std::vector<double>& samples) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  // 48 bins, log-spaced from the smallest to the largest sample: the shape of the tail without every sample.
  const double lo = std::max(sorted.front(), 1e-9), hi = std::max(sorted.back(), lo * 1.0001);
  constexpr int kBins = 48;
  std::vector<std::uint64_t> counts(kBins, 0);
  for (double v : sorted) {
    const double x = std::log(std::max(v, lo) / lo) / std::log(hi / lo);
    counts[std::min(kBins - 1, static_cast<int>(x * kBins))]++;
  }
  std::string edges = "[", bins = "[";
  for (int i = 0; i <= kBins; ++i) edges += (i ? ", " : "") + json_number(lo * std::pow(hi / lo, double(i) / kBins));
  for (int i = 0; i < kBins; ++i) bins += (i ? ", " : "") + std::to_string(counts[i]);
  double mean = 0;
  for (double v : samples) mean += v;
  mean /= static_cast<double>(samples.size());
  return {extra("samples_total", static_cast<std::uint64_t>(samples.size())),
          extra("p50_all", quantile_sorted(sorted, 0.5)),
          extra("p99_all", quantile_sorted(sorted, 0.99)),
          extra("p999_all", quantile_sorted(sorted, 0.999)),
          extra("p9999_all", quantile_sorted(sorted, 0.9999)),
          extra("max_all", sorted.back()),
          extra("mean_all", mean),
          extra_raw("hist_edges_s", edges + "]"),
          extra_raw("hist_counts", bins + "]")};
}

void run_jitter_on(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline,
                   const std::vector<Op>& ops) {
  for (const Op& base : ops) {
    for (Method m : {Method::events_single, Method::gate}) {
      if (!method_wanted(config, m) || deadline.passed()) continue;
      Op op = base;
      op.family = "jitter";
      const int n = config.quick ? 2000 : config.jitter_samples;
      auto times = lane.time(m, Shape::single, op, n, 1);
      if (times.empty()) continue;
      write_all_samples(config, name(m), op, times);
      emit(out, m, op, "single", times, jitter_extras(times), config.jitter_keep);
    }
  }
}

void run_jitter(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp props{};
  must(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  const std::uint64_t largest = 64 * MiB;
  void *src = nullptr, *dst = nullptr;
  must(cudaMalloc(&src, largest), "cudaMalloc");
  must(cudaMalloc(&dst, largest), "cudaMalloc");
  fill_pattern(src, largest, 5, lane.stream());
  std::vector<Op> ops;
  for (std::uint64_t bytes : {1 * MiB, 64 * MiB}) {
    Op ce;
    ce.test = "ce_local";
    ce.ranks = {device};
    ce.bytes = bytes;
    ce.extras = {extra("engine", "ce")};
    ce.enqueue = [=](cudaStream_t st) {
      must(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st), "memcpy");
    };
    Op sm = ce;
    sm.test = "sm_local";
    sm.extras = {extra("engine", "sm")};
    const int sms = props.multiProcessorCount;
    sm.enqueue = [=](cudaStream_t st) { launch_sm_copy(dst, src, bytes, st, nullptr, sms); };
    ops.push_back(ce);
    ops.push_back(sm);
  }
  run_jitter_on(lane, out, config, deadline, ops);
  if (count_mismatches(dst, largest, 5, lane.stream()) != 0) throw Failure("jitter: wrong data after the copies");
  cudaFree(src);
  cudaFree(dst);
}

}  // namespace xc
