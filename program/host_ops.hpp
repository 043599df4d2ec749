// The host thread of a rank: CPU time between the GPU work it launches (framework overhead, Python, the data
// loader). Run by runtime/host_executor.cpp. A replayed trace (workloads/replay/) puts the host's recorded intervals
// here, so that a faster GPU still waits for a slow host (docs/replay.md).
#pragma once

#include <string>

#include "program/op_kinds.hpp"

namespace snsim::workloads {

void parse_host(const ConfigNode& op, const OpParse& at);

/// `time` of CPU work on the rank's host thread: it holds no GPU, link or copy engine, so a GPU stream running
/// beside it (in `streams`) is not slowed.
struct HostOp {
  static constexpr OpKind KIND{.name = "host", .track = TimelineTrack::other, .parse = parse_host};
  Seconds time;
  std::string label = "host";  // what the record calls it: "host" or, for a replay, "launch gap"
  bool runtime_call = false;   // a CUDA runtime call (a launch, a synchronisation): varies with models.jitter.host
};

OpDescription describe(const HostOp& op);

}  // namespace snsim::workloads
