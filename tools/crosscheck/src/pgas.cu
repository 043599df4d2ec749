// xc-pgas: NVSHMEM one-sided operations and NCCL all-reduce, one process per GPU (started by tools/crosscheck/pgas.sh,
// which passes --rank and --ranks; the unique ids go from rank 0 to the others through files in --rendezvous).
// PE 0 writes the traces (one file per method, as xc does); PE 0 puts and gets to PE 1 (to itself on one PE, a dry
// run). Tests (family nvshmem unless said):
//   put_rate/{thread,warp,block}  `bytes` split into slices (>= 8 B) over every thread / warp / block of `blocks`
//                                 blocks x `threads` (1 or 32 blocks; 128, 256, 512, 1024 threads), each putting
//                                 its slice `iters_per_sample` times (putmem_nbi at that scope), then quiet; B/s =
//                                 bytes x iters / time. Extra `source`: l2 (the same source every iteration, warm)
//                                 or hbm (each iteration a new source window of a 1 GiB buffer, L2 flushed before)
//   put_latency, get_latency/{thread,warp,block}  one issuer (thread 0 / warp 0 / the block of `threads`) doing
//                                 putmem + quiet, or a blocking getmem, `iters_per_sample` times; per operation
//   signal_latency/thread         nvshmemx_signal_op + quiet; per operation
//   put_signal_pingpong/round_trip  (two PEs) PE0 putmem_signal_nbi -> PE1 waits, puts back -> PE0 waits; per round
//                                 trip; extra `scope`
//   allreduce_onesided/put_signal  float32 sum of `bytes` over every PE: each PE puts every peer's chunk to it with
//                                 signals (put_blocks blocks of 512 threads, putmem_signal_nbi_block, signal add),
//                                 waits, adds (a kernel: own chunk + the received ones), puts its reduced chunk to
//                                 every peer with signals, waits; extras scatter/reduce/gather phase medians
//   collective/all_reduce/{out_of_place,graph}  ncclAllReduce float32 sum (NCCL's numbers for the same sizes)
// Methods: events_single (events around one kernel or collective on an idle stream: launch included),
// events_b2b (several back to back between the events, per op), kernel_clock (%globaltimer inside the kernel,
// the PGAS ops alone), graph (NCCL only: ops captured into a graph, events inside it).
#include <nccl.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xc.hpp"

namespace {

using namespace xc;

void nccl_must(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Failure(std::string(what) + ": " + ncclGetErrorString(r));
}

__device__ __forceinline__ unsigned long long gns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void clock_start(unsigned long long* clock) {
  if (clock && threadIdx.x == 0) atomicMin(&clock[0], gns());
}
__device__ __forceinline__ void clock_end(unsigned long long* clock) {
  if (clock) {
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&clock[1], gns());
  }
}

enum Scope { kThread = 0, kWarp = 1, kBlock = 2 };
const char* kScopes[] = {"thread", "warp", "block"};

__global__ void reset_clock(unsigned long long* clock) {
  clock[0] = ~0ull;
  clock[1] = 0;
}

__global__ void put_rate_kernel(char* dst, const char* src, unsigned long long bytes, int scope, int iters,
                                unsigned long long src_stride, unsigned long long src_span, int pe,
                                unsigned long long* clock) {
  clock_start(clock);
  const unsigned long long granules = scope == kThread ? 1ull * gridDim.x * blockDim.x
                                      : scope == kWarp ? 1ull * gridDim.x * (blockDim.x / 32)
                                                       : gridDim.x;
  const unsigned long long granule = scope == kThread ? blockIdx.x * 1ull * blockDim.x + threadIdx.x
                                     : scope == kWarp ? blockIdx.x * 1ull * (blockDim.x / 32) + threadIdx.x / 32
                                                      : blockIdx.x;
  unsigned long long slice = (bytes + granules - 1) / granules;
  if (slice < 8) slice = 8;
  const unsigned long long offset = granule * slice;
  if (offset < bytes) {
    const unsigned long long length = offset + slice > bytes ? bytes - offset : slice;
    for (int it = 0; it < iters; ++it) {
      const char* from = src + (src_stride ? (it * src_stride) % src_span : 0) + offset;
      if (scope == kThread)
        nvshmem_putmem_nbi(dst + offset, from, length, pe);
      else if (scope == kWarp)
        nvshmemx_putmem_nbi_warp(dst + offset, from, length, pe);
      else
        nvshmemx_putmem_nbi_block(dst + offset, from, length, pe);
    }
  }
  nvshmem_quiet();
  clock_end(clock);
}

