// Copies on one GPU and between the host and the GPU, each size timed by every method that can time it.
//
//   copy/ce_local            cudaMemcpyAsync device to device
//   copy/sm_local            the SM copy kernel (lane.cu), device to device
//   copy/ce_{h2d,d2h}_pinned cudaMemcpyAsync with cudaHostAlloc memory
//   copy/ce_{h2d,d2h}_pageable  ... with plain (malloc'd, touched) memory: the call may wait for the device, so
//                            only events_single, events_b2b and host_sync time it
// Variants: `single` (one op per sample), `pipelined` (`depth` ops per sample, per op; extra `depth`).
#include <cstdlib>
#include <cstring>

#include "suites.hpp"

namespace xc {

bool method_wanted(const Config& config, Method method) {
  if (config.methods.empty()) return true;
  for (const auto& m : config.methods)
    if (m == name(method)) return true;
  return false;
}

std::vector<std::uint64_t> sweep(const Config& config, std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> sizes;
  const std::uint64_t step = config.quick ? 64 : static_cast<std::uint64_t>(config.size_step);
  for (std::uint64_t b = from; b <= to; b *= step) sizes.push_back(b);
  if (config.quick && sizes.back() != to && to <= 16 * MiB) sizes.push_back(to);
  return sizes;
}

int samples_for(double per_sample_s, double target_s, int low, int high) {
  if (per_sample_s <= 0) return high;
  const double n = target_s / per_sample_s;
  return n < low ? low : n > high ? high : static_cast<int>(n);
}

void emit(TraceSet& out, Method method, const Op& op, const std::string& variant, std::vector<double> samples,
          std::vector<Extra> extras, std::size_t cap) {
  Result r;
  r.family = op.family;
  r.test = op.test;
  r.variant = variant;
  r.ranks = op.ranks;
  r.bytes = op.bytes;
  r.samples = std::move(samples);
  r.extras = op.extras;
  for (auto& e : extras) r.extras.push_back(std::move(e));
  out.write(name(method), std::move(r), cap);
}

namespace {

// Ops per back-to-back sample: enough to hide one op's start-up, few enough that a sample stays short.
int depth_for(std::uint64_t bytes, double op_s) {
  int depth = static_cast<int>(std::clamp<std::uint64_t>(64 * MiB / std::max<std::uint64_t>(bytes, 1), 8, 64));
  if (op_s > 0) depth = std::min(depth, std::max(4, static_cast<int>(0.02 / op_s)));
  return depth;
}

struct HostBuffer {
  void* p = nullptr;
  bool pinned = false;
  std::uint64_t bytes = 0;
  HostBuffer(std::uint64_t n, bool pin) : pinned(pin), bytes(n) {
    if (pin) {
      must(cudaHostAlloc(&p, n, cudaHostAllocDefault), "cudaHostAlloc");
    } else {
      if (posix_memalign(&p, 4096, n) != 0) throw Failure("posix_memalign failed");
    }
    std::memset(p, 0, n);  // the VM backs host memory lazily: touched before anything is timed
  }
  ~HostBuffer() {
    if (pinned)
      cudaFreeHost(p);
    else
      std::free(p);
  }
};

bool host_matches(const void* p, std::uint64_t bytes, unsigned seed) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (std::uint64_t i = 0; i < bytes; ++i)
    if (c[i] != pattern_byte(i, seed)) return false;
  return true;
}

}  // namespace

