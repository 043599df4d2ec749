// PyTorch profiler traces (Kineto's Chrome trace JSON, gzipped or not) into a RankTrace: the host's runtime calls in
// time order with the gaps between them, every kernel, memcpy and memset on its stream with its launch, NCCL
// collectives from `record_param_comms`, and the host's synchronisations. docs/replay.md lists what is read and
// what is assumed.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "workloads/replay/trace.hpp"

namespace snsim::workloads::replay {

/// Whether `json` is a Kineto trace (an object with `traceEvents`).
bool is_kineto(const nlohmann::json& json);

/// The trace of one rank; `position` is its place among the traces given (its rank when the trace does not say).
/// InputErrors name `file` and what was expected.
RankTrace read_kineto(const nlohmann::json& json, const std::string& file, int position);

}  // namespace snsim::workloads::replay