// One issuer (thread 0, warp 0 or the whole block) doing `iters` dependent operations; kind 0 put + quiet, 1 get,
// 2 signal + quiet.
__global__ void latency_kernel(char* remote, char* local, unsigned long long bytes, int scope, int kind, int iters,
                               std::uint64_t* signal, int pe, unsigned long long* clock) {
  const bool issuer = scope == kBlock || (scope == kWarp && threadIdx.x < 32) || threadIdx.x == 0;
  clock_start(clock);
  if (issuer) {
    for (int it = 0; it < iters; ++it) {
      // Every get reads another 64 KiB slot of the peer's buffer, so none is served from the last one's lines.
      char* slot = remote + (it % 16) * 65536ull;
      if (kind == 0) {
        if (scope == kThread)
          nvshmem_putmem(slot, local, bytes, pe);
        else if (scope == kWarp)
          nvshmemx_putmem_warp(slot, local, bytes, pe);
        else
          nvshmemx_putmem_block(slot, local, bytes, pe);
        nvshmem_quiet();
      } else if (kind == 1) {
        if (scope == kThread)
          nvshmem_getmem(local, slot, bytes, pe);
        else if (scope == kWarp)
          nvshmemx_getmem_warp(local, slot, bytes, pe);
        else
          nvshmemx_getmem_block(local, slot, bytes, pe);
      } else {
        nvshmemx_signal_op(signal, it + 1, NVSHMEM_SIGNAL_SET, pe);
        nvshmem_quiet();
      }
      if (scope == kBlock) __syncthreads();
    }
  }
  clock_end(clock);
}

__global__ void pingpong_kernel(char* remote, const char* local, unsigned long long bytes, int scope, int iters,
                                std::uint64_t* my_signal, int first, int pe, unsigned long long* clock) {
  const bool issuer = scope == kBlock || (scope == kWarp && threadIdx.x < 32) || threadIdx.x == 0;
  clock_start(clock);
  for (int it = 0; it < iters; ++it) {
    if (!first) {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(my_signal, NVSHMEM_CMP_GE, it + 1);
      __syncthreads();
    }
    if (issuer) {
      if (scope == kThread)
        nvshmem_putmem_signal_nbi(remote, local, bytes, my_signal, it + 1, NVSHMEM_SIGNAL_SET, pe);
      else if (scope == kWarp)
        nvshmemx_putmem_signal_nbi_warp(remote, local, bytes, my_signal, it + 1, NVSHMEM_SIGNAL_SET, pe);
      else
        nvshmemx_putmem_signal_nbi_block(remote, local, bytes, my_signal, it + 1, NVSHMEM_SIGNAL_SET, pe);
    }
    if (first) {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(my_signal, NVSHMEM_CMP_GE, it + 1);
      __syncthreads();
    }
  }
  clock_end(clock);
}

// The scatter (or gather) of the one-sided all-reduce: block b puts its share of the chunk of every peer.
__global__ void spread_kernel(float* remote_base, const float* local, unsigned long long chunk_elems, int me, int pes,
                              bool gather, std::uint64_t* signal) {
  const unsigned long long share = (chunk_elems + gridDim.x - 1) / gridDim.x;
  const unsigned long long begin = blockIdx.x * share;
  const unsigned long long count =
      begin >= chunk_elems ? 0 : (share < chunk_elems - begin ? share : chunk_elems - begin);
  for (int k = 1; k < pes; ++k) {
    const int peer = (me + k) % pes;
    // scatter: my copy of the peer's chunk into the peer's receive slot `me`; gather: my reduced chunk into the
    // peer's output at my chunk.
    const float* from = local + (gather ? me : peer) * chunk_elems + begin;
    float* to = remote_base + me * chunk_elems + begin;
    if (count)
      nvshmemx_putmem_signal_nbi_block(to, from, count * 4, signal, 1, NVSHMEM_SIGNAL_ADD, peer);
    else if (threadIdx.x == 0)
      nvshmemx_signal_op(signal, 1, NVSHMEM_SIGNAL_ADD, peer);
  }
}

