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

// Mailbox payloads carry no data: only their simulated size matters.
int token = 0;

std::string_view kind_name(const Op& op) {
  return std::visit(
      [](const auto& o) -> std::string_view {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) return "compute";
        if constexpr (std::is_same_v<T, CopyOp>) return "copy";
        if constexpr (std::is_same_v<T, CollectiveOp>) return "collective";
        if constexpr (std::is_same_v<T, BarrierOp>) return "barrier";
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
          return fmt::format("compute {} {}", o.flops, o.bytes);
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          return fmt::format("copy {} to {} {}", o.bytes,
                             o.to == HOST ? std::string("host") : fmt::format("gpu{}", o.to),
                             models::to_string(o.engine));
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return fmt::format("{} {}", models::to_string(o.kind), o.bytes);
        } else if constexpr (std::is_same_v<T, BarrierOp>) {
          return "barrier";
        } else if constexpr (std::is_same_v<T, RepeatOp>) {
          return fmt::format("repeat {}", o.count);
        } else {
          return describe(o).label;
        }
      },
      op.what);
}

Runner::Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs)
    : simulation_{simulation},
      models_{models},
      programs_{std::move(programs)},
      records_(programs_.size()),
      finished_(programs_.size(), false) {}

void Runner::sleep_for(Seconds t) {
  if (t > Seconds{0}) sg4::this_actor::sleep_for(t.count());
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
  const Seconds start = Simulation::now();
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ComputeOp>) compute(rank, o);
        if constexpr (std::is_same_v<T, CopyOp>) copy(rank, o);
        if constexpr (std::is_same_v<T, CollectiveOp>) collective(rank, o);
        if constexpr (std::is_same_v<T, BarrierOp>) barrier(o);
        if constexpr (requires { pgas(rank, o); }) pgas(rank, o);
      },
      op.what);
  if (const auto* b = std::get_if<BarrierOp>(&op.what); b && b->sync) return;  // bookkeeping, not an op
  records_[static_cast<std::size_t>(rank)].push_back(
      {rank, top.phase, top.tag, std::string(kind_name(op)), label(op), op_bytes(op), start, Simulation::now()});
}

void Runner::compute(int rank, const ComputeOp& op) {
  const auto& gpu = *simulation_.fabric().device(device(rank)).gpu;
  const Seconds t = op.duration ? *op.duration : models_.compute->time(gpu, op.flops, op.bytes);
  // Executed as work on the GPU's host so that a slower GPU (a host speed below its peak) takes longer.
  sg4::this_actor::execute(t.count() * sg4::this_actor::get_host()->get_speed());
}

void Runner::copy(int rank, const CopyOp& op) {
  const auto& copy = *models_.copy;
  if (op.to == rank) {  // device-local: reads and writes HBM
    const auto& gpu = *simulation_.fabric().device(device(rank)).gpu;
    sleep_for(copy.fixed_cost(op.engine) +
              Bytes{2 * op.bytes.count()} / (gpu.hbm_bandwidth * copy.local_hbm_efficiency));
    return;
  }
  simulation_.transfer(device(rank), device(op.to), copy.wire_bytes(op.bytes, op.engine), op.bytes,
                       copy.fixed_cost(op.engine));
}

void Runner::collective(int rank, const CollectiveOp& op) {
  const auto& group = *op.group;
  const std::size_t n = group.size();
  const std::size_t position = static_cast<std::size_t>(std::ranges::find(group, rank) - group.begin());
  const int next = group[(position + 1) % n];
  const auto& route = simulation_.route(device(rank), device(next));
  const BytesPerSecond rate = route.bottleneck * models_.copy->sm_efficiency;
  const auto plan = models_.collective->plan(op.kind, op.bytes, static_cast<int>(n), rate, route.latency, op.protocol);
  sleep_for(plan.base_latency);
  switch (op.kind) {
    case models::CollectiveKind::all_reduce:
    case models::CollectiveKind::all_gather:
    case models::CollectiveKind::reduce_scatter:
      ring(rank, group, position, plan);
      break;
    case models::CollectiveKind::all_to_all:
      all_to_all(rank, group, plan);
      break;
    case models::CollectiveKind::broadcast: {
      const auto root = static_cast<std::size_t>(std::ranges::find(group, op.root) - group.begin());
      broadcast(group, position, root, plan);
      break;
    }
  }
}

