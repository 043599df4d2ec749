// Small CUDA helpers shared by the families: owning wrappers, the stream gate, event timing, data patterns
// for verification, and the SM copy kernel.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "check.h"

namespace probe {

int visible_device_count();                     // 0 when there is no usable GPU (never throws for that)
void enable_peer_access(int device, int peer);  // idempotent; throws if the pair cannot be peers
bool can_access_peer(int device, int peer);
int sm_count(int device);

// Device memory owned by one GPU, freed on that GPU.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  int device_ = -1;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  operator cudaEvent_t() const { return event_; }
  void record(cudaStream_t stream) const { CHECK_CUDA(cudaEventRecord(event_, stream)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Seconds between two completed events (synchronises on `stop`).
double elapsed_seconds(const Event& start, const Event& stop);

// Holds a stream with a spinning kernel until the host releases it, so that timed work can be enqueued in
// full before any of it starts: the events then measure device time only, not host submission.
// The flag lives in mapped pinned host memory; the kernel gives up after a time-out so a bug cannot hang the
// GPU, and release() reports that as an error (the timing would be meaningless).
class Gate {
 public:
  Gate();
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void hold(cudaStream_t stream, int device);
  void release();

 private:
  volatile int* flag_ = nullptr;  // [0] release flag, [1] set by the kernel when it timed out
};

// Byte pattern in 1..251 (never 0xFF, the poison), different for each seed.
void fill_pattern(void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);
void poison(void* buffer, std::size_t bytes, cudaStream_t stream);
// Counts bytes that differ from fill_pattern(seed); synchronises `stream`.
std::uint64_t count_pattern_mismatches(const void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream,
                                       int device);
// Throws ProbeError naming `what` when the buffer does not hold the pattern.
void verify_pattern(const void* buffer, std::size_t bytes, std::uint32_t seed, cudaStream_t stream, int device,
                    const std::string& what);

// SM-driven copy: a grid of `blocks` x kSmCopyThreads threads moving 16-byte vectors (plus a byte tail).
// Run on the source GPU with a peer destination it pushes (remote writes); on the destination GPU with a peer
// source it pulls (remote reads).
constexpr int kSmCopyThreads = 512;
int sm_copy_blocks(int device, std::size_t bytes);
void launch_sm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream);

#ifdef __CUDACC__
__global__ void empty_kernel();
#endif

inline double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace probe