__global__ void wait_kernel(std::uint64_t* signal, unsigned long long value) {
  nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, value);
}

__global__ void add_kernel(float* out, const float* own, const float* received, unsigned long long chunk_elems, int me,
                           int pes) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < chunk_elems;
       i += 1ull * gridDim.x * blockDim.x) {
    float sum = own[me * chunk_elems + i];
    for (int p = 0; p < pes; ++p)
      if (p != me) sum += received[p * chunk_elems + i];
    out[me * chunk_elems + i] = sum;
  }
}

__global__ void fill_float(float* p, unsigned long long n, float base) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n; i += 1ull * gridDim.x * blockDim.x)
    p[i] = base + static_cast<float>(i % 7);
}

__global__ void count_wrong_sum(const float* p, unsigned long long n, int pes, unsigned long long* bad) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n; i += 1ull * gridDim.x * blockDim.x) {
    float want = 0;
    for (int r = 0; r < pes; ++r) want += static_cast<float>(r + 1) + static_cast<float>(i % 7);
    if (p[i] != want) atomicAdd(bad, 1ull);
  }
}

struct Args {
  int rank = 0, ranks = 1;
  std::string rendezvous, out = ".", prefix = "xc-pgas";
  bool quick = false;
  double budget = 200;
  std::vector<std::string> suites = {"nvshmem", "allreduce", "nccl"};
};

template <typename T>
T exchange_id(const Args& a, const char* name, T mine) {
  const std::string path = a.rendezvous + "/" + name;
  if (a.rank == 0) {
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&mine), sizeof mine);
    std::rename(tmp.c_str(), path.c_str());
    return mine;
  }
  const double limit = now_s() + 120;
  while (true) {
    std::ifstream in(path, std::ios::binary);
    T id;
    if (in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    if (now_s() > limit) throw Failure("rank " + std::to_string(a.rank) + ": no " + name + " from rank 0");
    usleep(10000);
  }
}

