// Family `jitter`: the same copy repeated many times (2,000 by default), every sample kept, at 4 KiB, 1 MiB
// and 64 MiB. Each repetition is single-shot behind the stream gate (device time of one copy alone), so the
// spread is the device's and the link's, not the host's submission jitter.
#include <cstdio>
#include <vector>

#include "../common/cuda_util.h"
#include "../common/timing.h"
#include "families.h"

namespace probe {
namespace {

void emit_jitter(RankContext& context, const std::string& test, std::vector<int> ranks, std::uint64_t bytes,
                 std::vector<double> samples) {
  Record record;
  record.family = "jitter";
  record.test = test;
  record.variant = "single";
  record.ranks = std::move(ranks);
  record.bytes = bytes;
  record.unit = "s";
  record.samples = std::move(samples);
  context.emit(record);
}

}  // namespace

void run_jitter_family(RankContext& context) {
  const Options& options = *context.options;
  const int gpus = visible_device_count();
  std::vector<std::uint64_t> sizes = {4 * KiB, 1 * MiB, 64 * MiB};
  if (options.max_bytes) std::erase_if(sizes, [&](std::uint64_t s) { return s > options.max_bytes; });
  const int repetitions = options.quick ? 50 : 2000;
  const std::uint64_t largest = sizes.empty() ? 0 : sizes.back();
  if (largest == 0) return;

  const int src = 0;
  const int dst = gpus > 1 ? 1 : 0;
  if (dst != src) enable_peer_access(src, dst);
  Stream stream(src);
  Gate gate;
  DeviceBuffer source(src, largest), local_destination(src, largest), peer_destination(dst, largest);
  CHECK_CUDA(cudaSetDevice(src));
  fill_pattern(source.get(), largest, 7, stream);
  stream.synchronize();

  for (std::uint64_t bytes : sizes) {
    struct Case {
      const char* test;
      std::vector<int> ranks;
      EnqueueOp op;
      void* destination;
      int owner;
    };
    std::vector<Case> cases;
    cases.push_back(
        {"ce_local",
         {src},
         [&] {
           CHECK_CUDA(cudaMemcpyAsync(local_destination.get(), source.get(), bytes, cudaMemcpyDeviceToDevice, stream));
         },
         local_destination.get(),
         src});
    if (dst != src) {
      cases.push_back(
          {"ce_peer",
           {src, dst},
           [&] { CHECK_CUDA(cudaMemcpyPeerAsync(peer_destination.get(), dst, source.get(), src, bytes, stream)); },
           peer_destination.get(),
           dst});
      const int blocks = sm_copy_blocks(src, bytes);
      cases.push_back({"sm_push",
                       {src, dst},
                       [&, blocks] { launch_sm_copy(peer_destination.get(), source.get(), bytes, blocks, stream); },
                       peer_destination.get(),
                       dst});
    }
    for (Case& c : cases) {
      CHECK_CUDA(cudaSetDevice(c.owner));
      CHECK_CUDA(cudaMemset(c.destination, 0xFF, bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaSetDevice(src));
      for (int i = 0; i < 10; ++i) c.op();  // warm-up
      stream.synchronize();
      emit_jitter(context, c.test, c.ranks, bytes, time_single(gate, stream, repetitions, c.op));
      Stream owner_stream(c.owner);
      verify_pattern(c.destination, bytes, 7, owner_stream, c.owner, std::string("jitter ") + c.test);
    }
  }
  if (gpus < 2) std::fprintf(stderr, "jitter: one GPU visible: ce_peer and sm_push skipped\n");
}

}  // namespace probe
