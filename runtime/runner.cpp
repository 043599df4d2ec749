#include "runtime/runner.hpp"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

XBT_LOG_NEW_DEFAULT_CATEGORY(snsim_runner, "snsim: executing programs");

namespace sg4 = simgrid::s4u;

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
}

std::uint64_t Runner::ops_to_run() const {
  std::uint64_t n = 0;
  for (std::size_t r = 0; r < programs_.size(); ++r)
    if (folding_.simulated(static_cast<int>(r))) n += expanded_size(programs_[r].ops);
  return n;
}

bool Runner::beyond_domain(int rank, int peer) const {
  if (peer < 0 || static_cast<std::size_t>(peer) >= domain_.size()) return true;  // the host, NVMe: shared
  const int a = domain_[static_cast<std::size_t>(rank)], b = domain_[static_cast<std::size_t>(peer)];
  return rank != peer && (a < 0 || a != b);
}

bool Runner::beyond_domain(const Group& group) {
  auto [it, fresh] = beyond_domain_.try_emplace(group.get(), false);
  if (fresh) it->second = std::ranges::any_of(*group, [&](int r) { return beyond_domain(group->front(), r); });
  return it->second;
}

bool Runner::needs_proxy(int folded, const Op& op) {
  auto joins = [&](const Group& group) {
    return std::ranges::any_of(*group, [&](int r) { return r != folded && folding_.simulated(r); }) ||
           beyond_domain(group);
  };
  auto reaches = [&](int peer) {
    return (peer >= 0 && static_cast<std::size_t>(peer) < programs_.size() && folding_.simulated(peer)) ||
           beyond_domain(folded, peer);
  };
  return std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, CollectiveOp>)
          return joins(o.group);
        else if constexpr (std::is_same_v<T, BarrierOp> || std::is_same_v<T, ShmemBarrierOp>)
          // A barrier moves no bytes: only a simulated member waits for it.
          return std::ranges::any_of(*o.group, [&](int r) { return r != folded && folding_.simulated(r); });
        else if constexpr (std::is_same_v<T, PutOp>)
          return reaches(o.to);
        else if constexpr (std::is_same_v<T, GetOp> || std::is_same_v<T, LoadOp>)
          return reaches(o.from);
        else if constexpr (std::is_same_v<T, CopyOp>)
          return o.peer != folded && reaches(o.peer);
        else
          return false;  // kernels, waits on its own signals and events: its representative's timing is its own
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
    context_.simulation().spawn(fmt::format("rank{}", rank), context_.device(rank), [this, rank] { run_rank(rank); });
  }
}

void Runner::run_rank(int rank) {
  const auto& mirrors = folding_.mirrors(rank);
  const auto& ops = programs_[static_cast<std::size_t>(rank)].ops;
  std::vector<const Op*> shadows(mirrors.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::size_t m = 0; m < mirrors.size(); ++m)
      shadows[m] = &programs_[static_cast<std::size_t>(mirrors[m])].ops[i];
    execute(rank, ops[i], ops[i], shadows);
  }
  finished_[static_cast<std::size_t>(rank)] = true;
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

void Runner::execute(int rank, const Op& op, const Op& top, const std::vector<const Op*>& shadows) {
  // The folded ranks' programs match this one op for op (runtime/folding.hpp): their shadows walk along.
  auto inner_shadows = [&](auto&& pick) {
    std::vector<const Op*> inner(shadows.size());
    for (std::size_t m = 0; m < shadows.size(); ++m) inner[m] = &pick(*shadows[m]);
    return inner;
  };
  if (const auto* repeat = std::get_if<RepeatOp>(&op.what)) {
    for (int i = 0; i < repeat->count; ++i)
      for (std::size_t k = 0; k < repeat->body.size(); ++k)
        execute(rank, repeat->body[k], top,
                inner_shadows([k](const Op& s) -> const Op& { return std::get<RepeatOp>(s.what).body[k]; }));
    return;
  }
  if (const auto* streams = std::get_if<StreamsOp>(&op.what)) {
    auto run_stream = [this, rank, &top, streams, &shadows](std::size_t i) {
      const auto& list = streams->streams[i];
      for (std::size_t k = 0; k < list.size(); ++k) {
        std::vector<const Op*> inner(shadows.size());
        for (std::size_t m = 0; m < shadows.size(); ++m)
          inner[m] = &std::get<StreamsOp>(shadows[m]->what).streams[i][k];
        execute(rank, list[k], top, inner);
      }
    };
    // Every list but the first on its own actor on the same GPU; this actor runs the first and joins the others.
    std::vector<sg4::ActorPtr> others;
    for (std::size_t i = 1; i < streams->streams.size(); ++i)
      others.push_back(sg4::Actor::create(fmt::format("rank{}.stream{}", rank, i), sg4::this_actor::get_host(),
                                          [run_stream, i] { run_stream(i); }));
    run_stream(0);
    for (auto& actor : others) actor->join();
    return;
  }
  // Folded ranks whose op meets simulated ranks or shared links run it on their own GPU, unrecorded, from the time
  // they would have started it: their representative's. Not joined: each takes the time it takes.
  const auto& mirrors = folding_.mirrors(rank);
  for (std::size_t m = 0; m < shadows.size(); ++m) {
    const int folded = mirrors[m];
    const Op& shadow = *shadows[m];
    if (!needs_proxy(folded, shadow)) continue;
    sg4::Actor::create(fmt::format("rank{}.proxy", folded), context_.simulation().host(context_.device(folded)),
                       [this, folded, &shadow] {
                         std::visit(
                             [&](const auto& o) {
                               using T = std::decay_t<decltype(o)>;
                               if constexpr (!std::is_same_v<T, RepeatOp> && !std::is_same_v<T, StreamsOp>)
                                 dispatch(folded, o, shadow);
                             },
                             shadow.what);
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
  OpDescription description = describe(op);
  const int peer = description.peer && *description.peer != rank && *description.peer >= 0 ? *description.peer : -1;
  // An op nested in a repeat or in streams carries its own tag when its generator gave it one (training steps tag
  // every op with its step, micro-batch and layer), else the tag of the top-level op it belongs to.
  context_.record({rank, top.phase, op.tag >= 0 ? op.tag : top.tag, std::string(kind_of(op).name),
                   std::move(description.label), description.bytes, start, Simulation::now(),
                   outcome.cause ? outcome.cause->rank : peer, outcome.detail,
                   outcome.cause ? std::optional{outcome.cause->issued} : std::nullopt});
}

void Runner::check(Invariants& invariants) const {
  tracker_.check(invariants, context_.records(), finished_,
                 [this](int rank, const Op& op) { return pgas_.waiting_for(rank, op); });
}

std::vector<OpRecord> Runner::records() const {
  std::vector<OpRecord> all;
  for (const auto& r : context_.records()) {
    const auto first = all.insert(all.end(), r.begin(), r.end());
    // Ops of concurrent streams are recorded as they end; keep each rank's records in start order.
    std::stable_sort(first, all.end(), [](const OpRecord& a, const OpRecord& b) { return a.start < b.start; });
  }
  return all;
}

}  // namespace snsim::workloads
