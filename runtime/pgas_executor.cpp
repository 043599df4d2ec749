// PGAS ops with NVSHMEM semantics, executed by the PGAS executor (models/pgas.hpp has the formulas).
//
// A put is non-blocking: the PE pays its issue cost and continues, while a helper actor carries the put through
// its latency, moves its bytes as one SimGrid transfer per issuer (rate-capped, sharing links max-min with copies
// and collectives), makes it visible at the target, waits for the ack and, for put_signal, updates the target's
// signal. The state between actors -- signal values on the symmetric heap and every PE's puts in flight -- lives in
// PgasExecutor::Heap; actors block on condition variables until it satisfies them, so a wait nobody satisfies leaves
// its rank unfinished and the run ends as a deadlock (Runner::unfinished), never a hang.
#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "runtime/pgas_executor.hpp"

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {

namespace {

bool holds(std::uint64_t value, Compare cmp, std::uint64_t target) {
  switch (cmp) {
    case Compare::eq:
      return value == target;
    case Compare::ne:
      return value != target;
    case Compare::gt:
      return value > target;
    case Compare::ge:
      return value >= target;
    case Compare::lt:
      return value < target;
    case Compare::le:
      return value <= target;
  }
  return false;
}
}  // namespace

/// One put on its way: visible once its data has arrived (and every put it is fenced behind is visible),
/// complete once the ack is back at the issuer.
struct InFlight {
  bool visible = false;
  bool complete = false;
};
using InFlightPtr = std::shared_ptr<InFlight>;

/// Put after a std::unique_lock of the PGAS mutex in code that waits: when the run ends in a deadlock, SimGrid kills
/// the waiting actors by unwinding their stacks, and unlocking on the way out is a simcall. On SimGrid's thread
/// contexts (the asan preset's) that simcall waits for the maestro while the maestro joins the dying thread: the
/// process hangs. Nobody takes the lock after a kill, so the unwinding leaves it locked.
class KeepLockedOnUnwind {
 public:
  explicit KeepLockedOnUnwind(std::unique_lock<sg4::Mutex>& lock) : lock_{lock} {}
  ~KeepLockedOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_) lock_.release();
  }
  KeepLockedOnUnwind(const KeepLockedOnUnwind&) = delete;
  KeepLockedOnUnwind& operator=(const KeepLockedOnUnwind&) = delete;

 private:
  std::unique_lock<sg4::Mutex>& lock_;
  int exceptions_ = std::uncaught_exceptions();
};

struct PgasExecutor::Heap {
  explicit Heap(std::size_t ranks)
      : mutex{sg4::Mutex::create()}, issued(ranks), unfenced(ranks), fenced(ranks), incoming(ranks, 0) {
    for (std::size_t r = 0; r < ranks; ++r) changed.push_back(sg4::ConditionVariable::create());
  }
  // One lock for all PGAS state (actors are cooperative; the lock is what condition variables need). A rank's
  // condition variable is notified when its signals change or one of its puts becomes visible or complete.
  sg4::MutexPtr mutex;
  std::vector<sg4::ConditionVariablePtr> changed;
  std::map<std::pair<int, int>, std::uint64_t> signals;   // (PE, signal id) -> value
  std::map<std::pair<int, int>, Signaller> signalled_by;  // (PE, signal id) -> the put that changed it last
  std::map<std::pair<int, int>, std::uint64_t> events;    // (rank, event id) -> records so far (EventRecordOp)
  std::vector<std::vector<InFlightPtr>> issued;           // by rank: its puts not yet known complete
  // Fence bookkeeping by issuing rank, then target: puts since the last fence, and puts before it not yet visible.
  std::vector<std::map<int, std::vector<InFlightPtr>>> unfenced;
  std::vector<std::map<int, std::vector<InFlightPtr>>> fenced;
  std::vector<int> incoming;  // by rank: puts towards it issued and not yet visible (they slow its own issuers)
  std::map<const void*, sg4::BarrierPtr> barriers;  // by Group identity
  std::uint64_t transfers = 0;                      // names the helpers' mailboxes

