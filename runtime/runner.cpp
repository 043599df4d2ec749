#include "runtime/runner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

XBT_LOG_NEW_DEFAULT_CATEGORY(snsim_runner, "snsim: executing programs");

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {
namespace {

std::string_view kind_name(const Op& op) {
  return std::visit(
      [](const auto& o) -> std::string_view {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) return "compute";
        if constexpr (std::is_same_v<T, CopyOp>) return "copy";
        if constexpr (std::is_same_v<T, CollectiveOp>) return "collective";
        if constexpr (std::is_same_v<T, BarrierOp>) return "barrier";
        if constexpr (std::is_same_v<T, StreamsOp>) return "streams";
        if constexpr (requires { describe(o); }) return describe(o).kind;
        return "repeat";
      },
      op.what);
}

/// The kind and group of an op that waits for every member of a group; nullopt for others.
std::optional<std::pair<Sync, const void*>> sync_of(const Op& op) {
  if (const auto* b = std::get_if<BarrierOp>(&op.what)) return std::pair{Sync::barrier, b->group.get()};
  if (const auto* c = std::get_if<CollectiveOp>(&op.what)) return std::pair{Sync::collective, c->group.get()};
  if (const auto* s = std::get_if<ShmemBarrierOp>(&op.what)) return std::pair{Sync::shmem_barrier, s->group.get()};
  return std::nullopt;
}

const std::vector<int>& group_of(const Op& op) {
  if (const auto* b = std::get_if<BarrierOp>(&op.what)) return *b->group;
  if (const auto* c = std::get_if<CollectiveOp>(&op.what)) return *c->group;
  return *std::get<ShmemBarrierOp>(op.what).group;
}

/// "0-3, 5, 7-8": ranks in order, runs shortened.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

/// The other GPU an op reads or writes, -1 when none (the host, NVMe, the rank itself, a group).
int op_peer(int rank, const Op& op) {
  int peer = -1;
  if (const auto* c = std::get_if<CopyOp>(&op.what)) peer = c->peer;
  if (const auto* p = std::get_if<PutOp>(&op.what)) peer = p->to;
  if (const auto* g = std::get_if<GetOp>(&op.what)) peer = g->from;
  if (const auto* l = std::get_if<LoadOp>(&op.what)) peer = l->from;
  return peer == rank || peer < 0 ? -1 : peer;
}

Bytes op_bytes(const Op& op) {
  if (const auto* c = std::get_if<CopyOp>(&op.what)) return c->bytes;
  if (const auto* c = std::get_if<CollectiveOp>(&op.what)) return c->bytes;
  if (const auto* c = std::get_if<ComputeOp>(&op.what)) return c->bytes;
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { describe(o); }) return describe(o).bytes;
        return Bytes{0};
      },
      op.what);
}

}  // namespace

std::string label(const Op& op) {
  return std::visit(
      [](const auto& o) -> std::string {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) {
          if (o.duration) return fmt::format("compute {}", *o.duration);
          return fmt::format("compute {} {} {}", o.flops, o.bytes, to_string(o.dtype));
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          return fmt::format("copy {} {} {} {}{}", o.bytes, o.pull ? "from" : "to",
                             o.peer == HOST   ? std::string("host")
                             : o.peer == NVME ? std::string("nvme")
                                              : fmt::format("gpu{}", o.peer),
                             models::to_string(o.engine), o.pipelined ? " queued" : "");
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return fmt::format("{} {}", models::to_string(o.kind), o.bytes);
        } else if constexpr (std::is_same_v<T, BarrierOp>) {
          return "barrier";
        } else if constexpr (std::is_same_v<T, StreamsOp>) {
          return fmt::format("streams {}", o.streams.size());
        } else if constexpr (std::is_same_v<T, RepeatOp>) {
          return fmt::format("repeat {}", o.count);
        } else {
          return describe(o).label;
        }
      },
      op.what);
}

Runner::Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs, std::uint64_t seed)
    : simulation_{simulation},
      models_{models},
      variability_{*models.jitter, *models.variation, *models.slow, simulation.fabric(), seed},
      programs_{std::move(programs)},
      records_(programs_.size()),
      finished_(programs_.size(), false),
      pending_(programs_.size()),
      started_(programs_.size(), 0),
      indexed_(programs_.size(), 0) {
  // Installed only when something is drawn, so that the nominal path stays a plain sleep and send.
  TransferJitter jitter;
  if (!models.jitter->latency.is_none())
    jitter.latency = [this](DeviceId issuer) { return variability_.latency_factor(issuer); };
  if (!models.jitter->bandwidth.is_none())
    jitter.bandwidth = [this](DeviceId issuer) { return variability_.bandwidth_factor(issuer); };
  simulation_.set_jitter(std::move(jitter));
}

void Runner::sleep_for(Seconds t) {
  simulation_.delay(t);
}

