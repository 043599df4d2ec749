// CUDA stream mechanics that the timing of multi-GPU programs depends on, beyond kernels and copies themselves.
//
// A stream on one GPU that waits for an event recorded on another GPU (cudaStreamWaitEvent across devices) does
// not resume the moment the event fires: the dependency crosses the host driver. The probe's bidirectional copies
// use two such waits per sample, and a lone 4 B copy each way then takes 17.7 us against 9.3 us for one copy
// (validation/traces/h200/h200x2-copy.jsonl, ce_peer_bidir single).
#pragma once

#include <optional>
#include <string_view>

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

/// How an op reaches its GPU: submitted to a stream, or replayed as a node of a CUDA graph (which skips the
/// stream's per-op submission: collective.graph_launch, copy.graph_saving).
enum class Launch { stream, graph };
std::string_view to_string(Launch launch);
std::optional<Launch> launch(std::string_view name);  // "stream" or "graph"

/// Every parameter is set by stream_params(), where its default, range and source are declared.
//
// How an op is put on its stream costs time apart from the op (validation/traces/CAPTURES.md, h200-crosscheck: a
// 4 B device copy takes 3.1 us released by a stream memory wait, 3.5 us released by another stream's event, 7.4 us
// between events the host records around its submission, 4.6 us behind snsim-probe's gate kernel). The copy and
// compute models hold the op's own cost, the cost it has released by a stream wait with nothing in front; these
// are the mechanics around it, which a twin adds where its timing method has them.
class StreamModel final : public Model {
 public:
  Seconds event_wait;         // from an event on one GPU to a stream on another GPU resuming
  Seconds event_release;      // from an event another stream of the same GPU records to this stream's next op starting
  Seconds event_record;       // what an event recorded between two kernels of one stream adds to the stream's time
  Seconds gate_handoff;       // a single op's later start behind snsim-probe's gate kernel than behind a stream wait
  Seconds host_launch;        // CPU time of one asynchronous kernel launch call (CUDA runtime), the host's submission
  Seconds host_copy;          // CPU time of one asynchronous copy call (cudaMemcpyAsync): more work than a launch
  Seconds host_graph_launch;  // CPU time of one cudaGraphLaunch call
  // The share of a launch or copy call's CPU time that passes before the GPU holds the work: a lone op starts that
  // soon after its call does, while calls back to back follow each other at their whole CPU time.
  double host_submit_share = 1;
  Seconds sync_wakeup;  // from the GPU's last write to a synchronising host call (stream, event, device) returning
  // CPU time an eager framework (PyTorch) spends on one op before the op's CUDA call (its dispatch: argument checks,
  // the dispatcher, the allocator): a framework-launched op costs the host this plus host_launch.
  Seconds framework_op;
  // CPU time an eager framework spends recording an event around an op (PyTorch's torch.cuda.Event.record(): the
  // rest of the start event's call after it is enqueued, and the end event's call until it is): a lone op timed
  // between two such events is host bound, the end event is enqueued long after the op ends.
  Seconds framework_event;

  /// CPU time of the call that puts a copy by `engine` on its stream: a copy engine's cudaMemcpyAsync, or an SM copy
  /// kernel's launch.
  Seconds host_call(bool copy_engine) const { return copy_engine ? host_copy : host_launch; }
};

/// The parameters of models.stream, declared once.
const ParamTable<StreamModel>& stream_params();
Registry<Model>::Entry stream_model_entry();

}  // namespace snsim::models
