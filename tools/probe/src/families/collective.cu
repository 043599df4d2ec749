// Family `collective`: NCCL collectives from C++, one process per GPU, timed like nccl-tests.
//
// For every operation and every size from 8 B to 1 GiB (nccl-tests' `size`: the total buffer, see below):
// warm-up iterations, then back-to-back iterations on one stream with an event between consecutive ones.
// Each sample is one iteration's time, taken as the slowest rank's (a max-reduction over ranks, done after
// timing) because an operation finishes when its last rank does. algbw = bytes / median time; busbw =
// algbw x nccl-tests' factor. Out-of-place only. Every size's result is checked once before timing.
// Variant `graph` replays the same operation from a CUDA graph (device-side cost without host launches).
//
// bytes (as nccl-tests' size column):  all_reduce, broadcast: the buffer;  all_gather: the gathered output
// (count x nranks);  reduce_scatter: the input (count x nranks);  all_to_all: each rank's send buffer.
#include <nccl.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "../common/cuda_util.h"
#include "../common/nccl_util.h"
#include "families.h"

namespace probe {
namespace {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast };

struct CollectiveInfo {
  Collective op;
  const char* name;
  bool reduces;  // float sum; otherwise plain bytes
};

constexpr CollectiveInfo kCollectives[] = {
    {Collective::all_reduce, "all_reduce", true},         {Collective::all_gather, "all_gather", false},
    {Collective::reduce_scatter, "reduce_scatter", true}, {Collective::all_to_all, "all_to_all", false},
    {Collective::broadcast, "broadcast", false},
};

double busbw_factor(Collective op, int n) {
  switch (op) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return static_cast<double>(n - 1) / n;
    case Collective::broadcast:
      return 1.0;
  }
  return 1.0;
}

// Small integers, so float sums over ranks are exact.
__device__ __forceinline__ float float_pattern(int rank, std::size_t i) {
  return static_cast<float>((static_cast<std::uint32_t>(i) * 7u + rank * 13u) % 101u);
}
__device__ __forceinline__ unsigned char byte_pattern(int rank, std::size_t i) {
  return static_cast<unsigned char>(1u + (static_cast<std::uint32_t>(i) * 131u + rank * 17u + 3u) % 251u);
}

__global__ void fill_send_kernel(bool floats, void* buffer, std::size_t elements, int rank) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elements; i += stride) {
    if (floats)
      static_cast<float*>(buffer)[i] = float_pattern(rank, i);
    else
      static_cast<unsigned char*>(buffer)[i] = byte_pattern(rank, i);
  }
}

// `chunk` is the per-rank element count (of the gathered/scattered/exchanged pieces).
__global__ void verify_receive_kernel(Collective op, const void* buffer, std::size_t elements, std::size_t chunk,
                                      int rank, int nranks, unsigned long long* wrong) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elements; i += stride) {
    switch (op) {
      case Collective::all_reduce:
      case Collective::reduce_scatter: {
        const std::size_t source_index = op == Collective::all_reduce ? i : rank * chunk + i;
        float expected = 0;
        for (int q = 0; q < nranks; ++q) expected += float_pattern(q, source_index);
        local += static_cast<const float*>(buffer)[i] != expected;
        break;
      }
      case Collective::all_gather:
        local += static_cast<const unsigned char*>(buffer)[i] != byte_pattern(static_cast<int>(i / chunk), i % chunk);
        break;
      case Collective::all_to_all:
        local += static_cast<const unsigned char*>(buffer)[i] !=
                 byte_pattern(static_cast<int>(i / chunk), rank * chunk + i % chunk);
        break;
      case Collective::broadcast:
        local += static_cast<const unsigned char*>(buffer)[i] != byte_pattern(0, i);
        break;
    }
  }
  if (local) atomicAdd(wrong, local);
}

// Element counts of one call: what each rank sends and receives, and nccl-tests' size in bytes.
struct Shape {
  std::size_t send_elements = 0, receive_elements = 0, chunk = 0, count = 0;
  std::uint64_t bytes = 0;
  std::size_t element_size = 1;
};

