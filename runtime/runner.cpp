#include "runtime/runner.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <span>
#include <type_traits>

#include <fmt/format.h>
#include <xbt/log.h>

XBT_LOG_NEW_DEFAULT_CATEGORY(snsim_runner, "snsim: executing programs");

namespace snsim::workloads {
namespace {

/// Whether `Executor` runs ops of type T: as run(rank, op), or run(rank, op, top) when it records work the op
/// causes under the top-level op's phase and tag.
template <class Executor, class T>
constexpr bool runs = requires(Executor& e, int rank, const T& op, const Op& top) {
  e.run(rank, op);
}
|| requires(Executor& e, int rank, const T& op, const Op& top) {
  e.run(rank, op, top);
};

template <class Executor, class T>
OpOutcome call(Executor& executor, int rank, const T& op, const Op& top) {
  auto run = [&] {
    if constexpr (requires { executor.run(rank, op, top); })
      return executor.run(rank, op, top);
    else
      return executor.run(rank, op);
  };
  if constexpr (std::is_void_v<decltype(run())>) {
    run();
    return {};
  } else {
    return run();
  }
}

/// The rank a point-to-point op moves bytes with (a put's target, a get's or load's source, a copy's peer), or
/// nullopt for any other op.
std::optional<int> exchange_peer(const Op& op) {
  return std::visit(
      [](const auto& o) -> std::optional<int> {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, PutOp>) return o.to;
        if constexpr (std::is_same_v<T, GetOp> || std::is_same_v<T, LoadOp>) return o.from;
        if constexpr (std::is_same_v<T, CopyOp>) return o.peer;
        return std::nullopt;
      },
      op.what);
}

}  // namespace

Runner::Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs, std::uint64_t seed,
               std::optional<Folding> folding)
    : context_{simulation, models, programs.size(), seed},
      programs_{std::move(programs)},
      folding_{folding ? std::move(*folding) : Folding{programs_.size()}},
      domain_(programs_.size(), -1),
      finished_(programs_.size(), false),
      tracker_{programs_.size()},
      device_{context_},
      host_{context_},
      collectives_{context_},
      pgas_{context_},
      uvm_{context_, pgas_} {
  if (folding_.ranks() != programs_.size())
    throw std::logic_error(fmt::format("folding of {} ranks for {} programs", folding_.ranks(), programs_.size()));
  const auto& gpus = simulation.fabric().gpus();
  const auto domains = simulation.fabric().crossbar_domains();
  std::vector<int> domain_of_device(simulation.fabric().device_count(), -1);
  for (std::size_t d = 0; d < domains.size(); ++d)
    for (auto device : domains[d]) domain_of_device[device] = static_cast<int>(d);
  for (std::size_t r = 0; r < programs_.size(); ++r) domain_[r] = domain_of_device[gpus[r]];
  const Fabric& fabric = simulation.fabric();
  owner_.assign(fabric.device_count(), -1);
  for (std::size_t r = 0; r < gpus.size(); ++r) owner_[gpus[r]] = static_cast<int>(r);
  for (DeviceId v = 0; v < fabric.device_count(); ++v) {
    const auto kind = fabric.device(v).kind;
    if (kind != DeviceKind::nic && kind != DeviceKind::pcie_switch) continue;
    std::set<int> served;
    for (auto e : fabric.out_channels(v))
      if (fabric.device(fabric.target(e)).kind == DeviceKind::gpu) served.insert(fabric.device(fabric.target(e)).index);
    for (auto e : fabric.in_channels(v))
      if (fabric.device(fabric.source(e)).kind == DeviceKind::gpu) served.insert(fabric.device(fabric.source(e)).index);
    if (served.size() == 1) owner_[v] = *served.begin();
  }
  non_binding_ = fabric.non_binding_channels();
  if (folding_.any_folded()) collectives_.fold(folding_, [this](int a, int b) { return shares_links(a, b); });
}

std::uint64_t Runner::ops_to_run() const {
  std::uint64_t n = 0;
  for (std::size_t r = 0; r < programs_.size(); ++r)
    if (folding_.simulated(static_cast<int>(r))) n += expanded_size(programs_[r].ops);
  return n;
}

