// Twins of the probe's `latency` family (tools/probe/src/families/latency.cu): one thread chases pointers through
// a span of its own GPU's memory (local_load, ranks [reader]) or a peer's (peer_load, ranks [reader, owner]).
//
// A sample is one kernel of `loads_per_sample` dependent loads divided by their number. The twin chases as many
// loads and divides its span by the count too. The model charges every load the same latency, so a load op of many
// loads is one wait; the loads go to CHASE_PIECES ops, because each wait draws its own latency-jitter factor, and
// the probe's mean over thousands of loads has almost none left.
#include <algorithm>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {
// Load ops per chase (see above): the jitter of their sum is a quarter of one op's.
constexpr std::uint64_t CHASE_PIECES = 16;
}  // namespace

std::variant<Twin, std::string> latency(const TraceRecord& r, int gpus, const models::Models& models) {
  (void)models;
  if (r.variant != "chase") return fmt::format("no twin for latency variant '{}'", r.variant);
  const bool local = r.test == "local_load";
  if (!local && r.test != "peer_load") return fmt::format("no twin for latency test '{}'", r.test);
  if (r.ranks.size() != (local ? 1u : 2u))
    return fmt::format("latency {}: {} ranks, expected {}", r.test, r.ranks.size(), local ? 1 : 2);
  const auto loads = static_cast<std::uint64_t>(extra_number(r, "loads_per_sample", 1));
  if (loads < 1 || r.bytes.count() == 0) return "latency: the record has no span or no loads_per_sample";
  // The probe's chain visits `stride`-byte lines; the model's load latency depends only on the span (L2 or HBM).
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  const int reader = rank_at(r, 0);
  const int owner = local ? reader : rank_at(r, 1);
  auto& ops = twin.sample[static_cast<std::size_t>(reader)];
  const std::uint64_t pieces = std::min(CHASE_PIECES, loads);
  for (std::uint64_t i = 0; i < pieces; ++i)  // the remainder goes to the first pieces
    ops.push_back(op(
        workloads::LoadOp{owner, r.bytes, models::LoadPattern::chase, loads / pieces + (i < loads % pieces ? 1 : 0)}));
  twin.repetitions = static_cast<double>(loads);
  return twin;
}

}  // namespace snsim::validation::twins
