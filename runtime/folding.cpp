#include "runtime/folding.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::workloads {

Folding::Folding(std::size_t ranks)
    : representative_(ranks), replica_(ranks, -1), position_(ranks, -1), mirrors_(ranks) {
  for (std::size_t r = 0; r < ranks; ++r) representative_[r] = static_cast<int>(r);
}

Folding::Folding(std::size_t ranks, const Replicas& replicas, int representative, const std::vector<bool>& folded)
    : Folding(ranks) {
  ranks_ = replicas.ranks;
  for (std::size_t d = 0; d < ranks_.size(); ++d)
    for (std::size_t p = 0; p < ranks_[d].size(); ++p) {
      const auto r = static_cast<std::size_t>(ranks_[d][p]);
      replica_[r] = static_cast<int>(d);
      position_[r] = static_cast<int>(p);
    }
  const auto& rep = ranks_.at(static_cast<std::size_t>(representative));
  for (std::size_t d = 0; d < ranks_.size(); ++d) {
    if (!folded[d] || static_cast<int>(d) == representative) continue;
    for (std::size_t p = 0; p < ranks_[d].size(); ++p) {
      representative_[static_cast<std::size_t>(ranks_[d][p])] = rep[p];
      mirrors_[static_cast<std::size_t>(rep[p])].push_back(ranks_[d][p]);
    }
  }
}

std::size_t Folding::simulated_ranks() const {
  std::size_t n = 0;
  for (std::size_t r = 0; r < representative_.size(); ++r) n += representative_[r] == static_cast<int>(r);
  return n;
}

int Folding::relabel(int rank, int folded) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= replica_.size() || replica_[static_cast<std::size_t>(rank)] < 0)
    return rank;
  const int mine = replica_[static_cast<std::size_t>(folded)];
  const int theirs = replica_[static_cast<std::size_t>(representative(folded))];
  const int d = replica_[static_cast<std::size_t>(rank)];
  const auto p = static_cast<std::size_t>(position_[static_cast<std::size_t>(rank)]);
  if (d == theirs) return ranks_[static_cast<std::size_t>(mine)][p];
  if (d == mine) return ranks_[static_cast<std::size_t>(theirs)][p];
  return rank;
}

void RankRecords::iterator::settle() {
  const auto& records = *owner_->records_;
  if (!mirrors_pass_) {
    if (record_ < records.size()) return;
    if (!owner_->folding_->any_folded()) return;  // at the end
    mirrors_pass_ = true;
    record_ = 0;
    mirror_ = 1;
  }
  for (; record_ < records.size(); ++record_, mirror_ = 1) {
    const auto& mirrors = owner_->folding_->mirrors(records[record_].rank);
    if (mirror_ > mirrors.size()) continue;
    const int folded = mirrors[mirror_ - 1];
    copy_ = records[record_];  // assigned, not constructed: the strings reuse the copy's storage
    copy_.rank = folded;
    if (copy_.peer >= 0) copy_.peer = owner_->folding_->relabel(copy_.peer, folded);
    return;
  }
}

RankRecords::iterator& RankRecords::iterator::operator++() {
  if (mirrors_pass_)
    ++mirror_;
  else
    ++record_;
  settle();
  return *this;
}

namespace {

/// Compares two programs op by op; the first difference, as a sentence, or empty.
class ProgramComparison {
 public:
  ProgramComparison(const Folding& folding, int folded) : folding_{folding}, folded_{folded} {}

