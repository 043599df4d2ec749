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

Runner::Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs, std::uint64_t seed)
    : context_{simulation, models, programs.size(), seed},
      programs_{std::move(programs)},
      finished_(programs_.size(), false),
      tracker_{programs_.size()},
      device_{context_},
      host_{context_},
      collectives_{context_},
      pgas_{context_},
      uvm_{context_, pgas_} {}

void Runner::launch() {
  pgas_.prepare();
  for (std::size_t r = 0; r < programs_.size(); ++r) {
    const int rank = static_cast<int>(r);
    context_.simulation().spawn(fmt::format("rank{}", rank), context_.device(rank), [this, rank] { run_rank(rank); });
  }
}

void Runner::run_rank(int rank) {
  for (const auto& op : programs_[static_cast<std::size_t>(rank)].ops) execute(rank, op, op);
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

void Runner::execute(int rank, const Op& op, const Op& top) {
  if (const auto* repeat = std::get_if<RepeatOp>(&op.what)) {
    for (int i = 0; i < repeat->count; ++i)
      for (const auto& inner : repeat->body) execute(rank, inner, top);
    return;
  }
  if (const auto* streams = std::get_if<StreamsOp>(&op.what)) {
    // Every list but the first on its own actor on the same GPU; this actor runs the first and joins the others.
    std::vector<sg4::ActorPtr> others;
    for (std::size_t i = 1; i < streams->streams.size(); ++i)
      others.push_back(sg4::Actor::create(fmt::format("rank{}.stream{}", rank, i), sg4::this_actor::get_host(),
                                          [this, rank, &top, &list = streams->streams[i]] {
                                            for (const auto& inner : list) execute(rank, inner, top);
                                          }));
    for (const auto& inner : streams->streams.front()) execute(rank, inner, top);
    for (auto& actor : others) actor->join();
    return;
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
