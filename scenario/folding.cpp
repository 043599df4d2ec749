#include "scenario/folding.hpp"

#include <algorithm>
#include <optional>
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

namespace {

/// What decides the folding before any program is built: the scenario's key, the proposal, per-GPU draws, slow GPUs,
/// failures and the hardware. Replicas that fold here still fold only if their programs match (decide_folding).
struct Candidates {
  std::optional<std::string> full;  // why everything runs in full, before the programs are looked at
  int representative = -1;          // -1: every replica is set apart
  std::vector<bool> folded;         // by replica
  std::vector<std::string> apart;   // by replica: why it runs in full, the first reason found
};

Candidates candidates(const Replicas& proposed, std::size_t n, const Fabric& fabric, const models::Models& models,
                      const std::vector<Failure>& failures, bool enabled) {
  Candidates c;
  if (!enabled) c.full = "fold: false (the scenario or --full asked for the full simulation)";
  if (!c.full && proposed.ranks.size() < 2) c.full = "no workload proposes replicas to fold";
  const auto& jitter = *models.jitter;
  if (!c.full &&
      (!jitter.latency.is_none() || !jitter.bandwidth.is_none() || !jitter.compute.is_none() || !jitter.host.is_none()))
    c.full = "models.jitter draws per GPU: no two GPUs run alike";
  if (!c.full && (!models.variation->clock.is_none() || !models.variation->hbm.is_none()))
    c.full = "models.variation draws per GPU: no two GPUs run alike";
  if (c.full) return c;

  const auto& gpus = fabric.gpus();
  std::vector<int> replica_of(n, -1);
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d)
    for (int r : proposed.ranks[d]) replica_of[static_cast<std::size_t>(r)] = static_cast<int>(d);
  auto& apart = c.apart;
  apart.resize(proposed.ranks.size());
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
  c.folded.assign(proposed.ranks.size(), false);
  const auto first_clean = std::ranges::find_if(apart, [](const auto& why) { return why.empty(); });
  if (first_clean == apart.end()) return c;
  c.representative = static_cast<int>(first_clean - apart.begin());
  const auto& rep = proposed.ranks[static_cast<std::size_t>(c.representative)];
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d) {
    if (static_cast<int>(d) == c.representative || !apart[d].empty()) continue;
    for (std::size_t p = 0; p < rep.size() && apart[d].empty(); ++p) {
      const int r = rep[p], f = proposed.ranks[d][p];
      if (hardware(fabric, gpus[static_cast<std::size_t>(r)]) != hardware(fabric, gpus[static_cast<std::size_t>(f)]))
        apart[d] = fmt::format("GPU {} differs from GPU {} (its preset or its channels)", f, r);
    }
    c.folded[d] = apart[d].empty();
  }
  return c;
}

}  // namespace

std::vector<bool> needed_ranks(const Replicas& proposed, std::size_t ranks, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled) {
  const Candidates c = candidates(proposed, ranks, fabric, models, failures, enabled);
  if (c.full || c.representative < 0) return {};
  std::vector<bool> needed(ranks, true);
  for (std::size_t d = 0; d < proposed.ranks.size(); ++d)
    if (c.folded[d])
      for (int r : proposed.ranks[d]) needed[static_cast<std::size_t>(r)] = false;
  return needed;
}

FoldingDecision decide_folding(const Replicas& proposed, const std::vector<Program>& programs, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled,
                               bool alike) {
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
  Candidates c = candidates(proposed, n, fabric, models, failures, enabled);
  if (c.full) return full(*c.full);
  for (const auto& p : programs)
    for (const auto& op : p.ops)
      if (std::holds_alternative<ManagedOp>(op.what) || std::holds_alternative<HostOp>(op.what))
        return full("a program uses managed memory or the host thread, which the GPUs share");
  if (c.representative < 0) return full("every replica is set apart (a slow GPU or a failure on each)");
  const int representative = c.representative;
  auto& folded = c.folded;
  auto& apart = c.apart;
  const auto& rep = proposed.ranks[static_cast<std::size_t>(representative)];
  // Programs last (the longest check), against the folding the hardware allows: a relabelled peer must be a rank
  // of the folded replica's, whoever runs it. Replicas alike by construction were not built to be compared.
  Folding candidate{n, proposed, representative, folded};
  for (std::size_t d = 0; d < proposed.ranks.size() && !alike; ++d) {
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
