// Family `nvshmem`: one-sided NVSHMEM operations between PE 0 and PE 1 (one process per GPU, unique-id
// bootstrap), all issued from device code.
//
// Latency tests time `iters` dependent operations inside one kernel with %globaltimer (after in-kernel
// warm-up iterations), so kernel launch and the PEs' different kernel start times stay out; a sample is one
// kernel's time per operation. Rate tests time whole kernels with CUDA events.
//
//   put_signal_pingpong/round_trip  PE0 putmem_signal_nbi -> PE1 signal_wait_until -> PE1 putmem_signal_nbi
//                                    -> PE0 wait: one round trip (not halved); scope thread or block
//   put_latency/thread               putmem (blocking) + quiet, PE0 only
//   get_latency/thread               getmem (blocking), PE0 reading PE1, each get depending on the last one
//   put_rate/{thread,warp,block}     PE0 puts `bytes` split over 32 blocks x 256 threads (one slice per
//                                    thread, warp or block), `iters` times, then quiet; B/s = bytes*iters/time
//   put_rate_blocks/block            the same at 64 MiB, block scope, 1..128 blocks
//   barrier/{thread,block}           device-side barrier_all (one thread) or barrier_all_block, every PE
//   put_rate_bidir/block             PE0 and PE1 each run put_rate's block kernel towards the other at once
//                                    (32 blocks, 8 B - 256 MiB), released together by a device rendezvous; a
//                                    sample = from PE0's release until both kernels are done (PE1 signals PE0);
//                                    B/s per direction; extra `unidirectional` = PE0 alone, measured just before
//   put_rate_bidir_blocks/block      the same at 64 MiB with 1..128 blocks per PE
//   put_rate_self/block              PE0 puts to itself with put_rate's block kernel: the same issuers reading and
//                                    writing local HBM, no link (B/s of payload copied)
//   exchange/{alone,after_flush}     the step family's PGAS gradient averaging alone (no GEMMs): a bf16 gradient
//                                    of 64 or 256 MiB per PE, scatter of the peer's half (32 blocks,
//                                    putmem_signal_nbi_block), a kernel waiting for it and averaging, gather back,
//                                    a wait; both PEs released together; sample = until both are done; extras:
//                                    PE0's phase medians. after_flush: each PE writes 1 GiB of local memory before
//                                    the rendezvous (caches and TLBs cold, as after the step's GEMMs)
// The family `nvshmem-bidir` runs the last four alone.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "../common/cuda_util.h"
#include "../common/nvshmem_check.h"
#include "families.h"

namespace probe {

std::string nvshmem_version_string() {
#ifdef NVSHMEM_VENDOR_MAJOR_VERSION
  return std::to_string(NVSHMEM_VENDOR_MAJOR_VERSION) + "." + std::to_string(NVSHMEM_VENDOR_MINOR_VERSION) + "." +
         std::to_string(NVSHMEM_VENDOR_PATCH_VERSION);
#else
  return "unknown";
#endif
}

namespace {

enum Scope : int { kThread = 0, kWarp = 1, kBlock = 2 };
const char* scope_name(int scope) {
  return scope == kThread ? "thread" : scope == kWarp ? "warp" : "block";
}

__device__ __forceinline__ std::uint64_t global_time_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Signal values only grow (base + iteration), so no reset is needed between kernels.
template <int kScope>
__global__ void put_signal_pingpong_kernel(char* receive, const char* send, std::size_t bytes, std::uint64_t* signal,
                                           std::uint64_t base, int warmup, int iters, int me, int peer,
                                           unsigned long long* elapsed_ns) {
  std::uint64_t start = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    if (it == warmup) start = global_time_ns();
    const std::uint64_t value = base + it + 1;
    if (me == 1) {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, value);
      if (kScope == kBlock) __syncthreads();
    }
    if (kScope == kBlock)
      nvshmemx_putmem_signal_nbi_block(receive, send, bytes, signal, value, NVSHMEM_SIGNAL_SET, peer);
    else
      nvshmem_putmem_signal_nbi(receive, send, bytes, signal, value, NVSHMEM_SIGNAL_SET, peer);
    if (me == 0) {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, value);
      if (kScope == kBlock) __syncthreads();
    }
  }
  if (threadIdx.x == 0) *elapsed_ns = global_time_ns() - start;
}

__global__ void put_latency_kernel(char* receive, const char* send, std::size_t bytes, int warmup, int iters, int peer,
                                   unsigned long long* elapsed_ns) {
  std::uint64_t start = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    if (it == warmup) start = global_time_ns();
    nvshmem_putmem(receive, send, bytes, peer);
    nvshmem_quiet();
  }
  *elapsed_ns = global_time_ns() - start;
}

