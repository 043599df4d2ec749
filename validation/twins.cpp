#include "validation/twins.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation {

namespace twins {

int rank_at(const TraceRecord& r, std::size_t i) {
  return r.ranks.size() > i ? r.ranks[i] : 0;
}

std::optional<models::OperandData> recorded_operands(const TraceRecord& r, models::OperandData missing) {
  const std::string data = r.extra.value("data", r.extra.value("pattern", std::string()));
  if (data.empty()) return missing;
  if (data == "normal" || data == "random" || data == "uniform") return models::OperandData::normal;
  if (data == "zeros" || data == "ones" || data == "small_int" || data == "low_entropy")
    return models::OperandData::low_entropy;
  return std::nullopt;
}

std::string env(const Trace& trace, const char* name) {
  const auto it = trace.header.env.find(name);
  return it != trace.header.env.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A built twin draws as many samples as the record kept; its value must be in the record's unit.
std::variant<Twin, std::string> finished(const TraceRecord& record, std::variant<Twin, std::string> twin) {
  if (auto* t = std::get_if<Twin>(&twin)) {
    if (record.unit == MeasureUnit::bytes_per_second && !t->rate_bytes)
      return fmt::format("the twin of {} gives a time, the record a rate", record.test);
    t->samples = static_cast<int>(std::max<std::size_t>(1, record.samples.size()));
  }
  return twin;
}

}  // namespace twins

std::string imported_source(const Trace& trace) {
  const auto it = trace.header.extra.find("source");
  return it != trace.header.extra.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string timing_method(const Trace& trace, const TraceRecord& record) {
  for (const Json* fields : {&record.extra, &trace.header.extra})
    if (const auto it = fields->find("method"); it != fields->end() && it->is_string()) return it->get<std::string>();
  const std::string source = imported_source(trace);
  return source.empty() ? "probe" : source;
}

std::variant<Twin, std::string> make_twin(const Trace& trace, const TraceRecord& record, int gpus,
                                          const models::Models& models, const std::vector<int>& run_gpus) {
  for (int rank : record.ranks)
    if (rank >= gpus) return fmt::format("rank {} is outside the {} simulated GPUs", rank, gpus);
  if (!imported_source(trace).empty())
    return twins::finished(record, twins::imported(trace, record, gpus, models, run_gpus));
  std::variant<Twin, std::string> twin = std::string("not modelled yet");
  switch (record.family) {
    case Family::copy:
    case Family::jitter:  // single copies, many samples
      twin = twins::copy(record, gpus, models, timing_method(trace, record));
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
      twin = twins::launch(record, gpus, models, timing_method(trace, record));
      break;
    case Family::compute:
      twin = record.test == "train_step" ? twins::train_step(trace, record, gpus, models)
                                         : twins::compute(record, gpus, models, timing_method(trace, record));
      break;
    default:
      return fmt::format("snsim does not model the {} family yet", to_string(record.family));
  }
  return twins::finished(record, std::move(twin));
}

}  // namespace snsim::validation
