// A GPU's kernels and copies: compute (a roofline or fixed-time kernel) and copy (copy engines or SMs, to or from a
// peer GPU, the host, NVMe, or within the GPU). Run by runtime/device_executor.cpp.
#pragma once

#include <optional>
#include <string_view>
#include <variant>

#include "models/compute.hpp"
#include "models/copy.hpp"
#include "program/op_kinds.hpp"
#include "sim/fabric.hpp"

namespace snsim::workloads {

void parse_compute(const ConfigNode& op, const OpParse& at);
void parse_copy(const ConfigNode& op, const OpParse& at);

struct ComputeOp {
  static constexpr OpKind KIND{.name = "compute", .track = TimelineTrack::compute, .parse = parse_compute};
  Flops flops;                      // in `dtype`
  Bytes bytes;                      // HBM traffic
  std::optional<Seconds> duration;  // a fixed time instead of the roofline
  Dtype dtype = Dtype::bf16;        // the number format of the FLOPs: picks the GPU's peak rate
  bool pipelined = false;  // queued behind the previous kernel of the stream: pays the queue gap, not the launch
  // A CUDA graph's kernel node: queued, it pays the graph's per-node launch (collective.graph_launch) instead of
  // the queue gap.
  models::Launch launch = models::Launch::stream;
  // A kernel of known shape, timed by it: a GEMM by its tiles (flops and bytes are its own), fused attention's math
  // side by its score blocks (ComputeModel::attention_time; its HBM side by `bytes`). One field for both, since a
  // kernel is at most one of them: programs hold millions of ops.
  std::variant<std::monostate, models::Gemm, models::Attention> shape{};
  // An SM clock in MHz that replaces the power-capped clock for this kernel (the peaks are the preset's boost
  // clock's): locked (nvidia-smi -lgc), the kernel runs at that share of the boost rate; or, `clock_reported`, the
  // clock NVML reported while it ran under load (a probe record's reading), the kernel runs at the rate such a
  // reading means (ComputeModel::rate_at_reported_clock).
  std::optional<double> clock_mhz{};
  bool clock_reported = false;
  models::OperandData operands = models::OperandData::normal;  // what the operands hold: the power they draw
  models::MemoryKind memory{};  // what its memory side does: the share of HBM bandwidth it reaches
  // What the workload calls this kernel, for its report of time by kernel ("gemm", "attention", "layernorm", ...;
  // empty: unnamed). Points at a name with static storage (a literal, or models::to_string's).
  std::string_view kernel{};

  const models::Gemm* gemm() const { return std::get_if<models::Gemm>(&shape); }
  const models::Attention* attention() const { return std::get_if<models::Attention>(&shape); }
};

struct CopyOp {
  static constexpr OpKind KIND{
      .name = "copy", .track = TimelineTrack::copies, .moves_bytes = true, .parse = parse_copy};
  int peer = 0;  // the other end: a rank, HOST, NVME, or the issuing rank itself for a device-local copy
  Bytes bytes;
  models::CopyEngine engine = models::CopyEngine::ce;
  bool pipelined = false;  // queued behind the previous copy on the same stream: pays the engine's queue gap
  bool pull = false;       // the issuing rank reads from `peer` (data flows peer -> issuer); else it writes to it
  models::Launch launch = models::Launch::stream;  // a CUDA graph's node: queued, it pays copy.graph_saving less
  // Timed by the copy kernel's own clock (snsim-crosscheck's kernel_clock): a device-local SM copy's fixed cost is
  // then copy.sm.local_in_kernel, its launch and completion not counted. Validation twins set it; workloads do not.
  bool in_kernel = false;
};

OpDescription describe(const ComputeOp& op);
OpDescription describe(const CopyOp& op);

}  // namespace snsim::workloads
