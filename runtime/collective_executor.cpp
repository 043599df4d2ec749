// Collectives as the collective executor runs them: a plan from the collective model (models/collective.hpp),
// executed as one transfer per algorithm step between pair mailboxes, so that collectives share links max-min with
// everything else.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "runtime/collective_executor.hpp"

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {
namespace {
// Mailbox payloads carry no data: only their simulated size matters.
int token = 0;
}  // namespace

/// A plan with what each of its transfers needs: wire bytes per payload byte and the rate cap.
struct CollectiveExecutor::Step {
  models::CollectivePlan plan;
  double efficiency = 1;    // payload share of the wire: SM copy efficiency x protocol efficiency
  double wire_cap = 0;      // most wire bytes/s of one transfer (channels, protocol cap, switch reduction); 0 = none
  Seconds ring_latency{0};  // ring: the wire latency of the ring's slowest hop
  const void* group = nullptr;  // the op's Group: its transfers use this group's pair mailboxes
};

models::CollectivePlatform CollectiveExecutor::collective_platform(const std::vector<int>& group) {
  const Fabric& fabric = simulation_.fabric();
  const auto& route = simulation_.route(device(group[0]), device(group[1]));
  auto [reduction, fresh] = switch_reduction_.try_emplace(&group, 0.0);
  if (fresh) {  // NVLS only inside one NVLink domain (a superpod's nodes each have their own)
    std::vector<DeviceId> members;
    for (int r : group) members.push_back(device(r));
    reduction->second = models::switch_reduction(fabric, members);
  }
  return {route.bottleneck, models_.copy->efficiency(models::CopyEngine::sm), route.latency,
          models::switch_links(fabric, device(group[0])), reduction->second};
}

OpOutcome CollectiveExecutor::run(int rank, const CollectiveOp& op) {
  const Seconds arrival = Simulation::now();
  const auto& group = *op.group;
  const std::size_t n = group.size();
  const std::size_t position = static_cast<std::size_t>(std::ranges::find(group, rank) - group.begin());
  // Every member plans from the first member's view, so that all pick the same algorithm on any fabric.
  const auto platform = collective_platform(group);
  const models::CollectiveRequest request{op.kind,     op.bytes, static_cast<int>(n), op.algorithm, op.protocol,
                                          op.channels, op.launch};
  const auto& model = *models_.collective;
  Step step{model.plan(request, platform), 1, 0, Seconds{0}, op.group.get()};
  const auto& plan = step.plan;
  step.efficiency = platform.sm_efficiency * plan.efficiency;
  // Cap a transfer only where the plan runs below what the links give: fewer channels than links, LL's rate cap,
  // the switch's reduction rate. A rank's transfers of one step share its cap.
  const BytesPerSecond lone = model.rate(plan, platform);
  if (lone < platform.line_rate * step.efficiency)
    step.wire_cap = lone.count() / step.efficiency / static_cast<double>(plan.shape.peers);
  const bool fast = crossbar_fast(group, step);
  const bool ring_fast_path = !fast && ring_fast(group, step);
  if (position == 0) ++collectives_by_path_[fast ? 1 : ring_fast_path ? 2 : 0];
  context_.hold_sms(rank);  // the collective kernel occupies its channels' SMs from launch to end
  sleep_for(plan.launch + plan.base_latency);
  switch (plan.shape.pattern) {
    case models::Pattern::ring:
      step.ring_latency = ring_latency(group);
      if (ring_fast_path)
        ring_fast_steps(rank, group[(position + 1) % n], group[(position + n - 1) % n], group, step);
      else
        ring_steps(rank, group[(position + 1) % n], group[(position + n - 1) % n], step);
      break;
    case models::Pattern::all_peers:
      if (fast)
        crossbar_steps(rank, group, position, step);
      else
        all_peers_steps(rank, group, step);
      break;
    case models::Pattern::chain:
      if (plan.algorithm == models::Algorithm::tree) {
        tree(rank, group, position, step);
      } else {  // broadcast: a chain from the root around the ring
        const auto root = static_cast<std::size_t>(std::ranges::find(group, op.root) - group.begin());
        const std::size_t distance = (position + n - root) % n;  // 0 for the root
        const auto prev = distance > 0 ? std::optional{group[(position + n - 1) % n]} : std::nullopt;
        const auto next = distance + 1 < n ? std::optional{group[(position + 1) % n]} : std::nullopt;
        pipeline(rank, prev, next, step);
      }
      break;
  }
  // NVLS moves its bytes as one neighbour step, but the switch multicasts the reduced result only once every
  // member's data is in: every member ends with the last to arrive.
  if (plan.algorithm == models::Algorithm::nvls) barrier(BarrierOp{op.group, true});
  context_.release_sms(rank);
  context_.waits().arrive(rank, Sync::collective, op.group.get(), n, arrival, Simulation::now());
  return {fmt::format("{}/{}", models::to_string(plan.algorithm), models::to_string(plan.protocol))};
}

void CollectiveExecutor::run(int rank, const BarrierOp& op) {
  const Seconds arrival = Simulation::now();
  barrier(op);
  context_.waits().arrive(rank, Sync::barrier, op.group.get(), op.group->size(), arrival, Simulation::now());
}

void CollectiveExecutor::barrier(const BarrierOp& op) {
  auto [it, inserted] = barriers_.try_emplace(op.group.get(), nullptr);
  if (inserted) it->second = sg4::Barrier::create(static_cast<unsigned>(op.group->size()));
  it->second->wait();  // 3.32's return value is wrong (docs/simgrid.md#barrier): never used
  if (!op.sync) sleep_for(models_.collective->barrier_latency);
}

sg4::Mailbox* CollectiveExecutor::mailbox(int from, int to, const void* group) {
  const std::tuple key{from, to, group};
  if (auto it = mailboxes_.find(key); it != mailboxes_.end()) return it->second;
  // Mailbox::by_name is a simcall (Engine::mailbox_by_name_or_create, unlike Barrier::create): other actors run before
  // it returns, and the pair's other end may ask for the same mailbox meanwhile. Publish it only once it exists (an
  // empty entry would hand that end a null mailbox); should the other end create one too, the first published wins,
  // each under its own name.
  sg4::Mailbox* created = sg4::Mailbox::by_name(fmt::format("{}>{}#{}", from, to, ++mailboxes_created_));
  return mailboxes_.try_emplace(key, created).first->second;
}

sg4::CommPtr CollectiveExecutor::put(int from, int to, const Step& step, int transfers) {
  // Collective kernels copy with SMs; the protocol's flags take a further share of each line.
  const auto count = static_cast<std::uint64_t>(transfers);
  const Bytes one = step.plan.shape.step_bytes;
  const Bytes payload{one.count() * count};
  const Bytes wire{static_cast<std::uint64_t>(std::ceil(static_cast<double>(one.count()) / step.efficiency)) * count};
  simulation_.account(device(from), device(to), wire, payload);
  auto comm = mailbox(from, to, step.group)->put_init(&token, simulation_.timed_bytes(wire).count());
  if (step.wire_cap > 0) comm->set_rate(step.wire_cap);
  return comm->start();
}

Seconds CollectiveExecutor::ring_latency(const std::vector<int>& group) {
  // Every rank of a ring pays the wire latency of the ring's slowest hop each step, as NCCL's tuning model gives a
  // ring one step latency. The ring's time is the same as with each rank's own next hop (its steady-state period is
  // set by its slowest hop either way: equal on NVL576 and a 512-GPU superpod), but ranks stay in step: with their
  // own latencies they drift apart, and a step's transfers then end at as many distinct times as there are offsets,
  // each re-solving the ring's flows (coupled through the GPUs' HBM links): 4x the wall time at 4,096 GPUs.
  auto [it, fresh] = ring_latency_.try_emplace(&group, Seconds{0});
  if (fresh)
    for (std::size_t i = 0; i < group.size(); ++i)
      it->second =
          std::max(it->second, simulation_.route(device(group[i]), device(group[(i + 1) % group.size()])).latency);
  return it->second;
}

void CollectiveExecutor::ring_steps(int rank, int next, int prev, const Step& step) {
  const Seconds latency = step.plan.step_latency + step.ring_latency;
  for (int s = 0; s < step.plan.shape.steps; ++s) {
    sleep_for(latency);
    auto sent = put(rank, next, step);
    int* received = nullptr;
    auto got = mailbox(prev, rank, step.group)->get_async<int>(&received);
    sent->wait();
    got->wait();
  }
}

bool CollectiveExecutor::ring_fast(const std::vector<int>& group, const Step& step) const {
  const auto path = models_.fabric->path;
  if (path == models::FabricPath::exact || step.plan.algorithm != models::Algorithm::ring ||
      step.plan.shape.pattern != models::Pattern::ring)
    return false;
  // With 2 ranks a ring is one transfer each way per step (and the validated 2-GPU twins stay exact).
  if (path == models::FabricPath::automatic && group.size() < 3) return false;
  // Per-transfer draws pace each exact step by its slowest transfer, and failures change the rates of the steps after
  // them: neither is one flow per rank (models/fabric.hpp).
  return models_.jitter->latency.is_none() && models_.jitter->bandwidth.is_none() && !fabric_failures_;
}

void CollectiveExecutor::ring_fast_steps(int rank, int next, int prev, const std::vector<int>& group,
                                         const Step& step) {
  // The ring's steps as one transfer of all their bytes to the same neighbour, after all their latencies, rate-capped
  // as each step's transfer (models/fabric.hpp). The members start together: in the exact path step s waits for the
  // members within s hops, and a ring runs at least n/2 steps. They end together: a ring runs at its slowest pace.
  auto it = ring_barriers_.find(&group);
  if (it == ring_barriers_.end()) {
    auto fresh = sg4::Barrier::create(static_cast<unsigned>(group.size()));  // others may run meanwhile:
    it = ring_barriers_.try_emplace(&group, std::move(fresh)).first;         // the first one stored is the one
  }
  const sg4::BarrierPtr members = it->second;
  members->wait();
  const int steps = step.plan.shape.steps;
  sleep_for((step.plan.step_latency + step.ring_latency) * static_cast<double>(steps));
  auto sent = put(rank, next, step, steps);
  int* received = nullptr;
  auto got = mailbox(prev, rank, step.group)->get_async<int>(&received);
  sent->wait();
  got->wait();
  members->wait();
}

void CollectiveExecutor::all_peers_steps(int rank, const std::vector<int>& group, const Step& step) {
  Seconds latency{0};
  for (int peer : group)
    if (peer != rank) latency = std::max(latency, simulation_.route(device(rank), device(peer)).latency);
  for (int s = 0; s < step.plan.shape.steps; ++s) {
    sleep_for(step.plan.step_latency + latency);
    std::vector<sg4::CommPtr> comms;
    std::vector<int*> slots(group.size(), nullptr);
    for (int peer : group)
      if (peer != rank) comms.push_back(put(rank, peer, step));
    for (std::size_t i = 0; i < group.size(); ++i)
      if (group[i] != rank) comms.push_back(mailbox(group[i], rank, step.group)->get_async<int>(&slots[i]));
    for (auto& c : comms) c->wait();
  }
}

bool CollectiveExecutor::crossbar_fast(const std::vector<int>& group, const Step& step) const {
  const auto path = models_.fabric->path;
  if (step.plan.shape.pattern != models::Pattern::all_peers || path == models::FabricPath::exact) return false;
  // With 2 ranks a port carries one transfer each way: nothing to aggregate (and the validated 2-GPU twins stay
  // exact).
  if (path == models::FabricPath::automatic && group.size() < 3) return false;
  const auto domain = simulation_.crossbar_of(device(group[0]));
  return domain && std::ranges::all_of(group, [&](int r) { return simulation_.crossbar_of(device(r)) == domain; });
}

/// One round of the crossbar fast path: what every member sends every other, and who has started the round.
struct CollectiveExecutor::CrossbarRound {
  std::vector<std::vector<double>> bytes;  // [from][to] by group position: SimGrid bytes (timed)
  std::vector<bool> started;               // by group position
  sg4::BarrierPtr all_started;             // every member has drawn and published its transfers
  std::size_t readers = 0;                 // members that have not taken their late flows yet
};

namespace {
/// A port's share of a round: its bytes and its largest transfer.
struct PortLoad {
  double total = 0;
  double largest = 0;
  void add(double b) {
    total += b;
    largest = std::max(largest, b);
  }
};
}  // namespace

void CollectiveExecutor::crossbar_steps(int rank, const std::vector<int>& group, std::size_t position,
                                        const Step& step) {
  // As all_peers_steps, transfer by transfer (latency, jitter draws, byte accounting), but a member's transfers of
  // a round move through its ports as aggregated flows (models/fabric.hpp). In the exact path a transfer starts when
  // both its ends have started the round; here a member starts, when it arrives, one flow out and one in for the
  // transfers with members already there, and once the last member has arrived, one out and one in for the rest.
  const std::size_t n = group.size();
  Seconds latency{0};
  for (int peer : group)
    if (peer != rank) latency = std::max(latency, simulation_.route(device(rank), device(peer)).latency);
  const Bytes payload = step.plan.shape.step_bytes;
  const Bytes wire{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / step.efficiency))};
  // A transfer's cap c makes a port flow's cap c x total / largest: alone, the flow ends with its largest transfer.
  const double cap = step.wire_cap;
  const DeviceId self = device(rank);
  std::vector<sg4::CommPtr> flows;
  auto start = [&](bool egress, const PortLoad& load) {
    if (load.total > 0)
      flows.push_back(
          simulation_.crossbar_flow(self, egress, load.total, cap > 0 ? cap * load.total / load.largest : 0));
  };
  for (int s = 0; s < step.plan.shape.steps; ++s) {
    sleep_for(step.plan.step_latency + latency);
    const auto key = std::pair{static_cast<const void*>(&group), crossbar_rounds_done_[{&group, rank}]++};
    if (!crossbar_rounds_.contains(key)) {
      auto fresh = std::make_shared<CrossbarRound>();
      fresh->bytes.assign(n, std::vector<double>(n, 0.0));
      fresh->started.assign(n, false);
      fresh->readers = n;
      fresh->all_started = sg4::Barrier::create(static_cast<unsigned>(n));  // a simcall: others may run meanwhile
      crossbar_rounds_.try_emplace(key, std::move(fresh));
    }
    const auto round = crossbar_rounds_.at(key);
    auto& row = round->bytes[position];
    for (std::size_t i = 0; i < n; ++i) {
      if (group[i] == rank) continue;
      simulation_.account(self, device(group[i]), wire, payload);
      row[i] = static_cast<double>(simulation_.timed_bytes(wire).count());
    }
    const std::vector<bool> before = round->started;  // members already in the round
    round->started[position] = true;
    PortLoad out_early, in_early, out_late, in_late;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == position) continue;
      (before[i] ? out_early : out_late).add(row[i]);
      if (before[i]) in_early.add(round->bytes[i][position]);
    }
    flows.clear();
    start(true, out_early);
    start(false, in_early);
    round->all_started->wait();
    for (std::size_t i = 0; i < n; ++i)
      if (i != position && !before[i]) in_late.add(round->bytes[i][position]);
    if (--round->readers == 0) crossbar_rounds_.erase(key);
    start(true, out_late);
    start(false, in_late);
    for (auto& f : flows) f->wait();
  }
}

