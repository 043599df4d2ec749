#include "runtime/op_tracker.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::workloads {
namespace {

/// The kind and group of an op that waits for every member of a group; nullopt for others.
std::optional<std::pair<Sync, const void*>> sync_of(const Op& op) {
  if (const auto* b = std::get_if<BarrierOp>(&op.what)) return std::pair{Sync::barrier, b->group.get()};
  if (const auto* c = std::get_if<CollectiveOp>(&op.what)) return std::pair{Sync::collective, c->group.get()};
  if (const auto* s = std::get_if<ShmemBarrierOp>(&op.what)) return std::pair{Sync::shmem_barrier, s->group.get()};
  return std::nullopt;
}

const std::vector<int>& group_of(const Op& op) {
  if (const auto* b = std::get_if<BarrierOp>(&op.what)) return *b->group;
  if (const auto* c = std::get_if<CollectiveOp>(&op.what)) return *c->group;
  return *std::get<ShmemBarrierOp>(op.what).group;
}

/// "0-3, 5, 7-8": ranks in order, runs shortened.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::uint64_t OpTracker::start(int rank, const Op& op) {
  const auto r = static_cast<std::size_t>(rank);
  const std::uint64_t sequence = started_[r]++;
  Started& started = pending_[r][sequence];
  started.op = &op;
  if (!is_free_barrier(op)) started.index = indexed_[r]++;
  if (const auto sync = sync_of(op)) started.instance = syncs_started_[{rank, sync->first, sync->second}]++;
  return sequence;
}

void OpTracker::end(int rank, std::uint64_t sequence) {
  pending_[static_cast<std::size_t>(rank)].erase(sequence);
  ++ended_;
}

void OpTracker::check(Invariants& invariants, const std::vector<std::vector<OpRecord>>& records,
                      const std::vector<bool>& finished, const WaitingFor& waiting_for) const {
  for (std::size_t r = 0; r < records.size(); ++r) {
    invariants.ops_started += started_[r];
    // Records are written as ops end, so their ends never go back; and an op never ends before it starts.
    Seconds last{0};
    for (const auto& record : records[r]) {
      if (record.end < record.start || record.end < last)
        invariants.violations.push_back(
            fmt::format("rank {}: op '{}' runs from {} s to {} s, after an op ending at {} s", r, record.label,
                        record.start.count(), record.end.count(), last.count()));
      last = std::max(last, record.end);
    }
    for (const auto& [sequence, started] : pending_[r]) {
      const Op& op = *started.op;
      UnendedOp unended{static_cast<int>(r), started.index, std::string(kind_of(op).name), describe(op).label, ""};
      if (!started.index) unended.label = fmt::format("the free barrier before workload {}", op.phase);
      if (const auto sync = sync_of(op)) {
        const auto& group = group_of(op);
        std::vector<int> arrived;
        std::vector<std::string> missing;
        for (int member : group) {
          const auto it = syncs_started_.find({member, sync->first, sync->second});
          if (it != syncs_started_.end() && it->second > started.instance)
            arrived.push_back(member);
          else
            missing.push_back(finished[static_cast<std::size_t>(member)]
                                  ? fmt::format("{} (finished its program)", member)
                                  : fmt::format("{}", member));
        }
        const std::string what =
            started.index ? fmt::format("{} no. {} of ranks {}", unended.kind, started.instance + 1, rank_list(group))
                          : fmt::format("the barrier of ranks {}", rank_list(group));
        if (!missing.empty())
          unended.waiting_for =
              fmt::format("for {} {} to arrive at {} (arrived: {})", missing.size() == 1 ? "rank" : "ranks",
                          fmt::join(missing, ", "), what, rank_list(arrived));
      } else {
        unended.waiting_for = waiting_for(static_cast<int>(r), op);
      }
      invariants.unended.push_back(std::move(unended));
    }
  }
  invariants.ops_ended += ended_;
}

}  // namespace snsim::workloads