// Each get's source offset depends on the data the previous get returned (pattern bytes are never 0, so the
// factor is always 1, but neither compiler nor hardware can know): gets cannot overlap, and every iteration
// reads a new 64 KiB-aligned slot of the peer's buffer, so no cache holds it from the iteration before.
// (Without the dependency, successive blocking gets of one thread overlap: NVSHMEM's P2P get is a plain
// load/store copy, and a loop of them measures issue throughput, not latency.)
__global__ void get_latency_kernel(char* local, const char* remote, std::size_t bytes, std::size_t slots, int warmup,
                                   int iters, int peer, unsigned long long* elapsed_ns) {
  constexpr std::size_t kSlotBytes = 64 * 1024;
  std::uint64_t start = 0;
  std::size_t offset = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    if (it == warmup) start = global_time_ns();
    nvshmem_getmem(local, remote + offset, bytes, peer);
    const unsigned char first = *reinterpret_cast<volatile unsigned char*>(local);
    offset = ((it + 1) % slots) * kSlotBytes * (first != 0);
  }
  *elapsed_ns = global_time_ns() - start;
}

// Each granule (thread, warp or block) puts one contiguous slice of at least 8 bytes.
template <int kScope>
__global__ void put_rate_kernel(char* receive, const char* send, std::size_t bytes, int iters, int peer) {
  std::size_t granules, granule;
  if (kScope == kThread) {
    granules = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    granule = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  } else if (kScope == kWarp) {
    granules = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
    granule = blockIdx.x * static_cast<std::size_t>(blockDim.x / 32) + threadIdx.x / 32;
  } else {
    granules = gridDim.x;
    granule = blockIdx.x;
  }
  std::size_t slice = (bytes + granules - 1) / granules;
  if (slice < 8) slice = 8;
  const std::size_t offset = granule * slice;
  const std::size_t length = offset < bytes ? (bytes - offset < slice ? bytes - offset : slice) : 0;
  if (length) {
    for (int it = 0; it < iters; ++it) {
      if (kScope == kThread)
        nvshmem_putmem_nbi(receive + offset, send + offset, length, peer);
      else if (kScope == kWarp)
        nvshmemx_putmem_nbi_warp(receive + offset, send + offset, length, peer);
      else
        nvshmemx_putmem_nbi_block(receive + offset, send + offset, length, peer);
    }
  }
  nvshmem_quiet();
}

// Releases both PEs together: each sets the peer's `ready` signal and waits for its own. The later PE leaves
// at once, the earlier one a one-way signal trip later (about a microsecond apart).
__global__ void rendezvous_kernel(std::uint64_t* ready, std::uint64_t value, int peer) {
  nvshmemx_signal_op(ready, value, NVSHMEM_SIGNAL_SET, peer);
  nvshmem_signal_wait_until(ready, NVSHMEM_CMP_GE, value);
}

// Queued behind a put kernel (whose blocks quiet before it ends): tells `peer` that this PE's puts are complete.
__global__ void signal_done_kernel(std::uint64_t* done, std::uint64_t value, int peer) {
  nvshmemx_signal_op(done, value, NVSHMEM_SIGNAL_SET, peer);
}

__global__ void wait_signal_kernel(std::uint64_t* signal, std::uint64_t value) {
  nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, value);
}

// The step family's exchange (tools/probe/src/families/step.cu) without cuBLAS or NCCL: the reduce kernel averages
// 16-bit integers, the same bytes as the step's bf16 gradient (the step family verifies the exchange's result).
__global__ void exchange_put_kernel(std::uint16_t* destination, const std::uint16_t* source, std::size_t chunk,
                                    std::uint64_t* signal, int me, int nranks, bool chunk_of_target) {
  const int to = (me + 1 + static_cast<int>(blockIdx.y)) % nranks;
  const std::size_t slice = chunk / gridDim.x;
  const std::size_t source_offset = (chunk_of_target ? to : me) * chunk + blockIdx.x * slice;
  const std::size_t destination_offset = me * chunk + blockIdx.x * slice;
  nvshmemx_putmem_signal_nbi_block(destination + destination_offset, source + source_offset,
                                   slice * sizeof(std::uint16_t), signal, 1, NVSHMEM_SIGNAL_ADD, to);
}

