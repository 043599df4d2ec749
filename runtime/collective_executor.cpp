// Collectives as the collective executor runs them: a plan from the collective model (models/collective.hpp),
// executed as one transfer per algorithm step between pair mailboxes, so that collectives share links max-min with
// everything else.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "models/nccl_tuning.hpp"
#include "runtime/collective_executor.hpp"

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {

/// A plan with what each of its transfers needs: wire bytes per payload byte and the rate cap.
struct CollectiveExecutor::Step {
  models::CollectivePlan plan;
  double efficiency = 1;    // payload share of the wire: SM copy efficiency x protocol efficiency
  double wire_cap = 0;      // most wire bytes/s of one transfer (channels, protocol cap, switch reduction); 0 = none
  Seconds ring_latency{0};  // ring: the wire latency of the ring's slowest hop
  const void* group = nullptr;  // the op's Group: its transfers use this group's pair mailboxes
};

/// A group's nodes as NCCL sees them: the GPUs that reach each other without a NIC (a host's NVLink or PCIe domain;
/// an NVL72 rack is one node, as with NCCL's MNNVL), each node's members in group order.
struct CollectiveExecutor::Layout {
  int nodes = 1;
  int ppn = 0;                                    // ranks per node; 0 when the nodes hold different counts
  std::vector<int> node_of, local_of;             // by position in the group
  std::vector<std::vector<std::size_t>> members;  // [node][local]: a position in the group
  double node_reduction = 0;                      // in-switch reduction inside a node (NVLS, NVLSTree)
  bool sharp = false;                             // the network's switches reduce (SHARP)
  std::optional<models::nccl::System> nccl;       // NCCL's view, where its tables cover the GPU and the layout
};

/// Every pair's payload of one collective across nodes, and each member's flows out and in.
struct CollectiveExecutor::FlowSet {
  struct Flow {
    std::size_t from, to;  // positions in the group
    double payload;        // bytes
    bool network;          // between nodes
  };
  std::vector<Flow> flows;
  std::vector<std::vector<std::size_t>> out, in;  // by position: indices into flows
  sg4::BarrierPtr members;                        // start and end together
  std::size_t readers = 0;                        // members that have not taken their flows yet
};

/// Which pairs an algorithm's structure joins on a group's nodes, and what each pair carries, as the terms (a
/// channel's share of a ring, of a tree, ...) that the structure adds to it, in the order it adds them. The structure
/// depends on the algorithm and the group only, so a sweep builds it once per algorithm; a collective then sums each
/// pair's terms in the same order, to the same payload as adding them up while walking the structure.
struct CollectiveExecutor::FlowPattern {
  struct Pair {
    std::size_t from, to;             // positions in the group
    std::vector<std::uint8_t> terms;  // indices into the collective's term values, in the order they add up
  };
  std::vector<Pair> pairs;  // by (from, to)
  // Folded runs (docs/folding.md): whether a pair's flow runs, and whether a member takes part. All true unless
  // every pair carries the same terms between nodes, so that the flows are alike and end together: then a flow
  // between two folded members over links no one else's route can fill ends when its mirrors among the simulated
  // members' flows do, and changes no one's rate; it is left out, and so is a folded member left with no flow whose
  // representative is in the group (it arrives with it).
  std::vector<bool> kept;        // by pair
  std::vector<bool> takes_part;  // by position in the group
  std::size_t members = 0;       // how many take part
};

const CollectiveExecutor::Layout& CollectiveExecutor::layout(const std::vector<int>& group) {
  auto [it, fresh] = layouts_.try_emplace(&group, nullptr);
  if (!fresh) return *it->second;
  const Fabric& fabric = simulation_.fabric();
  auto l = std::make_shared<Layout>();
  std::vector<DeviceId> gpus;
  for (int r : group) gpus.push_back(device(r));
  const auto node_of = models::nodes_of(fabric, gpus);
  for (std::size_t pos = 0; pos < group.size(); ++pos) {
    const auto node = static_cast<std::size_t>(node_of[pos]);
    if (node == l->members.size()) l->members.emplace_back();
    l->node_of.push_back(node_of[pos]);
    l->local_of.push_back(static_cast<int>(l->members[node].size()));
    l->members[node].push_back(pos);
  }
  l->nodes = static_cast<int>(l->members.size());
  const auto ppn = l->members.front().size();
  l->ppn = std::ranges::all_of(l->members, [&](const auto& m) { return m.size() == ppn; }) ? static_cast<int>(ppn) : 0;
  std::vector<DeviceId> first_node;
  for (auto pos : l->members.front()) first_node.push_back(device(group[pos]));
  l->node_reduction = models::switch_reduction(fabric, first_node);
  // NICs of the first node and their line rate; SHARP where the switch a NIC reaches reduces.
  int nics = 0;
  BytesPerSecond nic_rate{0};
  for (auto gpu : first_node)
    for (auto e : fabric.out_channels(gpu)) {
      const DeviceId nic = fabric.target(e);
      if (fabric.device(nic).kind != DeviceKind::nic) continue;
      ++nics;
      for (auto f : fabric.out_channels(nic)) {
        if (fabric.channel(f).kind != ChannelKind::ib) continue;
        nic_rate = std::max(nic_rate, fabric.channel(f).lane_bandwidth * fabric.channel(f).lanes);
        l->sharp = l->sharp || fabric.device(fabric.target(f)).in_switch_reduction > 0;
      }
    }
  const auto& gpu = fabric.device(device(group[0])).gpu;
  const auto arch = gpu ? models::nccl::arch_of(gpu->model) : std::nullopt;
  // NCCL's tables decide where they cover the GPU, equal nodes and more than 2 ranks or 1 node; 2 ranks in one node
  // keep snsim's own choice, which our 2-GPU traces calibrate.
  if (arch && l->ppn > 0 && (group.size() > 2 || l->nodes > 1)) {
    int nvlinks = 0;
    for (auto e : fabric.out_channels(first_node.front()))
      if (fabric.channel(e).kind == ChannelKind::nvlink && fabric.device(fabric.target(e)).kind == DeviceKind::nvswitch)
        nvlinks += fabric.channel(e).lanes;
    l->nccl = models::nccl::derive({.arch = *arch,
                                    .nodes = l->nodes,
                                    .gpus_per_node = l->ppn,
                                    .nvlinks = nvlinks,
                                    .nics = nics,
                                    .nic_bandwidth = nic_rate,
                                    .nvls = l->node_reduction > 0,
                                    .sharp = l->sharp});
  }
  it->second = std::move(l);
  return *it->second;
}

models::CollectivePlatform CollectiveExecutor::collective_platform(const std::vector<int>& group) {
  const Fabric& fabric = simulation_.fabric();
  const auto& route = simulation_.route(device(group[0]), device(group[1]));
  const Layout& nodes = layout(group);
  auto [reduction, fresh] = switch_reduction_.try_emplace(&group, 0.0);
  if (fresh) {  // NVLS inside one NVLink domain; across nodes (NVLSTree) inside each node
    std::vector<DeviceId> members;
    for (int r : group) members.push_back(device(r));
    reduction->second = nodes.nodes > 1 ? nodes.node_reduction : models::switch_reduction(fabric, members);
  }
  models::CollectivePlatform platform{route.bottleneck, models_.copy->efficiency(models::CopyEngine::sm), route.latency,
                                      models::switch_links(fabric, device(group[0])), reduction->second};
  platform.nodes = nodes.nodes;
  platform.nccl = nodes.nccl ? &*nodes.nccl : nullptr;
  return platform;
}

namespace {

/// What an op asks the collective model for.
models::CollectiveRequest request_of(const CollectiveOp& op) {
  return {op.kind, op.bytes, static_cast<int>(op.group->size()), op.algorithm, op.protocol, op.channels, op.launch};
}

}  // namespace

bool CollectiveExecutor::across_nodes(const std::vector<int>& group, models::CollectiveKind kind,
                                      const models::CollectivePlan& plan) {
  const Layout& nodes = layout(group);
  return nodes.nodes > 1 && nodes.ppn > 0 &&
         (plan.shape.pattern == models::Pattern::nodes || plan.algorithm == models::Algorithm::tree ||
          plan.algorithm == models::Algorithm::direct ||
          (plan.algorithm == models::Algorithm::ring && kind != models::CollectiveKind::broadcast));
}

void CollectiveExecutor::fold(const Folding& folding, std::function<bool(int, int)> shares_links) {
  folding_ = &folding;
  shares_links_ = std::move(shares_links);
}

bool CollectiveExecutor::enter_folded(int member, const CollectiveOp& op) {
  const auto& group = *op.group;
  // The folded members of one op come one after the other (Runner::execute): plan once for all of them.
  const auto key = std::tuple{op.group.get(), op.kind, op.bytes, op.algorithm, op.protocol, op.channels, op.launch};
  if (!entering_ || entering_->first != key) {
    const auto plan = models_.collective->plan(request_of(op), collective_platform(group));
    const FlowPattern* pattern = nullptr;
    if (folding_ && across_nodes(group, op.kind, plan))
      pattern = &flow_pattern(group, plan.algorithm, pattern_channels(layout(group), plan));
    entering_.emplace(key, pattern);
  }
  const FlowPattern* pattern = entering_->second;
  if (!pattern) return true;
  const auto position = static_cast<std::size_t>(std::ranges::find(group, member) - group.begin());
  if (pattern->takes_part[position]) return true;
  // Counted as if it had run: its arrival (its representative's, now) in the wait log, leaving with the others, and
  // its round of the group's flow sets.
  context_.waits().arrive(member, Sync::collective, op.group.get(), group.size(), Simulation::now(),
                          Seconds{std::numeric_limits<double>::infinity()});
  ++flow_sets_done_[{&group, member}];
  return false;
}

OpOutcome CollectiveExecutor::run(int rank, const CollectiveOp& op) {
  const Seconds arrival = Simulation::now();
  const auto& group = *op.group;
  const std::size_t n = group.size();
  const std::size_t position = static_cast<std::size_t>(std::ranges::find(group, rank) - group.begin());
  // Every member plans from the first member's view, so that all pick the same algorithm on any fabric.
  const auto platform = collective_platform(group);
  const auto& model = *models_.collective;
  Step step{model.plan(request_of(op), platform), 1, 0, Seconds{0}, op.group.get()};
  const auto& plan = step.plan;
  step.efficiency = platform.sm_efficiency * plan.efficiency;
  // Cap a transfer only where the plan runs below what the links give: fewer channels than links, LL's rate cap,
  // the switch's reduction rate. A rank's transfers of one step share its cap.
  const BytesPerSecond lone = model.rate(plan, platform);
  if (lone < platform.line_rate * step.efficiency)
    step.wire_cap = lone.count() / step.efficiency / static_cast<double>(plan.shape.peers);
  const bool fast = crossbar_fast(group, step);
  const bool ring_fast_path = !fast && ring_fast(group, step);
  const bool send_fast_path = send_fast(group, step);
  if (position == 0) ++collectives_by_path_[fast ? 1 : ring_fast_path ? 2 : send_fast_path ? 3 : 0];
  context_.hold_sms(rank);  // the collective kernel occupies its channels' SMs from launch to end
  sleep_for(plan.launch + plan.base_latency);
  if (across_nodes(group, op.kind, plan)) {
    node_flows(rank, group, position, step);
  } else
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
          pipeline(rank, prev, next, step, send_fast_path);
        }
        break;
      case models::Pattern::nodes:
        throw std::logic_error(fmt::format("{} needs a group across nodes", models::to_string(plan.algorithm)));
    }
  // NVLS moves its bytes as one neighbour step, but the switch multicasts the reduced result only once every
  // member's data is in: every member ends with the last to arrive.
  if (plan.algorithm == models::Algorithm::nvls) barrier(BarrierOp{op.group, true});
  context_.release_sms(rank);
  context_.waits().arrive(rank, Sync::collective, op.group.get(), n, arrival, Simulation::now());
  if (op.host_paced) {
    // A loop's next call comes one call's CPU time after this one (varying as the host's calls do): a faster GPU
    // waits for it.
    const Seconds next_call = arrival + model.host_cost(op.kind, static_cast<int>(n));
    if (Simulation::now() < next_call) sg4::this_actor::sleep_until(next_call.count());
  }
  return {
      fmt::format("{}/{}/{}ch", models::to_string(plan.algorithm), models::to_string(plan.protocol), plan.channels)};
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
  const PairKey key{from, to, group};
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
  auto comm = mailbox(from, to, step.group)->put_init(&mailbox_payload, simulation_.timed_bytes(wire).count());
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
  return transfers_alike();
}