void run_local_copies(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp props{};
  must(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  const std::uint64_t largest = config.max_bytes;
  void *src = nullptr, *dst = nullptr;
  must(cudaMalloc(&src, largest), "cudaMalloc");
  must(cudaMalloc(&dst, largest), "cudaMalloc");
  constexpr unsigned kSeed = 11;
  cudaStream_t s = lane.stream();
  fill_pattern(src, largest, kSeed, s);
  must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  HostBuffer pinned(largest, true), pageable(largest, false);
  must(cudaMemcpy(pinned.p, src, largest, cudaMemcpyDeviceToHost), "cudaMemcpy");
  must(cudaMemcpy(pageable.p, src, largest, cudaMemcpyDeviceToHost), "cudaMemcpy");

  struct Kind {
    const char* test;
    const char* engine;
    void* to;
    const void* from;
    cudaMemcpyKind kind;  // cudaMemcpyDefault marks the SM kernel
    bool pageable;
    bool to_host;
  };
  const Kind kinds[] = {
      {"ce_local", "ce", dst, src, cudaMemcpyDeviceToDevice, false, false},
      {"sm_local", "sm", dst, src, cudaMemcpyDefault, false, false},
      {"ce_h2d_pinned", "ce", dst, pinned.p, cudaMemcpyHostToDevice, false, false},
      {"ce_d2h_pinned", "ce", pinned.p, src, cudaMemcpyDeviceToHost, false, true},
      {"ce_h2d_pageable", "ce", dst, pageable.p, cudaMemcpyHostToDevice, true, false},
      {"ce_d2h_pageable", "ce", pageable.p, src, cudaMemcpyDeviceToHost, true, true},
  };
  for (const Kind& k : kinds) {
    for (std::uint64_t bytes : sweep(config, 4, largest)) {
      if (deadline.passed()) {
        std::fprintf(stderr, "crosscheck: copies: deadline passed at %s %llu B\n", k.test,
                     static_cast<unsigned long long>(bytes));
        goto done;
      }
      Op op;
      op.test = k.test;
      op.ranks = {device};
      op.bytes = bytes;
      op.host_blocking = k.pageable;
      op.extras = {extra("engine", k.engine)};
      if (k.kind == cudaMemcpyDefault) {
        op.enqueue = [=](cudaStream_t st) {
          launch_sm_copy(k.to, k.from, bytes, st, nullptr, props.multiProcessorCount);
        };
        op.enqueue_clocked = [=](cudaStream_t st, unsigned long long* clock) {
          launch_sm_copy(k.to, k.from, bytes, st, clock, props.multiProcessorCount);
        };
        const dim3 grid = launch_sm_copy(k.to, k.from, bytes, s, nullptr, props.multiProcessorCount);
        op.extras.push_back(extra("blocks", static_cast<int>(grid.x)));
        op.extras.push_back(extra("threads", kSmCopyThreads));
      } else {
        op.enqueue = [=](cudaStream_t st) {
          must(cudaMemcpyAsync(k.to, k.from, bytes, k.kind, st), "cudaMemcpyAsync");
        };
      }
      if (k.to_host)
        std::memset(k.to, 0xEE, std::min<std::uint64_t>(bytes, 64 * MiB));
      else
        must(cudaMemsetAsync(k.to, 0xEE, bytes, s), "cudaMemsetAsync");
      must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      // One op alone, host-timed, sizes the sample counts.
      const double t0 = now_s();
      op.enqueue(s);
      must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      const double op_s = now_s() - t0;
      const int depth = depth_for(bytes, op_s);
      op.warmup = op_s > 0.01 ? 1 : 3;
      for (Method m : all_methods()) {
        if (!method_wanted(config, m)) continue;
        for (Shape shape : {Shape::single, Shape::back_to_back}) {
          if (!lane.applies(m, shape, op)) continue;
          const bool b2b = shape == Shape::back_to_back;
          const int samples = config.quick ? 5
                              : b2b        ? samples_for(depth * op_s + 30e-6, 0.02, 3, 50)
                                           : samples_for(op_s + 30e-6, 0.02, 3, 200);
          auto times = lane.time(m, shape, op, samples, depth);
          std::vector<Extra> more;
          if (b2b) more.push_back(extra("depth", depth));
          emit(out, m, op, b2b ? "pipelined" : "single", std::move(times), std::move(more));
        }
      }
      // Every op wrote the same bytes: the destination must hold the source's pattern.
      bool ok = true;
      if (k.to_host)
        ok = bytes > 64 * MiB || host_matches(k.to, bytes, kSeed);
      else
        ok = count_mismatches(k.to, bytes, kSeed, s) == 0;
      if (!ok) throw Failure(std::string("copy ") + k.test + " of " + std::to_string(bytes) + " B: wrong data");
    }
  }
done:
  cudaFree(src);
  cudaFree(dst);
}

}  // namespace xc