  /// A fresh mailbox for one op's flows: its flows cannot be matched by another op's receiver.
  sg4::Mailbox* mailbox() { return sg4::Mailbox::by_name(fmt::format("pgas{}", transfers++)); }
};

void PgasExecutor::prepare() {
  heap();
}

PgasExecutor::Heap& PgasExecutor::heap() {
  // Created by prepare(), before the actors run: creating SimGrid objects is a simcall, so an actor doing it could
  // be interrupted by another actor doing the same.
  if (!heap_) heap_ = std::make_shared<Heap>(context_.ranks());
  return *heap_;
}

models::PgasRoute PgasExecutor::pgas_route(int from, int to) const {
  const auto& there = simulation_.route(device(from), device(to));
  const auto& back = simulation_.route(device(to), device(from));
  return {there.latency, back.latency, there.bottleneck};
}

void PgasExecutor::run(int rank, const PutOp& op) {
  const Seconds issued = Simulation::now();  // the put's record starts here (Runner::execute)
  const auto& model = *models_.pgas;
  const auto& scope = model.params(op.scope);
  Heap& state = heap();
  auto flight = std::make_shared<InFlight>();
  // Fence: this put may not become visible before the puts to the same PE issued before the last fence.
  auto& before = state.fenced[static_cast<std::size_t>(rank)][op.to];
  std::erase_if(before, [](const InFlightPtr& p) { return p->visible; });
  std::vector<InFlightPtr> predecessors = before;
  state.unfenced[static_cast<std::size_t>(rank)][op.to].push_back(flight);
  state.issued[static_cast<std::size_t>(rank)].push_back(flight);

  const models::PgasRoute route = pgas_route(rank, op.to);
  const Bytes payload = times(op.bytes, static_cast<std::uint64_t>(op.count));  // per issuer
  const Bytes wire = model.wire_bytes(payload, op.scope);
  // Puts coming into this PE slow its issuers (models/pgas.hpp, duplex_put_share). A put counts from its issue; the
  // yield lets PEs issuing at this same instant count theirs first, so each sees the other whatever the actor order.
  // (A put already moving keeps its rate when puts towards its PE start later.)
  ++state.incoming[static_cast<std::size_t>(op.to)];
  sg4::this_actor::yield();
  const bool duplex = state.incoming[static_cast<std::size_t>(rank)] > 0;
  // Each issuer injects at most one put per issue time and at most its store bandwidth; headers go on the wire.
  const double wire_rate = model.issuer_put_rate(op.scope, op.bytes, duplex).count() / scope.efficiency;
  // The issuers' flows are identical (same size, rate cap, path and start), so they move as one flow of all their
  // bytes at the sum of their caps: the same end time alone or against other traffic on one path, without a
  // max-min variable per thread (8,192 flows made SimGrid's completion bookkeeping quadratic). Against other traffic
  // the put then counts as one flow, not one per thread: NVLink arbitrates between requesters, not threads.
  // SimGrid 3.32 ignores the rate of host-to-host comms, so the flow goes through a mailbox (whose comms honour it):
  // the issuer posts a detached send now -- it survives the PE moving on -- and a helper actor on the target
  // receives it once the latency has passed, then carries the put to visibility, ack and signal.
  sg4::Mailbox* flows = state.mailbox();
  const auto issuers = static_cast<std::uint64_t>(op.issuers);
  flows->put_init(&mailbox_payload, times(wire, issuers).count())
      ->set_rate(wire_rate * static_cast<double>(issuers))
      ->detach();
  simulation_.spawn_pooled(
      device(op.to), [this, rank, op, route, payload, wire, flows, flight, predecessors, issued, &model, &state] {
        sleep_for(route.latency + model.write_latency);
        simulation_.account(device(rank), device(op.to), times(wire, static_cast<std::uint64_t>(op.issuers)),
                            times(payload, static_cast<std::uint64_t>(op.issuers)));
        flows->get<int>();
        {
          std::unique_lock lock(*state.mutex);
          state.changed[static_cast<std::size_t>(rank)]->wait(
              lock, [&] { return std::ranges::all_of(predecessors, [](const InFlightPtr& p) { return p->visible; }); });
          flight->visible = true;
          --state.incoming[static_cast<std::size_t>(op.to)];
          state.changed[static_cast<std::size_t>(rank)]->notify_all();
        }
        sleep_for(route.latency_back);  // the ack
        {
          std::unique_lock lock(*state.mutex);
          flight->complete = true;
          state.changed[static_cast<std::size_t>(rank)]->notify_all();
        }
        if (!op.signal) return;
        // put_signal on NVLink: a fence (the ack above), then the signal's own trip and update.
        sleep_for(route.latency + model.signal);
        std::unique_lock lock(*state.mutex);
        state.signals[{op.to, *op.signal}] += static_cast<std::uint64_t>(op.issuers) * op.count;
        state.signalled_by[{op.to, *op.signal}] = {rank, issued};
        state.changed[static_cast<std::size_t>(op.to)]->notify_all();
      });
  // The issuers work in parallel; each spends its issue cost per put before the PE goes on.
  sleep_for(scope.issue * op.count);
}