sg4::Mailbox* Runner::mailbox(int from, int to) {
  auto [it, inserted] = mailboxes_.try_emplace({from, to}, nullptr);
  if (inserted) it->second = sg4::Mailbox::by_name(fmt::format("{}>{}", from, to));
  return it->second;
}

sg4::CommPtr Runner::put(int from, int to, Bytes payload, const models::CollectivePlan& plan) {
  // Collective kernels copy with SMs; the protocol's flags take a further share of each line.
  const double efficiency = models_.copy->sm_efficiency * plan.efficiency;
  const Bytes wire{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / efficiency))};
  simulation_.account(device(from), device(to), wire, payload);
  auto comm = mailbox(from, to)->put_init(&token, wire.count());
  if (plan.max_bandwidth.count() > 0) comm->set_rate(plan.max_bandwidth.count() / efficiency);
  return comm->start();
}

void Runner::send_and_receive(int rank, int to, int from, Bytes payload, const models::CollectivePlan& plan) {
  sleep_for(plan.step_latency + simulation_.route(device(rank), device(to)).latency);
  auto sent = put(rank, to, payload, plan);
  int* received = nullptr;
  auto got = mailbox(from, rank)->get_async<int>(&received);
  sent->wait();
  got->wait();
}

void Runner::ring(int rank, const std::vector<int>& group, std::size_t position, const models::CollectivePlan& plan) {
  const std::size_t n = group.size();
  const int next = group[(position + 1) % n];
  const int prev = group[(position + n - 1) % n];
  for (int step = 0; step < plan.steps; ++step) send_and_receive(rank, next, prev, plan.step_bytes, plan);
}

void Runner::all_to_all(int rank, const std::vector<int>& group, const models::CollectivePlan& plan) {
  Seconds latency{0};
  for (int peer : group)
    if (peer != rank) latency = std::max(latency, simulation_.route(device(rank), device(peer)).latency);
  sleep_for(plan.step_latency + latency);
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> slots(group.size(), nullptr);
  for (int peer : group)
    if (peer != rank) comms.push_back(put(rank, peer, plan.step_bytes, plan));
  for (std::size_t i = 0; i < group.size(); ++i)
    if (group[i] != rank) comms.push_back(mailbox(group[i], rank)->get_async<int>(&slots[i]));
  for (auto& c : comms) c->wait();
}

void Runner::broadcast(const std::vector<int>& group, std::size_t position, std::size_t root_position,
                       const models::CollectivePlan& plan) {
  // A pipelined chain from the root: each rank forwards every chunk to the next as soon as it has it.
  const std::size_t n = group.size();
  const std::size_t distance = (position + n - root_position) % n;  // 0 for the root
  const int self = group[position];
  const int prev = group[(position + n - 1) % n];
  const int next = group[(position + 1) % n];
  std::vector<sg4::CommPtr> sends;
  for (int chunk = 0; chunk < plan.chunks; ++chunk) {
    if (distance > 0) {
      int* received = nullptr;
      mailbox(prev, self)->get_async<int>(&received)->wait();
    }
    if (distance + 1 < n) {
      sleep_for(plan.step_latency + simulation_.route(device(self), device(next)).latency);
      sends.push_back(put(self, next, plan.step_bytes, plan));
    }
  }
  for (auto& s : sends) s->wait();
}

void Runner::barrier(const BarrierOp& op) {
  auto [it, inserted] = barriers_.try_emplace(op.group.get(), nullptr);
  if (inserted) it->second = sg4::Barrier::create(static_cast<unsigned>(op.group->size()));
  it->second->wait();  // 3.32's return value is wrong (reference/simgrid-3.32.md §5): never used
  if (!op.sync) sleep_for(models_.collective->barrier_latency);
}

std::vector<OpRecord> Runner::records() const {
  std::vector<OpRecord> all;
  for (const auto& r : records_) all.insert(all.end(), r.begin(), r.end());
  return all;
}

}  // namespace snsim::workloads
