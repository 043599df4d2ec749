#include "validation/twins.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation {

namespace twins {

int rank_at(const TraceRecord& r, std::size_t i) {
  return r.ranks.size() > i ? r.ranks[i] : 0;
}

std::string env(const Trace& trace, const char* name) {
  const auto it = trace.header.env.find(name);
  return it != trace.header.env.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace twins

std::variant<Twin, std::string> make_twin(const Trace& trace, const TraceRecord& record, int gpus,
                                          const models::Models& models) {
  for (int rank : record.ranks)
    if (rank >= gpus) return fmt::format("rank {} is outside the {} simulated GPUs", rank, gpus);
  std::variant<Twin, std::string> twin = std::string("not modelled yet");
  switch (record.family) {
    case Family::copy:
    case Family::jitter:  // single copies, many samples
      twin = twins::copy(record, gpus, models);
      break;
    case Family::collective:
      twin = twins::collective(trace, record, gpus);
      break;
    case Family::nvshmem:
      twin = twins::nvshmem(record, gpus, models);
      break;
    case Family::latency:
      twin = twins::latency(record, gpus, models);
      break;
    case Family::uvm:
      twin = twins::uvm(record, gpus);
      break;
    case Family::step:
      twin = twins::step(record, gpus, models);
      break;
    case Family::launch:
      return "launch records are the launch parameters themselves (fits/copy_fit.cpp): calibration only, no twin";
    default:
      return fmt::format("snsim does not model the {} family yet", to_string(record.family));
  }
  if (auto* t = std::get_if<Twin>(&twin))
    t->samples = static_cast<int>(std::max<std::size_t>(1, record.samples.size()));
  return twin;
}

}  // namespace snsim::validation
