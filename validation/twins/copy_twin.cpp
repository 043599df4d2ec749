// Twins of the probe's `copy` family (tools/probe/src/families/copy.cu) and of its `jitter` family, which times
// single copies many times. Any GPUs of the platform: an 8-GPU capture's pairs and concurrent copies too.
#include <map>
#include <memory>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {

using workloads::BarrierOp;
using workloads::ComputeOp;
using workloads::CopyOp;
using workloads::HostOp;
using workloads::Op;
using workloads::RepeatOp;
using workloads::StreamsOp;
using Engine = models::CopyEngine;

/// One copy alone (single), or `depth` copies queued behind each other (pipelined), from a stream or a graph.
std::vector<Op> copies(int peer, Bytes bytes, Engine engine, int depth, bool pipelined, bool pull = false,
                       models::Launch launch = models::Launch::stream) {
  if (!pipelined) return {op(CopyOp{peer, bytes, engine, false, pull, launch})};
  return {op(RepeatOp{depth, {op(CopyOp{peer, bytes, engine, true, pull, launch})}})};
}

/// A mechanic of the timing method: a host runtime call (which varies as the host does) or a device-side delay.
Op wait(Seconds time, const char* what, bool runtime_call) {
  return op(HostOp{time, what, runtime_call});
}

/// The copies of one GPU as the record's timing method ran them (tools/crosscheck/README.md, "The timing methods"):
/// the copy model's costs are the copies' own, as released by a stream memory wait (`wait_value`, and the
/// crosscheck's gate, which measures the same); each method adds its own mechanics around them. The host puts a
/// copy on its stream with a cudaMemcpyAsync (copy engine) or a kernel launch (SMs).
std::vector<Op> timed(const std::string& method, std::vector<Op> ops, int depth, bool pipelined, Engine engine,
                      const models::StreamModel& stream) {
  std::vector<Op> out;
  const Seconds call = stream.host_call(engine == Engine::ce);
  // PyTorch's events (torch_events, torch_graph) cost the host a Python call each: the end event is recorded only
  // that long after the last call returns, however soon the GPU is done.
  const bool torch = method == "torch_events" || method == "torch_graph";
  const Op event = wait(stream.framework_event, "framework event", true);
  // A call hands its op to the GPU a share into its CPU time: from there the GPU runs the op while the host finishes
  // the call (and records the end event through the framework).
  const auto handed_over = [&](Seconds before, Seconds whole, std::vector<Op> gpu) {
    out.push_back(wait(before + whole * stream.host_submit_share, "host call", true));
    std::vector<Op> host{wait(whole * (1 - stream.host_submit_share), "host call's rest", true)};
    if (torch) host.push_back(event);
    out.push_back(op(StreamsOp{{std::move(gpu), std::move(host)}}));
  };
  if (method == "torch_graph") {  // CUDAGraph.replay(): PyTorch's dispatch, then cudaGraphLaunch
    handed_over(stream.framework_op, stream.host_graph_launch, std::move(ops));
    return out;
  }
  if (method == "events_b2b" || method == "host_sync" || torch) {
    // The host submits each copy (one call's CPU time; through PyTorch, `dst.copy_(src)`, its dispatch first)
    // while the GPU runs those already submitted: the slower of the two sets the time, and a host-synchronised
    // sample starts with the first call and ends when the synchronising call returns. A lone copy starts once
    // its call has handed it over, before the call returns.
    const Seconds framework = torch ? stream.framework_op : Seconds{0};
    if (pipelined) {
      std::vector<Op> host{op(RepeatOp{depth, {wait(framework + call, "host call", true)}})};
      if (torch) host.push_back(event);
      out.push_back(op(StreamsOp{{std::move(host), std::move(ops)}}));
    } else {
      handed_over(framework, call, std::move(ops));
    }
    if (method == "host_sync") out.push_back(wait(stream.sync_wakeup, "sync wake-up", true));
    return out;
  }
  if (!pipelined) {
    // Between the start event and a single copy: the host's submission (events recorded around it on an idle
    // stream), the probe's gate kernel handing the stream over, another stream's event releasing it.
    if (method == "events_single") out.push_back(wait(call * stream.host_submit_share, "host call", true));
    if (method == "probe") out.push_back(wait(stream.gate_handoff, "gate hand-off", false));
    if (method == "event_from_other_stream") out.push_back(wait(stream.event_release, "event release", false));
  }
  for (auto& o : ops) out.push_back(std::move(o));
  return out;
}