Shape shape_for(Collective op, std::uint64_t requested, int n) {
  Shape s;
  s.element_size = (op == Collective::all_reduce || op == Collective::reduce_scatter) ? 4 : 1;
  const std::size_t elements = requested / s.element_size;
  switch (op) {
    case Collective::all_reduce:
    case Collective::broadcast:
      s.send_elements = s.receive_elements = s.count = elements;
      s.chunk = elements;
      break;
    case Collective::all_gather:
      s.chunk = s.count = elements / n;
      s.send_elements = s.chunk;
      s.receive_elements = s.chunk * n;
      break;
    case Collective::reduce_scatter:
      s.chunk = s.count = elements / n;
      s.send_elements = s.chunk * n;
      s.receive_elements = s.chunk;
      break;
    case Collective::all_to_all:
      s.chunk = s.count = elements / n;
      s.send_elements = s.receive_elements = s.chunk * n;
      break;
  }
  const std::size_t total = std::max(s.send_elements, s.receive_elements);
  s.bytes = total * s.element_size;
  return s;
}

class CollectiveFamily {
 public:
  explicit CollectiveFamily(RankContext& context) : context_(context), options_(*context.options) {}

  void run() {
    const int rank = context_.rank, n = context_.nranks;
    ncclUniqueId id;
    if (context_.is_root()) CHECK_NCCL(ncclGetUniqueId(&id));
    context_.share_blob(&id, sizeof id);
    CHECK_CUDA(cudaSetDevice(rank));
    stream_ = std::make_unique<Stream>(rank);
    CHECK_NCCL(ncclCommInitRank(&comm_, n, id, rank));

    const std::vector<std::uint64_t> sizes = size_sweep(8, 1 * GiB, options_);
    const std::uint64_t largest = sizes.back();
    send_ = DeviceBuffer(rank, largest);
    receive_ = DeviceBuffer(rank, largest);
    wrong_ = DeviceBuffer(rank, sizeof(unsigned long long));
    barrier_word_ = DeviceBuffer(rank, sizeof(float));
    for (const CollectiveInfo& info : kCollectives)
      for (std::uint64_t bytes : sizes) measure(info, bytes);
    CHECK_NCCL(ncclCommDestroy(comm_));
    comm_ = nullptr;
  }

  ~CollectiveFamily() {
    if (comm_) ncclCommAbort(comm_);
  }

 private:
  void enqueue(Collective op, const Shape& s) {
    const int n = context_.nranks;
    void* out = receive_.get();
    const void* in = send_.get();
    switch (op) {
      case Collective::all_reduce:
        CHECK_NCCL(ncclAllReduce(in, out, s.count, ncclFloat32, ncclSum, comm_, *stream_));
        break;
      case Collective::all_gather:
        CHECK_NCCL(ncclAllGather(in, out, s.count, ncclInt8, comm_, *stream_));
        break;
      case Collective::reduce_scatter:
        CHECK_NCCL(ncclReduceScatter(in, out, s.count, ncclFloat32, ncclSum, comm_, *stream_));
        break;
      case Collective::all_to_all: {
        // Grouped point-to-point, as nccl-tests' alltoall does: chunk p of the send buffer goes to rank p.
        const auto* in_bytes = static_cast<const char*>(in);
        auto* out_bytes = static_cast<char*>(out);
        CHECK_NCCL(ncclGroupStart());
        for (int peer = 0; peer < n; ++peer) {
          CHECK_NCCL(ncclSend(in_bytes + peer * s.chunk, s.chunk, ncclInt8, peer, comm_, *stream_));
          CHECK_NCCL(ncclRecv(out_bytes + peer * s.chunk, s.chunk, ncclInt8, peer, comm_, *stream_));
        }
        CHECK_NCCL(ncclGroupEnd());
        break;
      }
      case Collective::broadcast:
        CHECK_NCCL(ncclBroadcast(in, out, s.count, ncclInt8, /*root=*/0, comm_, *stream_));
        break;
    }
  }

  void barrier() {
    CHECK_NCCL(ncclAllReduce(barrier_word_.get(), barrier_word_.get(), 1, ncclFloat32, ncclSum, comm_, *stream_));
    stream_->synchronize();
  }

  void check_once(const CollectiveInfo& info, const Shape& s) {
    const int rank = context_.rank;
    fill_send_kernel<<<1024, 256, 0, *stream_>>>(info.reduces, send_.get(), s.send_elements, rank);
    CHECK_LAUNCH();
    poison(receive_.get(), s.receive_elements * s.element_size, *stream_);
    CHECK_CUDA(cudaMemsetAsync(wrong_.get(), 0, sizeof(unsigned long long), *stream_));
    enqueue(info.op, s);
    verify_receive_kernel<<<1024, 256, 0, *stream_>>>(info.op, receive_.get(), s.receive_elements, s.chunk, rank,
                                                      context_.nranks, wrong_.as<unsigned long long>());
    CHECK_LAUNCH();
    unsigned long long wrong = 0;
    CHECK_CUDA(cudaMemcpyAsync(&wrong, wrong_.get(), sizeof wrong, cudaMemcpyDeviceToHost, *stream_));
    stream_->synchronize();
    if (wrong)
      throw ProbeError(std::string("verification failed: ") + info.name + " " + std::to_string(s.bytes) +
                       " B: " + std::to_string(wrong) + " wrong elements on rank " + std::to_string(rank));
  }

