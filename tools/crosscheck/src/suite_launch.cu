// Kernel launches and the host's own costs, family `launch` (ranks [gpu], bytes 0 except memcpy_sync).
//
// empty_kernel <<<1, 1>>> through every Lane method: variant `single` (one launch per sample),
// `launch_to_completion` (host_sync, one launch), `back_to_back` (events_b2b / host_sync, 1,000 launches),
// `back_to_back_gated` (gate / wait_value / event_from_other_stream, 200 queued launches released at once),
// `graph_back_to_back` (a graph of 200 kernel nodes). Methods of the host alone:
//   host_clock  host_enqueue          the <<<>>> call alone, the GPU idle (one call per sample)
//               host_rate             1,000 calls in a row, per call (the queue never fills)
//               graph_launch_call     cudaGraphLaunch of a one-kernel graph, the call alone
//               queue_fill            8,192 calls behind a 300 ms kernel: per call; extra queue_depth = the calls
//                                     that returned before one had to wait for room
//   host_poll   launch_to_start       host clock from before the call until the kernel's first store to mapped
//                                     host memory is seen (includes that store's trip over PCIe, ~1 us)
//               graph_launch_to_start the same for a graph holding that kernel
// Host costs (host_clock unless said):
//   stream_synchronize/idle, event_synchronize/idle, event_query/complete: the call on finished work
//   {stream,event,device}_synchronize/wakeup (host_poll): a kernel stores to mapped host memory as its last act;
//       a second host thread spinning on it notes when it lands; the sample is the synchronising call's return
//       less that moment: how long the call takes to notice finished work
//   memcpy_sync/{d2d,h2d_pinned,d2h_pinned,h2d_pageable,d2h_pageable} (4 B): the blocking cudaMemcpy call
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "suites.hpp"

