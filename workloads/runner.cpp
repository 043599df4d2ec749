#include "workloads/runner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
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
      finished_(programs_.size(), false) {
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
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) compute(rank, o);
        if constexpr (std::is_same_v<T, CopyOp>) copy(rank, o);
        if constexpr (std::is_same_v<T, CollectiveOp>) collective(rank, o);
        if constexpr (std::is_same_v<T, BarrierOp>) barrier(o);
        if constexpr (requires { pgas(rank, o); }) pgas(rank, o);
        if constexpr (requires { uvm(rank, o, top); }) uvm(rank, o, top);
      },
      op.what);
  // Collectives and barriers wait for their last member (shmem barriers record their own arrival: workloads/pgas.cpp).
  const auto* b = std::get_if<BarrierOp>(&op.what);
  const auto* c = std::get_if<CollectiveOp>(&op.what);
  if (b || c)
    waits_.arrive(rank, b ? Sync::barrier : Sync::collective, b ? b->group.get() : c->group.get(),
                  b ? b->group->size() : c->group->size(), start, Simulation::now());
  if (b && b->sync) return;  // bookkeeping, not an op
  // An op nested in a repeat or in streams carries its own tag when its generator gave it one (training steps tag
  // every op with its step, micro-batch and layer), else the tag of the top-level op it belongs to.
  records_[static_cast<std::size_t>(rank)].push_back({rank, top.phase, op.tag >= 0 ? op.tag : top.tag,
                                                      std::string(kind_name(op)), label(op), op_bytes(op), start,
                                                      Simulation::now()});
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
