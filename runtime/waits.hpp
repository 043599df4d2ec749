// Who waited on whom: the time each rank spent blocked on another rank, and which one.
//
// The executors tell a WaitLog about every blocking op as they run it; after the run, wait_table() turns the log
// and the op records into one RankWaits per rank (sim/report.hpp), the report's "waits" table. Attribution:
//
//   collective, barrier,      every member waits for the last to arrive: a member's wait is the last arrival minus
//   shmem_barrier             its own (at most until it left the op), blamed on the last arriver (the lowest rank
//                             of those arriving last together). The time after the last arrival is the op's own
//                             work (moving data), not waiting. A member arrives when it starts the op; at a
//                             shmem_barrier once its own puts are complete (the barrier's first half).
//   signal_wait               from its start until the signal held, blamed on the PE whose put_signal made it hold
//   get                       its whole duration, blamed on the PE it reads from (the rank is stalled on that
//                             rank's memory)
//
// Instances of a group's syncs are matched by count: the k-th sync a rank starts on a group is the k-th of every
// member, as the programs (like NCCL's) require. Not attributed: copies, puts, quiet, loads and UVM faults are the
// rank's own work (busy), however long the links make them; concurrent streams' waits can overlap, so a rank's
// waits by blamed rank can add up to more than its waiting time, which counts overlaps once.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "sim/report.hpp"
#include "sim/units.hpp"

namespace snsim::workloads {

/// One stretch of time a rank spent blocked on another rank (declared with the Report, which keeps them).
using snsim::Wait;

/// The kinds of group syncs, counted apart: a program list's collectives and barriers share one Group, and may run
/// on different streams in different orders.
enum class Sync { collective, barrier, shmem_barrier };

/// What the executors record while the programs run; resolved into Waits after the run.
class WaitLog {
 public:
  /// `rank` reached its next sync of `kind` on `group` (of `members` ranks) at `arrival` and left it at `departure`.
  void arrive(int rank, Sync kind, const void* group, std::size_t members, Seconds arrival, Seconds departure);
  /// A wait on one rank (signal_wait, get); a zero duration is dropped.
  void add(const Wait& wait);

  /// Every wait, by rank, then start, then the rank waited on: the direct ones and, for every group sync that all
  /// its members reached, each member's wait for the last to arrive. Syncs some member never reached (a deadlock)
  /// give nothing.
  std::vector<Wait> waits() const;

 private:
  struct Arrival {
    int rank;
    Seconds arrival, departure;
  };
  /// Syncs of a kind on a group, and a number: a rank (how many it started) or k (the group's k-th sync).
  struct Key {
    Sync kind;
    const void* group;
    std::size_t n;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const;
  };
  struct Pending {
    std::size_t members;
    std::vector<Arrival> arrivals;
  };
  // A run makes millions of syncs and a few are open at a time: each is resolved into waits, and forgotten, as its
  // last member arrives.
  std::unordered_map<Key, std::size_t, KeyHash> uses_;  // (kind, group, rank) -> syncs the rank started
  std::unordered_map<Key, Pending, KeyHash> open_;      // (kind, group, k) -> the arrivals so far
  std::vector<Wait> direct_;                            // and the waits of the syncs resolved
};

/// Per rank (0 .. ranks - 1): span, busy, waiting and waiting by blamed rank, from the op records of the run and
/// its waits. Waiting is the union of the rank's waits; busy the union of its ops' intervals less the waiting.
std::vector<RankWaits> wait_table(const std::vector<OpRecord>& ops, const std::vector<Wait>& waits, std::size_t ranks);

/// The printed table: rank, span, busy, waiting (also as a share of the span), the rank most waited on and how long.
Table waits_table(const std::vector<RankWaits>& waits);

/// The length of the union of intervals [start, end): the time a rank spent in any of them.
Seconds covered(std::vector<std::pair<Seconds, Seconds>> intervals);

}  // namespace snsim::workloads