bool CollectiveExecutor::transfers_alike() const {
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

namespace {

/// The parent of node k in NCCL's double binary tree `tree` over `nodes` nodes (tree 1 mirrors tree 0 for an even
/// count and shifts it by one for an odd count, so that a leaf of one is interior in the other,
/// src/graph/trees.cc); nullopt at the root.
std::optional<int> tree_parent(int k, int nodes, int tree) {
  auto to_tree = [&](int v) { return tree == 0 ? v : nodes % 2 == 0 ? nodes - 1 - v : (v + 1) % nodes; };
  auto from_tree = [&](int v) { return tree == 0 ? v : nodes % 2 == 0 ? nodes - 1 - v : (v - 1 + nodes) % nodes; };
  const int t = to_tree(k);
  if (t == 0) return std::nullopt;
  return from_tree((t - 1) / 2);
}

// The terms of each algorithm's pairs (flow_pattern() and node_flows()).
enum Term : std::uint8_t {
  RING_CHANNEL = 0,
  TREE_CHANNEL = 0,
  NVLS_NODE = 0,
  NVLS_TREE = 1,
  SHARP_SCATTER = 0,
  SHARP_NETWORK = 1,
  PEER_SHARE = 0
};

}  // namespace

int CollectiveExecutor::pattern_channels(const Layout& l, const models::CollectivePlan& plan) const {
  const int graph = plan.algorithm == models::Algorithm::ring   ? (l.nccl ? l.nccl->ring.channels : l.ppn)
                    : plan.algorithm == models::Algorithm::tree ? (l.nccl ? l.nccl->tree.channels : l.ppn)
                                                                : 0;
  return graph == 0 ? 0 : std::clamp(plan.channels, 1, graph);
}

void CollectiveExecutor::leave_out_folded(const std::vector<int>& group, FlowPattern& pattern) {
  const std::size_t n = group.size();
  pattern.kept.assign(pattern.pairs.size(), true);
  pattern.takes_part.assign(n, true);
  pattern.members = n;
  if (!folding_ || pattern.pairs.empty()) return;
  const Layout& l = layout(group);
  const bool alike = std::ranges::all_of(pattern.pairs, [&](const FlowPattern::Pair& p) {
    return p.terms == pattern.pairs.front().terms && l.node_of[p.from] != l.node_of[p.to];
  });
  auto folded = [&](std::size_t position) { return !folding_->simulated(group[position]); };
  // A folded member left out arrives with its representative, which must then be a member that takes part.
  const bool with_representatives = std::ranges::all_of(
      group, [&](int r) { return std::ranges::find(group, folding_->representative(r)) != group.end(); });
  if (!alike || !with_representatives) return;
  std::vector<bool> has_flow(n, false);
  for (std::size_t i = 0; i < pattern.pairs.size(); ++i) {
    const auto& p = pattern.pairs[i];
    if (folded(p.from) && folded(p.to) && !shares_links_(group[p.from], group[p.to])) {
      pattern.kept[i] = false;
      continue;
    }
    has_flow[p.from] = has_flow[p.to] = true;
  }
  pattern.members = 0;
  for (std::size_t m = 0; m < n; ++m) {
    pattern.takes_part[m] = !folded(m) || has_flow[m];
    pattern.members += pattern.takes_part[m] ? 1 : 0;
  }
}

const CollectiveExecutor::FlowPattern& CollectiveExecutor::flow_pattern(const std::vector<int>& group,
                                                                        models::Algorithm algorithm, int channels) {
  auto [it, fresh] = flow_patterns_.try_emplace({&group, algorithm, channels}, nullptr);
  if (!fresh) return *it->second;
  const Layout& l = layout(group);
  const std::size_t n = group.size();
  const int nodes = l.nodes, p = l.ppn;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::uint8_t>> pairs;
  auto at = [&](int node, int local) {
    return l.members[static_cast<std::size_t>(node)][static_cast<std::size_t>(((local % p) + p) % p)];
  };
  auto add = [&](std::size_t from, std::size_t to, Term term) {
    if (from != to) pairs[{from, to}].push_back(term);
  };
  const int rings = channels, trees = channels;
  switch (algorithm) {
    case models::Algorithm::ring:
      // NCCL's rings across nodes: channel c enters node k at local (c - k) and walks the node's GPUs by index, so
      // it leaves through the NIC of the GPU before its entry, on the rail where the next node's entry sits: each
      // channel's inter-node hop stays on one rail and the channels spread over the node's NICs (docs/nccl.md 7.2).
      // Only the op's first channels are walked: a small op's few channels use as few NICs.
      for (int c = 0; c < rings; ++c)
        for (int k = 0; k < nodes; ++k) {
          const int entry = c - k;
          for (int i = 0; i + 1 < p; ++i) add(at(k, entry + i), at(k, entry + i + 1), RING_CHANNEL);
          add(at(k, entry + p - 1), at((k + 1) % nodes, c - (k + 1) % nodes), RING_CHANNEL);
        }
      break;
    case models::Algorithm::tree:
      // Tree channel c chains the node's GPUs from its head (the GPU of NIC c) and joins the heads of the nodes on
      // rail c by the double binary tree c mod 2; each channel reduces S/channels up and broadcasts it down
      // (docs/nccl.md 7.3).
      for (int c = 0; c < trees; ++c)
        for (int k = 0; k < nodes; ++k) {
          for (int i = 1; i < p; ++i) {
            add(at(k, c + i), at(k, c + i - 1), TREE_CHANNEL);
            add(at(k, c + i - 1), at(k, c + i), TREE_CHANNEL);
          }
          if (const auto parent = tree_parent(k, nodes, c % 2)) {
            add(at(k, c), at(*parent, c), TREE_CHANNEL);
            add(at(*parent, c), at(k, c), TREE_CHANNEL);
          }
        }
      break;
    case models::Algorithm::nvls_tree:
      // NVLS inside each node (S + S/ppn through each GPU's links, at the switch's reduction rate), and GPU l of
      // every node the head of slice l: two binary trees of S/(2 ppn) each between the nodes' GPUs l, on rail l
      // (docs/nccl.md 8).
      for (int k = 0; k < nodes; ++k)
        for (int i = 0; i < p; ++i) {
          add(at(k, i), at(k, i + 1), NVLS_NODE);
          for (int t = 0; t < 2; ++t)
            if (const auto parent = tree_parent(k, nodes, t)) {
              add(at(k, i), at(*parent, i), NVLS_TREE);
              add(at(*parent, i), at(k, i), NVLS_TREE);
            }
        }
      break;
    case models::Algorithm::collnet:
      // SHARP (CollNetDirect): every GPU scatters slice l to the node's GPU l and gets the reduced slice back; GPU l
      // sends its slice into the switch, which reduces it across the nodes and returns it. The switch's load per NIC
      // is one slice each way, drawn as a flow to the next node's GPU l on the same rail.
      for (int k = 0; k < nodes; ++k)
        for (int i = 0; i < p; ++i) {
          for (int j = 0; j < p; ++j) add(at(k, i), at(k, j), SHARP_SCATTER);
          add(at(k, i), at((k + 1) % nodes, i), SHARP_NETWORK);
        }
      break;
    case models::Algorithm::direct:
      // All-to-all: S/n to every peer; to another node through PXN, over NVLink to the local GPU on the peer's rail,
      // whose NIC sends it (docs/nccl.md 7.4).
      for (std::size_t from = 0; from < n; ++from)
        for (std::size_t to = 0; to < n; ++to) {
          if (from == to) continue;
          const int kf = l.node_of[from], kt = l.node_of[to];
          if (kf == kt) {
            add(from, to, PEER_SHARE);
            continue;
          }
          const std::size_t relay = at(kf, l.local_of[to]);
          add(from, relay, PEER_SHARE);
          add(relay, to, PEER_SHARE);
        }
      break;
    default:
      throw std::logic_error(fmt::format("{} does not run across nodes", models::to_string(algorithm)));
  }
  auto pattern = std::make_shared<FlowPattern>();
  pattern->pairs.reserve(pairs.size());
  for (auto& [pair, terms] : pairs) pattern->pairs.push_back({pair.first, pair.second, std::move(terms)});
  leave_out_folded(group, *pattern);
  it->second = std::move(pattern);
  return *it->second;
}

void CollectiveExecutor::node_flows(int rank, const std::vector<int>& group, std::size_t position, const Step& step) {
  const Layout& l = layout(group);
  const auto& plan = step.plan;
  const std::size_t n = group.size();
  const auto key = std::pair{static_cast<const void*>(&group), flow_sets_done_[{&group, rank}]++};
  if (!flow_sets_.contains(key)) {
    const int channels = pattern_channels(l, plan);
    const FlowPattern& pattern = flow_pattern(group, plan.algorithm, channels);
    auto set = std::make_shared<FlowSet>();
    const int p = l.ppn;
    const double step_bytes = static_cast<double>(plan.shape.step_bytes.count());
    // What one term of the pattern carries, by algorithm (see flow_pattern() for the structure).
    std::array<double, 2> term{0, 0};
    switch (plan.algorithm) {
      case models::Algorithm::ring: {
        const double bytes = static_cast<double>(plan.shape.steps) * step_bytes;  // a ring rank's payload
        term[RING_CHANNEL] = bytes / channels;
        break;
      }
      case models::Algorithm::tree:
        term[TREE_CHANNEL] = step_bytes * plan.shape.chunks / channels;
        break;
      case models::Algorithm::nvls_tree: {
        const double s_bytes = step_bytes * p / (p + 1.0);
        term[NVLS_NODE] = s_bytes + s_bytes / p;
        term[NVLS_TREE] = s_bytes / (2.0 * p);
        break;
      }
      case models::Algorithm::collnet: {
        const double s_bytes = step_bytes * n / (n + 1.0);
        term[SHARP_SCATTER] = 2 * s_bytes / p;
        term[SHARP_NETWORK] = s_bytes / p;
        break;
      }
      case models::Algorithm::direct: {
        const double size = step_bytes * static_cast<double>(n);
        term[PEER_SHARE] = size / n;
        break;
      }
      default:
        throw std::logic_error(fmt::format("{} does not run across nodes", models::to_string(plan.algorithm)));
    }
    set->out.resize(n);
    set->in.resize(n);
    set->flows.reserve(pattern.pairs.size());
    for (std::size_t i = 0; i < pattern.pairs.size(); ++i) {
      const auto& pair = pattern.pairs[i];
      if (!pattern.kept[i]) continue;
      // A term that carries nothing adds nothing, and a pair that gets nothing has no flow.
      double payload = 0;
      bool carries = false;
      for (auto t : pair.terms)
        if (term[t] > 0) {
          payload += term[t];
          carries = true;
        }
      if (!carries) continue;
      set->out[pair.from].push_back(set->flows.size());
      set->in[pair.to].push_back(set->flows.size());
      set->flows.push_back({pair.from, pair.to, payload, l.node_of[pair.from] != l.node_of[pair.to]});
    }
    set->readers = pattern.members;
    auto members = sg4::Barrier::create(static_cast<unsigned>(pattern.members));  // a simcall: others may run
    set->members = std::move(members);
    flow_sets_.try_emplace(key, std::move(set));
  }
  const auto set = flow_sets_.at(key);
  if (--set->readers == 0) flow_sets_.erase(key);
  set->members->wait();
  // Latency: the intra-node steps at the NVLink hop, plus what NCCL's network steps add (models/nccl_tuning.hpp).
  const Seconds hop = simulation_.route(device(group[0]), device(group[1])).latency;
  sleep_for((plan.step_latency + hop) * static_cast<double>(plan.shape.latency_steps) + plan.network_latency);
  // Wire bytes: NVLink flows at the SM copy and protocol efficiency, network flows at the NIC's and the protocol's
  // line format (LL 8 of 16 B, LL128 120 of 128 B, docs/nccl.md 3). The plan's rate limit (fewer channels, LL's cap,
  // NVLS's reduction) caps a member's NVLink flows together.
  constexpr double LINE_FORMAT[3] = {0.5, 120.0 / 128.0, 1.0};
  const double network_efficiency =
      models_.collective->nic_efficiency * LINE_FORMAT[static_cast<std::size_t>(plan.protocol)];
  double intra_out = 0;
  for (auto i : set->out[position])
    if (!set->flows[i].network) intra_out += set->flows[i].payload;
  std::vector<sg4::CommPtr> comms;
  for (auto i : set->out[position]) {
    const auto& f = set->flows[i];
    const double efficiency = f.network ? network_efficiency : step.efficiency;
    const Bytes payload{static_cast<std::uint64_t>(std::llround(f.payload))};
    const Bytes wire{static_cast<std::uint64_t>(std::ceil(f.payload / efficiency))};
    simulation_.account(device(rank), device(group[f.to]), wire, payload);
    auto comm = mailbox(rank, group[f.to], step.group)
                    ->put_init(&mailbox_payload, std::max<std::uint64_t>(1, simulation_.timed_bytes(wire).count()));
    if (!f.network && step.wire_cap > 0 && intra_out > 0)
      comm->set_rate(step.wire_cap * static_cast<double>(plan.shape.peers) * f.payload / intra_out);
    comms.push_back(comm->start());
  }
  std::vector<int*> received(set->in[position].size(), nullptr);  // outlives the gets
  for (std::size_t j = 0; j < set->in[position].size(); ++j)
    comms.push_back(
        mailbox(group[set->flows[set->in[position][j]].from], rank, step.group)->get_async<int>(&received[j]));
  for (auto& c : comms) c->wait();
  set->members->wait();
}

std::optional<Table> CollectiveExecutor::fabric_path_table() const {
  if (std::ranges::all_of(collectives_by_path_, [](auto n) { return n == 0; })) return std::nullopt;
  return Table{fmt::format("fabric path (models.fabric.path: {})", models::to_string(models_.fabric->path)),
               {"path", "collectives"},
               {{"exact", collectives_by_path_[0]},
                {"crossbar fast", collectives_by_path_[1]},
                {"ring fast", collectives_by_path_[2]},
                {"send fast", collectives_by_path_[3]}}};
}

void CollectiveExecutor::pipeline(int self, std::optional<int> from, std::optional<int> to, const Step& step,
                                  bool whole) {
  // Forwards every chunk as soon as it has arrived, paying the step latency once per hop to fill the pipeline (NCCL's
  // 2(n-1) hwLat for tree, one per hop for broadcast); later chunks follow back to back, paced by the receiver taking
  // one chunk at a time. `whole` (the send fast path, 2 ranks): the chunks as one transfer, which then takes the same
  // time, since back to back each would start at the rate the one before ended with.
  const int transfers = whole ? 1 : step.plan.shape.chunks;
  const int chunks_per_transfer = whole ? step.plan.shape.chunks : 1;
  std::vector<sg4::CommPtr> sends;
  for (int chunk = 0; chunk < transfers; ++chunk) {
    if (from) {
      int* received = nullptr;
      mailbox(*from, self, step.group)->get_async<int>(&received)->wait();
    }
    if (to) {
      if (chunk == 0) sleep_for(step.plan.step_latency + simulation_.route(device(self), device(*to)).latency);
      sends.push_back(put(self, *to, step, chunks_per_transfer));
    }
  }
  for (auto& s : sends) s->wait();
}

bool CollectiveExecutor::send_fast(const std::vector<int>& group, const Step& step) const {
  // A broadcast between 2 ranks (NCCL's send/recv): exact whatever the path setting allows, since the chunks run back
  // to back either way (models/fabric.hpp), but not under per-transfer draws or failures, which act chunk by chunk.
  return models_.fabric->path != models::FabricPath::exact && group.size() == 2 &&
         step.plan.algorithm != models::Algorithm::tree && step.plan.shape.pattern == models::Pattern::chain &&
         transfers_alike();
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
  auto up = simulation_.start_pooled(device(rank),
                                     [this, rank, child, parent, &step] { pipeline(rank, child, parent, step); });
  pipeline(rank, parent, child, step);
  up.join();
}

}  // namespace snsim::workloads
