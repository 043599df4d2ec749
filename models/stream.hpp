// CUDA stream mechanics that the timing of multi-GPU programs depends on, beyond kernels and copies themselves.
//
// A stream on one GPU that waits for an event recorded on another GPU (cudaStreamWaitEvent across devices) does
// not resume the moment the event fires: the dependency crosses the host driver. The probe's bidirectional copies
// use two such waits per sample, and a lone 4 B copy each way then takes 17.7 us against 9.3 us for one copy
// (validation/traces/h200/h200x2-copy.jsonl, ce_peer_bidir single).
#pragma once

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

/// Every parameter is set by stream_params(), where its default, range and source are declared.
class StreamModel final : public Model {
 public:
  Seconds event_wait;  // from an event on one GPU to a stream on another GPU resuming
};

/// The parameters of models.stream, declared once.
const ParamTable<StreamModel>& stream_params();
Registry<Model>::Entry stream_model_entry();

}  // namespace snsim::models