class Pgas {
 public:
  Pgas(const Args& args, TraceSet* out) : a_(args), out_(out) {
    must(cudaSetDevice(a_.rank), "cudaSetDevice");
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (a_.rank == 0) nvshmemx_get_uniqueid(&id);
    id = exchange_id(a_, "nvshmem.id", id);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(a_.rank, a_.ranks, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) throw Failure("nvshmemx_init_attr failed");
    me_ = nvshmem_my_pe();
    pes_ = nvshmem_n_pes();
    peer_ = (me_ + 1) % pes_;
    must(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate");
    must(cudaEventCreate(&e0_), "cudaEventCreate");
    must(cudaEventCreate(&e1_), "cudaEventCreate");
    must(cudaMalloc(reinterpret_cast<void**>(&clock_), 16), "cudaMalloc");
    ncclUniqueId nid{};
    if (a_.rank == 0) nccl_must(ncclGetUniqueId(&nid), "ncclGetUniqueId");
    nid = exchange_id(a_, "nccl.id", nid);
    nccl_must(ncclCommInitRank(&comm_, a_.ranks, nid, a_.rank), "ncclCommInitRank");
  }
  ~Pgas() {
    ncclCommDestroy(comm_);
    nvshmem_finalize();
  }

  void run() {
    const Deadline deadline(a_.budget);
    for (const auto& s : a_.suites) {
      if (s == "nvshmem") latency_and_rates(deadline);
      if (s == "allreduce") onesided_allreduce(deadline);
      if (s == "nccl") nccl_allreduce(deadline);
    }
  }

 private:
  std::vector<int> pair() const { return {0, pes_ > 1 ? 1 : 0}; }
  std::vector<int> everyone() const {
    std::vector<int> r(pes_);
    for (int i = 0; i < pes_; ++i) r[i] = i;
    return r;
  }

  void write(const char* method, Result r) {
    if (out_) out_->write(method, std::move(r));
  }

  // Every rank must run the same sizes: PE 0's deadline decides for all (broadcast through NCCL).
  bool everyone_goes_on(const Deadline& deadline) {
    int go = me_ == 0 && deadline.passed() ? 0 : 1;
    int* flag = nullptr;
    must(cudaMalloc(&flag, sizeof(int)), "cudaMalloc");
    must(cudaMemcpy(flag, &go, sizeof go, cudaMemcpyHostToDevice), "cudaMemcpy");
    nccl_must(ncclBroadcast(flag, flag, 1, ncclInt32, 0, comm_, s_), "ncclBroadcast");
    must(cudaMemcpyAsync(&go, flag, sizeof go, cudaMemcpyDeviceToHost, s_), "cudaMemcpyAsync");
    must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
    cudaFree(flag);
    return go != 0;
  }

  double kernel_time(bool clocked, const std::function<void(unsigned long long*)>& launch) {
    if (clocked) {
      reset_clock<<<1, 1, 0, s_>>>(clock_);
      launch(clock_);
      unsigned long long c[2];
      must(cudaMemcpyAsync(c, clock_, 16, cudaMemcpyDeviceToHost, s_), "cudaMemcpyAsync");
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
      return c[1] > c[0] ? (c[1] - c[0]) * 1e-9 : 0;
    }
    must(cudaEventRecord(e0_, s_), "cudaEventRecord");
    launch(nullptr);
    must(cudaEventRecord(e1_, s_), "cudaEventRecord");
    must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
    float ms = 0;
    must(cudaEventElapsedTime(&ms, e0_, e1_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  Result nvshmem_result(const char* test, const char* variant, std::vector<int> ranks, std::uint64_t bytes,
                        std::vector<double> samples, const char* unit = "s") {
    Result r;
    r.family = "nvshmem";
    r.test = test;
    r.variant = variant;
    r.ranks = std::move(ranks);
    r.bytes = bytes;
    r.unit = unit;
    r.samples = std::move(samples);
    return r;
  }

  void latency_and_rates(const Deadline& deadline) {
    const std::uint64_t dst_bytes = 64 * MiB, span = 1 * GiB;
    char* dst = static_cast<char*>(nvshmem_malloc(dst_bytes));
    char* src = nullptr;
    char* flush = nullptr;
    must(cudaMalloc(&src, span + dst_bytes), "cudaMalloc");
    must(cudaMalloc(&flush, 256 * MiB), "cudaMalloc");
    must(cudaMemset(src, 3, span + dst_bytes), "cudaMemset");
    auto* signal = static_cast<std::uint64_t*>(nvshmem_malloc(64));
    must(cudaMemset(signal, 0, 64), "cudaMemset");
    must(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    nvshmem_barrier_all();
    const int samples = a_.quick ? 2 : 5;
    // Rates: PE 0 puts, the others wait in the barrier.
    const std::vector<int> threads_list = a_.quick ? std::vector<int>{512} : std::vector<int>{128, 256, 512, 1024};
    const std::vector<std::uint64_t> sizes =
        a_.quick ? std::vector<std::uint64_t>{8, 4096, 1 * MiB}
                 : std::vector<std::uint64_t>{8, 64, 512, 4 * KiB, 32 * KiB, 256 * KiB, 2 * MiB, 16 * MiB, 64 * MiB};
    if (me_ == 0) {
      for (int scope = 0; scope < 3 && !deadline.passed(); ++scope)
        for (int blocks : {1, 32})
          for (int threads : threads_list)
            for (int hbm = 0; hbm < 2; ++hbm)
              for (std::uint64_t bytes : sizes) {
                if (deadline.passed()) break;
                const std::uint64_t stride = hbm ? (bytes + 4095) / 4096 * 4096 : 0;
                auto launch = [&](int iters, unsigned long long* c) {
                  put_rate_kernel<<<blocks, threads, 0, s_>>>(dst, src, bytes, scope, iters, stride, span, peer_, c);
                  launched("put_rate_kernel");
                };
                const double one = kernel_time(true, [&](unsigned long long* c) { launch(1, c); });
                int iters = std::clamp(static_cast<int>(1e-3 / std::max(one, 1e-7)), 2, 500);
                if (hbm) iters = std::min<int>(iters, static_cast<int>(span / std::max<std::uint64_t>(stride, 1)));
                for (bool clocked : {false, true}) {
                  std::vector<double> rates;
                  for (int k = 0; k < samples; ++k) {
                    if (hbm)
                      must(cudaMemsetAsync(flush, k, 256 * MiB, s_), "cudaMemsetAsync");  // evicts L2
                    else
                      launch(1, nullptr);  // the source warm in L2
                    must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
                    const double t = kernel_time(clocked, [&](unsigned long long* c) { launch(iters, c); });
                    rates.push_back(t > 0 ? static_cast<double>(bytes) * iters / t : 0);
                  }
                  Result r = nvshmem_result("put_rate", kScopes[scope], pair(), bytes, std::move(rates), "B/s");
                  r.suffix = "b" + std::to_string(blocks) + "t" + std::to_string(threads) + (hbm ? "-hbm" : "-l2");
                  r.extras = {extra("blocks", blocks), extra("threads", threads), extra("iters_per_sample", iters),
                              extra("source", hbm ? "hbm" : "l2"), extra("scope", kScopes[scope])};
                  write(clocked ? "kernel_clock" : "events_single", std::move(r));
                }
              }
      // Latencies of one issuer.
      const std::vector<std::uint64_t> small =
          a_.quick ? std::vector<std::uint64_t>{8, 4096}
                   : std::vector<std::uint64_t>{8, 64, 512, 4 * KiB, 32 * KiB, 64 * KiB};
      const char* tests[] = {"put_latency", "get_latency", "signal_latency"};
      for (int kind = 0; kind < 3 && !deadline.passed(); ++kind)
        for (int scope = 0; scope < 3; ++scope) {
          if (kind == 2 && scope != kThread) continue;
          for (int threads : a_.quick ? std::vector<int>{256} : std::vector<int>{128, 512, 1024}) {
            if (scope == kThread && threads != (a_.quick ? 256 : 128)) continue;  // one thread issues: T is moot
            for (std::uint64_t bytes : kind == 2 ? std::vector<std::uint64_t>{8} : small) {
              if (deadline.passed()) break;
              const int iters = a_.quick ? 10 : 100;
              auto run = [&](unsigned long long* c) {
                latency_kernel<<<1, threads, 0, s_>>>(dst, src, bytes, scope, kind, iters, signal, peer_, c);
                launched("latency_kernel");
              };
              kernel_time(false, run);  // warm-up: first touches of the remote slots, module load
              for (bool clocked : {false, true}) {
                std::vector<double> per_op;
                for (int k = 0; k < samples; ++k) per_op.push_back(kernel_time(clocked, run) / iters);
                Result r = nvshmem_result(tests[kind], kScopes[scope], pair(), bytes, std::move(per_op));
                r.suffix = "t" + std::to_string(threads);
                r.extras = {extra("threads", threads), extra("blocks", 1), extra("iters_per_sample", iters),
                            extra("scope", kScopes[scope])};
                write(clocked ? "kernel_clock" : "events_single", std::move(r));
              }
            }
          }
        }
    }
    nvshmem_barrier_all();
    // Ping-pong: two PEs, both kernels running at once.
    if (pes_ > 1 && !deadline.passed()) {
      const std::vector<std::uint64_t> small =
          a_.quick ? std::vector<std::uint64_t>{8}
                   : std::vector<std::uint64_t>{8, 64, 512, 4 * KiB, 32 * KiB, 64 * KiB};
      const int iters = a_.quick ? 10 : 200;
      for (int scope = 0; scope < 3; ++scope)
        for (std::uint64_t bytes : small) {
          std::vector<double> by_events, by_clock;
          for (int k = -1; k < samples * 2; ++k) {  // k = -1: a warm-up series, not kept
            const bool clocked = k % 2 == 1;
            must(cudaMemset(signal, 0, 64), "cudaMemset");
            must(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            nvshmem_barrier_all();
            const double t = kernel_time(clocked && me_ == 0, [&](unsigned long long* c) {
              if (me_ <= 1)
                pingpong_kernel<<<1, scope == kThread ? 32 : 256, 0, s_>>>(dst, src, bytes, scope, iters, signal,
                                                                           me_ == 0, me_ == 0 ? 1 : 0, c);
              launched("pingpong_kernel");
            });
            if (k >= 0) (clocked ? by_clock : by_events).push_back(t / iters);
            nvshmem_barrier_all();
          }
          for (bool clocked : {false, true}) {
            Result r =
                nvshmem_result("put_signal_pingpong", "round_trip", pair(), bytes, clocked ? by_clock : by_events);
            r.suffix = kScopes[scope];
            r.extras = {extra("scope", kScopes[scope]), extra("iters_per_sample", iters),
                        extra("threads", scope == kThread ? 32 : 256)};
            if (me_ == 0) write(clocked ? "kernel_clock" : "events_single", std::move(r));
          }
        }
    }
    nvshmem_barrier_all();
    nvshmem_free(signal);
    nvshmem_free(dst);
    cudaFree(src);
    cudaFree(flush);
  }

  void onesided_allreduce(const Deadline& deadline) {
    const std::uint64_t largest = a_.quick ? 16 * MiB : 1 * GiB;
    const int blocks = 32, threads = 512;
    auto* out = static_cast<float*>(nvshmem_malloc(largest + 16 * pes_));
    auto* received = static_cast<float*>(nvshmem_malloc(largest + 16 * pes_));
    auto* signals = static_cast<std::uint64_t*>(nvshmem_malloc(64));
    float* own = nullptr;
    must(cudaMalloc(&own, largest + 16 * pes_), "cudaMalloc");
    cudaEvent_t phase[2];
    for (auto& e : phase) must(cudaEventCreate(&e), "cudaEventCreate");
    for (std::uint64_t bytes = 8; bytes <= largest; bytes *= a_.quick ? 64 : 4) {
      if (!everyone_goes_on(deadline)) break;
      const std::uint64_t elems = bytes / 4;
      const std::uint64_t chunk = (elems + pes_ - 1) / pes_;
      fill_float<<<1024, 256, 0, s_>>>(own, chunk * pes_, static_cast<float>(me_ + 1));
      must(cudaMemsetAsync(signals, 0, 64, s_), "cudaMemsetAsync");
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
      nvshmem_barrier_all();
      std::uint64_t round = 0;
      auto once = [&](bool mark) {
        ++round;
        spread_kernel<<<blocks, threads, 0, s_>>>(received, own, chunk, me_, pes_, false, signals + 0);
        wait_kernel<<<1, 1, 0, s_>>>(signals + 0, round * blocks * (pes_ - 1));
        if (mark) must(cudaEventRecord(phase[0], s_), "cudaEventRecord");
        add_kernel<<<264, 512, 0, s_>>>(out, own, received, chunk, me_, pes_);
        if (mark) must(cudaEventRecord(phase[1], s_), "cudaEventRecord");
        spread_kernel<<<blocks, threads, 0, s_>>>(out, out, chunk, me_, pes_, true, signals + 1);
        wait_kernel<<<1, 1, 0, s_>>>(signals + 1, round * blocks * (pes_ - 1));
        launched("one-sided all-reduce");
      };
      once(false);  // warm-up
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
      if (me_ == 0 && bytes <= 64 * MiB) {
        unsigned long long* bad = nullptr;
        must(cudaMalloc(reinterpret_cast<void**>(&bad), 8), "cudaMalloc");
        must(cudaMemset(bad, 0, 8), "cudaMemset");
        count_wrong_sum<<<256, 256, 0, s_>>>(out, std::min<std::uint64_t>(elems, chunk * pes_), pes_, bad);
        unsigned long long wrong = 0;
        must(cudaMemcpyAsync(&wrong, bad, 8, cudaMemcpyDeviceToHost, s_), "cudaMemcpyAsync");
        must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
        cudaFree(bad);
        if (wrong) throw Failure("one-sided all-reduce of " + std::to_string(bytes) + " B: wrong sums");
      }
      const int samples = a_.quick ? 3 : bytes <= 64 * MiB ? 20 : 8;
      const int b2b = bytes <= 1 * MiB ? 20 : 4;
      std::vector<double> single, back, scatter, reduce, gather;
      for (int k = 0; k < samples; ++k) {
        nvshmemx_barrier_all_on_stream(s_);
        must(cudaEventRecord(e0_, s_), "cudaEventRecord");
        once(true);
        must(cudaEventRecord(e1_, s_), "cudaEventRecord");
        must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
        float t = 0, p0 = 0, p1 = 0;
        must(cudaEventElapsedTime(&t, e0_, e1_), "cudaEventElapsedTime");
        must(cudaEventElapsedTime(&p0, e0_, phase[0]), "cudaEventElapsedTime");
        must(cudaEventElapsedTime(&p1, phase[0], phase[1]), "cudaEventElapsedTime");
        single.push_back(t * 1e-3);
        scatter.push_back(p0 * 1e-3);
        reduce.push_back(p1 * 1e-3);
        gather.push_back((t - p0 - p1) * 1e-3);
        nvshmemx_barrier_all_on_stream(s_);
        must(cudaEventRecord(e0_, s_), "cudaEventRecord");
        for (int i = 0; i < b2b; ++i) once(false);
        must(cudaEventRecord(e1_, s_), "cudaEventRecord");
        must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
        must(cudaEventElapsedTime(&t, e0_, e1_), "cudaEventElapsedTime");
        back.push_back(t * 1e-3 / b2b);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return quantile_sorted(v, 0.5);
      };
      const std::vector<Extra> common = {extra("put_blocks", blocks), extra("threads", threads),
                                         extra("chunk_bytes", static_cast<std::uint64_t>(chunk * 4)),
                                         extra("dtype", "float32")};
      Result r = nvshmem_result("allreduce_onesided", "put_signal", everyone(), bytes, single);
      r.extras = common;
      r.extras.push_back(extra("scatter_phase", median(scatter)));
      r.extras.push_back(extra("reduce_phase", median(reduce)));
      r.extras.push_back(extra("gather_phase", median(gather)));
      write("events_single", std::move(r));
      Result rb = nvshmem_result("allreduce_onesided", "put_signal", everyone(), bytes, back);
      rb.extras = common;
      rb.extras.push_back(extra("depth", b2b));
      write("events_b2b", std::move(rb));
    }
    for (auto& e : phase) cudaEventDestroy(e);
    nvshmem_barrier_all();
    nvshmem_free(out);
    nvshmem_free(received);
    nvshmem_free(signals);
    cudaFree(own);
  }

  void nccl_allreduce(const Deadline& deadline) {
    const std::uint64_t largest = a_.quick ? 16 * MiB : 1 * GiB;
    float *send = nullptr, *recv = nullptr;
    must(cudaMalloc(&send, largest), "cudaMalloc");
    must(cudaMalloc(&recv, largest), "cudaMalloc");
    must(cudaMemset(send, 0, largest), "cudaMemset");
    auto sync_all = [&] {
      nccl_must(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm_, s_), "ncclAllReduce");
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
    };
    for (std::uint64_t bytes = 8; bytes <= largest; bytes *= a_.quick ? 64 : 4) {
      if (!everyone_goes_on(deadline)) break;
      const std::uint64_t count = bytes / 4;
      auto op = [&] { nccl_must(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm_, s_), "ncclAllReduce"); };
      for (int i = 0; i < 5; ++i) op();
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
      const int depth = bytes <= 1 * MiB ? 100 : bytes <= 64 * MiB ? 20 : 5;
      const int samples = a_.quick ? 3 : 10;
      std::vector<double> single, back, graph;
      float ms = 0;
      for (int k = 0; k < samples; ++k) {
        sync_all();
        must(cudaEventRecord(e0_, s_), "cudaEventRecord");
        op();
        must(cudaEventRecord(e1_, s_), "cudaEventRecord");
        must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
        must(cudaEventElapsedTime(&ms, e0_, e1_), "cudaEventElapsedTime");
        single.push_back(ms * 1e-3);
        sync_all();
        must(cudaEventRecord(e0_, s_), "cudaEventRecord");
        for (int i = 0; i < depth; ++i) op();
        must(cudaEventRecord(e1_, s_), "cudaEventRecord");
        must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
        must(cudaEventElapsedTime(&ms, e0_, e1_), "cudaEventElapsedTime");
        back.push_back(ms * 1e-3 / depth);
      }
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      must(cudaStreamBeginCapture(s_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      must(cudaEventRecordWithFlags(e0_, s_, cudaEventRecordExternal), "cudaEventRecordWithFlags");
      for (int i = 0; i < depth; ++i) op();
      must(cudaEventRecordWithFlags(e1_, s_, cudaEventRecordExternal), "cudaEventRecordWithFlags");
      must(cudaStreamEndCapture(s_, &g), "cudaStreamEndCapture");
      must(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
      sync_all();
      must(cudaGraphLaunch(exec, s_), "cudaGraphLaunch");
      must(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
      for (int k = 0; k < samples; ++k) {
        sync_all();
        must(cudaGraphLaunch(exec, s_), "cudaGraphLaunch");
        must(cudaEventSynchronize(e1_), "cudaEventSynchronize");
        must(cudaEventElapsedTime(&ms, e0_, e1_), "cudaEventElapsedTime");
        graph.push_back(ms * 1e-3 / depth);
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
      const double factor = pes_ > 1 ? 2.0 * (pes_ - 1) / pes_ : 1.0;
      auto result = [&](const char* variant, std::vector<double> v, int per_sample) {
        Result r;
        r.family = "collective";
        r.test = "all_reduce";
        r.variant = variant;
        r.ranks = everyone();
        r.bytes = bytes;
        r.samples = std::move(v);
        std::vector<double> sorted = r.samples;
        std::sort(sorted.begin(), sorted.end());
        const double algbw = bytes / quantile_sorted(sorted, 0.5);
        r.extras = {extra("count", static_cast<std::uint64_t>(count)),
                    extra("dtype", "float32"),
                    extra("algbw", algbw),
                    extra("busbw", algbw * factor),
                    extra("busbw_factor", factor),
                    extra("ops_per_sample", per_sample)};
        return r;
      };
      write("events_single", result("out_of_place", single, 1));
      write("events_b2b", result("out_of_place", back, depth));
      write("graph", result("graph", graph, depth));
    }
    cudaFree(send);
    cudaFree(recv);
  }

  Args a_;
  TraceSet* out_;
  int me_ = 0, pes_ = 1, peer_ = 0;
  cudaStream_t s_ = nullptr;
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
  unsigned long long* clock_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::vector<std::string> args(argv, argv + argc);
  for (std::size_t i = 1; i < args.size(); ++i) {
    auto value = [&] { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (args[i] == "--rank")
      a.rank = std::stoi(value());
    else if (args[i] == "--ranks")
      a.ranks = std::stoi(value());
    else if (args[i] == "--rendezvous")
      a.rendezvous = value();
    else if (args[i] == "--out")
      a.out = value();
    else if (args[i] == "--prefix")
      a.prefix = value();
    else if (args[i] == "--quick")
      a.quick = true;
    else if (args[i] == "--budget")
      a.budget = std::stod(value());
    else if (args[i] == "--suites") {
      a.suites.clear();
      std::string list = value(), part;
      for (char c : list + ",") {
        if (c == ',') {
          if (!part.empty()) a.suites.push_back(part);
          part.clear();
        } else {
          part += c;
        }
      }
    } else {
      std::fprintf(stderr, "xc-pgas: unknown option %s\n", args[i].c_str());
      return 2;
    }
  }
  if (a.rendezvous.empty()) {
    std::fprintf(stderr, "xc-pgas: --rendezvous DIR is required (tools/crosscheck/pgas.sh sets it)\n");
    return 2;
  }
  try {
    std::unique_ptr<TraceSet> out;
    if (a.rank == 0) {
      char nccl[32];
      std::snprintf(nccl, sizeof nccl, "%d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
      char shmem[32];
      std::snprintf(shmem, sizeof shmem, "%d.%d.%d", NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                    NVSHMEM_VENDOR_PATCH_VERSION);
      out = std::make_unique<TraceSet>(a.out, a.prefix, header_json(args, nccl, shmem), 2000);
    }
    Pgas(a, out.get()).run();
    if (out) out->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xc-pgas rank %d: %s\n", a.rank, e.what());
    return 1;
  }
  return 0;
}
