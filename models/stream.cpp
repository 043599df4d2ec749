#include "models/stream.hpp"

namespace snsim::models {

const ParamTable<StreamModel>& stream_params() {
  static const ParamTable<StreamModel> table = [] {
    ParamTable<StreamModel> params;
    // [unverified default: a few microseconds through the driver]; `snsim calibrate` fits
    // it from ce_peer_bidir.
    params.add({.key = "event_wait",
                .fallback = 4_us,
                .check = non_negative,
                .doc = "cross-GPU event wait until the stream resumes"},
               [](StreamModel& m) { return &m.event_wait; });
    return params;
  }();
  return table;
}

Registry<Model>::Entry stream_model_entry() {
  return model_entry("stream", "CUDA stream mechanics: a stream waiting on another GPU's event", stream_params());
}

}  // namespace snsim::models
