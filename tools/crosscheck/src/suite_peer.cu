// Two GPUs: peer copies, managed memory between GPUs and long runs of one peer copy (GPU 0 and Config::peer).
//
// copy, ranks [source, destination], 4 B - 1 GiB, variants single / pipelined, every method:
//   ce_peer        a copy engine copy on the source GPU's stream (push; the probe's ce_peer). cudaMemcpyAsync with
//                  unified addresses and peer access on, the same engine path as cudaMemcpyPeerAsync, which stream
//                  capture refuses (cudaErrorStreamCaptureUnsupported): the graph method needs this one
//   ce_peer_pull   the same copy on the destination GPU's stream
//   sm_push        the SM copy kernel on the source GPU storing into the peer's memory
//   sm_pull        the SM copy kernel on the destination GPU loading from the peer's memory
//   ce_peer_bidir  a->b on a's stream and b->a on b's stream at once (forked from and joined back into a's stream
//                  with events, so every method holds or replays both); per copy pair, `bytes` per direction
//   sm_bidir       the same with SM push kernels
// Each test runs in both directions (0 -> peer and peer -> 0). event_from_other_stream is released by the other GPU.
// uvm: first_touch/gpu_to_gpu and prefetch/gpu_to_gpu, ranks [peer, 0] (region on the peer, used by GPU 0).
// jitter: ce_peer and sm_push 0 -> peer at 1 MiB and 64 MiB.
#include <memory>

#include "suites.hpp"

