#include "workloads/training/balancer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <optional>

namespace snsim::workloads::training {

std::vector<double> popularity(int experts, double skew, RandomStream& rng) {
  // A random order (Fisher-Yates from the stream), then weight 1 / (place + 1)^skew.
  std::vector<int> order(static_cast<std::size_t>(experts));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<double> p(order.size());
  double sum = 0;
  for (std::size_t place = 0; place < order.size(); ++place) {
    p[static_cast<std::size_t>(order[place])] = 1 / std::pow(static_cast<double>(place + 1), skew);
    sum += p[static_cast<std::size_t>(order[place])];
  }
  for (auto& x : p) x /= sum;
  return p;
}

namespace {

/// Sequential binomials (each by its normal approximation): `n` draws over the categories `which`, category i taking
/// Bin(left, weight[i] / weight left) of the draws left, `total` the weights' sum; added to out[which[i]].
void multinomial(std::uint64_t n, const std::vector<std::size_t>& which, const std::vector<double>& weight,
                 double total, std::vector<std::uint64_t>& out, RandomStream& rng) {
  auto left = n;
  double p_left = total;
  for (std::size_t i = 0; i < which.size() && left > 0; ++i) {
    std::uint64_t& slot = out[which[i]];
    if (i + 1 == which.size() || p_left <= 0) {
      slot += left;
      break;
    }
    const double q = std::clamp(weight[which[i]] / p_left, 0.0, 1.0);
    const double m = static_cast<double>(left);
    const double draw = std::round(m * q + std::sqrt(m * q * (1 - q)) * rng.normal());
    const auto taken = static_cast<std::uint64_t>(std::clamp(draw, 0.0, m));
    slot += taken;
    left -= taken;
    p_left -= weight[which[i]];
  }
}

std::vector<std::size_t> all_of(std::size_t n) {
  std::vector<std::size_t> out(n);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

}  // namespace

Routing route(const std::vector<double>& popularity, int ranks, std::uint64_t tokens, int top_k, RandomStream& rng) {
  Routing counts(static_cast<std::size_t>(ranks), std::vector<std::uint64_t>(popularity.size(), 0));
  const auto experts = all_of(popularity.size());
  for (auto& row : counts) multinomial(tokens * static_cast<std::uint64_t>(top_k), experts, popularity, 1, row, rng);
  return counts;
}

GroupSubsets group_subsets(const std::vector<double>& popularity, int groups, int group_top_k) {
  const std::size_t per = popularity.size() / static_cast<std::size_t>(groups);
  std::vector<double> weight(static_cast<std::size_t>(groups), 0.0);
  for (std::size_t e = 0; e < popularity.size(); ++e) weight[e / per] += popularity[e];
  double all = 0;
  for (double w : weight) all += w;
  // f[mask]: the chance that a token's first |mask| group picks are the groups of mask, in any order; each pick takes
  // a group not yet picked in proportion to its weight.
  std::vector<double> f(std::size_t{1} << groups, 0.0);
  f[0] = 1;
  GroupSubsets out;
  for (std::size_t mask = 0; mask < f.size(); ++mask) {
    if (f[mask] == 0) continue;
    const int picked = std::popcount(mask);
    if (picked == group_top_k) {
      out.masks.push_back(mask);
      out.chance.push_back(f[mask]);
      continue;
    }
    double left = all;
    for (int g = 0; g < groups; ++g)
      if (mask >> g & 1) left -= weight[static_cast<std::size_t>(g)];
    if (left <= 0) continue;
    for (int g = 0; g < groups; ++g)
      if (!(mask >> g & 1)) f[mask | std::size_t{1} << g] += f[mask] * weight[static_cast<std::size_t>(g)] / left;
  }
  for (std::size_t mask : out.masks) {
    std::vector<std::size_t> experts;
    double total = 0;
    for (std::size_t e = 0; e < popularity.size(); ++e)
      if (mask >> (e / per) & 1) {
        experts.push_back(e);
        total += popularity[e];
      }
    out.experts.push_back(std::move(experts));
    out.weight.push_back(total);
  }
  return out;
}

Routing route_limited(const std::vector<double>& popularity, const GroupSubsets& subsets, int ranks,
                      std::uint64_t tokens, int top_k, RandomStream& rng) {
  Routing counts(static_cast<std::size_t>(ranks), std::vector<std::uint64_t>(popularity.size(), 0));
  const auto which = all_of(subsets.masks.size());
  double total = 0;
  for (double c : subsets.chance) total += c;
  std::vector<std::uint64_t> per_subset(subsets.masks.size());
  for (auto& row : counts) {
    std::ranges::fill(per_subset, 0);
    multinomial(tokens, which, subsets.chance, total, per_subset, rng);
    // A token's top_k choices among the experts of its groups (as route, not forced distinct).
    for (std::size_t s = 0; s < per_subset.size(); ++s)
      if (per_subset[s] > 0)
        multinomial(per_subset[s] * static_cast<std::uint64_t>(top_k), subsets.experts[s], popularity,
                    subsets.weight[s], row, rng);
  }
  return counts;
}

std::uint64_t busiest_exchange(const Routing& placed, int local) {
  const std::size_t ranks = placed.size(), per = static_cast<std::size_t>(local);
  std::uint64_t busiest = 0;
  for (std::size_t q = 0; q < ranks; ++q) {
    std::uint64_t sent = 0, received = 0;
    for (std::size_t e = 0; e < placed[q].size(); ++e)
      if (e / per != q) sent += placed[q][e];
    for (std::size_t src = 0; src < ranks; ++src)
      if (src != q)
        for (std::size_t e = q * per; e < (q + 1) * per; ++e) received += placed[src][e];
    busiest = std::max({busiest, sent, received});
  }
  return busiest;
}

Routing capacity_drop(const Routing& choices, double capacity_factor, std::uint64_t& capacity) {
  Routing kept = choices;
  const std::size_t experts = choices.empty() ? 0 : choices.front().size();
  std::uint64_t per_rank = 0;
  for (const auto& row : choices)
    per_rank = std::max(per_rank, std::accumulate(row.begin(), row.end(), std::uint64_t{0}));
  capacity = static_cast<std::uint64_t>(std::ceil(capacity_factor * static_cast<double>(per_rank) /
                                                  static_cast<double>(std::max<std::size_t>(experts, 1))));
  for (auto& row : kept)
    for (auto& n : row) n = std::min(n, capacity);
  return kept;
}

Balanced balance(const Routing& choices, double capacity_factor, double threshold, std::uint64_t chunk) {
  Balanced b;
  const std::size_t ranks = choices.size(), experts = ranks ? choices.front().size() : 0;
  b.placed.assign(ranks, std::vector<std::uint64_t>(experts, 0));
  b.loads.assign(experts, 0);
  std::uint64_t total = 0;
  for (const auto& row : choices) total += std::accumulate(row.begin(), row.end(), std::uint64_t{0});
  const double mean = static_cast<double>(total) / static_cast<double>(std::max<std::size_t>(experts, 1));
  b.capacity = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(capacity_factor * mean)));
  const double under = threshold * mean;
  Routing left = choices;
  auto least_loaded = [&] { return static_cast<std::size_t>(std::ranges::min_element(b.loads) - b.loads.begin()); };
  auto choose = [&](std::size_t router) -> std::optional<std::size_t> {
    const auto room = [&](std::size_t e) { return b.loads[e] < b.capacity; };
    const auto below = [&](std::size_t e) { return static_cast<double>(b.loads[e]) < under && room(e); };
    if (below(router)) return router;
    const std::size_t m = least_loaded();
    if (below(m)) return m;
    if (room(router)) return router;
    if (room(m)) return m;
    return std::nullopt;
  };
  for (bool more = true; more;) {
    more = false;
    for (std::size_t src = 0; src < ranks; ++src)
      for (std::size_t e = 0; e < experts; ++e) {
        std::uint64_t k = std::min(chunk, left[src][e]);
        if (k == 0) continue;
        left[src][e] -= k;
        more = more || left[src][e] > 0;
        while (k > 0) {
          const auto target = choose(e);
          if (!target) {
            b.dropped += k;
            break;
          }
          const std::uint64_t take = std::min(k, b.capacity - b.loads[*target]);
          b.loads[*target] += take;
          b.placed[src][*target] += take;
          k -= take;
        }
      }
  }
  return b;
}

}  // namespace snsim::workloads::training
