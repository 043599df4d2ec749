// Family `step`: a data-parallel training step on every GPU -- a loop of bf16 GEMMs (the backward pass), then
// the averaging of a bf16 gradient buffer across the GPUs -- timed the way a training loop runs: steps back to
// back on one stream per GPU, an event at every step boundary, after warm-up steps. A sample is one step's time,
// the slowest rank's (max over ranks, as the collective family does), since a step ends when its last rank does.
//
//   gemm/bf16 [gpu]        one cuBLAS GEMM n x n x n, bf16 in and out, fp32 accumulation (cublasGemmEx),
//                          back to back; bytes = the operands A, B and C (3 n^2 x 2 B); extras m, n, k, flops
//   gemm/duty_gap_G [gpu]  bursts of kGemmsPerStep GEMMs of kStepGemm^3, each followed by G us of idle GPU, for
//                          1.5 s (a third warm-up); a sample = a burst's time per GEMM; extra `duty` = the share
//                          of time in GEMMs. Every GPU runs them at once, as in the steps.
//   bsp/slow_P [0..n-1]    kGemmsPerStep GEMMs of kStepGemm^3, then ncclAllReduce(bf16, ncclAvg) of the gradient
//   pgas/slow_P [0..n-1]   the same GEMMs, then the gradient averaged by one-sided NVSHMEM puts with signals
//                          (a reduce-scatter then an all-gather, no collective and no barrier):
//                            1. every rank puts chunk q of its gradient into rank q's receive slot for it
//                               (kPutBlocks blocks per peer, nvshmemx_putmem_signal_nbi_block, each adding 1 to
//                               q's `scattered` signal);
//                            2. a reduce kernel waits until its `scattered` signal shows every peer's blocks,
//                               then averages its own chunk with the received ones in place;
//                            3. every rank puts its averaged chunk into every peer's gradient (same blocks,
//                               adding to the peer's `gathered` signal);
//                            4. a wait kernel waits until every peer's averaged chunk has arrived.
//                          Signals only grow (the expected values accumulate over steps): no reset is needed.
//
// Extras gemm_phase_rankR and reduce_phase_rankR: rank R's median time from a step's start to the end of its GEMMs,
// and from there to the step's end (the reduction, including the wait for slower ranks).
//
// P, the slowdown of rank 1 (the "slow GPU"), is 0, 5, 10 or 20 %: rank 1 runs kGemmsPerStep x (1 + P/100)
// GEMMs per step (extra GEMMs, as a slower clock would stretch its compute). bytes = the gradient buffer: 64 MiB
// and 256 MiB. Before timing, each (test, bytes) is checked once: every rank fills its gradient with its own
// small-integer pattern, runs one reduction, and checks the exact average on every rank.
//
// BSP needs NCCL (the family is built with it); PGAS needs NVSHMEM too and is skipped without it.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <vector>

#include "../common/cuda_util.h"
#include "../common/nccl_util.h"
#include "families.h"

#ifdef PROBE_HAVE_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>

#include "../common/nvshmem_check.h"
#endif