  std::string lists(const std::vector<Op>& a, const std::vector<Op>& b) {
    if (a.size() != b.size()) return fmt::format("{}: {} ops, not {}", where(), b.size(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      path_.push_back({"op", i});
      if (auto why = op(a[i], b[i]); !why.empty()) return why;
      path_.pop_back();
    }
    return {};
  }

 private:
  /// Where the comparison is, "op 3 stream 1 op 0": formatted only for a difference (millions of ops match).
  std::string where() const {
    std::vector<std::string> parts;
    for (const auto& [what, index] : path_) parts.push_back(fmt::format("{} {}", what, index));
    return parts.empty() ? "the program" : fmt::format("{}", fmt::join(parts, " "));
  }
  int relabel_(int rank) const { return folding_.relabel(rank, folded_); }
  bool same_group(const Group& a, const Group& b) const {
    if (!a || !b) return a == b;
    if (std::ranges::find(*a, folded_) != a->end()) return a == b;
    if (a->size() != b->size()) return false;
    for (std::size_t i = 0; i < a->size(); ++i)
      if (relabel_((*a)[i]) != (*b)[i]) return false;
    return true;
  }
  bool same_peer(int a, int b) const { return relabel_(a) == b; }

  std::string op(const Op& a, const Op& b) {
    if (a.what.index() != b.what.index())
      return fmt::format("{}: {}, not {}", where(), kind_of(b).name, kind_of(a).name);
    if (a.phase != b.phase || a.tag != b.tag) return fmt::format("{}: another phase or tag", where());
    if (const auto* ra = std::get_if<RepeatOp>(&a.what)) {
      const auto& rb = std::get<RepeatOp>(b.what);
      if (ra->count != rb.count) return fmt::format("{}: repeats {} times, not {}", where(), rb.count, ra->count);
      return lists(ra->body, rb.body);
    }
    if (const auto* sa = std::get_if<StreamsOp>(&a.what)) {
      const auto& sb = std::get<StreamsOp>(b.what);
      if (sa->streams.size() != sb.streams.size()) return fmt::format("{}: another number of streams", where());
      for (std::size_t i = 0; i < sa->streams.size(); ++i) {
        path_.push_back({"stream", i});
        if (auto why = lists(sa->streams[i], sb.streams[i]); !why.empty()) return why;
        path_.pop_back();
      }
      return {};
    }
    const bool same = std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          const auto& y = std::get<T>(b.what);
          if constexpr (std::is_same_v<T, ComputeOp>)
            return x.flops == y.flops && x.bytes == y.bytes && x.duration == y.duration && x.dtype == y.dtype &&
                   x.pipelined == y.pipelined;
          else if constexpr (std::is_same_v<T, CopyOp>)
            return same_peer(x.peer, y.peer) && x.bytes == y.bytes && x.engine == y.engine &&
                   x.pipelined == y.pipelined && x.pull == y.pull;
          else if constexpr (std::is_same_v<T, CollectiveOp>)
            return x.kind == y.kind && x.bytes == y.bytes &&
                   (x.group == y.group ? x.root == y.root : same_peer(x.root, y.root)) && x.protocol == y.protocol &&
                   same_group(x.group, y.group) && x.algorithm == y.algorithm && x.channels == y.channels &&
                   x.launch == y.launch;
          else if constexpr (std::is_same_v<T, BarrierOp>)
            return same_group(x.group, y.group) && x.sync == y.sync;
          else if constexpr (std::is_same_v<T, ShmemBarrierOp>)
            return same_group(x.group, y.group) && x.scope == y.scope;
          else if constexpr (std::is_same_v<T, PutOp>)
            return same_peer(x.to, y.to) && x.bytes == y.bytes && x.scope == y.scope && x.issuers == y.issuers &&
                   x.count == y.count && x.signal == y.signal;
          else if constexpr (std::is_same_v<T, GetOp>)
            return same_peer(x.from, y.from) && x.bytes == y.bytes && x.scope == y.scope;
          else if constexpr (std::is_same_v<T, SignalWaitOp>)
            return x.signal == y.signal && x.value == y.value && x.cmp == y.cmp && x.consume == y.consume;
          else if constexpr (std::is_same_v<T, LoadOp>)
            return same_peer(x.from, y.from) && x.bytes == y.bytes && x.pattern == y.pattern && x.count == y.count;
          else if constexpr (std::is_same_v<T, EventRecordOp>)
            return x.event == y.event;
          else if constexpr (std::is_same_v<T, EventWaitOp>)
            return x.event == y.event && x.count == y.count;
          else if constexpr (std::is_same_v<T, QuietOp> || std::is_same_v<T, FenceOp>)
            return true;
          else
            return false;  // managed memory and the host thread are shared: never folded
        },
        a.what);
    if (same) return {};
    const auto da = describe(a), db = describe(b);
    if (da.label == db.label) return fmt::format("{}: '{}' with another group, peer or option", where(), db.label);
    return fmt::format("{}: '{}', not '{}'", where(), db.label, da.label);
  }

  const Folding& folding_;
  int folded_;
  std::vector<std::pair<const char*, std::size_t>> path_;
};

}  // namespace

std::string program_difference(const Program& representative, const Program& program, const Folding& folding,
                               int folded) {
  return ProgramComparison{folding, folded}.lists(representative.ops, program.ops);
}

}  // namespace snsim::workloads