std::optional<Table> CollectiveExecutor::fabric_path_table() const {
  if (collectives_by_path_[0] + collectives_by_path_[1] + collectives_by_path_[2] == 0) return std::nullopt;
  return Table{fmt::format("fabric path (models.fabric.path: {})", models::to_string(models_.fabric->path)),
               {"path", "collectives"},
               {{"exact", collectives_by_path_[0]},
                {"crossbar fast", collectives_by_path_[1]},
                {"ring fast", collectives_by_path_[2]}}};
}

void CollectiveExecutor::pipeline(int self, std::optional<int> from, std::optional<int> to, const Step& step) {
  // Forwards every chunk as soon as it has arrived, paying the step latency once per hop to fill the pipeline (NCCL's
  // 2(n-1) hwLat for tree, one per hop for broadcast); later chunks follow back to back, paced by the receiver taking
  // one chunk at a time.
  std::vector<sg4::CommPtr> sends;
  for (int chunk = 0; chunk < step.plan.shape.chunks; ++chunk) {
    if (from) {
      int* received = nullptr;
      mailbox(*from, self, step.group)->get_async<int>(&received)->wait();
    }
    if (to) {
      if (chunk == 0) sleep_for(step.plan.step_latency + simulation_.route(device(self), device(*to)).latency);
      sends.push_back(put(self, *to, step));
    }
  }
  for (auto& s : sends) s->wait();
}

void CollectiveExecutor::tree(int rank, const std::vector<int>& group, std::size_t position, const Step& step) {
  // NCCL's intra-node tree is a chain from the first member (the root) to the last. Chunks are reduced up the chain
  // and broadcast back down at the same time: the root turns each reduced chunk around; every other rank runs the
  // upward pipeline in a helper actor while it runs the downward one.
  const std::size_t n = group.size();
  const auto child = position + 1 < n ? std::optional{group[position + 1]} : std::nullopt;
  if (position == 0) {
    pipeline(rank, child, child, step);
    return;
  }
  const int parent = group[position - 1];
  auto up = sg4::Actor::create(fmt::format("rank{}-tree-up", rank), sg4::this_actor::get_host(),
                               [this, rank, child, parent, &step] { pipeline(rank, child, parent, step); });
  pipeline(rank, parent, child, step);
  up->join();
}

}  // namespace snsim::workloads