#define CHECK_CUBLAS(call)                                                                                 \
  do {                                                                                                     \
    const cublasStatus_t probe_cublas_status_ = (call);                                                    \
    if (probe_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                     \
      ::probe::throw_call_failure(__FILE__, __LINE__, #call, cublasGetStatusString(probe_cublas_status_)); \
  } while (0)

namespace probe {
namespace {

constexpr int kGemmsPerStep = 20;
constexpr int kStepGemm = 4096;                      // n of the step's GEMMs: 137 GFLOP each
constexpr int kSlowdownsPercent[] = {0, 5, 10, 20};  // of rank 1
constexpr std::uint64_t kGradientBytes[] = {64 * MiB, 256 * MiB};
constexpr int kGemmSizes[] = {2048, 4096, 6144, 8192, 12288};
// Idle gaps after every burst of kGemmsPerStep GEMMs of kStepGemm^3 (~3.5 ms): tensor duty cycles from 1 to ~0.6.
constexpr int kDutyGapsUs[] = {0, 250, 500, 1000, 2000};
constexpr double kDutySeconds = 1.5;  // per gap: long enough for the GPU's power management to settle
constexpr int kPutBlocks = 32;        // blocks putting one peer's chunk (as the nvshmem family's put_rate)
constexpr int kPutThreads = 256;
constexpr int kSlowRank = 1;

__global__ void fill_operand_kernel(__nv_bfloat16* data, std::size_t elements, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elements; i += stride) {
    // Values in [-1, 1) that repeat every 2048 elements (h % 2048 depends on i % 2048 only): low-entropy operands,
    // which draw less power than a training job's and run at higher clocks under the power cap
    // (docs/models-and-validation.md#power-data). Records say so in their `data` extra.
    const std::uint32_t h = (static_cast<std::uint32_t>(i) * 2654435761u) ^ (seed * 40503u);
    data[i] = __float2bfloat16(static_cast<float>(h % 2048u) / 1024.0f - 1.0f);
  }
}

// Small integers: their sums and averages over a power-of-two number of ranks are exact in bf16.
__device__ __forceinline__ float gradient_pattern(int rank, std::size_t i) {
  return static_cast<float>((static_cast<std::uint32_t>(i) * 7u + rank * 13u) % 32u);
}

__global__ void fill_gradient_kernel(__nv_bfloat16* gradient, std::size_t elements, int rank) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elements; i += stride)
    gradient[i] = __float2bfloat16(gradient_pattern(rank, i));
}

// Holds the stream for `ns` nanoseconds with one thread: an idle gap that draws next to no power.
__global__ void idle_kernel(std::uint64_t ns) {
  std::uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    std::uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
    __nanosleep(1000);
  }
}

__global__ void verify_average_kernel(const __nv_bfloat16* gradient, std::size_t elements, int nranks,
                                      unsigned long long* wrong) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elements; i += stride) {
    float sum = 0;
    for (int q = 0; q < nranks; ++q) sum += gradient_pattern(q, i);
    local += __bfloat162float(gradient[i]) != sum / nranks;
  }
  if (local) atomicAdd(wrong, local);
}

#ifdef PROBE_HAVE_NVSHMEM
// Grid (kPutBlocks, peers): block (b, p) puts slice b of chunk `to` of `source` into PE `to`'s `destination`
// (same symmetric offset layout), then adds 1 to `to`'s signal. `chunk_of_target`: put the target's chunk (the
// scatter), else the sender's own chunk (the gather).
__global__ void put_chunks_kernel(__nv_bfloat16* destination, const __nv_bfloat16* source, std::size_t chunk_elements,
                                  std::uint64_t* signal, int me, int nranks, bool chunk_of_target,
                                  std::size_t destination_slot_elements) {
  const int to = (me + 1 + static_cast<int>(blockIdx.y)) % nranks;
  const std::size_t slice = chunk_elements / gridDim.x;
  const std::size_t source_offset = (chunk_of_target ? to : me) * chunk_elements + blockIdx.x * slice;
  // Scatter: into the target's receive slot for this sender; gather: into the sender's chunk of the gradient.
  const std::size_t destination_offset =
      (chunk_of_target ? me * destination_slot_elements : me * chunk_elements) + blockIdx.x * slice;
  nvshmemx_putmem_signal_nbi_block(destination + destination_offset, source + source_offset,
                                   slice * sizeof(__nv_bfloat16), signal, 1, NVSHMEM_SIGNAL_ADD, to);
}

// Waits (one thread per block) until `signal` reaches `expected`, then averages this rank's chunk of the gradient
// with every peer's copy of it in `received` (slot q holds rank q's).
__global__ void reduce_chunk_kernel(__nv_bfloat16* gradient, const __nv_bfloat16* received, std::size_t chunk_elements,
                                    std::uint64_t* signal, std::uint64_t expected, int me, int nranks) {
  if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, expected);
  __syncthreads();
  __nv_bfloat16* mine = gradient + me * chunk_elements;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < chunk_elements;
       i += stride) {
    float sum = __bfloat162float(mine[i]);
    for (int q = 0; q < nranks; ++q)
      if (q != me) sum += __bfloat162float(received[q * chunk_elements + i]);
    mine[i] = __float2bfloat16(sum / nranks);
  }
}

__global__ void wait_signal_kernel(std::uint64_t* signal, std::uint64_t expected) {
  nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, expected);
}
#endif

class StepFamily {
 public:
  explicit StepFamily(RankContext& context) : context_(context), options_(*context.options) {}

