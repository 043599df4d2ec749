// What a `collective` record asks of the model, shared by its twin (twins/collective.cpp) and its fit
// (fits/collective.cpp), so that calibration designs its matrix from the plans the twins run.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "models/collective.hpp"
#include "validation/trace.hpp"

namespace snsim::validation::twins {

struct CollectiveRequirements {
  models::CollectiveKind kind = models::CollectiveKind::all_reduce;
  std::optional<models::Protocol> protocol;    // forced by the capture's NCCL_PROTO, else the model chooses
  std::optional<models::Algorithm> algorithm;  // forced by NCCL_ALGO, or ring where NVLS was off (see the .cpp)
};

/// The collective, protocol and algorithm of `record` from `trace`'s environment, or why there is no twin.
std::variant<CollectiveRequirements, std::string> collective_requirements(const Trace& trace,
                                                                          const TraceRecord& record);

}  // namespace snsim::validation::twins