__global__ void exchange_reduce_kernel(std::uint16_t* gradient, const std::uint16_t* received, std::size_t chunk,
                                       std::uint64_t* signal, std::uint64_t expected, int me, int nranks) {
  if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, expected);
  __syncthreads();
  std::uint16_t* mine = gradient + me * chunk;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < chunk; i += stride) {
    unsigned sum = mine[i];
    for (int q = 0; q < nranks; ++q)
      if (q != me) sum += received[q * chunk + i];
    mine[i] = static_cast<std::uint16_t>(sum / nranks);
  }
}

__global__ void flush_kernel(unsigned* data, std::size_t words, unsigned value) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words; i += stride)
    data[i] = value;
}

template <int kScope>
__global__ void barrier_kernel(int warmup, int iters, unsigned long long* elapsed_ns) {
  std::uint64_t start = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    if (it == warmup) start = global_time_ns();
    if (kScope == kBlock)
      nvshmemx_barrier_all_block();
    else
      nvshmem_barrier_all();
  }
  if (threadIdx.x == 0) *elapsed_ns = global_time_ns() - start;
}

// put_rate_all: every PE puts `bytes` to every other PE at once. Block b serves peer (me + 1 + b / per_peer) mod
// npes (so no PE is everyone's first target) with one slice of the bytes, `iters` times, then quiet. The bytes
// from PE q land in slot q of the receiver's buffer.
__global__ void put_all_kernel(char* receive, const char* send, std::size_t bytes, std::size_t slot_bytes, int iters,
                               int me, int npes, int per_peer) {
  const int peer = (me + 1 + static_cast<int>(blockIdx.x) / per_peer) % npes;
  const std::size_t part = blockIdx.x % per_peer;
  std::size_t slice = (bytes + per_peer - 1) / per_peer;
  if (slice < 8) slice = 8;
  const std::size_t offset = part * slice;
  const std::size_t length = offset < bytes ? (bytes - offset < slice ? bytes - offset : slice) : 0;
  if (length)
    for (int it = 0; it < iters; ++it)
      nvshmemx_putmem_nbi_block(receive + me * slot_bytes + offset, send + offset, length, peer);
  nvshmem_quiet();
}

class NvshmemFamily {
 public:
  explicit NvshmemFamily(RankContext& context) : context_(context), options_(*context.options) {}

  // bidir_only: the tests of two PEs putting at once (and the local reference), nothing else.
  void run(bool bidir_only) {
    me_ = context_.rank;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (context_.is_root()) CHECK_NVSHMEM(nvshmemx_get_uniqueid(&id));
    context_.share_blob(&id, sizeof id);
    CHECK_CUDA(cudaSetDevice(me_));
    nvshmemx_init_attr_t attributes = NVSHMEMX_INIT_ATTR_INITIALIZER;
    CHECK_NVSHMEM(nvshmemx_set_attr_uniqueid_args(me_, context_.nranks, &id, &attributes));
    CHECK_NVSHMEM(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attributes));
    PROBE_REQUIRE(nvshmem_my_pe() == me_ && nvshmem_n_pes() == context_.nranks, "NVSHMEM PE numbering differs");

    largest_ = options_.quick ? 4 * MiB : 256 * MiB;
    if (options_.max_bytes) largest_ = std::min(largest_, std::max<std::uint64_t>(options_.max_bytes, 64 * KiB));
    send_ = static_cast<char*>(nvshmem_malloc(largest_));
    receive_ = static_cast<char*>(nvshmem_malloc(largest_));
    signal_ = static_cast<std::uint64_t*>(nvshmem_calloc(5, sizeof(std::uint64_t)));
    PROBE_REQUIRE(send_ && receive_ && signal_, "nvshmem_malloc failed (raise NVSHMEM_SYMMETRIC_SIZE)");
    ready_ = signal_ + 1;
    done_ = signal_ + 2;
    stream_ = std::make_unique<Stream>(me_);
    elapsed_ = DeviceBuffer(me_, sizeof(unsigned long long));
    fill_pattern(send_, largest_, seed_of(me_), *stream_);
    stream_->synchronize();
    nvshmem_barrier_all();

    if (!bidir_only) single_issuer_tests();
    both_directions_tests();

