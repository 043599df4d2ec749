// Which ops each rank started and has not ended, for deadlock diagnosis and the run's invariants: when a run ends
// with ops unended, each is named with what it waits for (the members missing from a collective or barrier, a
// signal's or an event's value).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "program/program.hpp"
#include "runtime/waits.hpp"
#include "sim/report.hpp"

namespace snsim::workloads {

class OpTracker {
 public:
  explicit OpTracker(std::size_t ranks) : pending_(ranks), started_(ranks, 0), indexed_(ranks, 0) {}
  /// `rank` starts `op` (which must outlive the run); returns the sequence number end() takes.
  std::uint64_t start(int rank, const Op& op);
  void end(int rank, std::uint64_t sequence);
  /// Ops ended so far, free barriers included (as expanded_size counts them).
  std::uint64_t ended() const { return ended_; }

  /// What an op that is neither a collective nor a barrier waits for ("" when nothing is known).
  using WaitingFor = std::function<std::string(int rank, const Op& op)>;
  /// Into `invariants`: ops started and ended, every op a rank started and never ended with what it waited for, and
  /// any rank whose records (by rank, as recorded) go back in time.
  void check(Invariants& invariants, const std::vector<std::vector<OpRecord>>& records,
             const std::vector<bool>& finished, const WaitingFor& waiting_for) const;

 private:
  struct Started {
    std::optional<std::uint64_t> index;  // the rank's n-th recorded op; none for a free barrier
    const Op* op = nullptr;
    std::uint64_t instance = 0;  // collectives and barriers: the n-th of its kind the rank started on its group
  };
  std::vector<std::map<std::uint64_t, Started>> pending_;  // by rank: started, not ended, by start sequence
  std::vector<std::uint64_t> started_;                     // by rank: ops started (free barriers included)
  std::vector<std::uint64_t> indexed_;                     // by rank: ops started that are recorded
  std::map<std::tuple<int, Sync, const void*>, std::uint64_t> syncs_started_;  // (rank, kind, group) -> count
  std::uint64_t ended_ = 0;
};

}  // namespace snsim::workloads
