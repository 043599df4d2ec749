#include "models/copy.hpp"

#include <algorithm>

namespace snsim::models {

const ParamTable<CopyModel>& copy_params() {
  static const ParamTable<CopyModel> table = [] {
    ParamTable<CopyModel> params;
    // Engine rates alone, as a share of the NVLink4 line rate (450 GB/s per GPU per direction): CE peer copies on
    // 8xH100 HGX reach 371-377 GB/s (83-84 %) [meas: NVIDIA/nccl#1264, docs/hardware.md#copies]; SM copies:
    // NCCL's model uses 20.6 of 25 GB/s per link (82.4 %) [model: NVIDIA/nccl src/graph/topo.h SM90_NVLINK_BW].
    // Calibrated values for H200 ship in validation/params/h200.yaml (`snsim calibrate`).
    // Packets: 16 B header, 256 B payload for copy engines, 128 B for SMs [maint.: NVIDIA/nccl-tests#149, #258].
    // Fixed costs: a small P2P copy takes ~2-3 us end to end on NVLink machines [meas: p2pBandwidthLatencyTest,
    // NVIDIA/nccl-tests#123], of which the wire is < 1 us; a kernel launch costs a few microseconds. Queued copies
    // and local copies: [unverified defaults]; all are calibrated from the probe's copy family.
    params.add({.key = "ce.efficiency",
                .unit = "fraction",
                .fallback = 0.83,
                .check = between(0.01, 1.0),
                .doc = "rate of a lone CE copy / line rate",
                .source = "meas nccl#1264"},
               [](CopyModel& m) { return &m.ce.efficiency; });
    params.add({.key = "ce.packet_payload",
                .fallback = 256_B,
                .check = positive,
                .doc = "CE payload per packet",
                .source = "maint. nccl-tests#149"},
               [](CopyModel& m) { return &m.ce.packet_payload; });
    params.add({.key = "ce.setup",
                .fallback = 1.5_us,
                .check = non_negative,
                .doc = "fixed cost of a CE copy, wire latency aside"},
               [](CopyModel& m) { return &m.ce.setup; });
    params.add({.key = "ce.queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a queued CE copy, wire latency aside"},
               [](CopyModel& m) { return &m.ce.queue_gap; });
    params.add({.key = "ce.pull_setup",
                .fallback = 1.5_us,
                .check = non_negative,
                .doc = "fixed cost of a CE copy issued by the destination"},
               [](CopyModel& m) { return &m.ce.pull_setup; });
    params.add({.key = "ce.pull_queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a queued CE pull, wire latency aside"},
               [](CopyModel& m) { return &m.ce.pull_queue_gap; });
    params.add({.key = "ce.local_setup",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "fixed cost of a device-local CE copy"},
               [](CopyModel& m) { return &m.ce.local_setup; });
    params.add({.key = "ce.local_queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a local CE copy queued behind another"},
               [](CopyModel& m) { return &m.ce.local_queue_gap; });
    params.add({.key = "sm.efficiency",
                .unit = "fraction",
                .fallback = 0.824,
                .check = between(0.01, 1.0),
                .doc = "rate of a lone SM copy / line rate",
                .source = "model NCCL topo.h"},
               [](CopyModel& m) { return &m.sm.efficiency; });
    params.add({.key = "sm.packet_payload",
                .fallback = 128_B,
                .check = positive,
                .doc = "SM payload per packet",
                .source = "maint. nccl-tests#149"},
               [](CopyModel& m) { return &m.sm.packet_payload; });
    params.add({.key = "sm.setup",
                .fallback = 2.5_us,
                .check = non_negative,
                .doc = "fixed cost of an SM copy kernel (launch), wire latency aside"},
               [](CopyModel& m) { return &m.sm.setup; });
    params.add({.key = "sm.queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a queued SM copy, wire latency aside"},
               [](CopyModel& m) { return &m.sm.queue_gap; });
    params.add({.key = "sm.pull_setup",
                .fallback = 2.5_us,
                .check = non_negative,
                .doc = "fixed cost of an SM copy kernel loading from the peer"},
               [](CopyModel& m) { return &m.sm.pull_setup; });
    params.add({.key = "sm.pull_queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a queued SM pull, wire latency aside"},
               [](CopyModel& m) { return &m.sm.pull_queue_gap; });
    params.add({.key = "sm.local_setup",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "fixed cost of a device-local SM copy"},
               [](CopyModel& m) { return &m.sm.local_setup; });
    params.add({.key = "sm.local_queue_gap",
                .fallback = 2_us,
                .check = non_negative,
                .doc = "per-copy cost of a local SM copy queued behind another"},
               [](CopyModel& m) { return &m.sm.local_queue_gap; });
    // The kernel's own clock (%globaltimer, first block's start to last block's end) sees 0.64-0.74 us for a lone 4 B -
    // 4 KiB copy on our H200, against 3.3 us for the same copy released by a stream wait: the rest is its launch
    // and completion (validation/traces/h200-crosscheck/h200x1-xc-kernel_clock.jsonl).
    params.add({.key = "sm.local_in_kernel",
                .fallback = 0.66_us,
                .check = non_negative,
                .doc = "fixed cost of a lone device-local SM copy inside its kernel, launch and completion aside",
                .source = "fit H200 crosscheck kernel_clock"},
               [](CopyModel& m) { return &m.sm.local_in_kernel; });
    // Our H200s' SM copy kernel moves 64 MiB - 1 GiB 4-9 % slower than a copy engine on the same GPU from HBM, and
    // as fast from L2 (validation/traces/h200/h200x2-copy.jsonl, validation/traces/h200-crosscheck).
    params.add({.key = "sm.local_rate",
                .unit = "fraction",
                .fallback = 1.0,
                .check = between(0.1, 2.0),
                .doc = "device-local HBM rate of an SM copy kernel / a copy engine's (local_hbm_efficiency)"},
               [](CopyModel& m) { return &m.sm.local_rate; });
    // Queued as graph nodes, our H200's local copies follow each other ~0.7 us sooner than from a stream (ce 1.05
    // against 1.78 us, sm 1.21 against 1.89 at <= 64 KiB: validation/traces/h200-crosscheck/h200x1-xc-graph.jsonl).
    params.add({.key = "graph_saving",
                .fallback = 0.7_us,
                .check = non_negative,
                .doc = "how much shorter a copy's queue gap is as a node of a CUDA graph than on a stream",
                .source = "fit H200 crosscheck graph copies"},
               [](CopyModel& m) { return &m.graph_saving; });
    params.add({.key = "packet_header",
                .fallback = 16_B,
                .doc = "header per NVLink packet",
                .source = "maint. nccl-tests#258"},
               [](CopyModel& m) { return &m.packet_header; });
    // A device-local copy reads and writes HBM: 4.3 TB/s counting both on an H200 of 4.8 TB/s peak (90 %)
    // [meas: device-to-device copy through PyTorch, docs/hardware.md#h200-machines]. From L2 it is faster [unverified
    // default 1.0 = no L2 effect; calibrated from the probe's local copies].
    params.add({.key = "local_hbm_efficiency",
                .unit = "fraction",
                .fallback = 0.9,
                .check = between(0.01, 1.0),
                .doc = "share of HBM bandwidth for a device-local copy"},
               [](CopyModel& m) { return &m.local_hbm_efficiency; });
    params.add({.key = "local_l2_speedup",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(1.0, 10.0),
                .doc = "local copy rate from L2 / from HBM when both buffers fit"},
               [](CopyModel& m) { return &m.local_l2_speedup; });
    return params;
  }();
  return table;
}

std::string_view to_string(CopyEngine engine) {
  return engine == CopyEngine::ce ? "ce" : "sm";
}

Bytes CopyModel::wire_bytes(Bytes payload, CopyEngine engine) const {
  return payload + packet_header * pieces(payload, params(engine).packet_payload);
}

BytesPerSecond CopyModel::wire_rate_cap(BytesPerSecond line_rate, CopyEngine engine) const {
  const auto& e = params(engine);
  const double overhead = static_cast<double>(e.packet_payload.count() + packet_header.count()) /
                          static_cast<double>(e.packet_payload.count());
  return line_rate * (e.efficiency * overhead);
}

namespace {

Seconds queued(Seconds gap, Launch launch, Seconds graph_saving) {
  return launch == Launch::graph ? std::max(Seconds{0}, gap - graph_saving) : gap;
}

}  // namespace

Seconds CopyModel::fixed_cost(CopyEngine engine, bool pull, bool pipelined, Launch launch) const {
  const auto& e = params(engine);
  if (!pipelined) return pull ? e.pull_setup : e.setup;
  return queued(pull ? e.pull_queue_gap : e.queue_gap, launch, graph_saving);
}

Seconds CopyModel::local_fixed_cost(CopyEngine engine, bool pipelined, Launch launch, bool in_kernel) const {
  const auto& e = params(engine);
  if (in_kernel && engine == CopyEngine::sm) return e.local_in_kernel;
  return pipelined ? queued(e.local_queue_gap, launch, graph_saving) : e.local_setup;
}

Seconds CopyModel::local_memory_time(const GpuSpec& gpu, Bytes bytes, CopyEngine engine) const {
  const Bytes traffic = 2 * bytes;  // read the source, write the destination
  const BytesPerSecond hbm = gpu.hbm_bandwidth * local_hbm_efficiency;
  if (gpu.l2.count() > 0 && traffic <= gpu.l2) return traffic / (hbm * local_l2_speedup);
  return traffic / (engine == CopyEngine::sm ? hbm * sm.local_rate : hbm);
}

Registry<Model>::Entry copy_model_entry() {
  return model_entry(
      "copy", "copies by copy engine (ce) or SMs (sm): engine rate, packet overhead on the wire, fixed costs per copy",
      copy_params());
}

}  // namespace snsim::models