/// ce_concurrent / sm_concurrent: copies at once, each on its own stream of its source GPU, `depth` queued each.
/// ranks are the copies' (source, destination) pairs flattened, or every GPU for a2a (each copies to every other).
/// As in the probe (time_all_streams in tools/probe/src/common/timing.cu), the other sources start on an event
/// from the first and the first ends waiting for theirs.
std::variant<Twin, std::string> concurrent(const TraceRecord& r, Twin twin, int depth, const models::Models& models) {
  std::vector<std::pair<int, int>> transfers;
  if (r.variant == "a2a") {
    for (int src : r.ranks)
      for (int dst : r.ranks)
        if (src != dst) transfers.emplace_back(src, dst);
  } else {
    if (r.ranks.size() % 2 != 0) return fmt::format("{}: ranks are not (source, destination) pairs", r.test);
    for (std::size_t i = 0; i < r.ranks.size(); i += 2) transfers.emplace_back(r.ranks[i], r.ranks[i + 1]);
  }
  if (transfers.empty()) return fmt::format("{}: no copy in the record", r.test);
  const Engine engine = r.test == "sm_concurrent" ? Engine::sm : Engine::ce;
  std::map<int, std::vector<std::vector<Op>>> streams;  // per source GPU
  for (const auto& [src, dst] : transfers) streams[src].push_back(copies(dst, r.bytes, engine, depth, true));
  twin.repetitions = depth;
  std::vector<int> sources;
  for (const auto& [src, list] : streams) sources.push_back(src);
  const auto group = std::make_shared<const std::vector<int>>(sources);
  const Op event_wait = op(ComputeOp{Flops{0}, Bytes{0}, models.stream->event_wait});
  const int first = transfers.front().first;
  for (auto& [src, list] : streams) {
    auto& at = twin.sample[static_cast<std::size_t>(src)];
    if (src != first) at.push_back(event_wait);
    if (list.size() == 1)
      for (auto& o : list.front()) at.push_back(std::move(o));
    else
      at.push_back(op(StreamsOp{std::move(list)}));
    if (sources.size() > 1) at.push_back(op(BarrierOp{group, true}));
    if (src == first && sources.size() > 1) at.push_back(event_wait);
  }
  return twin;
}

}  // namespace

std::variant<Twin, std::string> copy(const TraceRecord& r, int gpus, const models::Models& models,
                                     const std::string& method) {
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  const bool pipelined = r.variant == "pipelined";
  // crosscheck's `graph` method captures the copies into one CUDA graph and replays it, as its PyTorch part's
  // `torch_graph` does (torch.cuda.CUDAGraph)
  const auto launch = method == "graph" || method == "torch_graph" ? models::Launch::graph : models::Launch::stream;
  const int depth = static_cast<int>(extra_number(r, "depth", 1));
  if (pipelined || r.test == "ce_sm_shared") twin.repetitions = depth;
  const int src = rank_at(r, 0);
  const int dst = r.ranks.size() > 1 ? rank_at(r, 1) : src;
  auto& at_src = twin.sample[static_cast<std::size_t>(src)];
  if (method == "kernel_clock") {
    // The copy kernel's own clock: first block's start to last block's end, its launch and completion aside.
    if (r.test != "sm_local" || pipelined)
      return fmt::format("copy/{}/{} (kernel_clock): only a lone device-local SM copy is modelled inside its kernel",
                         r.test, r.variant);
    CopyOp copy{dst, r.bytes, Engine::sm};
    copy.in_kernel = true;
    at_src = {op(copy)};
    return twin;
  }
  if (r.test == "ce_peer" || r.test == "ce_local") {
    at_src = copies(dst, r.bytes, Engine::ce, depth, pipelined, false, launch);
  } else if (r.test == "sm_push" || r.test == "sm_local") {
    at_src = copies(dst, r.bytes, Engine::sm, depth, pipelined, false, launch);
  } else if (r.test == "sm_pull") {  // the kernel runs on the destination and loads from the source
    twin.sample[static_cast<std::size_t>(dst)] = copies(src, r.bytes, Engine::sm, depth, pipelined, true, launch);
  } else if (r.test == "ce_peer_bidir") {
    // The probe starts the second GPU's stream with an event from the first and ends with the first waiting for
    // the second: two cross-GPU event waits around copies both ways (tools/probe/src/common/timing.cu).
    const auto pair =
        std::make_shared<const std::vector<int>>(std::vector<int>{std::min(src, dst), std::max(src, dst)});
    const int n = pipelined ? depth : 1;
    at_src =
        timed(method, copies(dst, r.bytes, Engine::ce, n, pipelined), depth, pipelined, Engine::ce, *models.stream);
    at_src.push_back(op(BarrierOp{pair, true}));
    const Op event_wait = op(ComputeOp{Flops{0}, Bytes{0}, models.stream->event_wait});
    at_src.push_back(event_wait);
    auto& at_dst = twin.sample[static_cast<std::size_t>(dst)];
    at_dst.push_back(event_wait);
    for (auto& o : copies(src, r.bytes, Engine::ce, n, pipelined)) at_dst.push_back(std::move(o));
    at_dst.push_back(op(BarrierOp{pair, true}));
  } else if (r.test == "ce_sm_shared") {
    // A CE copy stream and an SM copy stream from the same GPU to the same peer, started together.
    at_src = {
        op(StreamsOp{{copies(dst, r.bytes, Engine::ce, depth, true), copies(dst, r.bytes, Engine::sm, depth, true)}})};
    if (r.variant == "ce") twin.measured_label = " ce";
    if (r.variant == "sm") twin.measured_label = " sm";
  } else if (r.test == "ce_concurrent" || r.test == "sm_concurrent") {
    return concurrent(r, std::move(twin), depth, models);
  } else {
    return fmt::format("no twin for copy test '{}'", r.test);
  }
  if (r.test == "ce_peer" || r.test == "ce_local")
    at_src = timed(method, std::move(at_src), depth, pipelined, Engine::ce, *models.stream);
  else if (r.test == "sm_push" || r.test == "sm_local")
    at_src = timed(method, std::move(at_src), depth, pipelined, Engine::sm, *models.stream);
  else if (r.test == "sm_pull")
    twin.sample[static_cast<std::size_t>(dst)] = timed(method, std::move(twin.sample[static_cast<std::size_t>(dst)]),
                                                       depth, pipelined, Engine::sm, *models.stream);
  return twin;
}

}  // namespace snsim::validation::twins
