#include "runtime/waits.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <boost/container_hash/hash.hpp>

namespace snsim::workloads {
Seconds covered(std::vector<std::pair<Seconds, Seconds>> intervals) {
  std::ranges::sort(intervals);
  Seconds total{0}, reach{0};
  bool any = false;
  for (const auto& [start, end] : intervals) {
    if (!any || start > reach) {
      total += end - start;
      reach = end;
      any = true;
    } else if (end > reach) {
      total += end - reach;
      reach = end;
    }
  }
  return total;
}

std::size_t WaitLog::KeyHash::operator()(const Key& key) const {
  std::size_t h = 0;
  boost::hash_combine(h, key.group);
  boost::hash_combine(h, key.kind);
  boost::hash_combine(h, key.n);
  return h;
}

void WaitLog::arrive(int rank, Sync kind, const void* group, std::size_t members, Seconds arrival, Seconds departure) {
  const std::size_t k = uses_[{kind, group, static_cast<std::size_t>(rank)}]++;
  const auto it = open_.try_emplace({kind, group, k}, Pending{members, {}}).first;
  auto& arrivals = it->second.arrivals;
  arrivals.push_back({rank, arrival, departure});
  if (arrivals.size() < it->second.members) return;  // syncs some member never reaches (a deadlock) give nothing
  const Arrival* last = &arrivals.front();
  for (const auto& a : arrivals)
    if (a.arrival > last->arrival || (a.arrival == last->arrival && a.rank < last->rank)) last = &a;
  for (const auto& a : arrivals) {
    // Until the last member arrived, or until this one left if it could go sooner (a broadcast's root).
    const Seconds until = std::min(last->arrival, a.departure);
    if (a.rank != last->rank && until > a.arrival)
      direct_.push_back({a.rank, last->rank, a.arrival, until - a.arrival});
  }
  open_.erase(it);
}

void WaitLog::add(const Wait& wait) {
  if (wait.duration > Seconds{0}) direct_.push_back(wait);
}

std::vector<Wait> WaitLog::waits() const {
  std::vector<Wait> all = direct_;
  std::ranges::sort(all, [](const Wait& a, const Wait& b) {
    return std::tie(a.rank, a.start, a.on, a.duration) < std::tie(b.rank, b.start, b.on, b.duration);
  });
  return all;
}

std::vector<RankWaits> wait_table(const std::vector<OpRecord>& ops, const std::vector<Wait>& waits, std::size_t ranks) {
  std::vector<RankWaits> table(ranks);
  std::vector<std::vector<std::pair<Seconds, Seconds>>> both(ranks), waiting(ranks);
  for (std::size_t r = 0; r < ranks; ++r) table[r].rank = static_cast<int>(r);
  for (const auto& o : ops) {
    if (o.rank < 0 || static_cast<std::size_t>(o.rank) >= ranks) continue;
    auto& row = table[static_cast<std::size_t>(o.rank)];
    row.span = std::max(row.span, o.end);
    both[static_cast<std::size_t>(o.rank)].emplace_back(o.start, o.end);
  }
  for (const auto& w : waits) {
    const auto r = static_cast<std::size_t>(w.rank);
    auto& row = table.at(r);
    row.span = std::max(row.span, w.start + w.duration);  // a phase barrier's wait lies between ops
    if (w.on < 0 || static_cast<std::size_t>(w.on) >= ranks) throw std::logic_error("wait_table: a wait on no rank");
    row.on[w.on] += w.duration;
    both[r].emplace_back(w.start, w.start + w.duration);
    waiting[r].emplace_back(w.start, w.start + w.duration);
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    table[r].waiting = covered(waiting[r]);
    table[r].busy = covered(both[r]) - table[r].waiting;
  }
  return table;
}

Table waits_table(const std::vector<RankWaits>& waits) {
  Table t{
      "waits: time each rank was busy, and blocked on other ranks (collectives and barriers wait for the last "
      "member to arrive)",
      {"rank", "span_us", "busy_us", "waiting_us", "waiting_pct", "most_waited_on", "on_it_us"},
      {}};
  for (const auto& w : waits) {
    const auto most = w.most_waited_on();
    t.rows.push_back({fmt::format("gpu{}", w.rank), w.span.count() * 1e6, w.busy.count() * 1e6, w.waiting.count() * 1e6,
                      w.span > Seconds{0} ? 100 * (w.waiting / w.span) : 0.0,
                      most ? fmt::format("gpu{}", *most) : std::string("-"),
                      most ? w.on.at(*most).count() * 1e6 : 0.0});
  }
  return t;
}

}  // namespace snsim::workloads
