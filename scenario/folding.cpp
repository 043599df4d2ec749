#include "scenario/folding.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "models/jitter.hpp"

namespace snsim::workloads {
namespace {

/// What the GPU of a rank is, as far as its programs' timing goes: its preset and every channel it has.
auto hardware(const Fabric& fabric, DeviceId gpu) {
  const auto& spec = *fabric.device(gpu).gpu;
  std::vector<std::tuple<int, int, double, double>> channels;
  for (auto e : fabric.out_channels(gpu)) {
    const auto& c = fabric.channel(e);
    channels.emplace_back(static_cast<int>(c.kind), c.lanes, c.lane_bandwidth.count(), c.latency.count());
  }
  for (auto e : fabric.in_channels(gpu)) {
    const auto& c = fabric.channel(e);
    channels.emplace_back(100 + static_cast<int>(c.kind), c.lanes, c.lane_bandwidth.count(), c.latency.count());
  }
  std::ranges::sort(channels);
  return std::tuple{spec.model,
                    spec.dense_bf16.count(),
                    spec.hbm_bandwidth.count(),
                    spec.memory.count(),
                    spec.l2.count(),
                    spec.dense_peak.size(),
                    channels};
}

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.size() <= 4) return fmt::format("{}", fmt::join(ranks, ", "));
  return fmt::format("{}, {}, ... {} ({} ranks)", ranks[0], ranks[1], ranks.back(), ranks.size());
}

}  // namespace

FoldingDecision decide_folding(const Replicas& proposed, const std::vector<Program>& programs, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled) {
  const std::size_t n = programs.size();
  FoldingDecision out{Folding{n}, {}};
  auto& summary = out.summary;
  summary.ranks = n;
  summary.simulated = n;
  summary.replicas = proposed.ranks.size();
  auto full = [&](std::string why) {
    summary.why.push_back(std::move(why));
    return out;
  };
  if (!enabled) return full("fold: false (the scenario or --full asked for the full simulation)");
  if (proposed.ranks.size() < 2) return full("no workload proposes replicas to fold");
  const auto& jitter = *models.jitter;
  if (!jitter.latency.is_none() || !jitter.bandwidth.is_none() || !jitter.compute.is_none() || !jitter.host.is_none())
    return full("models.jitter draws per GPU: no two GPUs run alike");
  if (!models.variation->clock.is_none() || !models.variation->hbm.is_none())
    return full("models.variation draws per GPU: no two GPUs run alike");
  for (const auto& p : programs)
    for (const auto& op : p.ops)
      if (std::holds_alternative<ManagedOp>(op.what) || std::holds_alternative<HostOp>(op.what))
        return full("a program uses managed memory or the host thread, which the GPUs share");

  const auto& gpus = fabric.gpus();
  std::vector<int> replica_of(n, -1);
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d)
    for (int r : proposed.ranks[d]) replica_of[static_cast<std::size_t>(r)] = static_cast<int>(d);
  // Why each replica must run in full, the first reason found.
  std::vector<std::string> apart(proposed.ranks.size());
  auto set_apart = [&](int rank, const std::string& why) {
    if (rank < 0 || static_cast<std::size_t>(rank) >= n) return;
    const int d = replica_of[static_cast<std::size_t>(rank)];
    if (d >= 0 && apart[static_cast<std::size_t>(d)].empty()) apart[static_cast<std::size_t>(d)] = why;
  };
  for (const auto& slow : models.slow->gpus) set_apart(slow.gpu, fmt::format("GPU {} is slow (models.slow)", slow.gpu));
  for (const auto& f : failures) {
    if (f.gpu >= 0) set_apart(f.gpu, fmt::format("failure: {}", f.what));
    // A plane or tray reaches every GPU with a channel to its chips.
    for (auto chip : f.chips)
      for (auto e : fabric.in_channels(chip)) {
        const DeviceId from = fabric.source(e);
        if (fabric.device(from).kind == DeviceKind::gpu)
          set_apart(fabric.device(from).index, fmt::format("failure: {}", f.what));
      }
  }
  const auto first_clean = std::ranges::find_if(apart, [](const auto& why) { return why.empty(); });
  if (first_clean == apart.end()) return full("every replica is set apart (a slow GPU or a failure on each)");
  const int representative = static_cast<int>(first_clean - apart.begin());
  const auto& rep = proposed.ranks[static_cast<std::size_t>(representative)];
  std::vector<bool> folded(proposed.ranks.size(), false);
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d) {
    if (static_cast<int>(d) == representative || !apart[d].empty()) continue;
    for (std::size_t p = 0; p < rep.size() && apart[d].empty(); ++p) {
      const int r = rep[p], f = proposed.ranks[d][p];
      if (hardware(fabric, gpus[static_cast<std::size_t>(r)]) != hardware(fabric, gpus[static_cast<std::size_t>(f)]))
        apart[d] = fmt::format("GPU {} differs from GPU {} (its preset or its channels)", f, r);
    }
    folded[d] = apart[d].empty();
  }
  // Programs last (the longest check), against the folding the hardware allows: a relabelled peer must be a rank
  // of the folded replica's, whoever runs it.
  Folding candidate{n, proposed, representative, folded};
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d) {
    if (!folded[d]) continue;
    for (std::size_t p = 0; p < rep.size(); ++p) {
      const int f = proposed.ranks[d][p];
      const auto why = program_difference(programs[static_cast<std::size_t>(rep[p])],
                                          programs[static_cast<std::size_t>(f)], candidate, f);
      if (!why.empty()) {
        apart[d] = fmt::format("rank {}'s program differs from rank {}'s ({})", f, rep[p], why);
        folded[d] = false;
        break;
      }
    }
  }
  out.folding = Folding{n, proposed, representative, folded};
  summary.simulated = out.folding.simulated_ranks();
  summary.path = out.folding.any_folded() ? "folded" : "full";
  summary.representative = ranks_text(rep);
  for (std::size_t d = 0; d < apart.size(); ++d)
    if (!apart[d].empty())
      summary.why.push_back(
          fmt::format("replica {} (ranks {}) in full: {}", d, ranks_text(proposed.ranks[d]), apart[d]));
  return out;
}

}  // namespace snsim::workloads
