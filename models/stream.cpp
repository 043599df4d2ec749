#include "models/stream.hpp"

namespace snsim::models {

std::string_view to_string(Launch launch) {
  return launch == Launch::graph ? "graph" : "stream";
}

std::optional<Launch> launch(std::string_view name) {
  if (name == "stream") return Launch::stream;
  if (name == "graph") return Launch::graph;
  return std::nullopt;
}

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
    // The mechanics of the ways of timing an op, [unverified defaults: no cost, a few microseconds per host call];
    // `snsim calibrate` fits them on snsim-crosscheck's traces (validation/fits/copy_fit.cpp).
    params.add({.key = "event_release",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "same-GPU event from another stream until the next op starts"},
               [](StreamModel& m) { return &m.event_release; });
    // Fitted with the GEMM model (validation/fits/compute_fit.cpp): the same GEMMs timed with an event around each
    // and in batches between two events.
    params.add({.key = "event_record",
                .fallback = 1.621_us,
                .check = non_negative,
                .doc = "an event recorded between two kernels of a stream, on the stream's time",
                .source = "fit H200 compute/gemm vs gemm_method"},
               [](StreamModel& m) { return &m.event_record; });
    params.add({.key = "gate_handoff",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "single op behind the probe's gate kernel, beyond a stream wait"},
               [](StreamModel& m) { return &m.gate_handoff; });
    params.add({.key = "host_launch",
                .fallback = 4_us,
                .check = non_negative,
                .doc = "CPU time of one asynchronous kernel launch call"},
               [](StreamModel& m) { return &m.host_launch; });
    params.add({.key = "host_copy",
                .fallback = 4_us,
                .check = non_negative,
                .doc = "CPU time of one asynchronous copy call (cudaMemcpyAsync)"},
               [](StreamModel& m) { return &m.host_copy; });
    // [unverified: of a launch call's order; crosscheck's one host-clock record of it (1.89 us) validates]
    params.add({.key = "host_graph_launch",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "CPU time of one CUDA graph launch call (cudaGraphLaunch)"},
               [](StreamModel& m) { return &m.host_graph_launch; });
    params.add({.key = "host_submit_share",
                .unit = "fraction",
                .fallback = 1.0,
                .check = between(0.01, 1.0),
                .doc = "share of a launch or copy call's CPU time before the GPU holds the work"},
               [](StreamModel& m) { return &m.host_submit_share; });
    params.add({.key = "sync_wakeup",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "GPU's last write to a synchronising call returning"},
               [](StreamModel& m) { return &m.sync_wakeup; });
    // No framework unless a parameter set says so: snsim's own ops are CUDA calls. `snsim calibrate` fits it on
    // snsim-crosscheck's PyTorch host clocks (validation/fits/copy_fit.cpp).
    params.add({.key = "framework_op",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "CPU time an eager framework (PyTorch) adds to each op before its CUDA call"},
               [](StreamModel& m) { return &m.framework_op; });
    params.add({.key = "framework_event",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "CPU time an eager framework adds recording the events around one op (PyTorch's Event.record)"},
               [](StreamModel& m) { return &m.framework_event; });
    return params;
  }();
  return table;
}

Registry<Model>::Entry stream_model_entry() {
  return model_entry("stream",
                     "CUDA stream mechanics: event waits, the probe's gate, host submission and synchronisation",
                     stream_params());
}

}  // namespace snsim::models