namespace xc {

namespace {

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Counts its runs into a mapped host word: a graph replays the same parameters, so the host waits for a change.
__global__ void bump_kernel(volatile unsigned* word) {
  *word = *word + 1;
  __threadfence_system();
}

__global__ void sleep_then_store(unsigned long long ns, volatile unsigned* word, unsigned value) {
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
  *word = value;
  __threadfence_system();
}

__global__ void noop_kernel() {}

Op empty_op(int device) {
  Op op;
  op.family = "launch";
  op.test = "empty_kernel";
  op.ranks = {device};
  op.enqueue = [](cudaStream_t s) { launch_empty(s); };
  return op;
}

Result launch_result(int device, const char* test, const char* variant, std::vector<double> samples,
                     std::uint64_t bytes = 0) {
  Result r;
  r.family = "launch";
  r.test = test;
  r.variant = variant;
  r.ranks = {device};
  r.bytes = bytes;
  r.samples = std::move(samples);
  return r;
}

std::string variant_of(Method m, Shape shape) {
  if (shape == Shape::single) return m == Method::host_sync ? "launch_to_completion" : "single";
  switch (m) {
    case Method::events_b2b:
    case Method::host_sync:
      return "back_to_back";
    case Method::graph:
      return "graph_back_to_back";
    default:
      return "back_to_back_gated";
  }
}

}  // namespace

void run_launch(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = lane.stream();
  Op op = empty_op(device);
  for (int i = 0; i < 200; ++i) op.enqueue(s);  // module load and first-launch setup
  must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  const int singles = config.quick ? 50 : 2000;
  const int batches = config.quick ? 3 : 30;
  for (Method m : all_methods()) {
    if (!method_wanted(config, m)) continue;
    for (Shape shape : {Shape::single, Shape::back_to_back}) {
      if (!lane.applies(m, shape, op) || deadline.passed()) continue;
      const bool b2b = shape == Shape::back_to_back;
      const bool host_bound = m == Method::events_b2b || m == Method::host_sync;
      const int depth = host_bound ? 1000 : 200;
      auto times = lane.time(m, shape, op, b2b ? batches : singles, depth);
      std::vector<Extra> more{extra("kernels_per_sample", b2b ? depth : 1)};
      emit(out, m, op, variant_of(m, shape), std::move(times), std::move(more));
    }
  }
  if (deadline.passed()) return;

  // Host-only methods.
  std::vector<double> enqueue, rate, graph_call, to_start, graph_to_start;
  for (int i = 0; i < singles; ++i) {
    const double t0 = now_s();
    launch_empty(s);
    enqueue.push_back(now_s() - t0);
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  for (int b = 0; b < batches; ++b) {
    const double t0 = now_s();
    for (int i = 0; i < 1000; ++i) launch_empty(s);
    rate.push_back((now_s() - t0) / 1000);
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  void* word_host = nullptr;
  must(cudaHostAlloc(&word_host, 64, cudaHostAllocMapped), "cudaHostAlloc");
  auto* word = static_cast<volatile unsigned*>(word_host);
  *word = 0;
  void* word_device_void = nullptr;
  must(cudaHostGetDevicePointer(&word_device_void, word_host, 0), "cudaHostGetDevicePointer");
  auto* word_device = static_cast<volatile unsigned*>(word_device_void);
  auto wait_change = [&](unsigned before) {
    const double limit = now_s() + 2.0;
    while (*word == before)
      if (now_s() > limit) throw Failure("launch_to_start: the kernel's store never arrived");
  };
  for (int i = 0; i < singles; ++i) {
    const unsigned before = *word;
    const double t0 = now_s();
    bump_kernel<<<1, 1, 0, s>>>(word_device);
    wait_change(before);
    to_start.push_back(now_s() - t0);
    launched("bump_kernel");
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  must(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  bump_kernel<<<1, 1, 0, s>>>(word_device);
  must(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
  must(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  must(cudaGraphUpload(exec, s), "cudaGraphUpload");
  must(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  for (int i = 0; i < singles; ++i) {
    const unsigned before = *word;
    const double t0 = now_s();
    must(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
    const double called = now_s();
    wait_change(before);
    const double seen = now_s();
    graph_call.push_back(called - t0);
    graph_to_start.push_back(seen - t0);
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  out.write("host_clock", launch_result(device, "empty_kernel", "host_enqueue", std::move(enqueue)));
  Result r = launch_result(device, "empty_kernel", "host_rate", std::move(rate));
  r.extras.push_back(extra("kernels_per_sample", 1000));
  out.write("host_clock", std::move(r));
  out.write("host_clock", launch_result(device, "empty_kernel", "graph_launch_call", std::move(graph_call)));
  out.write("host_poll", launch_result(device, "empty_kernel", "launch_to_start", std::move(to_start)));
  out.write("host_poll", launch_result(device, "empty_kernel", "graph_launch_to_start", std::move(graph_to_start)));

  // How far the host runs ahead: calls return at once until the launch queue is full, then each waits for room.
  if (!deadline.passed()) {
    const int calls = config.quick ? 2048 : 8192;
    std::vector<double> per_call;
    per_call.reserve(calls);
    lane.sleep(s, 300'000'000ull);
    int depth = -1;
    for (int i = 0; i < calls; ++i) {
      const double t0 = now_s();
      noop_kernel<<<1, 1, 0, s>>>();
      const double dt = now_s() - t0;
      per_call.push_back(dt);
      if (depth < 0 && dt > 1e-3) depth = i;
    }
    launched("noop_kernel");
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    Result q = launch_result(device, "empty_kernel", "queue_fill", std::move(per_call));
    q.extras.push_back(extra("queue_depth", depth));
    q.extras.push_back(extra("calls", calls));
    q.extras.push_back(extra("blocking_kernel_s", 0.3));
    out.write("host_clock", std::move(q), static_cast<std::size_t>(calls));
  }
  cudaFreeHost(word_host);
}

void run_host_costs(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = lane.stream();
  const int n = config.quick ? 50 : 1000;
  cudaEvent_t done;
  must(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  launch_empty(s);
  must(cudaEventRecord(done, s), "cudaEventRecord");
  must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  std::vector<double> stream_idle, event_idle, query;
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    stream_idle.push_back(now_s() - t0);
    t0 = now_s();
    must(cudaEventSynchronize(done), "cudaEventSynchronize");
    event_idle.push_back(now_s() - t0);
    t0 = now_s();
    must(cudaEventQuery(done), "cudaEventQuery");
    query.push_back(now_s() - t0);
  }
  out.write("host_clock", launch_result(device, "stream_synchronize", "idle", std::move(stream_idle)));
  out.write("host_clock", launch_result(device, "event_synchronize", "idle", std::move(event_idle)));
  out.write("host_clock", launch_result(device, "event_query", "complete", std::move(query)));

  // Wake-up: a poller thread notes when the kernel's last store lands; the caller notes when its sync returns.
  void* word_host = nullptr;
  must(cudaHostAlloc(&word_host, 64, cudaHostAllocMapped), "cudaHostAlloc");
  auto* word = static_cast<volatile unsigned*>(word_host);
  *word = 0;
  void* word_device = nullptr;
  must(cudaHostGetDevicePointer(&word_device, word_host, 0), "cudaHostGetDevicePointer");
  std::atomic<unsigned> armed{0};
  std::atomic<double> seen_at{0};
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    unsigned last = 0;
    while (!stop.load()) {
      const unsigned want = armed.load(std::memory_order_acquire);
      if (want == last) continue;
      while (*word != want && !stop.load()) {
      }
      seen_at.store(now_s(), std::memory_order_release);
      last = want;
    }
  });
  struct JoinOnExit {  // an exception must not leave the poller running (a joinable thread terminates)
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinOnExit() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } join_on_exit{stop, poller};
  unsigned ticket = 0;
  auto wakeups = [&](const char* test, auto&& synchronise) {
    std::vector<double> samples;
    const int count = config.quick ? 20 : 500;
    for (int i = 0; i < count && !deadline.passed(); ++i) {
      seen_at.store(0);
      armed.store(++ticket, std::memory_order_release);
      // 200 us: the host is inside the synchronising call, and the poller spinning, well before the store.
      sleep_then_store<<<1, 1, 0, s>>>(200'000, static_cast<volatile unsigned*>(word_device), ticket);
      launched("sleep_then_store");
      synchronise();
      const double returned = now_s();
      while (seen_at.load(std::memory_order_acquire) == 0)
        if (now_s() > returned + 2.0) throw Failure(std::string(test) + " wakeup: the kernel's store was never seen");
      samples.push_back(std::max(0.0, returned - seen_at.load()));
    }
    out.write("host_poll", launch_result(device, test, "wakeup", std::move(samples)));
  };
  wakeups("stream_synchronize", [&] { must(cudaStreamSynchronize(s), "cudaStreamSynchronize"); });
  wakeups("event_synchronize", [&] {
    must(cudaEventRecord(done, s), "cudaEventRecord");
    must(cudaEventSynchronize(done), "cudaEventSynchronize");
  });
  wakeups("device_synchronize", [&] { must(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
  stop.store(true);
  poller.join();
  cudaFreeHost(word_host);
  cudaEventDestroy(done);

  // The blocking cudaMemcpy of 4 bytes, each kind of memory.
  void *d0 = nullptr, *d1 = nullptr, *pinned = nullptr;
  must(cudaMalloc(&d0, 4096), "cudaMalloc");
  must(cudaMalloc(&d1, 4096), "cudaMalloc");
  must(cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault), "cudaHostAlloc");
  void* pageable = std::malloc(4096);
  std::memset(pageable, 1, 4096);
  struct Case {
    const char* variant;
    void* to;
    const void* from;
    cudaMemcpyKind kind;
  };
  const Case cases[] = {{"d2d", d1, d0, cudaMemcpyDeviceToDevice},
                        {"h2d_pinned", d0, pinned, cudaMemcpyHostToDevice},
                        {"d2h_pinned", pinned, d0, cudaMemcpyDeviceToHost},
                        {"h2d_pageable", d0, pageable, cudaMemcpyHostToDevice},
                        {"d2h_pageable", pageable, d0, cudaMemcpyDeviceToHost}};
  for (const Case& c : cases) {
    std::vector<double> samples;
    for (int i = 0; i < 10; ++i) must(cudaMemcpy(c.to, c.from, 4, c.kind), "cudaMemcpy");
    for (int i = 0; i < n; ++i) {
      const double t0 = now_s();
      must(cudaMemcpy(c.to, c.from, 4, c.kind), "cudaMemcpy");
      samples.push_back(now_s() - t0);
    }
    out.write("host_clock", launch_result(device, "memcpy_sync", c.variant, std::move(samples), 4));
  }
  cudaFree(d0);
  cudaFree(d1);
  cudaFreeHost(pinned);
  std::free(pageable);
}

}  // namespace xc
