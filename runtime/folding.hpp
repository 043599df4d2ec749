// Folding: replicas that run identical programs on identical hardware are simulated once (docs/folding.md). A
// workload proposes replicas (a training step: its data-parallel replicas); the scenario keeps those whose programs
// match a representative's rank for rank and whose GPUs nothing sets apart (scenario/folding.hpp), and the Runner
// runs only the representatives' programs. A folded rank stays present where it matters: wherever its program joins
// a group op that a simulated rank is in (its data-parallel collectives) or moves bytes beyond its own crossbar
// domain (its flows on NICs, rails and spines), a proxy actor on its GPU runs its op (runtime/runner.hpp).
#pragma once

#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "program/program.hpp"
#include "sim/report.hpp"

namespace snsim::workloads {

/// Ranks a workload proposes to fold: ranks[d][p] is the rank at position p of replica d, every replica the same
/// size; a rank in at most one replica.
struct Replicas {
  std::vector<std::vector<int>> ranks;
  bool operator==(const Replicas&) const = default;
};

class Folding {
 public:
  /// No folding: every one of `ranks` runs its own program.
  explicit Folding(std::size_t ranks = 0);
  /// `replicas`' ranks, each of the replicas marked in `folded` (by replica) represented by replica
  /// `representative`'s rank at the same position.
  Folding(std::size_t ranks, const Replicas& replicas, int representative, const std::vector<bool>& folded);

  /// Whether `rank` runs its own program (not folded into another's).
  bool simulated(int rank) const { return representative_[static_cast<std::size_t>(rank)] == rank; }
  /// The rank whose program stands for `rank`'s (itself when simulated).
  int representative(int rank) const { return representative_[static_cast<std::size_t>(rank)]; }
  const std::vector<int>& representatives() const { return representative_; }
  /// The folded ranks `rank` speaks for.
  const std::vector<int>& mirrors(int rank) const { return mirrors_[static_cast<std::size_t>(rank)]; }
  std::size_t ranks() const { return representative_.size(); }
  /// The replica `rank` is in, -1 outside any.
  int replica(int rank) const { return replica_[static_cast<std::size_t>(rank)]; }
  std::size_t simulated_ranks() const;
  bool any_folded() const { return simulated_ranks() < ranks(); }
  /// `rank` as folded rank `folded` sees it: its replica and its representative's replica exchanged, so that a peer
  /// of the representative becomes the corresponding peer of the folded rank; other ranks (HOST, NVME too) stay.
  int relabel(int rank, int folded) const;

 private:
  std::vector<int> representative_;        // by rank
  std::vector<int> replica_, position_;    // by rank: -1 outside the replicas
  std::vector<std::vector<int>> ranks_;    // the replicas
  std::vector<std::vector<int>> mirrors_;  // by rank
};

/// Every rank's op records, for the workloads' summaries: the simulated ranks' as the run left them, then, for each
/// of those records in turn, one per folded rank it speaks for, relabelled (rank and peer): what the full simulation
/// gives a folded rank when the folding is exact (docs/folding.md). The folded ranks' records are made one at a time
/// as the range is walked, never stored: folded 4:1, storing them took three times the simulated ranks' memory
/// (about 500 MB for GPT-3 175B on 128 GPUs). A record read through the iterator lives until it next moves; the
/// records and the folding must outlive the range.
class RankRecords {
 public:
  RankRecords(const std::vector<OpRecord>& simulated, const Folding& folding)
      : records_(&simulated), folding_(&folding) {}

  class iterator {
   public:
    using value_type = OpRecord;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    const OpRecord& operator*() const { return mirrors_pass_ ? copy_ : (*owner_->records_)[record_]; }
    iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return owner_ == nullptr || record_ >= owner_->records_->size(); }

   private:
    friend class RankRecords;
    explicit iterator(const RankRecords* owner) : owner_(owner) {}
    void settle();  // onto the next record that exists, at or after (record_, mirror_)
    const RankRecords* owner_ = nullptr;
    bool mirrors_pass_ = false;  // the first pass walks the simulated records, the second their folded copies
    std::size_t record_ = 0;
    std::size_t mirror_ = 0;  // 1-based in the second pass: mirrors(rank)[mirror_ - 1]
    OpRecord copy_;
  };

  iterator begin() const {
    iterator it(this);
    it.settle();
    return it;
  }
  std::default_sentinel_t end() const { return {}; }

  /// The simulated ranks' records alone, and the folding: a summary that needs no folded rank's record one by one
  /// (sums and extremes over ranks, a rank's row from its representative's) walks these, each record weighing
  /// 1 + folding().mirrors(rank).size(), instead of hundreds of millions of copies at 8,192 GPUs.
  const std::vector<OpRecord>& simulated() const { return *records_; }
  const Folding& folding() const { return *folding_; }

 private:
  const std::vector<OpRecord>* records_;
  const Folding* folding_;
};

/// Why folded rank `folded`'s program is not its representative's `representative` with its peers and groups
/// relabelled (Folding::relabel), or empty when it is: ops, their kinds, sizes, tags and structure must match
/// exactly; a group op on a group that holds `folded` must be on that very Group (the same collective), any other on
/// the relabelled members of the representative's. The Runner runs a folded rank's ops so (Runner::as_folded).
std::string program_difference(const Program& representative, const Program& program, const Folding& folding,
                               int folded);

}  // namespace snsim::workloads
