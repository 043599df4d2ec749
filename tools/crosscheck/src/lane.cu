#include "lane.hpp"

#include <algorithm>
#include <atomic>

namespace xc {

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds its stream until the host has raised the word to `ticket` (tickets only grow, so nothing is reset between
// samples), or gives up after `limit_ns` and says so: a capture must never hang the GPU.
__global__ void hold_kernel(const volatile unsigned* word, unsigned ticket, unsigned long long limit_ns,
                            volatile unsigned* timed_out) {
  const unsigned long long t0 = global_ns();
  while (*word < ticket) {
    if (global_ns() - t0 > limit_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(64);  // fewer reads over PCIe while it waits
  }
}

__global__ void sleep_kernel(unsigned long long ns) {
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}

__global__ void empty_kernel() {}

__global__ void reset_clock_kernel(unsigned long long* clock) {
  clock[0] = ~0ull;
  clock[1] = 0;
}

__device__ __forceinline__ unsigned char device_pattern(unsigned long long i, unsigned seed) {
  return static_cast<unsigned char>((i * 2654435761ull + seed * 40503u) >> 7);
}

__global__ void fill_kernel(unsigned char* p, unsigned long long n, unsigned seed) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n; i += 1ull * gridDim.x * blockDim.x)
    p[i] = device_pattern(i, seed);
}

__global__ void mismatch_kernel(const unsigned char* p, unsigned long long n, unsigned seed, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n; i += 1ull * gridDim.x * blockDim.x)
    mine += p[i] != device_pattern(i, seed);
  if (mine) atomicAdd(bad, mine);
}

// Two 16-byte vectors per thread per step, grid-stride; the first thread of each block marks the block's start and
// end on %globaltimer when asked (kernel_clock).
__global__ void __launch_bounds__(kSmCopyThreads)
    sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, unsigned long long vectors,
                   unsigned char* __restrict__ dst_tail, const unsigned char* __restrict__ src_tail, unsigned tail,
                   unsigned long long* clock) {
  if (clock && threadIdx.x == 0) atomicMin(&clock[0], global_ns());
  const unsigned long long step = 2ull * gridDim.x * blockDim.x;
  unsigned long long i = 2ull * blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + blockDim.x < vectors; i += step) {
    const uint4 a = src[i];
    const uint4 b = src[i + blockDim.x];
    dst[i] = a;
    dst[i + blockDim.x] = b;
  }
  if (i < vectors) dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
  if (clock) {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicMax(&clock[1], global_ns());
    }
  }
}

}  // namespace

unsigned char pattern_byte(std::uint64_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 2654435761ull + seed * 40503u) >> 7);
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  launched("empty_kernel");
}

dim3 launch_sm_copy(void* dst, const void* src, std::uint64_t bytes, cudaStream_t stream, unsigned long long* clock,
                    int sms) {
  // 16-byte vectors need 16-byte aligned pointers: the buffers come from cudaMalloc/cudaHostAlloc (256-byte
  // aligned); a size that is not a multiple of 16 leaves a tail (< 16 bytes) for block 0.
  const unsigned long long vectors = bytes / 16;
  const unsigned tail = static_cast<unsigned>(bytes % 16);
  const unsigned long long per_block = 2ull * kSmCopyThreads;
  const unsigned long long wanted = std::max<unsigned long long>(1, (vectors + per_block - 1) / per_block);
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(wanted, 4ull * sms));
  sm_copy_kernel<<<blocks, kSmCopyThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src),
                                                        vectors, static_cast<unsigned char*>(dst) + vectors * 16,
                                                        static_cast<const unsigned char*>(src) + vectors * 16, tail,
                                                        clock);
  launched("sm_copy_kernel");
  return dim3(blocks);
}

void fill_pattern(void* buffer, std::uint64_t bytes, unsigned seed, cudaStream_t stream) {
  fill_kernel<<<1024, 256, 0, stream>>>(static_cast<unsigned char*>(buffer), bytes, seed);
  launched("fill_kernel");
}