bool Runner::shares_links(int rank, int peer) {
  if (peer < 0 || static_cast<std::size_t>(peer) >= domain_.size()) return true;  // the host, NVMe
  if (rank == peer) return false;
  const int a = domain_[static_cast<std::size_t>(rank)], b = domain_[static_cast<std::size_t>(peer)];
  if (a >= 0 && a == b) return false;
  auto [it, fresh] = pair_shares_links_.try_emplace({rank, peer}, true);
  if (!fresh) return it->second;
  const Fabric& fabric = context_.simulation().fabric();
  const auto route = fabric.route(context_.device(rank), context_.device(peer));
  // A channel of the spines of a non-blocking leaf-spine network is shared but never full: what others send through
  // it cannot change the pair's transfers.
  auto own = [&](DeviceId v) { return owner_[v] == rank || owner_[v] == peer; };
  it->second = !route || std::ranges::any_of(route->hops, [&](const Hop& hop) {
    return std::ranges::any_of(hop.channels, [&](ChannelId c) {
      return !own(fabric.source(c)) && !own(fabric.target(c)) && !non_binding_[c.index];
    });
  });
  return it->second;
}

bool Runner::shares_links(const Group& group) {
  // Pairs checked one by one up to this size; a larger group spanning domains is taken to share links.
  constexpr std::size_t MAX_CHECKED = 16;
  auto [it, fresh] = group_shares_links_.try_emplace(group.get(), false);
  if (!fresh) return it->second;
  const auto& g = *group;
  const bool one_domain = std::ranges::all_of(g, [&](int r) {
    return domain_[static_cast<std::size_t>(r)] >= 0 &&
           domain_[static_cast<std::size_t>(r)] == domain_[static_cast<std::size_t>(g.front())];
  });
  if (one_domain)
    it->second = false;
  else if (g.size() > MAX_CHECKED)
    it->second = true;
  else
    for (std::size_t i = 0; i < g.size() && !it->second; ++i)
      for (std::size_t j = 0; j < g.size() && !it->second; ++j)
        if (i != j && shares_links(g[i], g[j])) it->second = true;
  return it->second;
}

bool Runner::reaches(int folded, int peer) {
  return (peer >= 0 && static_cast<std::size_t>(peer) < programs_.size() && folding_.simulated(peer)) ||
         shares_links(folded, peer);
}

bool Runner::needs_proxy(int folded, const Op& op) {
  auto joins = [&](const Group& group) {
    return std::ranges::any_of(*group, [&](int r) { return r != folded && folding_.simulated(r); }) ||
           shares_links(group);
  };
  if (const auto peer = exchange_peer(op)) return *peer != folded && reaches(folded, *peer);
  return std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, CollectiveOp>)
          return joins(o.group) && collectives_.enter_folded(folded, o);
        else if constexpr (std::is_same_v<T, BarrierOp> || std::is_same_v<T, ShmemBarrierOp>)
          // A barrier moves no bytes: only a simulated member waits for it.
          return std::ranges::any_of(*o.group, [&](int r) { return r != folded && folding_.simulated(r); });
        else
          return false;  // kernels, waits on its own signals and events: its representative's timing is its own
      },
      op.what);
}

bool Runner::mirrors_may_need_proxies(int rank, const Op& op) {
  // Most of a representative's ops are kernels, and exchanges inside its replica over links its own: none of its
  // folded ranks runs them, and copying the op for each folded rank to find out was most of a large folded run's time.
  const auto& mirrors = folding_.mirrors(rank);
  auto spans_replicas = [&](const Group& group) {
    return std::ranges::any_of(*group, [&](int r) { return !folding_.simulated(r); });
  };
  if (const auto peer = exchange_peer(op)) {
    auto [it, fresh] = peer_mirrored_.try_emplace({rank, *peer}, true);
    if (fresh && *peer >= 0 && static_cast<std::size_t>(*peer) < programs_.size() && folding_.simulated(*peer))
      it->second =
          std::ranges::any_of(mirrors, [&](int folded) { return reaches(folded, folding_.relabel(*peer, folded)); });
    return it->second;
  }
  return std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, CollectiveOp> || std::is_same_v<T, BarrierOp> ||
                      std::is_same_v<T, ShmemBarrierOp>) {
          auto [it, fresh] = group_mirrored_.try_emplace(o.group.get(), false);
          if (fresh)  // a group of the representative's replica becomes each folded replica's own
            it->second = spans_replicas(o.group) || std::ranges::any_of(mirrors, [&](int folded) {
                           return shares_links(relabelled(o.group, folded));
                         });
          return it->second;
        } else {
          return false;  // kernels, waits on its own signals and events: its representative's timing is its own
        }
      },
      op.what);
}

