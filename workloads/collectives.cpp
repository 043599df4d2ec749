// The Runner's collectives: a plan from the collective model (models/collective.hpp), executed as one transfer per
// algorithm step between pair mailboxes, so that collectives share links max-min with everything else.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "workloads/runner.hpp"

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {
namespace {
// Mailbox payloads carry no data: only their simulated size matters.
int token = 0;
}  // namespace

/// A plan with what each of its transfers needs: wire bytes per payload byte and the rate cap.
struct Runner::Step {
  models::CollectivePlan plan;
  double efficiency = 1;  // payload share of the wire: SM copy efficiency x protocol efficiency
  double wire_cap = 0;    // most wire bytes/s of one transfer (channels, protocol cap, switch reduction); 0 = none
  const void* group = nullptr;  // the op's Group: its transfers use this group's pair mailboxes
};

models::CollectivePlatform Runner::collective_platform(int rank, int peer) const {
  const Fabric& fabric = simulation_.fabric();
  const auto& route = simulation_.route(device(rank), device(peer));
  if (!switch_reduction_) switch_reduction_ = models::switch_reduction(fabric);
  return {route.bottleneck, models_.copy->efficiency(models::CopyEngine::sm), route.latency,
          models::switch_links(fabric, device(rank)), *switch_reduction_};
}

void Runner::collective(int rank, const CollectiveOp& op) {
  const auto& group = *op.group;
  const std::size_t n = group.size();
  const std::size_t position = static_cast<std::size_t>(std::ranges::find(group, rank) - group.begin());
  // Every member plans from the first member's view, so that all pick the same algorithm on any fabric.
  const auto platform = collective_platform(group[0], group[1]);
  const models::CollectiveRequest request{op.kind,     op.bytes, static_cast<int>(n), op.algorithm, op.protocol,
                                          op.channels, op.launch};
  const auto& model = *models_.collective;
  Step step{model.plan(request, platform), 1, 0, op.group.get()};
  const auto& plan = step.plan;
  step.efficiency = platform.sm_efficiency * plan.efficiency;
  // Cap a transfer only where the plan runs below what the links give: fewer channels than links, LL's rate cap,
  // the switch's reduction rate. A rank's transfers of one step share its cap.
  const BytesPerSecond lone = model.rate(plan, platform);
  if (lone < platform.line_rate * step.efficiency)
    step.wire_cap = lone.count() / step.efficiency / static_cast<double>(plan.shape.peers);
  hold_sms(rank);  // the collective kernel occupies its channels' SMs from launch to end
  sleep_for(plan.launch + plan.base_latency);
  switch (plan.shape.pattern) {
    case models::Pattern::ring:
      ring_steps(rank, group[(position + 1) % n], group[(position + n - 1) % n], step);
      break;
    case models::Pattern::all_peers:
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
  release_sms(rank);
}

sg4::Mailbox* Runner::mailbox(int from, int to, const void* group) {
  auto [it, inserted] = mailboxes_.try_emplace({from, to, group}, nullptr);
  if (inserted) it->second = sg4::Mailbox::by_name(fmt::format("{}>{}#{}", from, to, mailboxes_.size()));
  return it->second;
}

sg4::CommPtr Runner::put(int from, int to, const Step& step) {
  // Collective kernels copy with SMs; the protocol's flags take a further share of each line.
  const Bytes payload = step.plan.shape.step_bytes;
  const Bytes wire{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / step.efficiency))};
  simulation_.account(device(from), device(to), wire, payload);
  auto comm = mailbox(from, to, step.group)->put_init(&token, simulation_.timed_bytes(wire).count());
  if (step.wire_cap > 0) comm->set_rate(step.wire_cap);
  return comm->start();
}

void Runner::ring_steps(int rank, int next, int prev, const Step& step) {
  const Seconds latency = step.plan.step_latency + simulation_.route(device(rank), device(next)).latency;
  for (int s = 0; s < step.plan.shape.steps; ++s) {
    sleep_for(latency);
    auto sent = put(rank, next, step);
    int* received = nullptr;
    auto got = mailbox(prev, rank, step.group)->get_async<int>(&received);
    sent->wait();
    got->wait();
  }
}

void Runner::all_peers_steps(int rank, const std::vector<int>& group, const Step& step) {
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

void Runner::pipeline(int self, std::optional<int> from, std::optional<int> to, const Step& step) {
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

void Runner::tree(int rank, const std::vector<int>& group, std::size_t position, const Step& step) {
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