void PgasExecutor::run(int rank, const GetOp& op) {
  const Seconds start = Simulation::now();
  const auto& model = *models_.pgas;
  const auto& scope = model.params(op.scope);
  const models::PgasRoute route = pgas_route(rank, op.from);
  sleep_for(route.latency + model.read_latency + route.latency_back);
  // The data comes back at the issuer's rate, and no faster than one get per issue time (a tiny get).
  const double rate = std::min(scope.get_bandwidth, op.bytes / scope.issue).count() / scope.efficiency;
  const Bytes wire = model.wire_bytes(op.bytes, op.scope);
  simulation_.account(device(op.from), device(rank), wire, op.bytes);
  // The responses flow from the target: a helper there posts them (a mailbox comm, for the rate cap; see put).
  sg4::Mailbox* flow = heap().mailbox();
  simulation_.spawn_pooled(device(op.from), [flow, wire, rate] {
    flow->put_init(&mailbox_payload, wire.count())->set_rate(rate)->detach();
  });
  flow->get<int>();
  context_.waits().add({rank, op.from, start, Simulation::now() - start});  // stalled on the peer's memory throughout
}

OpOutcome PgasExecutor::run(int rank, const SignalWaitOp& op) {
  Heap& state = heap();
  const Seconds start = Simulation::now();
  std::unique_lock lock(*state.mutex);
  const KeepLockedOnUnwind keep(lock);
  auto& value = state.signals[{rank, op.signal}];
  state.changed[static_cast<std::size_t>(rank)]->wait(lock, [&] { return holds(value, op.cmp, op.value); });
  std::optional<Signaller> cause;
  if (const auto by = state.signalled_by.find({rank, op.signal}); by != state.signalled_by.end()) {
    // On the put that made the signal hold.
    context_.waits().add({rank, by->second.rank, start, Simulation::now() - start});
    cause = by->second;
  }
  if (op.consume) value -= op.value;
  return {"", cause};
}

void PgasExecutor::wait_puts_complete(int rank) {
  Heap& state = heap();
  auto& issued = state.issued[static_cast<std::size_t>(rank)];
  std::unique_lock lock(*state.mutex);
  const KeepLockedOnUnwind keep(lock);
  state.changed[static_cast<std::size_t>(rank)]->wait(
      lock, [&] { return std::ranges::all_of(issued, [](const InFlightPtr& p) { return p->complete; }); });
  issued.clear();
}

void PgasExecutor::run(int rank, const QuietOp&) {
  wait_puts_complete(rank);
  sleep_for(models_.pgas->quiet);
}

