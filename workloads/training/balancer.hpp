// MoE routing of one layer and one micro-batch within one EP group: the router's choices, drawn from a seeded
// stream, and where tokens go under the two schedules.
//
// Router: each of an EP group's ranks routes `tokens` tokens to top_k experts each. Expert popularity is Zipf with
// exponent `skew` over a per-layer random order of the experts (p_e ~ 1 / (order_e + 1)^skew; skew 0 is uniform).
// A rank's top_k x tokens choices are drawn as a multinomial over p, one binomial per expert by its normal
// approximation (the counts of a few thousand choices), so one token's top_k choices are not forced distinct.
//
// BSP (GShard, Lepikhin et al. 2021 §2.2): every rank has a capacity per expert of
// ceil(capacity_factor x tokens x top_k / experts) slots; choices beyond it are dropped, and the dispatch and
// combine all_to_all move the padded capacity (experts x capacity tokens per rank).
//
// PGAS, with a dynamic load balancer: the expert loads are counters on the symmetric heap that every rank reads
// one-sidedly (a get) and reserves from; an expert holds at most
// capacity = floor(capacity_factor x group choices / experts) tokens. Choices are placed in chunks of `chunk`
// tokens, the ranks taking turns: a chunk goes to the router's expert while its load is under
// threshold x mean load; else to the least-loaded expert, if that one is under the threshold; else to the router's
// expert; never beyond an expert's capacity (a chunk that does not fit is split, the rest placed again), and dropped
// only when every expert is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/random.hpp"

namespace snsim::workloads::training {

/// counts[src][expert]: tokens rank `src` of the EP group sends to `expert`.
using Routing = std::vector<std::vector<std::uint64_t>>;

/// Expert popularity: Zipf(skew) over a random order of the experts drawn from `rng`; sums to 1.
std::vector<double> popularity(int experts, double skew, RandomStream& rng);

/// The router's choices of `ranks` ranks routing `tokens` tokens to `top_k` experts each.
Routing route(const std::vector<double>& popularity, int ranks, std::uint64_t tokens, int top_k, RandomStream& rng);

/// Group-limited routing (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" §2.1.2, node-limited routing; config.json's
/// n_group and topk_group): the experts form `groups` groups of consecutive experts; a token first picks
/// `group_top_k` of them, one at a time in proportion to each group's popularity (the sum of its experts'), then its
/// top_k experts among theirs. The subsets a token may pick and their chances, computed once per layer:
struct GroupSubsets {
  std::vector<std::size_t> masks;                 // the groups of each subset, a bit each
  std::vector<double> chance;                     // a token's chance to pick it
  std::vector<std::vector<std::size_t>> experts;  // its experts
  std::vector<double> weight;                     // their popularity's sum
};
GroupSubsets group_subsets(const std::vector<double>& popularity, int groups, int group_top_k);
/// As route, each token's choices within the subset of groups it picked.
Routing route_limited(const std::vector<double>& popularity, const GroupSubsets& subsets, int ranks,
                      std::uint64_t tokens, int top_k, RandomStream& rng);

/// BSP, dropless: the tokens the busiest rank of the group sends to its other ranks or receives from them, rank q
/// holding experts [q local, (q + 1) local): the all-to-all-v's longest exchange.
std::uint64_t busiest_exchange(const Routing& placed, int local);

/// BSP: each rank's choices cut to its per-expert capacity. `capacity` receives that capacity (slots per expert).
Routing capacity_drop(const Routing& choices, double capacity_factor, std::uint64_t& capacity);

struct Balanced {
  Routing placed;                    // placed[src][expert]
  std::vector<std::uint64_t> loads;  // per expert
  std::uint64_t capacity = 0;        // per expert, for the whole group
  std::uint64_t dropped = 0;         // choices no expert had room for
};

/// PGAS: the dynamic load balancer above.
Balanced balance(const Routing& choices, double capacity_factor, double threshold, std::uint64_t chunk = 32);

}  // namespace snsim::workloads::training