  void measure(const CollectiveInfo& info, std::uint64_t requested) {
    const int n = context_.nranks;
    const Shape s = shape_for(info.op, requested, n);
    if (s.count == 0) return;  // smaller than one element per rank
    check_once(info, s);

    const bool small = s.bytes <= 1 * MiB, medium = s.bytes <= 64 * MiB;
    const int warmup = options_.quick ? 2 : (small ? 20 : medium ? 10 : 5);
    const int iterations = options_.quick ? 5 : (small ? 200 : medium ? 100 : 30);
    for (int i = 0; i < warmup; ++i) enqueue(info.op, s);
    stream_->synchronize();
    while (static_cast<int>(events_.size()) < iterations + 1) events_.push_back(std::make_unique<Event>(context_.rank));
    barrier();
    events_[0]->record(*stream_);
    for (int i = 0; i < iterations; ++i) {
      enqueue(info.op, s);
      events_[i + 1]->record(*stream_);
    }
    stream_->synchronize();
    std::vector<double> times(iterations);
    for (int i = 0; i < iterations; ++i) times[i] = elapsed_seconds(*events_[i], *events_[i + 1]);
    slowest_rank(times, comm_, *stream_);
    Record record = make_record(info, s, "out_of_place", std::move(times));
    record.extra("warmup", static_cast<std::int64_t>(warmup));
    context_.emit(record);

    measure_graph(info, s, small ? 50 : medium ? 20 : 5);
  }

  // The same operation captured `ops` times into a CUDA graph and replayed: no host launch in the loop, so
  // small sizes show the device-side cost per operation (the out_of_place samples of small sizes also
  // contain the host's launch rate, as nccl-tests' do). A sample is one replay's time divided by `ops`.
  void measure_graph(const CollectiveInfo& info, const Shape& s, int ops) {
    if (options_.quick) ops = 2;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(*stream_, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < ops; ++i) enqueue(info.op, s);
    CHECK_CUDA(cudaStreamEndCapture(*stream_, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&graph_exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(graph_exec, *stream_));  // warm-up: the first replay uploads the graph
    stream_->synchronize();
    const int replays = options_.quick ? 2 : 20;
    Event start(context_.rank), stop(context_.rank);
    std::vector<double> times;
    barrier();
    for (int r = 0; r < replays; ++r) {
      start.record(*stream_);
      CHECK_CUDA(cudaGraphLaunch(graph_exec, *stream_));
      stop.record(*stream_);
      times.push_back(elapsed_seconds(start, stop) / ops);
    }
    CHECK_CUDA(cudaGraphExecDestroy(graph_exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    slowest_rank(times, comm_, *stream_);
    Record record = make_record(info, s, "graph", std::move(times));
    record.extra("ops_per_graph", static_cast<std::int64_t>(ops));
    context_.emit(record);
  }

  Record make_record(const CollectiveInfo& info, const Shape& s, const char* variant, std::vector<double> times) const {
    const int n = context_.nranks;
    Record record;
    record.family = "collective";
    record.test = info.name;
    record.variant = variant;
    for (int r = 0; r < n; ++r) record.ranks.push_back(r);
    record.bytes = s.bytes;
    record.unit = "s";
    record.samples = std::move(times);
    const double median = summarize(record.samples).median;
    const double algbw = static_cast<double>(s.bytes) / median;
    record.extra("algbw", algbw);
    record.extra("busbw", algbw * busbw_factor(info.op, n));
    record.extra("busbw_factor", busbw_factor(info.op, n));
    record.extra("count", static_cast<std::int64_t>(s.count));
    record.extra("dtype", std::string(info.reduces ? "float32" : "int8"));
    return record;
  }

  RankContext& context_;
  const Options& options_;
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<Stream> stream_;
  DeviceBuffer send_, receive_, wrong_, barrier_word_;
  std::vector<std::unique_ptr<Event>> events_;
};

}  // namespace

void run_collective_family(RankContext& context) {
  CollectiveFamily(context).run();
}

}  // namespace probe
