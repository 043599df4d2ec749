// How long a copy takes: the NVLink/PCIe line rate is in the Fabric; this model adds what the engine doing the copy
// costs on top.
//
// Two separate limits, because the H200 traces show both (validation/traces/h200/h200x2-copy.jsonl, ce_sm_shared):
// - the engine's own rate: a copy engine alone reaches ~88 % of the line rate, an SM copy ~82 %, a cap per copy
//   (payload bytes/s = route bottleneck x engine efficiency);
// - packet overhead on the wire: every packet carries a 16 B header, copy engines send 256 B payloads and SMs 128 B
//   [maint.: sjeaugey, NVIDIA/nccl-tests#149 and #258], so a copy puts payload x (payload + header) / payload bytes
//   on the wire, and copies sharing a link are shared max-min on those wire bytes.
// A CE copy and an SM copy together therefore move more than either alone (the link is not what limits a lone
// copy), as measured: 232 + 192 GB/s shared against 396 and 370 alone.
//
// Fixed costs: a single copy pays its engine's start-up (copy-engine setup or kernel launch) plus the route's wire
// latency; a copy queued behind another on the same stream (`pipelined`) pays only the engine's per-copy gap.
// Device-local copies read and write memory: from L2 when source and destination fit in it, else from HBM.
#pragma once

#include <string>

#include "models/model.hpp"
#include "models/stream.hpp"
#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim::models {

enum class CopyEngine { ce, sm };
std::string_view to_string(CopyEngine engine);

struct EngineParams {
  double efficiency = 0;  // payload rate of one copy alone, as a share of the route's line rate
  Bytes packet_payload;   // payload bytes per packet
  Seconds setup;          // fixed cost of one copy before bytes move (CE setup, SM kernel launch), wire latency aside
  Seconds queue_gap;      // fixed cost of a copy queued behind another on the same stream, wire latency aside
  Seconds pull_setup;     // the same two for a copy issued by the destination, reading from the source
  Seconds pull_queue_gap;
  Seconds local_setup;      // fixed cost of a device-local copy
  Seconds local_queue_gap;  // fixed cost of a device-local copy queued behind another
  // SM engine only: a lone device-local copy's fixed cost inside its kernel (first block's start to last block's
  // end), without the launch and completion around it that local_setup holds.
  Seconds local_in_kernel;
  // SM engine only: the device-local HBM rate of an SM copy kernel, as a share of a copy engine's (from L2 both are
  // as fast).
  double local_rate = 1;
};

/// Every parameter is set by copy_params(), where its default, range and source are declared.
class CopyModel final : public Model {
 public:
  EngineParams ce;
  EngineParams sm;
  Bytes packet_header;              // header bytes per packet on NVLink
  double local_hbm_efficiency = 0;  // share of HBM bandwidth a device-local CE copy reaches (reads + writes)
  double local_l2_speedup = 0;      // local copy rate from L2 against from HBM, when source and destination fit in L2
  // A copy queued as a node of a CUDA graph skips the stream's per-op submission: its queue gap is this much shorter
  // (a lone graph copy's setup is not: what a graph launch costs apart is its timing method's).
  Seconds graph_saving;

  const EngineParams& params(CopyEngine engine) const { return engine == CopyEngine::ce ? ce : sm; }
  double efficiency(CopyEngine engine) const { return params(engine).efficiency; }
  /// Fixed cost before the bytes of a peer copy move, excluding the route's wire latency.
  Seconds fixed_cost(CopyEngine engine, bool pull = false, bool pipelined = false,
                     Launch launch = Launch::stream) const;
  /// Bytes on the wire for `payload` bytes moved by `engine`: payload plus one header per packet.
  Bytes wire_bytes(Bytes payload, CopyEngine engine) const;
  /// The most a lone copy moves per second on a route of `line_rate`, in wire bytes per second.
  BytesPerSecond wire_rate_cap(BytesPerSecond line_rate, CopyEngine engine) const;
  /// Fixed cost of a device-local copy: alone, or queued behind another on the same stream; `in_kernel`: only what
  /// an SM copy's kernel spends inside itself (its launch and completion not counted).
  Seconds local_fixed_cost(CopyEngine engine, bool pipelined, Launch launch = Launch::stream,
                           bool in_kernel = false) const;
  /// Time a device-local copy of `bytes` by `engine` spends reading and writing `gpu`'s memory (L2 or HBM), fixed
  /// cost aside.
  Seconds local_memory_time(const GpuSpec& gpu, Bytes bytes, CopyEngine engine) const;
};

/// The parameters of models.copy, declared once (defaults, ranges, docs and sources).
const ParamTable<CopyModel>& copy_params();
Registry<Model>::Entry copy_model_entry();

}  // namespace snsim::models