std::uint64_t count_mismatches(const void* buffer, std::uint64_t bytes, unsigned seed, cudaStream_t stream) {
  unsigned long long* bad = nullptr;
  must(cudaMallocAsync(reinterpret_cast<void**>(&bad), sizeof *bad, stream), "cudaMallocAsync");
  must(cudaMemsetAsync(bad, 0, sizeof *bad, stream), "cudaMemsetAsync");
  mismatch_kernel<<<1024, 256, 0, stream>>>(static_cast<const unsigned char*>(buffer), bytes, seed, bad);
  launched("mismatch_kernel");
  unsigned long long host = 0;
  must(cudaMemcpyAsync(&host, bad, sizeof host, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  must(cudaFreeAsync(bad, stream), "cudaFreeAsync");
  must(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return host;
}

const char* name(Method method) {
  switch (method) {
    case Method::events_single:
      return "events_single";
    case Method::events_b2b:
      return "events_b2b";
    case Method::host_sync:
      return "host_sync";
    case Method::gate:
      return "gate";
    case Method::wait_value:
      return "wait_value";
    case Method::graph:
      return "graph";
    case Method::event_from_other_stream:
      return "event_from_other_stream";
    case Method::kernel_clock:
      return "kernel_clock";
  }
  return "?";
}

std::vector<Method> all_methods() {
  return {Method::events_single,
          Method::events_b2b,
          Method::host_sync,
          Method::gate,
          Method::wait_value,
          Method::graph,
          Method::event_from_other_stream,
          Method::kernel_clock};
}

Lane::Lane(int device, int other_device) : device_(device), other_device_(other_device < 0 ? device : other_device) {
  if (other_device_ != device_) {
    must(cudaSetDevice(other_device_), "cudaSetDevice");
    must(cudaStreamCreateWithFlags(&other_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    must(cudaEventCreateWithFlags(&release_, cudaEventDisableTiming), "cudaEventCreate");
  }
  must(cudaSetDevice(device), "cudaSetDevice");
  must(cudaStreamCreateWithFlags(&main_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  if (!other_) must(cudaStreamCreateWithFlags(&other_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  must(cudaEventCreate(&from_), "cudaEventCreate");
  must(cudaEventCreate(&to_), "cudaEventCreate");
  void* words = nullptr;
  must(cudaHostAlloc(&words, 64, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  words_ = static_cast<volatile unsigned*>(words);
  for (int i = 0; i < 16; ++i) words_[i] = 0;
  void* device_words = nullptr;
  must(cudaHostGetDevicePointer(&device_words, words, 0), "cudaHostGetDevicePointer");
  device_words_ = static_cast<unsigned*>(device_words);
  must(cudaMalloc(reinterpret_cast<void**>(&clock_), 2 * sizeof(unsigned long long)), "cudaMalloc");
  // Stream memory operations on host memory: tried once, the method is left out where the driver refuses.
  const CUresult waited =
      cuStreamWaitValue32(main_, reinterpret_cast<CUdeviceptr>(device_words_ + 1), 0, CU_STREAM_WAIT_VALUE_GEQ);
  wait_value_ok_ = waited == CUDA_SUCCESS && cudaStreamSynchronize(main_) == cudaSuccess;
  if (!wait_value_ok_) {
    cudaGetLastError();
    std::fprintf(stderr, "crosscheck: cuStreamWaitValue32 on host memory refused (%d): wait_value left out\n",
                 static_cast<int>(waited));
  }
}

Lane::~Lane() {
  cudaSetDevice(device_);
  cudaStreamSynchronize(main_);
  cudaStreamSynchronize(other_);
  cudaEventDestroy(from_);
  cudaEventDestroy(to_);
  if (release_) cudaEventDestroy(release_);
  cudaStreamDestroy(main_);
  cudaStreamDestroy(other_);
  cudaFreeHost(const_cast<unsigned*>(words_));
  cudaFree(clock_);
}

double Lane::elapsed(cudaEvent_t from, cudaEvent_t to) {
  must(cudaEventSynchronize(to), "cudaEventSynchronize");
  float ms = 0;
  must(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return ms * 1e-3;
}

unsigned Lane::hold(cudaStream_t stream, bool kernel) {
  if (kernel) {
    const unsigned ticket = ++gate_ticket_;
    hold_kernel<<<1, 1, 0, stream>>>(device_words_ + 0, ticket, 2'000'000'000ull, device_words_ + 2);
    launched("hold_kernel");
    return ticket;
  }
  const unsigned ticket = ++wait_ticket_;
  const CUresult r =
      cuStreamWaitValue32(stream, reinterpret_cast<CUdeviceptr>(device_words_ + 1), ticket, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) throw Failure("cuStreamWaitValue32 failed: " + std::to_string(static_cast<int>(r)));
  return ticket;
}

void Lane::open(unsigned ticket, bool kernel) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  words_[kernel ? 0 : 1] = ticket;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Lane::check_gate() {
  if (words_[2]) throw Failure("the gate kernel timed out (2 s): the host did not release it");
}

void Lane::sleep(cudaStream_t stream, unsigned long long ns) {
  sleep_kernel<<<1, 1, 0, stream>>>(ns);
  launched("sleep_kernel");
}

bool Lane::applies(Method method, Shape shape, const Op& op) const {
  const bool b2b = shape == Shape::back_to_back;
  if (b2b && op.single_only) return false;
  switch (method) {
    case Method::events_single:
      return !b2b;
    case Method::events_b2b:
      return b2b;
    case Method::host_sync:
      return true;
    case Method::gate:
      return !op.host_blocking && !op.single_only;
    case Method::wait_value:
      return wait_value_ok_ && !op.host_blocking && !op.single_only;
    case Method::graph:
      return op.capturable && !op.host_blocking;
    case Method::event_from_other_stream:
      return !op.host_blocking && !op.single_only;
    case Method::kernel_clock:
      return !b2b && static_cast<bool>(op.enqueue_clocked);
  }
  return false;
}

std::vector<double> Lane::time(Method method, Shape shape, Op& op, int samples, int depth) {
  must(cudaSetDevice(device_), "cudaSetDevice");
  if (!applies(method, shape, op)) return {};
  const int n = shape == Shape::single ? 1 : std::max(depth, 1);
  auto enqueue_all = [&] {
    for (int i = 0; i < n; ++i) op.enqueue(main_);
  };
  // Warm-up: first-use costs (module load, page mapping, clocks) stay out of the samples.
  for (int i = 0; i < op.warmup; ++i) {
    if (op.prepare) op.prepare();
    op.enqueue(main_);
    must(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
  }
  if (method == Method::graph) return time_graph(shape, op, samples, n);

  std::vector<double> out;
  out.reserve(samples);
  for (int s = 0; s < samples; ++s) {
    if (op.prepare) op.prepare();
    must(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
    switch (method) {
      case Method::events_single:
      case Method::events_b2b:
        must(cudaEventRecord(from_, main_), "cudaEventRecord");
        enqueue_all();
        must(cudaEventRecord(to_, main_), "cudaEventRecord");
        out.push_back(elapsed(from_, to_) / n);
        break;
      case Method::host_sync: {
        const double t0 = now_s();
        enqueue_all();
        must(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
        out.push_back((now_s() - t0) / n);
        break;
      }
      case Method::gate:
      case Method::wait_value: {
        const bool kernel = method == Method::gate;
        const unsigned ticket = hold(main_, kernel);
        must(cudaEventRecord(from_, main_), "cudaEventRecord");
        enqueue_all();
        must(cudaEventRecord(to_, main_), "cudaEventRecord");
        open(ticket, kernel);
        out.push_back(elapsed(from_, to_) / n);
        check_gate();
        break;
      }
      case Method::event_from_other_stream:
        // The sleep covers the host's queueing of the wait, the ops and the stop event (a few us per op).
        if (other_device_ == device_) {
          sleep(other_, 50'000ull + 8'000ull * n);
          must(cudaEventRecord(from_, other_), "cudaEventRecord");
          must(cudaStreamWaitEvent(main_, from_, 0), "cudaStreamWaitEvent");
        } else {
          must(cudaSetDevice(other_device_), "cudaSetDevice");
          sleep(other_, 50'000ull + 8'000ull * n);
          must(cudaEventRecord(release_, other_), "cudaEventRecord");
          must(cudaSetDevice(device_), "cudaSetDevice");
          must(cudaStreamWaitEvent(main_, release_, 0), "cudaStreamWaitEvent");
          must(cudaEventRecord(from_, main_), "cudaEventRecord");
        }
        enqueue_all();
        must(cudaEventRecord(to_, main_), "cudaEventRecord");
        out.push_back(elapsed(from_, to_) / n);
        break;
      case Method::kernel_clock: {
        reset_clock_kernel<<<1, 1, 0, main_>>>(clock_);
        launched("reset_clock_kernel");
        op.enqueue_clocked(main_, clock_);
        unsigned long long clock[2];
        must(cudaMemcpyAsync(clock, clock_, sizeof clock, cudaMemcpyDeviceToHost, main_), "cudaMemcpyAsync");
        must(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
        out.push_back(clock[1] > clock[0] ? (clock[1] - clock[0]) * 1e-9 : 0.0);
        break;
      }
      case Method::graph:
        break;
    }
  }
  return out;
}

std::vector<double> Lane::time_graph(Shape, Op& op, int samples, int n) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  try {
    must(cudaStreamBeginCapture(main_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    // External event-record nodes: the events are taken inside the replay, between the graph's own nodes.
    must(cudaEventRecordWithFlags(from_, main_, cudaEventRecordExternal), "cudaEventRecordWithFlags");
    for (int i = 0; i < n; ++i) op.enqueue(main_);
    must(cudaEventRecordWithFlags(to_, main_, cudaEventRecordExternal), "cudaEventRecordWithFlags");
    must(cudaStreamEndCapture(main_, &graph), "cudaStreamEndCapture");
    must(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  } catch (const Failure& e) {
    // An op the graph cannot hold leaves this method out for it; the capture is ended so the stream works on.
    cudaStreamCaptureStatus status;
    if (cudaStreamIsCapturing(main_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(main_, &broken);
      if (broken) cudaGraphDestroy(broken);
    }
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    cudaSetDevice(device_);
    std::fprintf(stderr, "crosscheck: graph left out for %s/%s %llu B: %s\n", op.family.c_str(), op.test.c_str(),
                 static_cast<unsigned long long>(op.bytes), e.what());
    return {};
  }
  must(cudaGraphUpload(exec, main_), "cudaGraphUpload");
  for (int i = 0; i < 2; ++i) must(cudaGraphLaunch(exec, main_), "cudaGraphLaunch");
  must(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
  std::vector<double> out;
  out.reserve(samples);
  for (int s = 0; s < samples; ++s) {
    must(cudaGraphLaunch(exec, main_), "cudaGraphLaunch");
    out.push_back(elapsed(from_, to_) / n);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return out;
}

}  // namespace xc
