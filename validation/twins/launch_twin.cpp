// Twins of the empty-kernel launches of snsim-crosscheck's `launch` suite (tools/crosscheck/README.md): kernels
// queued on the GPU (behind a gate, a stream wait or another stream's event), kernels launched by the host back
// to back, a graph's kernels, and the host's own calls. The probe's launch records (launch family) are what
// compute.launch, compute.queue_gap and collective.graph_launch are fitted on, and crosscheck's host clocks what
// stream.host_launch and stream.sync_wakeup are (validation/fits/copy_fit.cpp): they calibrate, the other ways of
// timing the same kernels validate.
#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {

using workloads::ComputeOp;
using workloads::HostOp;
using workloads::RepeatOp;
using workloads::StreamsOp;

/// An empty kernel queued behind the previous one on its stream: the GPU's gap between kernels.
workloads::Op queued_kernel() {
  return op(ComputeOp{.flops = Flops{0}, .bytes = Bytes{0}, .duration = std::nullopt, .pipelined = true});
}

}  // namespace

std::variant<Twin, std::string> launch(const TraceRecord& r, int gpus, const models::Models& models,
                                       const std::string& method) {
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  auto& at = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
  const auto& stream = *models.stream;
  const int kernels = static_cast<int>(extra_number(r, "kernels_per_sample", 1));
  // PyTorch's one-kernel eager ops (an in-place and an out-of-place add): the framework's dispatch, then the launch
  // call. Called in a loop on the host's clock (what stream.framework_op is fitted on), or queued between two events,
  // where the host's calls and the GPU's kernels overlap and the slower sets the rate.
  const HostOp torch_call{stream.framework_op + stream.host_launch, "framework op and launch", true};
  if ((r.test == "torch_add_" || r.test == "torch_add") && r.variant == "dispatch" && method == "host_clock") {
    at.push_back(op(RepeatOp{kernels, {op(torch_call)}}));
    twin.repetitions = kernels;
    return twin;
  }
  if (r.test == "torch_add_" && r.variant == "back_to_back" && method == "torch_events") {
    at.push_back(op(StreamsOp{
        {{op(RepeatOp{kernels, {op(torch_call)}}), op(HostOp{stream.framework_event, "framework event", true})},
         {op(RepeatOp{kernels, {queued_kernel()}})}}}));
    twin.repetitions = kernels;
    return twin;
  }
  // CUDAGraph.replay() on the host's clock: PyTorch's dispatch, then the graph launch call.
  if (r.test == "torch_add_" && r.variant == "graph_replay_call" && method == "host_clock") {
    at.push_back(op(HostOp{stream.framework_op + stream.host_graph_launch, "graph replay", true}));
    return twin;
  }
  if (r.test != "empty_kernel")
    return fmt::format(
        "launch/{}: the host's calls beyond a launch (synchronising, blocking copies, a framework's "
        "dispatch) are not modelled",
        r.test);
  if (r.variant == "back_to_back" && (method == "events_b2b" || method == "host_sync" || method == "probe")) {
    // The host calls while the GPU runs the kernels already queued: the slower of the two sets the rate.
    at.push_back(op(StreamsOp{{{op(RepeatOp{kernels, {op(HostOp{stream.host_launch, "host launch", true})}})},
                               {op(RepeatOp{kernels, {queued_kernel()}})}}}));
    if (method == "host_sync") at.push_back(op(HostOp{stream.sync_wakeup, "sync wake-up", true}));
  } else if (r.variant == "back_to_back_gated") {
    at.push_back(op(RepeatOp{kernels, {queued_kernel()}}));
  } else if (r.variant == "graph_back_to_back") {
    at.push_back(op(RepeatOp{kernels, {op(HostOp{models.collective->graph_launch, "graph node"})}}));
  } else if (r.variant == "host_rate" || r.variant == "host_enqueue") {
    at.push_back(op(RepeatOp{kernels, {op(HostOp{stream.host_launch, "host launch", true})}}));
  } else if (r.variant == "graph_launch_call" && method == "host_clock") {
    at.push_back(op(RepeatOp{kernels, {op(HostOp{stream.host_graph_launch, "graph launch call", true})}}));
  } else {
    return fmt::format(
        "launch/empty_kernel/{} ({}): a lone kernel's own time from its release is not modelled "
        "apart from the launch",
        r.variant, method);
  }
  twin.repetitions = kernels;
  return twin;
}

}  // namespace snsim::validation::twins