void Runner::launch() {
  pgas_.prepare();
  for (std::size_t r = 0; r < programs_.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (!folding_.simulated(rank)) {
      finished_[r] = true;  // its representative runs its program
      continue;
    }
    // At most a million records' room up front: a program of long repeats grows its records as they come.
    constexpr std::uint64_t RESERVED = 1u << 20;
    context_.reserve_records(rank, static_cast<std::size_t>(std::min(expanded_size(programs_[r].ops), RESERVED)));
    context_.simulation().spawn(fmt::format("rank{}", rank), context_.device(rank), [this, rank] { run_rank(rank); });
  }
}

void Runner::run_rank(int rank) {
  for (const auto& op : programs_[static_cast<std::size_t>(rank)].ops) execute(rank, op, op);
  finished_[static_cast<std::size_t>(rank)] = true;
}

Group Runner::relabelled(const Group& group, int folded) {
  auto [it, fresh] = relabelled_groups_.try_emplace({group.get(), folding_.replica(folded)}, nullptr);
  if (fresh) {
    std::vector<int> members(group->size());
    for (std::size_t i = 0; i < members.size(); ++i) members[i] = folding_.relabel((*group)[i], folded);
    it->second = std::make_shared<const std::vector<int>>(std::move(members));
  }
  return it->second;
}

Op Runner::as_folded(const Op& op, int folded) {
  Op out = op;
  auto group_of = [&](const Group& g) { return std::ranges::find(*g, folded) != g->end() ? g : relabelled(g, folded); };
  std::visit(
      [&](auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, CollectiveOp>) {
          const Group g = group_of(o.group);
          if (g != o.group) o.root = folding_.relabel(o.root, folded);
          o.group = g;
        } else if constexpr (std::is_same_v<T, BarrierOp> || std::is_same_v<T, ShmemBarrierOp>) {
          o.group = group_of(o.group);
        } else if constexpr (std::is_same_v<T, PutOp>) {
          o.to = folding_.relabel(o.to, folded);
        } else if constexpr (std::is_same_v<T, GetOp> || std::is_same_v<T, LoadOp>) {
          o.from = folding_.relabel(o.from, folded);
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          o.peer = folding_.relabel(o.peer, folded);
        }
      },
      out.what);
  return out;
}

std::vector<int> Runner::unfinished() const {
  std::vector<int> ranks;
  for (std::size_t r = 0; r < finished_.size(); ++r)
    if (!finished_[r]) ranks.push_back(static_cast<int>(r));
  return ranks;
}

template <class T>
OpOutcome Runner::dispatch(int rank, const T& op, const Op& top) {
  static_assert(runs<DeviceExecutor, T> + runs<HostExecutor, T> + runs<CollectiveExecutor, T> + runs<PgasExecutor, T> +
                        runs<UvmExecutor, T> ==
                    1,
                "every op that is not structure (repeat, streams) is run by exactly one executor");
  if constexpr (runs<DeviceExecutor, T>) return call(device_, rank, op, top);
  if constexpr (runs<HostExecutor, T>) return call(host_, rank, op, top);
  if constexpr (runs<CollectiveExecutor, T>) return call(collectives_, rank, op, top);
  if constexpr (runs<PgasExecutor, T>) return call(pgas_, rank, op, top);
  if constexpr (runs<UvmExecutor, T>) return call(uvm_, rank, op, top);
}

