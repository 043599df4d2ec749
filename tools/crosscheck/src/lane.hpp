// A Lane is one GPU's streams, events and hand-off words, and the timing methods that use them.
//
// Every method times the same enqueue function (an Op) and differs only in what surrounds it:
//   events_single            events on an idle stream around one op (the host submits the op between them)
//   events_b2b               events around `depth` ops issued back to back by the host, per op
//   host_sync                host clock from before the enqueue until cudaStreamSynchronize returns
//   gate                     the stream held by a spinning kernel while the host queues the events and ops, then
//                            released by a host store (the snsim-probe way: the op starts on the hand-off from
//                            that kernel)
//   wait_value               the stream held by cuStreamWaitValue32 on a host word instead of a kernel
//   graph                    a CUDA graph [event node, op node(s), event node], replayed; no host submission
//   event_from_other_stream  a second stream sleeps (50 us + 8 us per op) and records the start event; the op's stream
//   waits for
//                            that event: the op is released by another stream, timed from the release. With the
//                            second stream on another GPU (Lane(device, other)) the start event is recorded on the
//                            op's stream right after the wait (events of two GPUs cannot be compared)
//   kernel_clock             the op's own kernel reads %globaltimer: first block's start to last block's end
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "xc.hpp"

namespace xc {

enum class Method {
  events_single,
  events_b2b,
  host_sync,
  gate,
  wait_value,
  graph,
  event_from_other_stream,
  kernel_clock
};
const char* name(Method method);
std::vector<Method> all_methods();

enum class Shape { single, back_to_back };

struct Op {
  std::string family = "copy";
  std::string test;
  std::vector<int> ranks;
  std::uint64_t bytes = 0;
  std::function<void(cudaStream_t)> enqueue;
  // For kernels that time themselves (kernel_clock): the same work, writing {start, end} ns into `clock`.
  std::function<void(cudaStream_t, unsigned long long* clock)> enqueue_clocked;
  std::function<void()> prepare;  // puts the state back before each sample (UVM), untimed and synchronised
  bool host_blocking = false;     // pageable copies: the call can wait for the device, so nothing may hold it
  bool capturable = true;         // may be put into a CUDA graph
  bool single_only = false;       // state-changing ops (UVM): no back-to-back shape
  int warmup = 3;                 // untimed runs before the samples
  std::vector<Extra> extras;
};

class Lane {
 public:
  /// `other_device`: where the second stream lives (-1: on `device`).
  explicit Lane(int device, int other_device = -1);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return main_; }
  cudaStream_t other_stream() const { return other_; }
  bool has_wait_value() const { return wait_value_ok_; }

  /// Whether `method` can time `op` in `shape` on this lane.
  bool applies(Method method, Shape shape, const Op& op) const;

  /// `samples` timed samples of `op` (seconds per op; `depth` ops per sample when back to back), after a warm-up.
  std::vector<double> time(Method method, Shape shape, Op& op, int samples, int depth);

  /// The device-side release of a held stream: the gate kernel (`kernel`) or a stream wait on a host word. Then
  /// `open()` releases it; used by suites that queue their own work behind a hold.
  unsigned hold(cudaStream_t stream, bool kernel);
  void open(unsigned ticket, bool kernel);
  /// A one-thread kernel spinning `ns` nanoseconds on %globaltimer.
  void sleep(cudaStream_t stream, unsigned long long ns);

  static double elapsed(cudaEvent_t from, cudaEvent_t to);

 private:
  void check_gate();
  std::vector<double> time_graph(Shape shape, Op& op, int samples, int depth);

  int device_, other_device_;
  cudaEvent_t release_ = nullptr;  // on other_device_, when it is another GPU
  cudaStream_t main_ = nullptr, other_ = nullptr;
  cudaEvent_t from_ = nullptr, to_ = nullptr;
  volatile unsigned* words_ = nullptr;  // mapped host words: [0] gate, [1] wait value, [2] gate timed out
  unsigned* device_words_ = nullptr;
  unsigned gate_ticket_ = 0, wait_ticket_ = 0;
  unsigned long long* clock_ = nullptr;  // device: {start, end}
  bool wait_value_ok_ = false;
};

/// Kernels the suites share.
void launch_empty(cudaStream_t stream);
/// Copies `bytes` from `src` to `dst` with 16-byte loads and stores (any alignment handled by a byte tail);
/// `clock` (or null) gets {first start, last end} in ns. Returns the grid used.
dim3 launch_sm_copy(void* dst, const void* src, std::uint64_t bytes, cudaStream_t stream, unsigned long long* clock,
                    int sms);
constexpr int kSmCopyThreads = 256;
/// Writes byte i = pattern(i, seed) into `buffer`.
void fill_pattern(void* buffer, std::uint64_t bytes, unsigned seed, cudaStream_t stream);
/// Number of bytes of `buffer` that differ from pattern(i, seed); synchronises `stream`.
std::uint64_t count_mismatches(const void* buffer, std::uint64_t bytes, unsigned seed, cudaStream_t stream);
unsigned char pattern_byte(std::uint64_t index, unsigned seed);
/// A kernel reading word 0 of each 4 KiB page of `region` (it must hold the page's index; mismatches are added to
/// `bad`); `clock` as for the SM copy.
void launch_touch_pages(const void* region, std::uint64_t pages, unsigned long long* bad, unsigned long long* clock,
                        cudaStream_t stream);

}  // namespace xc