void PgasExecutor::run(int rank, const FenceOp&) {
  Heap& state = heap();
  for (auto& [to, puts] : state.unfenced[static_cast<std::size_t>(rank)]) {
    auto& before = state.fenced[static_cast<std::size_t>(rank)][to];
    before.insert(before.end(), puts.begin(), puts.end());
    puts.clear();
  }
  sleep_for(models_.pgas->fence);
}

void PgasExecutor::run(int rank, const ShmemBarrierOp& op) {
  // nvshmem_barrier_all completes this PE's puts first, then synchronizes in ceil(log2 n) rounds.
  wait_puts_complete(rank);
  const Seconds arrival = Simulation::now();
  Heap& state = heap();
  auto [it, inserted] = state.barriers.try_emplace(op.group.get(), nullptr);
  if (inserted) it->second = sg4::Barrier::create(static_cast<unsigned>(op.group->size()));
  it->second->wait();
  context_.waits().arrive(rank, Sync::shmem_barrier, op.group.get(), op.group->size(), arrival, Simulation::now());
  Seconds farthest{0};
  for (int peer : *op.group)
    if (peer != rank) farthest = std::max(farthest, simulation_.route(device(rank), device(peer)).latency);
  sleep_for(models_.pgas->barrier_time(op.scope, static_cast<int>(op.group->size()), farthest));
}

void PgasExecutor::run(int rank, const LoadOp& op) {
  const auto& model = *models_.pgas;
  const bool peer = op.from != rank;
  const models::PgasRoute route = peer ? pgas_route(rank, op.from) : models::PgasRoute{};
  const Seconds round_trip = route.latency + route.latency_back;
  if (op.pattern == models::LoadPattern::chase) {
    // Each load waits for the one before: nothing overlaps, and 8 bytes per load leave the links idle.
    sleep_for(model.chase_time(op.count, op.bytes, round_trip));
    return;
  }
  const Bytes total = times(op.bytes, op.count);
  if (!peer) {  // local HBM, not a link of the platform
    sleep_for(model.local_stream_time(total, op.bytes, simulation_.fabric().device(device(rank)).gpu->hbm_bandwidth));
    return;
  }
  sleep_for(model.load_latency(op.bytes) + round_trip);  // the first line's round trip
  const Bytes wire = model.load_wire_bytes(total);
  simulation_.account(device(op.from), device(rank), wire, total);
  sg4::Comm::sendto(simulation_.host(device(op.from)), simulation_.host(device(rank)), wire.count());
}

void PgasExecutor::run(int rank, const EventRecordOp& op) {
  Heap& state = heap();
  std::unique_lock lock(*state.mutex);
  ++state.events[{rank, op.event}];
  state.changed[static_cast<std::size_t>(rank)]->notify_all();
}

void PgasExecutor::run(int rank, const EventWaitOp& op) {
  Heap& state = heap();
  std::unique_lock lock(*state.mutex);
  const KeepLockedOnUnwind keep(lock);
  auto& records = state.events[{rank, op.event}];
  state.changed[static_cast<std::size_t>(rank)]->wait(lock, [&] { return records >= op.count; });
}

std::string PgasExecutor::waiting_for(int rank, const Op& op) const {
  if (!heap_) return "";
  if (const auto* wait = std::get_if<SignalWaitOp>(&op.what)) {
    const auto it = heap_->signals.find({rank, wait->signal});
    return fmt::format("for signal {} to be {} {} (it is {})", wait->signal, symbol(wait->cmp), wait->value,
                       it == heap_->signals.end() ? 0 : it->second);
  }
  if (const auto* wait = std::get_if<EventWaitOp>(&op.what)) {
    const auto it = heap_->events.find({rank, wait->event});
    return fmt::format("for event {} to be recorded {} times (recorded {})", wait->event, wait->count,
                       it == heap_->events.end() ? 0 : it->second);
  }
  return "";
}

}  // namespace snsim::workloads
