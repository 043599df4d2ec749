// Twins of the probe's `uvm` family (tools/probe/src/families/uvm.cu). Each sample starts from the state the probe
// sets up (and synchronises) before its timed part: the region is allocated anew at that place (a `managed` op,
// which takes no simulated time), advice is given, then the timed operation runs on GPU 0:
//   first_touch   a kernel touching one word per 4 KiB page (host_to_gpu: region on the host; gpu_to_gpu: on GPU 1)
//   prefetch      cudaMemPrefetchAsync host -> GPU 0, GPU 0 -> host, GPU 1 -> GPU 0
//   read          a kernel streaming the region: local (on GPU 0), peer_mapped (kept on GPU 1, accessed by GPU 0),
//                 host_mapped (kept on the host, accessed by GPU 0)
#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {

std::variant<Twin, std::string> uvm(const TraceRecord& r, int gpus) {
  using workloads::HOST;
  const bool peer = r.variant == "gpu_to_gpu" || r.variant == "peer_mapped";
  if (peer && (gpus < 2 || r.ranks.size() < 2)) return fmt::format("uvm {}/{} needs two GPUs", r.test, r.variant);
  if (r.bytes.count() == 0) return "uvm: the record has no region size";
  // ranks: [GPU 0] or, for GPU pairs, [source, GPU 0] (first_touch, prefetch) or [GPU 0, owner] (read).
  const int gpu = r.test == "read" ? rank_at(r, 0) : rank_at(r, r.ranks.size() - 1);
  const int other = r.test == "read" ? rank_at(r, 1) : rank_at(r, 0);
  auto buffer = std::make_shared<workloads::ManagedBuffer>();
  buffer->name = "region";
  buffer->bytes = r.bytes;
  std::vector<workloads::Op> ops;
  auto place = [&](int where) {
    buffer->on = where;
    ops.push_back(op(workloads::ManagedOp{buffer}));
  };
  if (r.test == "first_touch" && (r.variant == "host_to_gpu" || r.variant == "gpu_to_gpu")) {
    place(peer ? other : HOST);
    ops.push_back(op(workloads::TouchOp{buffer, Bytes{0}, r.bytes, false}));
  } else if (r.test == "prefetch" && (r.variant == "host_to_gpu" || r.variant == "gpu_to_gpu")) {
    place(peer ? other : HOST);
    ops.push_back(op(workloads::PrefetchOp{buffer, gpu, Bytes{0}, r.bytes}));
  } else if (r.test == "prefetch" && r.variant == "gpu_to_host") {
    place(gpu);
    ops.push_back(op(workloads::PrefetchOp{buffer, HOST, Bytes{0}, r.bytes}));
  } else if (r.test == "read" && (r.variant == "local" || r.variant == "peer_mapped" || r.variant == "host_mapped")) {
    const int owner = r.variant == "local" ? gpu : peer ? other : HOST;
    place(owner);
    if (owner != gpu) ops.push_back(op(workloads::AdviseOp{buffer, owner, {gpu}, false}));
    ops.push_back(op(workloads::ReadOp{buffer, Bytes{0}, r.bytes, 1}));
  } else {
    return fmt::format("no twin for uvm {}/{}", r.test, r.variant);
  }
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  twin.sample[static_cast<std::size_t>(gpu)] = std::move(ops);
  return twin;
}

}  // namespace snsim::validation::twins
