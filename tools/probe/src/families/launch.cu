// Family `launch`: the cost of launching an empty kernel, measured five ways on every visible GPU.
//   host_enqueue          host time spent inside one cudaLaunchKernel call (no synchronisation)
//   launch_to_completion  host time from before the launch until cudaStreamSynchronize returns
//   back_to_back          1,000 launches in a row, event-timed; per-kernel throughput including the host's
//                         submission rate
//   back_to_back_gated    200 launches queued behind the stream gate, then released: the device-side cost
//                         per kernel with the queue full (no host in the loop)
//   graph_back_to_back    a CUDA graph of 200 kernel nodes, replayed and event-timed, per kernel
#include <vector>

#include "../common/cuda_util.h"
#include "../common/timing.h"
#include "families.h"

namespace probe {
namespace {

class LaunchFamily {
 public:
  explicit LaunchFamily(RankContext& context) : context_(context), options_(*context.options) {}

  void run() {
    for (int gpu = 0; gpu < visible_device_count(); ++gpu) measure(gpu);
  }

 private:
  void emit(int gpu, const char* variant, std::vector<double> samples, int kernels_per_sample) {
    Record record;
    record.family = "launch";
    record.test = "empty_kernel";
    record.variant = variant;
    record.ranks = {gpu};
    record.bytes = 0;
    record.unit = "s";
    record.samples = std::move(samples);
    record.extra("kernels_per_sample", static_cast<std::int64_t>(kernels_per_sample));
    context_.emit(record);
  }

  void launch(cudaStream_t stream) {
    empty_kernel<<<1, 1, 0, stream>>>();
    CHECK_LAUNCH();
  }

  void measure(int gpu) {
    CHECK_CUDA(cudaSetDevice(gpu));
    Stream stream(gpu);
    Event start(gpu), stop(gpu);
    Gate gate;
    for (int i = 0; i < 200; ++i) launch(stream);  // warm-up: module load, first-launch setup
    stream.synchronize();

    const int single_samples = options_.quick ? 100 : 2000;
    std::vector<double> enqueue, completion;
    for (int i = 0; i < single_samples; ++i) {
      const double before = host_seconds();
      launch(stream);
      const double launched = host_seconds();
      stream.synchronize();
      const double done = host_seconds();
      enqueue.push_back(launched - before);
      completion.push_back(done - before);
    }
    emit(gpu, "host_enqueue", std::move(enqueue), 1);
    emit(gpu, "launch_to_completion", std::move(completion), 1);

    const int batches = options_.quick ? 3 : 30;
    constexpr int kBurst = 1000;
    std::vector<double> burst;
    for (int b = 0; b < batches; ++b) {
      start.record(stream);
      for (int i = 0; i < kBurst; ++i) launch(stream);
      stop.record(stream);
      burst.push_back(elapsed_seconds(start, stop) / kBurst);
    }
    emit(gpu, "back_to_back", std::move(burst), kBurst);

    // 200 queued launches stay well inside the stream's queue, so enqueueing never blocks behind the gate.
    constexpr int kQueued = 200;
    emit(gpu, "back_to_back_gated", time_pipelined(gate, stream, batches, kQueued, [&] { launch(stream); }), kQueued);

    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kQueued; ++i) launch(stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&graph_exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(graph_exec, stream));  // warm-up: the first replay uploads the graph
    stream.synchronize();
    std::vector<double> replay;
    for (int b = 0; b < batches; ++b) {
      start.record(stream);
      CHECK_CUDA(cudaGraphLaunch(graph_exec, stream));
      stop.record(stream);
      replay.push_back(elapsed_seconds(start, stop) / kQueued);
    }
    CHECK_CUDA(cudaGraphExecDestroy(graph_exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    emit(gpu, "graph_back_to_back", std::move(replay), kQueued);
  }

  RankContext& context_;
  const Options& options_;
};

}  // namespace

void run_launch_family(RankContext& context) {
  LaunchFamily(context).run();
}

}  // namespace probe