void Runner::hold_sms(int rank) {
  if (rank != HOST) simulation_.hold_sms(device(rank));
}

void Runner::release_sms(int rank) {
  if (rank != HOST) simulation_.release_sms(device(rank));
}

DeviceId Runner::device(int rank) const {
  return rank == HOST ? *simulation_.fabric().host() : simulation_.fabric().gpus()[static_cast<std::size_t>(rank)];
}

void Runner::launch() {
  pgas_state();  // its mutex and condition variables: creating them is a simcall, which must not race
  for (std::size_t r = 0; r < programs_.size(); ++r) {
    const int rank = static_cast<int>(r);
    simulation_.spawn(fmt::format("rank{}", rank), device(rank), [this, rank] { run_rank(rank); });
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
  // Collectives and barriers wait for their last member (shmem barriers record their own arrival:
  // runtime/pgas_executor.cpp).
  const auto* b = std::get_if<BarrierOp>(&op.what);
  const auto* c = std::get_if<CollectiveOp>(&op.what);
  const auto r = static_cast<std::size_t>(rank);
  const std::uint64_t sequence = started_[r]++;
  Started& started = pending_[r][sequence];
  started.op = &op;
  if (!(b && b->sync)) started.index = indexed_[r]++;
  if (const auto sync = sync_of(op)) started.instance = syncs_started_[{rank, sync->first, sync->second}]++;
  // What only the run knows, for the record: the algorithm a collective chose, the put that satisfied a signal_wait.
  std::string detail;
  std::optional<Signaller> cause;
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) compute(rank, o);
        if constexpr (std::is_same_v<T, CopyOp>) copy(rank, o);
        if constexpr (std::is_same_v<T, CollectiveOp>) detail = collective(rank, o);
        if constexpr (std::is_same_v<T, BarrierOp>) barrier(o);
        if constexpr (std::is_same_v<T, SignalWaitOp>) cause = pgas(rank, o);
        if constexpr (!std::is_same_v<T, SignalWaitOp> && requires { pgas(rank, o); }) pgas(rank, o);
        if constexpr (requires { uvm(rank, o, top); }) uvm(rank, o, top);
      },
      op.what);
  pending_[r].erase(sequence);
  ++ops_ended_;
  if (b || c)
    waits_.arrive(rank, b ? Sync::barrier : Sync::collective, b ? b->group.get() : c->group.get(),
                  b ? b->group->size() : c->group->size(), start, Simulation::now());
  if (b && b->sync) return;  // bookkeeping, not an op
  // An op nested in a repeat or in streams carries its own tag when its generator gave it one (training steps tag
  // every op with its step, micro-batch and layer), else the tag of the top-level op it belongs to.
  records_[static_cast<std::size_t>(rank)].push_back(
      {rank, top.phase, op.tag >= 0 ? op.tag : top.tag, std::string(kind_name(op)), label(op), op_bytes(op), start,
       Simulation::now(), cause ? cause->rank : op_peer(rank, op), std::move(detail),
       cause ? std::optional{cause->issued} : std::nullopt});
}

void Runner::compute(int rank, const ComputeOp& op) {
  const DeviceId gpu = device(rank);
  const auto& spec = *simulation_.fabric().device(gpu).gpu;
  const auto& model = *models_.compute;
  const double jitter = variability_.compute_factor(gpu);  // on this kernel's duration
  if (op.duration) {
    // A fixed time is taken as SM time: the GPU's clock variation and slow factor stretch it too.
    simulation_.kernel(gpu, *op.duration * (jitter / variability_.flop_rate(gpu)), Seconds{0}, Bytes{0});
    return;
  }
  sleep_for(model.fixed_cost(op.pipelined));
  auto& duty = tensor_duty_[gpu];
  const Seconds start = Simulation::now();
  const double clock = model.clock_factor(duty, start);
  const Seconds math = model.math_time(spec, op.flops, variability_.flop_rate(gpu) * clock, op.dtype) * jitter;
  const Seconds memory = model.memory_time(spec, op.bytes, variability_.hbm_rate(gpu)) * jitter;
  simulation_.kernel(gpu, math, memory, op.bytes);
  model.account(duty, start, Simulation::now(), math >= memory ? 1.0 : math / memory);
}