  ~StepFamily() {
    if (comm_) ncclCommAbort(comm_);
    if (blas_) cublasDestroy(blas_);
  }

  void run() {
    const int rank = context_.rank, n = context_.nranks;
    ncclUniqueId id;
    if (context_.is_root()) CHECK_NCCL(ncclGetUniqueId(&id));
    context_.share_blob(&id, sizeof id);
#ifdef PROBE_HAVE_NVSHMEM
    nvshmemx_uniqueid_t shmem_id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (context_.is_root()) CHECK_NVSHMEM(nvshmemx_get_uniqueid(&shmem_id));
    context_.share_blob(&shmem_id, sizeof shmem_id);
#endif
    CHECK_CUDA(cudaSetDevice(rank));
    stream_ = std::make_unique<Stream>(rank);
    CHECK_NCCL(ncclCommInitRank(&comm_, n, id, rank));
    CHECK_CUBLAS(cublasCreate(&blas_));
    CHECK_CUBLAS(cublasSetStream(blas_, *stream_));
    wrong_ = DeviceBuffer(rank, sizeof(unsigned long long));

    const int largest_gemm = options_.quick ? 4096 : kGemmSizes[std::size(kGemmSizes) - 1];
    const std::size_t operand = static_cast<std::size_t>(largest_gemm) * largest_gemm;
    for (DeviceBuffer* buffer : {&a_, &b_, &c_}) *buffer = DeviceBuffer(rank, operand * sizeof(__nv_bfloat16));
    fill_operand_kernel<<<1024, 256, 0, *stream_>>>(a_.as<__nv_bfloat16>(), operand, 1 + rank);
    fill_operand_kernel<<<1024, 256, 0, *stream_>>>(b_.as<__nv_bfloat16>(), operand, 101 + rank);
    CHECK_LAUNCH();
    stream_->synchronize();

    for (int size : kGemmSizes)
      if (size <= largest_gemm) measure_gemm(size);
    for (int gap_us : kDutyGapsUs) measure_gemm_duty(gap_us);

    const std::vector<std::uint64_t> gradients =
        options_.quick ? std::vector<std::uint64_t>{4 * MiB}
                       : std::vector<std::uint64_t>(std::begin(kGradientBytes), std::end(kGradientBytes));
    gradient_ = DeviceBuffer(rank, gradients.back());
    for (std::uint64_t bytes : gradients)
      for (int slowdown : kSlowdownsPercent) measure_step(false, bytes, slowdown);

#ifdef PROBE_HAVE_NVSHMEM
    nvshmemx_init_attr_t attributes = NVSHMEMX_INIT_ATTR_INITIALIZER;
    CHECK_NVSHMEM(nvshmemx_set_attr_uniqueid_args(rank, n, &shmem_id, &attributes));
    CHECK_NVSHMEM(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attributes));
    PROBE_REQUIRE(nvshmem_my_pe() == rank && nvshmem_n_pes() == n, "NVSHMEM PE numbering differs");
    const std::uint64_t largest = gradients.back();
    shmem_gradient_ = static_cast<__nv_bfloat16*>(nvshmem_malloc(largest));
    // Receive slots: one chunk (largest / n) per sender.
    shmem_received_ = static_cast<__nv_bfloat16*>(nvshmem_malloc(largest));
    signals_ = static_cast<std::uint64_t*>(nvshmem_calloc(2, sizeof(std::uint64_t)));
    PROBE_REQUIRE(shmem_gradient_ && shmem_received_ && signals_,
                  "nvshmem_malloc failed (raise NVSHMEM_SYMMETRIC_SIZE)");
    nvshmem_barrier_all();
    for (std::uint64_t bytes : gradients)
      for (int slowdown : kSlowdownsPercent) measure_step(true, bytes, slowdown);
    nvshmem_barrier_all();
    nvshmem_free(signals_);
    nvshmem_free(shmem_received_);
    nvshmem_free(shmem_gradient_);
    nvshmem_finalize();
#endif
    CHECK_NCCL(ncclCommDestroy(comm_));
    comm_ = nullptr;
  }

 private:
  void gemm(int size) {
    const float alpha = 1, beta = 0;
    CHECK_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, a_.get(), CUDA_R_16BF, size,
                              b_.get(), CUDA_R_16BF, size, &beta, c_.get(), CUDA_R_16BF, size, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }

  static double gemm_flops(int size) {
    return 2.0 * size * size * static_cast<double>(size);
  }

  void nccl_barrier() {
    CHECK_NCCL(ncclAllReduce(wrong_.get(), wrong_.get(), 1, ncclFloat32, ncclSum, comm_, *stream_));
    stream_->synchronize();
  }

  // A record of GPU 0's GEMMs of size^3: per-GEMM times, with the shape's extras.
  static Record gemm_record(std::string variant, int size, std::vector<double> times) {
    Record record;
    record.family = "step";
    record.test = "gemm";
    record.variant = std::move(variant);
    record.ranks = {0};
    record.bytes = 3ull * size * size * sizeof(__nv_bfloat16);
    record.unit = "s";
    record.samples = std::move(times);
    for (const char* dimension : {"m", "n", "k"}) record.extra(dimension, static_cast<std::int64_t>(size));
    record.extra("flops", gemm_flops(size));
    record.extra("dtype", std::string("bf16"));
    record.extra("data", std::string("low_entropy"));
    return record;
  }

  // Back-to-back GEMMs on every GPU; each rank measures its own GPU, rank 0 reports GPU 0 (one record per GPU
  // would repeat the same silicon: the step tests cover the pair).
  void measure_gemm(int size) {
    const int warmup = options_.quick ? 2 : 10;
    const int per_sample = options_.quick ? 2 : std::max(2, static_cast<int>(2e12 / gemm_flops(size)));  // ~3 ms
    const int samples = options_.quick ? 3 : 50;
    for (int i = 0; i < warmup * per_sample; ++i) gemm(size);
    stream_->synchronize();
    Event start(context_.rank), stop(context_.rank);
    std::vector<double> times;
    for (int s = 0; s < samples; ++s) {
      start.record(*stream_);
      for (int i = 0; i < per_sample; ++i) gemm(size);
      stop.record(*stream_);
      times.push_back(elapsed_seconds(start, stop) / per_sample);
    }
    nccl_barrier();
    Record record = gemm_record("bf16", size, std::move(times));
    record.extra("tflops", gemm_flops(size) / summarize(record.samples).median / 1e12);
    record.extra("gemms_per_sample", static_cast<std::int64_t>(per_sample));
    context_.emit(record);
  }

  // Bursts of kGemmsPerStep GEMMs, each followed by an idle gap, for kDutySeconds (the first third is warm-up):
  // a sample is one burst's time per GEMM. The GPU's clock under its power limit depends on how much of the time
  // its tensor cores work (test gemm, variant duty_gap_<us>; extra `duty` = burst / (burst + gap), measured).
  void measure_gemm_duty(int gap_us) {
    const double estimate = 180e-6 * kGemmsPerStep + gap_us * 1e-6;
    const int bursts = options_.quick ? 6 : static_cast<int>(kDutySeconds / estimate);
    const int warmup = bursts / 3;
    std::vector<std::unique_ptr<Event>> marks;
    for (int i = 0; i < 2 * bursts; ++i) marks.push_back(std::make_unique<Event>(context_.rank));
    nccl_barrier();
    for (int b = 0; b < bursts; ++b) {
      marks[2 * b]->record(*stream_);
      for (int g = 0; g < kGemmsPerStep; ++g) gemm(kStepGemm);
      marks[2 * b + 1]->record(*stream_);
      if (gap_us > 0) {
        idle_kernel<<<1, 1, 0, *stream_>>>(static_cast<std::uint64_t>(gap_us) * 1000);
        CHECK_LAUNCH();
      }
    }
    stream_->synchronize();
    std::vector<double> per_gemm;
    double busy = 0, total = 0;
    for (int b = warmup; b < bursts; ++b) {
      const double burst = elapsed_seconds(*marks[2 * b], *marks[2 * b + 1]);
      per_gemm.push_back(burst / kGemmsPerStep);
      busy += burst;
      if (b + 1 < bursts) total += elapsed_seconds(*marks[2 * b], *marks[2 * b + 2]);
    }
    const double duty = total > 0 ? busy * (bursts - warmup - 1) / (bursts - warmup) / total : 1.0;
    nccl_barrier();
    Record record = gemm_record("duty_gap_" + std::to_string(gap_us), kStepGemm, std::move(per_gemm));
    record.extra("gemms_per_burst", static_cast<std::int64_t>(kGemmsPerStep));
    record.extra("gap", gap_us * 1e-6);
    record.extra("duty", std::min(1.0, duty));
    record.extra("warmup_bursts", static_cast<std::int64_t>(warmup));
    context_.emit(record);
  }

  int gemms_this_rank(int slowdown_percent) const {
    const int extra = context_.rank == kSlowRank ? kGemmsPerStep * slowdown_percent / 100 : 0;
    return kGemmsPerStep + extra;
  }

  __nv_bfloat16* gradient(bool pgas) const {
#ifdef PROBE_HAVE_NVSHMEM
    if (pgas) return shmem_gradient_;
#endif
    (void)pgas;
    return gradient_.as<__nv_bfloat16>();
  }

  void reduce(bool pgas, std::uint64_t bytes) {
    const std::size_t elements = bytes / sizeof(__nv_bfloat16);
    if (!pgas) {
      CHECK_NCCL(ncclAllReduce(gradient(false), gradient(false), elements, ncclBfloat16, ncclAvg, comm_, *stream_));
      return;
    }
#ifdef PROBE_HAVE_NVSHMEM
    const int me = context_.rank, n = context_.nranks;
    const std::size_t chunk = elements / n;
    const dim3 put_grid(kPutBlocks, n - 1);
    put_chunks_kernel<<<put_grid, kPutThreads, 0, *stream_>>>(shmem_received_, shmem_gradient_, chunk, &signals_[0], me,
                                                              n, true, chunk);
    CHECK_LAUNCH();
    expected_scattered_ += static_cast<std::uint64_t>(kPutBlocks) * (n - 1);
    reduce_chunk_kernel<<<2 * sm_count(me), 512, 0, *stream_>>>(shmem_gradient_, shmem_received_, chunk, &signals_[0],
                                                                expected_scattered_, me, n);
    CHECK_LAUNCH();
    put_chunks_kernel<<<put_grid, kPutThreads, 0, *stream_>>>(shmem_gradient_, shmem_gradient_, chunk, &signals_[1], me,
                                                              n, false, chunk);
    CHECK_LAUNCH();
    expected_gathered_ += static_cast<std::uint64_t>(kPutBlocks) * (n - 1);
    wait_signal_kernel<<<1, 1, 0, *stream_>>>(&signals_[1], expected_gathered_);
    CHECK_LAUNCH();
#endif
  }

  void check_once(bool pgas, std::uint64_t bytes) {
    const std::size_t elements = bytes / sizeof(__nv_bfloat16);
    fill_gradient_kernel<<<1024, 256, 0, *stream_>>>(gradient(pgas), elements, context_.rank);
    CHECK_LAUNCH();
    stream_->synchronize();
    nccl_barrier();
    reduce(pgas, bytes);
    CHECK_CUDA(cudaMemsetAsync(wrong_.get(), 0, sizeof(unsigned long long), *stream_));
    verify_average_kernel<<<1024, 256, 0, *stream_>>>(gradient(pgas), elements, context_.nranks,
                                                      wrong_.as<unsigned long long>());
    CHECK_LAUNCH();
    unsigned long long wrong = 0;
    CHECK_CUDA(cudaMemcpyAsync(&wrong, wrong_.get(), sizeof wrong, cudaMemcpyDeviceToHost, *stream_));
    stream_->synchronize();
    if (wrong)
      throw ProbeError(std::string("verification failed: step ") + (pgas ? "pgas " : "bsp ") + std::to_string(bytes) +
                       " B: " + std::to_string(wrong) + " wrong elements on rank " + std::to_string(context_.rank));
    nccl_barrier();
  }

  void measure_step(bool pgas, std::uint64_t bytes, int slowdown_percent) {
    check_once(pgas, bytes);
    const int warmup = options_.quick ? 2 : 5;
    const int steps = options_.quick ? 4 : 40;
    const int gemms = gemms_this_rank(slowdown_percent);
    while (static_cast<int>(events_.size()) < warmup + steps + 1)
      events_.push_back(std::make_unique<Event>(context_.rank));
    while (static_cast<int>(gemms_done_.size()) < steps) gemms_done_.push_back(std::make_unique<Event>(context_.rank));
    nccl_barrier();
    for (int s = 0; s < warmup + steps; ++s) {
      if (s == warmup) events_[0]->record(*stream_);
      for (int g = 0; g < gemms; ++g) gemm(kStepGemm);
      if (s >= warmup) gemms_done_[s - warmup]->record(*stream_);
      reduce(pgas, bytes);
      if (s >= warmup) events_[s - warmup + 1]->record(*stream_);
    }
    stream_->synchronize();
    std::vector<double> times(steps), gemm_phase(steps), reduce_phase(steps);
    for (int i = 0; i < steps; ++i) {
      times[i] = elapsed_seconds(*events_[i], *events_[i + 1]);
      gemm_phase[i] = elapsed_seconds(*events_[i], *gemms_done_[i]);
      reduce_phase[i] = elapsed_seconds(*gemms_done_[i], *events_[i + 1]);
    }
    // Each rank's median GEMM phase and reduction phase (the reduction includes waiting for the other ranks).
    const std::vector<double> phases = every_rank({summarize(gemm_phase).median, summarize(reduce_phase).median});
    slowest_rank(times, comm_, *stream_);

    Record record;
    record.family = "step";
    record.test = pgas ? "pgas" : "bsp";
    record.variant = "slow_" + std::to_string(slowdown_percent);
    for (int r = 0; r < context_.nranks; ++r) record.ranks.push_back(r);
    record.bytes = bytes;
    record.unit = "s";
    record.samples = std::move(times);
    record.extra("gemms_per_step", static_cast<std::int64_t>(kGemmsPerStep));
    record.extra("gemm_n", static_cast<std::int64_t>(kStepGemm));
    record.extra("slow_rank", static_cast<std::int64_t>(kSlowRank));
    record.extra("slow_rank_gemms", static_cast<std::int64_t>(kGemmsPerStep * (100 + slowdown_percent) / 100));
    record.extra("slowdown", slowdown_percent / 100.0);
    record.extra("dtype", std::string("bf16"));
    record.extra("data", std::string("low_entropy"));
    if (pgas) {
      record.extra("put_blocks", static_cast<std::int64_t>(kPutBlocks));
      record.extra("put_threads", static_cast<std::int64_t>(kPutThreads));
    }
    record.extra("warmup_steps", static_cast<std::int64_t>(warmup));
    for (int r = 0; r < context_.nranks; ++r) {
      record.extra("gemm_phase_rank" + std::to_string(r), phases[2 * r]);
      record.extra("reduce_phase_rank" + std::to_string(r), phases[2 * r + 1]);
    }
    context_.emit(record);
  }

  // Every rank's `values`, rank after rank (all ranks give as many).
  std::vector<double> every_rank(const std::vector<double>& values) {
    DeviceBuffer mine(context_.rank, values.size() * sizeof(double));
    DeviceBuffer all(context_.rank, values.size() * context_.nranks * sizeof(double));
    CHECK_CUDA(cudaMemcpy(mine.get(), values.data(), values.size() * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_NCCL(ncclAllGather(mine.get(), all.get(), values.size(), ncclFloat64, comm_, *stream_));
    stream_->synchronize();
    std::vector<double> out(values.size() * context_.nranks);
    CHECK_CUDA(cudaMemcpy(out.data(), all.get(), out.size() * sizeof(double), cudaMemcpyDeviceToHost));
    return out;
  }

  RankContext& context_;
  const Options& options_;
  ncclComm_t comm_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<Stream> stream_;
  DeviceBuffer a_, b_, c_, gradient_, wrong_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<std::unique_ptr<Event>> gemms_done_;  // per timed step: after its GEMMs
#ifdef PROBE_HAVE_NVSHMEM
  __nv_bfloat16* shmem_gradient_ = nullptr;
  __nv_bfloat16* shmem_received_ = nullptr;
  std::uint64_t* signals_ = nullptr;  // [0] scattered chunks arrived, [1] gathered chunks arrived
  std::uint64_t expected_scattered_ = 0, expected_gathered_ = 0;
#endif
};

}  // namespace

void run_step_family(RankContext& context) {
  StepFamily(context).run();
}

}  // namespace probe