void Runner::execute(int rank, const Op& op, const Op& top) {
  if (const auto* repeat = std::get_if<RepeatOp>(&op.what)) {
    for (int i = 0; i < repeat->count; ++i)
      for (const auto& inner : repeat->body) execute(rank, inner, top);
    return;
  }
  if (const auto* streams = std::get_if<StreamsOp>(&op.what)) {
    // Every list but the first on a pooled actor on the same GPU; this actor runs the first and joins the others.
    std::vector<Simulation::Started> others;
    for (std::size_t i = 1; i < streams->streams.size(); ++i)
      others.push_back(
          context_.simulation().start_pooled(context_.device(rank), [this, rank, &top, &list = streams->streams[i]] {
            for (const auto& inner : list) execute(rank, inner, top);
          }));
    for (const auto& inner : streams->streams.front()) execute(rank, inner, top);
    for (auto& other : others) other.join();
    return;
  }
  // The folded ranks this rank speaks for run the same op (their programs match: scenario/folding.hpp). Where it
  // meets simulated ranks or shared links, each runs it on its own GPU, unrecorded, from the time it would have
  // started it: its representative's. Not joined: each takes the time it takes. On a pooled actor of the folded
  // GPU's (Simulation::run_pooled): at 8,192 GPUs millions of proxies run, and creating an actor each (its stack mapped
  // and unmapped) took more system time than the whole run's user time.
  const auto& mirrors = folding_.mirrors(rank);
  for (int folded : mirrors.empty() || !mirrors_may_need_proxies(rank, op) ? std::span<const int>{} : mirrors) {
    Op mine = as_folded(op, folded);
    if (!needs_proxy(folded, mine)) continue;
    ++proxies_;
    context_.simulation().run_pooled(context_.device(folded), [this, folded, mine = std::move(mine)] {
      std::visit(
          [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (!std::is_same_v<T, RepeatOp> && !std::is_same_v<T, StreamsOp>) dispatch(folded, o, mine);
          },
          mine.what);
    });
  }
  const Seconds start = Simulation::now();
  const std::uint64_t sequence = tracker_.start(rank, op);
  const OpOutcome outcome = std::visit(
      [&](const auto& o) -> OpOutcome {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, RepeatOp> || std::is_same_v<T, StreamsOp>)
          return {};  // expanded above
        else
          return dispatch(rank, o, top);
      },
      op.what);
  tracker_.end(rank, sequence);
  if (is_free_barrier(op)) return;  // bookkeeping, not an op
  const OpDescription description = describe(op);
  const int peer = description.peer && *description.peer != rank && *description.peer >= 0 ? *description.peer : -1;
  // An op nested in a repeat or in streams carries its own tag when its generator gave it one (training steps tag
  // every op with its step, micro-batch and layer), else the tag of the top-level op it belongs to.
  const auto* compute = std::get_if<ComputeOp>(&op.what);
  context_.record({rank, top.phase, op.tag >= 0 ? op.tag : top.tag, kind_of(op).name, description.label,
                   description.bytes, start, Simulation::now(), outcome.cause ? outcome.cause->rank : peer,
                   outcome.detail, outcome.cause ? std::optional{outcome.cause->issued} : std::nullopt,
                   compute ? compute->kernel : std::string_view{}});
}

void Runner::check(Invariants& invariants) const {
  tracker_.check(invariants, context_.records(), finished_,
                 [this](int rank, const Op& op) { return pgas_.waiting_for(rank, op); });
}

std::vector<OpRecord> Runner::take_records() {
  std::vector<OpRecord> all;
  std::size_t total = 0;
  for (const auto& r : context_.records()) total += r.size();
  all.reserve(total);
  for (auto& r : context_.records()) {
    const auto first = all.insert(all.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
    r = {};
    // Ops of concurrent streams are recorded as they end; keep each rank's records in start order (most ranks'
    // already are: a merge sort would move each record a dozen times for nothing).
    const auto by_start = [](const OpRecord& a, const OpRecord& b) { return a.start < b.start; };
    if (!std::is_sorted(first, all.end(), by_start)) std::stable_sort(first, all.end(), by_start);
  }
  return all;
}

}  // namespace snsim::workloads
