#include "cuda_util.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace probe {

int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear: "no device" is an answer here, not an error
    return 0;
  }
  return count;
}

bool can_access_peer(int device, int peer) {
  int can = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can, device, peer));
  return can != 0;
}

void enable_peer_access(int device, int peer) {
  PROBE_REQUIRE(can_access_peer(device, peer),
                "GPU " + std::to_string(device) + " cannot access GPU " + std::to_string(peer) + " as a peer");
  CHECK_CUDA(cudaSetDevice(device));
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return;
  }
  CHECK_CUDA(status);
}

int sm_count(int device) {
  int count = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 256)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) {
    // Errors are ignored here: a destructor runs during unwinding, after the real error was reported.
    cudaSetDevice(device_);
    cudaFree(ptr_);
  }
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(device_, other.device_);
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

Stream::Stream(int device) : device_(device) {
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

void Stream::synchronize() const {
  CHECK_CUDA(cudaStreamSynchronize(stream_));
}

Event::Event(int device) {
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaEventCreate(&event_));
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

double elapsed_seconds(const Event& start, const Event& stop) {
  CHECK_CUDA(cudaEventSynchronize(stop));
  float milliseconds = 0;
  CHECK_CUDA(cudaEventElapsedTime(&milliseconds, start, stop));
  return milliseconds * 1e-3;
}

namespace {

__device__ __forceinline__ std::uint64_t global_time_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void gate_kernel(volatile int* flag, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_time_ns();
  while (flag[0] == 0) {
    if (global_time_ns() - start > timeout_ns) {
      flag[1] = 1;
      return;
    }
    __nanosleep(200);
  }
}

__device__ __forceinline__ unsigned char pattern_byte(std::size_t index, std::uint32_t seed) {
  return static_cast<unsigned char>(1u + (static_cast<std::uint32_t>(index) * 131u + seed * 17u) % 251u);
}

__global__ void fill_pattern_kernel(unsigned char* buffer, std::size_t bytes, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes; i += stride)
    buffer[i] = pattern_byte(i, seed);
}

__global__ void count_mismatch_kernel(const unsigned char* buffer, std::size_t bytes, std::uint32_t seed,
                                      unsigned long long* mismatches) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes; i += stride)
    local += buffer[i] != pattern_byte(i, seed);
  if (local) atomicAdd(mismatches, local);
}

// Four independent 16-byte loads in flight per thread before the stores: remote (NVLink) accesses have long
// latency, and a plain one-at-a-time loop leaves the link idle between round trips.
__global__ void sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t vectors,
                               unsigned char* __restrict__ dst_tail, const unsigned char* __restrict__ src_tail,
                               std::size_t tail) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < vectors; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < vectors; i += stride) dst[i] = src[i];
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (thread < tail) dst_tail[thread] = src_tail[thread];
}

int grid_for(std::size_t items, int threads, int max_blocks) {
  const std::size_t needed = (items + threads - 1) / threads;
  return static_cast<int>(std::clamp<std::size_t>(needed, 1, static_cast<std::size_t>(max_blocks)));
}

}  // namespace

__global__ void empty_kernel() {}

Gate::Gate() {
  void* memory = nullptr;
  CHECK_CUDA(cudaHostAlloc(&memory, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flag_ = static_cast<volatile int*>(memory);
  flag_[0] = 1;
  flag_[1] = 0;
}

Gate::~Gate() {
  if (flag_) cudaFreeHost(const_cast<int*>(flag_));
}

void Gate::hold(cudaStream_t stream, int device) {
  flag_[0] = 0;
  flag_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CHECK_CUDA(cudaSetDevice(device));
  int* device_flag = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag), const_cast<int*>(flag_), 0));
  constexpr std::uint64_t kTimeoutNs = 10ull * 1000 * 1000 * 1000;
  gate_kernel<<<1, 1, 0, stream>>>(device_flag, kTimeoutNs);
  CHECK_LAUNCH();
}

void Gate::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  PROBE_REQUIRE(flag_[1] == 0, "the stream gate expired before the host released it: timing discarded");
  flag_[0] = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void fill_pattern(void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  fill_pattern_kernel<<<grid_for(bytes, 256, 4096), 256, 0, stream>>>(static_cast<unsigned char*>(buffer), bytes, seed);
  CHECK_LAUNCH();
}

void poison(void* buffer, std::size_t bytes, cudaStream_t stream) {
  CHECK_CUDA(cudaMemsetAsync(buffer, 0xFF, bytes, stream));
}

std::uint64_t count_pattern_mismatches(const void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream,
                                       int device) {
  CHECK_CUDA(cudaSetDevice(device));
  DeviceBuffer counter(device, sizeof(unsigned long long));
  CHECK_CUDA(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), stream));
  count_mismatch_kernel<<<grid_for(bytes, 256, 4096), 256, 0, stream>>>(static_cast<const unsigned char*>(buffer),
                                                                        bytes, seed, counter.as<unsigned long long>());
  CHECK_LAUNCH();
  unsigned long long mismatches = 0;
  CHECK_CUDA(cudaMemcpyAsync(&mismatches, counter.get(), sizeof mismatches, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return mismatches;
}

void verify_pattern(const void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream, int device,
                    const std::string& what) {
  const std::uint64_t mismatches = count_pattern_mismatches(buffer, bytes, seed, stream, device);
  if (mismatches)
    throw ProbeError("verification failed: " + what + ": " + std::to_string(mismatches) + " of " +
                     std::to_string(bytes) + " bytes wrong");
}

int sm_copy_blocks(int device, std::size_t bytes) {
  // Two blocks per SM saturate a direction over NVLink (and HBM locally); small copies get one block per
  // kSmCopyThreads vectors so they are not charged for idle blocks.
  return grid_for((bytes + 15) / 16, kSmCopyThreads, 2 * sm_count(device));
}

void launch_sm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream) {
  const std::size_t vectors = bytes / 16;
  const std::size_t tail = bytes % 16;
  auto* dst_bytes = static_cast<unsigned char*>(dst);
  const auto* src_bytes = static_cast<const unsigned char*>(src);
  sm_copy_kernel<<<blocks, kSmCopyThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src),
                                                        vectors, dst_bytes + vectors * 16, src_bytes + vectors * 16,
                                                        tail);
  CHECK_LAUNCH();
}

}  // namespace probe