void Runner::copy(int rank, const CopyOp& op) {
  const auto& copy = *models_.copy;
  const bool sm = op.engine == models::CopyEngine::sm;
  if (sm) hold_sms(rank);
  if (op.peer == rank) {  // device-local: reads and writes the GPU's memory, through its HBM link
    const DeviceId gpu = device(rank);
    const auto& spec = *simulation_.fabric().device(gpu).gpu;
    sleep_for(copy.local_fixed_cost(op.engine, op.pipelined));
    const double factor = variability_.hbm_rate(gpu) * variability_.bandwidth_factor(gpu);
    simulation_.kernel(gpu, Seconds{0}, Seconds{copy.local_memory_time(spec, op.bytes).count() / factor},
                       Bytes{2 * op.bytes.count()});
  } else if (op.peer == NVME) {
    // GPUDirect Storage: one transfer per drive, all at once, the bytes split evenly (the first drives take the
    // remainder); each crosses its drive's link and shares the GPU's PCIe link with the others.
    const auto& drives = simulation_.fabric().nvme_drives();
    const std::uint64_t n = drives.size();
    auto stripe = [this, rank, &op, &copy, n](std::uint64_t i, DeviceId drive) {
      const Bytes share{op.bytes.count() / n + (i < op.bytes.count() % n ? 1 : 0)};
      const DeviceId from = op.pull ? drive : device(rank), to = op.pull ? device(rank) : drive;
      simulation_.transfer(from, to, copy.wire_bytes(share, op.engine), share,
                           copy.fixed_cost(op.engine, op.pull, op.pipelined),
                           copy.wire_rate_cap(simulation_.route(from, to).bottleneck, op.engine), true);
    };
    std::vector<sg4::ActorPtr> others;
    for (std::uint64_t i = 1; i < n; ++i)
      others.push_back(sg4::Actor::create(fmt::format("rank{}.nvme{}", rank, i), sg4::this_actor::get_host(),
                                          [stripe, i, drive = drives[i]] { stripe(i, drive); }));
    stripe(0, drives[0]);
    for (auto& actor : others) actor->join();
  } else {
    const DeviceId from = device(op.pull ? op.peer : rank), to = device(op.pull ? rank : op.peer);
    const auto& route = simulation_.route(from, to);
    simulation_.transfer(from, to, copy.wire_bytes(op.bytes, op.engine), op.bytes,
                         copy.fixed_cost(op.engine, op.pull, op.pipelined),
                         copy.wire_rate_cap(route.bottleneck, op.engine), true);  // a share of the line
  }
  if (sm) release_sms(rank);
}

void Runner::barrier(const BarrierOp& op) {
  auto [it, inserted] = barriers_.try_emplace(op.group.get(), nullptr);
  if (inserted) it->second = sg4::Barrier::create(static_cast<unsigned>(op.group->size()));
  it->second->wait();  // 3.32's return value is wrong (reference/simgrid-3.32.md §5): never used
  if (!op.sync) sleep_for(models_.collective->barrier_latency);
}

void Runner::check(Invariants& invariants) const {
  for (std::size_t r = 0; r < records_.size(); ++r) {
    invariants.ops_started += started_[r];
    // Records are written as ops end, so their ends never go back; and an op never ends before it starts.
    Seconds last{0};
    for (const auto& record : records_[r]) {
      if (record.end < record.start || record.end < last)
        invariants.violations.push_back(
            fmt::format("rank {}: op '{}' runs from {} s to {} s, after an op ending at {} s", r, record.label,
                        record.start.count(), record.end.count(), last.count()));
      last = std::max(last, record.end);
    }
    for (const auto& [sequence, started] : pending_[r]) {
      const Op& op = *started.op;
      UnendedOp unended{static_cast<int>(r), started.index, std::string(kind_name(op)), label(op), ""};
      if (!started.index) unended.label = fmt::format("the free barrier before workload {}", op.phase);
      if (const auto sync = sync_of(op)) {
        const auto& group = group_of(op);
        std::vector<int> arrived;
        std::vector<std::string> missing;
        for (int member : group) {
          const auto it = syncs_started_.find({member, sync->first, sync->second});
          if (it != syncs_started_.end() && it->second > started.instance)
            arrived.push_back(member);
          else
            missing.push_back(finished_[static_cast<std::size_t>(member)]
                                  ? fmt::format("{} (finished its program)", member)
                                  : fmt::format("{}", member));
        }
        const std::string what =
            started.index ? fmt::format("{} no. {} of ranks {}", unended.kind, started.instance + 1, rank_list(group))
                          : fmt::format("the barrier of ranks {}", rank_list(group));
        if (!missing.empty())
          unended.waiting_for =
              fmt::format("for {} {} to arrive at {} (arrived: {})", missing.size() == 1 ? "rank" : "ranks",
                          fmt::join(missing, ", "), what, rank_list(arrived));
      } else {
        unended.waiting_for = pgas_waiting_for(static_cast<int>(r), op);
      }
      invariants.unended.push_back(std::move(unended));
    }
  }
  invariants.ops_ended += ops_ended_;
}

std::vector<OpRecord> Runner::records() const {
  std::vector<OpRecord> all;
  for (const auto& r : records_) {
    const auto first = all.insert(all.end(), r.begin(), r.end());
    // Ops of concurrent streams are recorded as they end; keep each rank's records in start order.
    std::stable_sort(first, all.end(), [](const OpRecord& a, const OpRecord& b) { return a.start < b.start; });
  }
  return all;
}

}  // namespace snsim::workloads