    nvshmem_barrier_all();
    nvshmem_free(signal_);
    nvshmem_free(receive_);
    nvshmem_free(send_);
    nvshmem_finalize();
  }

 private:
  static constexpr int kRateBlocks = 32;
  static constexpr int kRateThreads = 256;
  // put_rate_all: about 128 blocks per PE, split over its peers (128 on 2 PEs, 7 x 18 on 8), so that the links,
  // not the issuing blocks, bound the rate: with 8 blocks a peer, 2 PEs put only 77 GB/s a direction at 32 MiB
  // (dry run, 2026-11-30), where put_rate_blocks reaches 369 GB/s with 128 blocks.
  static constexpr int kAllBlocks = 128;

  void single_issuer_tests() {
    for (int peer = 1; peer < context_.nranks; ++peer) latency_tests(peer);
    for (int scope : {kThread, kWarp, kBlock})
      for (std::uint64_t bytes : size_sweep(8, largest_, options_)) put_rate(scope, kRateBlocks, bytes, false);
    const std::uint64_t blocks_bytes = std::min<std::uint64_t>(largest_, 64 * MiB);
    for (int blocks = 1; blocks <= 128; blocks *= options_.quick ? 8 : 2) put_rate(kBlock, blocks, blocks_bytes, true);
    barrier_test(kThread);
    barrier_test(kBlock);
    for (std::uint64_t bytes : size_sweep(8, largest_ / context_.nranks, options_)) put_rate_all(bytes);
  }

  void both_directions_tests() {
    for (std::uint64_t bytes : size_sweep(8, largest_, options_)) put_rate_bidir(kRateBlocks, bytes, false);
    const std::uint64_t blocks_bytes = std::min<std::uint64_t>(largest_, 64 * MiB);
    for (int blocks = 1; blocks <= 128; blocks *= options_.quick ? 8 : 2) put_rate_bidir(blocks, blocks_bytes, true);
    for (std::uint64_t bytes : size_sweep(8, largest_, options_)) put_rate_self(bytes);
    // The gradient is the send buffer, the receive slots the receive buffer (each holds a whole gradient).
    for (bool flush : {false, true})
      for (std::uint64_t bytes : {64 * MiB, 256 * MiB})
        if (bytes <= largest_) exchange(bytes, flush);
  }

  static std::uint32_t seed_of(int pe) { return 1 + pe; }
  // The two-PE tests (both directions at once, the exchange) use PE 0 and PE 1; other PEs only join the barriers.
  bool active() const { return me_ < 2; }
  int peer() const { return 1 - me_; }
  std::size_t get_slots() const { return std::min<std::size_t>(1024, largest_ / (64 * KiB)); }
  int sample_count() const { return options_.quick ? 3 : 20; }

  double kernel_elapsed_seconds() {
    unsigned long long ns = 0;
    CHECK_CUDA(cudaMemcpy(&ns, elapsed_.get(), sizeof ns, cudaMemcpyDeviceToHost));
    return ns * 1e-9;
  }

  Record make(const char* test, const char* variant, std::uint64_t bytes, const char* unit,
              std::vector<double> samples) const {
    Record record;
    record.family = "nvshmem";
    record.test = test;
    record.variant = variant;
    record.ranks = {0, 1};
    record.bytes = bytes;
    record.unit = unit;
    record.samples = std::move(samples);
    return record;
  }

  void poison_receive(std::uint64_t bytes) {
    poison(receive_, bytes, *stream_);
    stream_->synchronize();
  }

  void verify_receive(std::uint64_t bytes, int from_pe, const char* what) {
    verify_pattern(receive_, bytes, seed_of(from_pe), *stream_, me_,
                   std::string("nvshmem ") + what + " " + std::to_string(bytes) + " B on PE " + std::to_string(me_));
  }

  // The point-to-point latency tests between PE 0 and `peer`. PE 1 gets the full sweeps; every further peer (an
  // 8-GPU capture) sizes 8 B - 4 KiB in x8 steps: thread-scope gets of 64 KiB take ~3 ms each, and the full
  // sweeps for 7 peers would take minutes.
  void latency_tests(int peer) {
    const std::uint64_t latency_largest = std::min<std::uint64_t>(largest_, peer == 1 ? 64 * KiB : 4 * KiB);
    const std::uint64_t block_largest = std::min<std::uint64_t>(largest_, peer == 1 ? 4 * MiB : 4 * KiB);
    Options sweep = options_;
    if (peer != 1) sweep.size_step = 8;
    for (std::uint64_t bytes : size_sweep(8, latency_largest, sweep)) pingpong(kThread, bytes, peer);
    for (std::uint64_t bytes : size_sweep(8, block_largest, sweep)) pingpong(kBlock, bytes, peer);
    for (std::uint64_t bytes : size_sweep(8, latency_largest, sweep)) one_sided_latency(true, bytes, peer);
    for (std::uint64_t bytes : size_sweep(8, latency_largest, sweep)) one_sided_latency(false, bytes, peer);
  }

  // PE 0 and `peer` ping-pong; every other PE launches the same kernel with no iterations, so that the collective
  // launch is called by every PE as NVSHMEM requires. Signal bases advance on every PE alike.
  void pingpong(int scope, std::uint64_t bytes, int peer) {
    const bool active = me_ == 0 || me_ == peer;
    poison_receive(bytes);
    nvshmem_barrier_all();
    const int warmup = active ? (options_.quick ? 5 : 50) : 0;
    const int iters = active ? (options_.quick ? 20 : 200) : 0;
    const int threads = scope == kBlock ? 256 : 1;
    std::vector<double> samples;
    for (int s = 0; s < sample_count(); ++s) {
      int role = me_ == 0 ? 0 : 1, other = me_ == 0 ? peer : 0;
      std::size_t size = bytes;
      std::uint64_t base = signal_base_;
      int w = warmup, n = iters;
      unsigned long long* elapsed = elapsed_.as<unsigned long long>();
      char* receive = receive_;
      const char* send = send_;
      std::uint64_t* signal = signal_;
      void* args[] = {&receive, &send, &size, &signal, &base, &w, &n, &role, &other, &elapsed};
      const void* kernel = scope == kBlock ? reinterpret_cast<const void*>(&put_signal_pingpong_kernel<kBlock>)
                                           : reinterpret_cast<const void*>(&put_signal_pingpong_kernel<kThread>);
      CHECK_NVSHMEM(nvshmemx_collective_launch(kernel, dim3(1), dim3(threads), args, 0, *stream_));
      stream_->synchronize();
      signal_base_ += (options_.quick ? 5 : 50) + (options_.quick ? 20 : 200);
      if (active) samples.push_back(kernel_elapsed_seconds() / iters);
    }
    // Each of the two PEs received the other's send buffer.
    if (active) verify_receive(bytes, me_ == 0 ? peer : 0, "put_signal_pingpong");
    nvshmem_barrier_all();
    Record record = make("put_signal_pingpong", "round_trip", bytes, "s", std::move(samples));
    record.ranks = {0, peer};
    record.id_suffix = scope_name(scope);
    record.extra("scope", std::string(scope_name(scope)));
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  // put: putmem + quiet; get: getmem. PE 0 issues to or from `peer`; the other PEs only keep the barrier rhythm.
  void one_sided_latency(bool put, std::uint64_t bytes, int peer) {
    if (me_ == (put ? peer : 0)) poison_receive(bytes);
    nvshmem_barrier_all();
    const int warmup = options_.quick ? 5 : 20;
    const int iters = options_.quick ? 20 : 200;
    std::vector<double> samples;
    if (me_ == 0) {
      for (int s = 0; s < sample_count(); ++s) {
        if (put)
          put_latency_kernel<<<1, 1, 0, *stream_>>>(receive_, send_, bytes, warmup, iters, peer,
                                                    elapsed_.as<unsigned long long>());
        else
          get_latency_kernel<<<1, 1, 0, *stream_>>>(receive_, send_, bytes, get_slots(), warmup, iters, peer,
                                                    elapsed_.as<unsigned long long>());
        CHECK_LAUNCH();
        stream_->synchronize();
        samples.push_back(kernel_elapsed_seconds() / iters);
      }
      if (!put) {
        // One more get, from slot 0 alone, whose result the pattern check can predict.
        get_latency_kernel<<<1, 1, 0, *stream_>>>(receive_, send_, bytes, 1, 0, 1, peer,
                                                  elapsed_.as<unsigned long long>());
        CHECK_LAUNCH();
        stream_->synchronize();
        verify_receive(bytes, peer, "get_latency");
      }
    }
    nvshmem_barrier_all();
    if (put && me_ == peer) verify_receive(bytes, 0, "put_latency");
    nvshmem_barrier_all();
    Record record = make(put ? "put_latency" : "get_latency", "thread", bytes, "s", std::move(samples));
    record.ranks = {0, peer};
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  void put_rate(int scope, int blocks, std::uint64_t bytes, bool blocks_sweep) {
    if (me_ == 1) poison_receive(bytes);
    nvshmem_barrier_all();
    const int iters = rate_iters(bytes);
    std::vector<double> samples;
    if (me_ == 0) {
      Event start(me_), stop(me_);
      auto launch = [&] {
        if (scope == kThread)
          put_rate_kernel<kThread><<<blocks, kRateThreads, 0, *stream_>>>(receive_, send_, bytes, iters, 1);
        else if (scope == kWarp)
          put_rate_kernel<kWarp><<<blocks, kRateThreads, 0, *stream_>>>(receive_, send_, bytes, iters, 1);
        else
          put_rate_kernel<kBlock><<<blocks, kRateThreads, 0, *stream_>>>(receive_, send_, bytes, iters, 1);
        CHECK_LAUNCH();
      };
      launch();  // warm-up
      stream_->synchronize();
      for (int s = 0; s < sample_count(); ++s) {
        start.record(*stream_);
        launch();
        stop.record(*stream_);
        samples.push_back(static_cast<double>(bytes) * iters / elapsed_seconds(start, stop));
      }
    }
    nvshmem_barrier_all();
    if (me_ == 1) verify_receive(bytes, 0, "put_rate");
    nvshmem_barrier_all();
    Record record =
        make(blocks_sweep ? "put_rate_blocks" : "put_rate", scope_name(scope), bytes, "B/s", std::move(samples));
    if (blocks_sweep) record.id_suffix = "b" + std::to_string(blocks);
    record.extra("blocks", static_cast<std::int64_t>(blocks));
    record.extra("threads", static_cast<std::int64_t>(kRateThreads));
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  static int rate_iters(std::uint64_t bytes) {
    // Enough repetitions that one kernel runs for about a millisecond or more at NVLink rates.
    return static_cast<int>(std::clamp<std::uint64_t>(1 * GiB / bytes, 2, 1000));
  }

  void launch_block_puts(int blocks, std::uint64_t bytes, int iters, int target) {
    put_rate_kernel<kBlock><<<blocks, kRateThreads, 0, *stream_>>>(receive_, send_, bytes, iters, target);
    CHECK_LAUNCH();
  }

  // PE0 and PE1 put to each other at once. The unidirectional reference (PE0 alone, same kernel) is measured
  // first, on the same machine and buffers, for the extra `unidirectional`.
  void put_rate_bidir(int blocks, std::uint64_t bytes, bool blocks_sweep) {
    if (active()) poison_receive(bytes);
    nvshmem_barrier_all();
    const int iters = rate_iters(bytes);
    std::vector<double> alone, samples;
    Event start(me_), stop(me_);
    if (me_ == 0) {
      launch_block_puts(blocks, bytes, iters, 1);  // warm-up
      stream_->synchronize();
      for (int s = 0; s < sample_count(); ++s) {
        start.record(*stream_);
        launch_block_puts(blocks, bytes, iters, 1);
        stop.record(*stream_);
        alone.push_back(static_cast<double>(bytes) * iters / elapsed_seconds(start, stop));
      }
    }
    nvshmem_barrier_all();
    if (active()) {
      for (int s = -1; s < sample_count(); ++s) {  // s = -1: warm-up
        const std::uint64_t value = ++sync_value_;
        rendezvous_kernel<<<1, 1, 0, *stream_>>>(ready_, value, peer());
        CHECK_LAUNCH();
        if (me_ == 0) start.record(*stream_);
        launch_block_puts(blocks, bytes, iters, peer());
        if (me_ == 1) {
          signal_done_kernel<<<1, 1, 0, *stream_>>>(done_, value, 0);
        } else {
          wait_signal_kernel<<<1, 1, 0, *stream_>>>(done_, value);
          stop.record(*stream_);
        }
        CHECK_LAUNCH();
        stream_->synchronize();
        if (me_ == 0 && s >= 0) samples.push_back(static_cast<double>(bytes) * iters / elapsed_seconds(start, stop));
      }
    }
    nvshmem_barrier_all();
    if (active()) verify_receive(bytes, peer(), "put_rate_bidir");
    nvshmem_barrier_all();
    Record record = make(blocks_sweep ? "put_rate_bidir_blocks" : "put_rate_bidir", scope_name(kBlock), bytes, "B/s",
                         std::move(samples));
    if (blocks_sweep) record.id_suffix = "b" + std::to_string(blocks);
    record.extra("blocks", static_cast<std::int64_t>(blocks));
    record.extra("threads", static_cast<std::int64_t>(kRateThreads));
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    record.extra("directions", static_cast<std::int64_t>(2));
    if (me_ == 0) {
      record.extra("unidirectional", summarize(alone).median);
      context_.emit(record);
    }
  }

  // PE0 puts to itself: put_rate's block kernel with local HBM as both source and target.
  void put_rate_self(std::uint64_t bytes) {
    nvshmem_barrier_all();
    const int iters = rate_iters(bytes);
    std::vector<double> samples;
    if (me_ == 0) {
      poison_receive(bytes);
      Event start(me_), stop(me_);
      launch_block_puts(kRateBlocks, bytes, iters, 0);  // warm-up
      stream_->synchronize();
      for (int s = 0; s < sample_count(); ++s) {
        start.record(*stream_);
        launch_block_puts(kRateBlocks, bytes, iters, 0);
        stop.record(*stream_);
        samples.push_back(static_cast<double>(bytes) * iters / elapsed_seconds(start, stop));
      }
      verify_receive(bytes, 0, "put_rate_self");
    }
    nvshmem_barrier_all();
    Record record = make("put_rate_self", scope_name(kBlock), bytes, "B/s", std::move(samples));
    record.ranks = {0};
    record.extra("blocks", static_cast<std::int64_t>(kRateBlocks));
    record.extra("threads", static_cast<std::int64_t>(kRateThreads));
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  // The step family's PGAS exchange alone, both PEs released together. PE0's events split it into phases.
  void exchange(std::uint64_t bytes, bool flush) {
    constexpr int kBlocks = 32, kThreads = 256;
    const int n = context_.nranks;
    if (n != 2) return;  // the rendezvous pairs PE0 with PE1
    const std::size_t chunk = bytes / sizeof(std::uint16_t) / n;
    auto* gradient = reinterpret_cast<std::uint16_t*>(send_);
    auto* received = reinterpret_cast<std::uint16_t*>(receive_);
    DeviceBuffer scratch(me_, flush ? 1 * GiB : 4);
    std::vector<std::unique_ptr<Event>> marks;
    for (int i = 0; i < 5; ++i) marks.push_back(std::make_unique<Event>(me_));
    std::vector<double> samples, phases[4];
    nvshmem_barrier_all();
    for (int s = -2; s < sample_count(); ++s) {  // two warm-up exchanges
      if (flush) {
        flush_kernel<<<4 * sm_count(me_), 512, 0, *stream_>>>(scratch.as<unsigned>(), GiB / 4, s + 3);
        CHECK_LAUNCH();
      }
      const std::uint64_t value = ++sync_value_;
      rendezvous_kernel<<<1, 1, 0, *stream_>>>(ready_, value, peer());
      CHECK_LAUNCH();
      marks[0]->record(*stream_);
      exchange_put_kernel<<<dim3(kBlocks, n - 1), kThreads, 0, *stream_>>>(received, gradient, chunk, &signal_[3], me_,
                                                                           n, true);
      CHECK_LAUNCH();
      marks[1]->record(*stream_);
      exchange_expected_[0] += static_cast<std::uint64_t>(kBlocks) * (n - 1);
      exchange_reduce_kernel<<<2 * sm_count(me_), 512, 0, *stream_>>>(gradient, received, chunk, &signal_[3],
                                                                      exchange_expected_[0], me_, n);
      CHECK_LAUNCH();
      marks[2]->record(*stream_);
      exchange_put_kernel<<<dim3(kBlocks, n - 1), kThreads, 0, *stream_>>>(gradient, gradient, chunk, &signal_[4], me_,
                                                                           n, false);
      CHECK_LAUNCH();
      marks[3]->record(*stream_);
      exchange_expected_[1] += static_cast<std::uint64_t>(kBlocks) * (n - 1);
      wait_signal_kernel<<<1, 1, 0, *stream_>>>(&signal_[4], exchange_expected_[1]);
      CHECK_LAUNCH();
      if (me_ == 1) {
        signal_done_kernel<<<1, 1, 0, *stream_>>>(done_, value, 0);
      } else {
        wait_signal_kernel<<<1, 1, 0, *stream_>>>(done_, value);
      }
      CHECK_LAUNCH();
      marks[4]->record(*stream_);
      stream_->synchronize();
      if (s < 0) continue;
      samples.push_back(elapsed_seconds(*marks[0], *marks[4]));
      for (int p = 0; p < 4; ++p) phases[p].push_back(elapsed_seconds(*marks[p], *marks[p + 1]));
    }
    nvshmem_barrier_all();
    Record record = make("exchange", flush ? "after_flush" : "alone", bytes, "s", std::move(samples));
    record.ranks.clear();
    for (int r = 0; r < n; ++r) record.ranks.push_back(r);
    record.extra("put_blocks", static_cast<std::int64_t>(kBlocks));
    record.extra("put_threads", static_cast<std::int64_t>(kThreads));
    const char* names[] = {"scatter_phase", "reduce_phase", "gather_phase", "wait_phase"};
    for (int p = 0; p < 4; ++p) record.extra(names[p], summarize(phases[p]).median);
    if (me_ == 0) context_.emit(record);
  }

  void barrier_test(int scope) {
    nvshmem_barrier_all();
    const int warmup = options_.quick ? 10 : 100;
    const int iters = options_.quick ? 50 : 1000;
    const int threads = scope == kBlock ? 256 : 1;
    std::vector<double> samples;
    for (int s = 0; s < sample_count(); ++s) {
      int w = warmup, n = iters;
      unsigned long long* elapsed = elapsed_.as<unsigned long long>();
      void* args[] = {&w, &n, &elapsed};
      const void* kernel = scope == kBlock ? reinterpret_cast<const void*>(&barrier_kernel<kBlock>)
                                           : reinterpret_cast<const void*>(&barrier_kernel<kThread>);
      CHECK_NVSHMEM(nvshmemx_collective_launch(kernel, dim3(1), dim3(threads), args, 0, *stream_));
      stream_->synchronize();
      samples.push_back(kernel_elapsed_seconds() / iters);
    }
    Record record = make("barrier", scope_name(scope), 0, "s", std::move(samples));
    record.ranks.clear();
    for (int r = 0; r < context_.nranks; ++r) record.ranks.push_back(r);
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  // Every PE puts `bytes` to every other PE at once (put_all_kernel, block scope, kAllBlocks / (PEs - 1) blocks
  // per peer). A sample runs from a barrier to the barrier after every PE's kernel (both on the stream, timed on PE 0):
  // the all-to-all traffic through the switch. Unit B/s: the aggregate npes (npes-1) x bytes x iters / time.
  void put_rate_all(std::uint64_t bytes) {
    const int npes = context_.nranks;
    const std::uint64_t slot_bytes = largest_ / npes;
    poison_receive(slot_bytes * npes);
    nvshmem_barrier_all();
    const int iters = static_cast<int>(std::clamp<std::uint64_t>(256 * MiB / bytes, 2, 1000));
    const int per_peer = std::max(1, kAllBlocks / (npes - 1));
    const int blocks = per_peer * (npes - 1);
    auto launch = [&] {
      put_all_kernel<<<blocks, kRateThreads, 0, *stream_>>>(receive_, send_, bytes, slot_bytes, iters, me_, npes,
                                                            per_peer);
      CHECK_LAUNCH();
    };
    launch();  // warm-up
    stream_->synchronize();
    std::vector<double> samples;
    Event start(me_), stop(me_);
    for (int s = 0; s < sample_count(); ++s) {
      nvshmemx_barrier_all_on_stream(*stream_);
      start.record(*stream_);
      launch();
      nvshmemx_barrier_all_on_stream(*stream_);
      stop.record(*stream_);
      samples.push_back(static_cast<double>(npes) * (npes - 1) * bytes * iters / elapsed_seconds(start, stop));
    }
    nvshmem_barrier_all();
    for (int from = 0; from < npes; ++from)
      if (from != me_)
        verify_pattern(receive_ + from * slot_bytes, bytes, seed_of(from), *stream_, me_,
                       "nvshmem put_rate_all " + std::to_string(bytes) + " B from PE " + std::to_string(from) +
                           " on PE " + std::to_string(me_));
    nvshmem_barrier_all();
    Record record = make("put_rate_all", "block", bytes, "B/s", std::move(samples));
    record.ranks.clear();
    for (int pe = 0; pe < npes; ++pe) record.ranks.push_back(pe);
    record.extra("pes", static_cast<std::int64_t>(npes));
    record.extra("blocks", static_cast<std::int64_t>(blocks));
    record.extra("blocks_per_peer", static_cast<std::int64_t>(per_peer));
    record.extra("threads", static_cast<std::int64_t>(kRateThreads));
    record.extra("iters_per_sample", static_cast<std::int64_t>(iters));
    if (me_ == 0) context_.emit(record);
  }

  RankContext& context_;
  const Options& options_;
  int me_ = 0;
  std::uint64_t largest_ = 0;
  char* send_ = nullptr;
  char* receive_ = nullptr;
  // [0] ping-pong, [1] ready (rendezvous), [2] done (bidir), [3] and [4] the exchange's scattered and gathered
  std::uint64_t* signal_ = nullptr;
  std::uint64_t* ready_ = nullptr;
  std::uint64_t* done_ = nullptr;
  std::uint64_t signal_base_ = 0;
  std::uint64_t sync_value_ = 0;  // rendezvous and done values: only grow
  std::uint64_t exchange_expected_[2] = {0, 0};
  std::unique_ptr<Stream> stream_;
  DeviceBuffer elapsed_;
};

}  // namespace

void run_nvshmem_family(RankContext& context) {
  NvshmemFamily(context).run(false);
}

void run_nvshmem_bidir_family(RankContext& context) {
  NvshmemFamily(context).run(true);
}

}  // namespace probe