namespace xc {

namespace {

void enable_peer(int a, int b) {
  if (a == b) return;
  int can = 0;
  must(cudaDeviceCanAccessPeer(&can, a, b), "cudaDeviceCanAccessPeer");
  if (!can) throw Failure("GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b));
  must(cudaSetDevice(a), "cudaSetDevice");
  const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled)
    cudaGetLastError();
  else
    must(e, "cudaDeviceEnablePeerAccess");
}

int peer_of(const Config& config) {
  int gpus = 0;
  must(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (gpus < 2) return 0;  // --allow-self-peer: GPU 0 to itself, a dry run of the code paths
  return config.peer;
}

struct Buffers {
  int a, b;
  std::uint64_t bytes;
  void *src[2] = {nullptr, nullptr}, *dst[2] = {nullptr, nullptr};  // [0] on a, [1] on b
  Buffers(int ga, int gb, std::uint64_t n) : a(ga), b(gb), bytes(n) {
    for (int i = 0; i < 2; ++i) {
      must(cudaSetDevice(i ? b : a), "cudaSetDevice");
      must(cudaMalloc(&src[i], n), "cudaMalloc");
      must(cudaMalloc(&dst[i], n), "cudaMalloc");
      fill_pattern(src[i], n, 21 + i, nullptr);
    }
    must(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    must(cudaSetDevice(a), "cudaSetDevice");
    must(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  ~Buffers() {
    for (int i = 0; i < 2; ++i) {
      cudaSetDevice(i ? b : a);
      cudaFree(src[i]);
      cudaFree(dst[i]);
    }
  }
};

// Events that fork one stream's work onto another GPU's stream and join it back.
struct ForkJoin {
  cudaEvent_t fork = nullptr, join = nullptr;
  cudaStream_t second = nullptr;
  int second_device;
  ForkJoin(int first_device, int second_dev) : second_device(second_dev) {
    must(cudaSetDevice(first_device), "cudaSetDevice");
    must(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "cudaEventCreate");
    must(cudaSetDevice(second_dev), "cudaSetDevice");
    must(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), "cudaEventCreate");
    must(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), "cudaStreamCreate");
    must(cudaSetDevice(first_device), "cudaSetDevice");
  }
  ~ForkJoin() {
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(second);
  }
};

}  // namespace

void run_peer_copies(TraceSet& out, const Config& config, const Deadline& deadline) {
  const int peer = peer_of(config);
  enable_peer(0, peer);
  enable_peer(peer, 0);
  int sms = 0;
  must(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  const std::uint64_t largest = config.max_bytes;
  Buffers buffers(0, peer, largest);
  // One lane per GPU, each with its second stream on the other GPU (event_from_other_stream across GPUs).
  Lane lanes[2] = {Lane(0, peer), Lane(peer, 0)};
  ForkJoin forks[2] = {ForkJoin(0, peer), ForkJoin(peer, 0)};
  for (int dir = 0; dir < 2; ++dir) {
    const int a = dir ? peer : 0, b = dir ? 0 : peer;
    void* from = buffers.src[dir];
    void* to = buffers.dst[1 - dir];         // on b
    void* back_from = buffers.src[1 - dir];  // on b
    void* back_to = buffers.dst[dir];        // on a
    const unsigned seed = 21 + dir;
    for (std::uint64_t bytes : sweep(config, 4, largest)) {
      struct Test {
        const char* name;
        const char* engine;
        int lane;  // 0: issued on a, 1: on b
        std::function<void(cudaStream_t)> enqueue;
        std::function<void(cudaStream_t, unsigned long long*)> clocked;
        const char* direction;
      };
      ForkJoin& fj = forks[dir];
      auto bidir = [&, bytes](bool sm) {
        return [&, bytes, sm](cudaStream_t st) {
          must(cudaEventRecord(fj.fork, st), "cudaEventRecord");
          must(cudaSetDevice(b), "cudaSetDevice");
          must(cudaStreamWaitEvent(fj.second, fj.fork, 0), "cudaStreamWaitEvent");
          if (sm)
            launch_sm_copy(back_to, back_from, bytes, fj.second, nullptr, sms);
          else
            must(cudaMemcpyAsync(back_to, back_from, bytes, cudaMemcpyDefault, fj.second), "cudaMemcpyAsync");
          must(cudaEventRecord(fj.join, fj.second), "cudaEventRecord");
          must(cudaSetDevice(a), "cudaSetDevice");
          if (sm)
            launch_sm_copy(to, from, bytes, st, nullptr, sms);
          else
            must(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync");
          must(cudaStreamWaitEvent(st, fj.join, 0), "cudaStreamWaitEvent");
        };
      };
      const Test tests[] = {
          {"ce_peer", "ce", 0,
           [=](cudaStream_t st) { must(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync"); },
           nullptr, "uni"},
          {"ce_peer_pull", "ce", 1,
           [=](cudaStream_t st) { must(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync"); },
           nullptr, "uni"},
          {"sm_push", "sm", 0, [=](cudaStream_t st) { launch_sm_copy(to, from, bytes, st, nullptr, sms); },
           [=](cudaStream_t st, unsigned long long* c) { launch_sm_copy(to, from, bytes, st, c, sms); }, "uni"},
          {"sm_pull", "sm", 1, [=](cudaStream_t st) { launch_sm_copy(to, from, bytes, st, nullptr, sms); },
           [=](cudaStream_t st, unsigned long long* c) { launch_sm_copy(to, from, bytes, st, c, sms); }, "uni"},
          {"ce_peer_bidir", "ce", 0, bidir(false), nullptr, "bidir_one"},
          {"sm_bidir", "sm", 0, bidir(true), nullptr, "bidir_one"},
      };
      for (const Test& t : tests) {
        if (deadline.passed()) {
          std::fprintf(stderr, "crosscheck: peer copies: deadline passed\n");
          return;
        }
        Lane& lane = lanes[t.lane ? (dir ? 0 : 1) : dir];
        must(cudaSetDevice(b), "cudaSetDevice");
        must(cudaMemset(to, 0xEE, bytes), "cudaMemset");
        must(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        must(cudaSetDevice(lane.device()), "cudaSetDevice");
        Op op;
        op.test = t.name;
        op.ranks = {a, b};
        op.bytes = bytes;
        op.enqueue = t.enqueue;
        op.enqueue_clocked = t.clocked;
        op.extras = {extra("engine", t.engine), extra("direction", t.direction)};
        const double t0 = now_s();
        op.enqueue(lane.stream());
        must(cudaStreamSynchronize(lane.stream()), "cudaStreamSynchronize");
        const double op_s = now_s() - t0;
        const int depth =
            static_cast<int>(std::clamp<std::uint64_t>(64 * MiB / std::max<std::uint64_t>(bytes, 1), 8, 64));
        for (Method m : all_methods()) {
          if (!method_wanted(config, m)) continue;
          for (Shape shape : {Shape::single, Shape::back_to_back}) {
            if (!lane.applies(m, shape, op)) continue;
            const bool b2b = shape == Shape::back_to_back;
            const int samples = config.quick ? 5
                                : b2b        ? samples_for(depth * op_s + 30e-6, 0.03, 3, 50)
                                             : samples_for(op_s + 30e-6, 0.03, 3, 200);
            auto times = lane.time(m, shape, op, samples, depth);
            std::vector<Extra> more;
            if (b2b) more.push_back(extra("depth", depth));
            if (t.direction[0] == 'b' && !times.empty()) {
              std::vector<double> sorted = times;
              std::sort(sorted.begin(), sorted.end());
              more.push_back(extra("sum_bw", 2.0 * bytes / quantile_sorted(sorted, 0.5)));
            }
            emit(out, m, op, b2b ? "pipelined" : "single", std::move(times), std::move(more));
          }
        }
        Lane& checker = lanes[dir ? 0 : 1];  // the destination's lane
        must(cudaSetDevice(b), "cudaSetDevice");
        if (count_mismatches(to, bytes, seed, checker.stream()) != 0)
          throw Failure(std::string("peer copy ") + t.name + ": wrong data");
      }
    }
  }
}

void run_peer_uvm(TraceSet& out, const Config& config, const Deadline& deadline) {
  const int peer = peer_of(config);
  enable_peer(0, peer);
  enable_peer(peer, 0);
  Lane lane(0, peer);
  size_t free_bytes = 0, total = 0;
  must(cudaSetDevice(0), "cudaSetDevice");
  must(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  const std::uint64_t cap = std::min<std::uint64_t>(config.uvm_max_bytes, free_bytes / 8);
  unsigned long long* bad = nullptr;
  must(cudaMalloc(reinterpret_cast<void**>(&bad), sizeof *bad), "cudaMalloc");
  must(cudaMemset(bad, 0, sizeof *bad), "cudaMemset");
  for (std::uint64_t bytes : sweep(config, 64 * KiB, cap)) {
    if (deadline.passed()) break;
    void* region = nullptr;
    must(cudaMallocManaged(&region, bytes), "cudaMallocManaged");
    cudaMemLocation on_peer{};
    on_peer.type = cudaMemLocationTypeDevice;
    on_peer.id = peer;
    cudaMemLocation on_zero = on_peer;
    on_zero.id = 0;
    const std::uint64_t pages = bytes / 4096;
    auto* words = static_cast<unsigned*>(region);
    for (std::uint64_t p = 0; p < pages; ++p) words[p * 1024] = static_cast<unsigned>(p);
    cudaStream_t stream = lane.stream();
    auto place_on_peer = [=] {
      must(cudaMemPrefetchAsync(region, bytes, on_peer, 0, stream), "cudaMemPrefetchAsync");
      must(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    };
    Op move;
    move.family = "uvm";
    move.test = "prefetch";
    move.ranks = {peer, 0};
    move.bytes = bytes;
    move.single_only = true;
    move.capturable = false;
    move.warmup = 1;
    move.prepare = place_on_peer;
    move.enqueue = [=](cudaStream_t st) {
      must(cudaMemPrefetchAsync(region, bytes, on_zero, 0, st), "cudaMemPrefetchAsync");
    };
    Op touch = move;
    touch.test = "first_touch";
    touch.enqueue = [=](cudaStream_t st) { launch_touch_pages(region, pages, bad, nullptr, st); };
    touch.enqueue_clocked = [=](cudaStream_t st, unsigned long long* c) {
      launch_touch_pages(region, pages, bad, c, st);
    };
    touch.extras = {extra("page_bytes", std::uint64_t{4096})};
    const int samples = config.quick ? 2 : bytes <= 256 * MiB ? 6 : 3;
    for (Op* op : {&touch, &move}) {
      for (Method m : {Method::events_single, Method::host_sync, Method::kernel_clock}) {
        if (!method_wanted(config, m) || !lane.applies(m, Shape::single, *op)) continue;
        auto times = lane.time(m, Shape::single, *op, samples, 1);
        emit(out, m, *op, "gpu_to_gpu", std::move(times));
      }
    }
    must(cudaFree(region), "cudaFree");
    unsigned long long mismatches = 0;
    must(cudaMemcpy(&mismatches, bad, sizeof mismatches, cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (mismatches) throw Failure("peer uvm: touched pages lost their contents");
  }
}

void run_peer_jitter(TraceSet& out, const Config& config, const Deadline& deadline) {
  const int peer = peer_of(config);
  enable_peer(0, peer);
  int sms = 0;
  must(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  Buffers buffers(0, peer, 64 * MiB);
  Lane lane(0, peer);
  std::vector<Op> ops;
  void* from = buffers.src[0];
  void* to = buffers.dst[1];
  for (std::uint64_t bytes : {1 * MiB, 64 * MiB}) {
    Op ce;
    ce.test = "ce_peer";
    ce.ranks = {0, peer};
    ce.bytes = bytes;
    ce.extras = {extra("engine", "ce")};
    ce.enqueue = [=](cudaStream_t st) {
      must(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync");
    };
    Op sm = ce;
    sm.test = "sm_push";
    sm.extras = {extra("engine", "sm")};
    sm.enqueue = [=](cudaStream_t st) { launch_sm_copy(to, from, bytes, st, nullptr, sms); };
    ops.push_back(ce);
    ops.push_back(sm);
  }
  run_jitter_on(lane, out, config, deadline, ops);
}

}  // namespace xc
