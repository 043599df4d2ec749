// Unified-memory ops executed by the UVM executor (models/uvm.hpp has the formulas, runtime/uvm_residency.hpp the
// state they change).
//
// A touch or read plans its faults when it starts: it walks its pages in address order, groups the faults into
// batches of fault_batch_size, runs the density prefetcher after each batch and updates residency, then spends the
// batches' time: the driver's service as a wait, each migration as a transfer from the source (a helper actor
// there), capped at the path's migration rate and sharing links with all other traffic. Residency changes when the
// batch is planned, not when its data lands: another GPU faulting on the same pages meanwhile sees them moved.
// Consecutive identical batches run as one round (up to MAX_ROUNDS rounds per op): the same time alone, and a
// 4 GiB first touch stays a few dozen events instead of 4,096 batches. The bytes a batch evicts to make room move
// over the route before its own migrations.
#include "runtime/uvm_executor.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "runtime/uvm_residency.hpp"

namespace snsim::workloads {

using namespace uvm;

struct UvmExecutor::Uvm {
  Residency residency;  // before the buffers: they give their memory back to it when destroyed
  std::map<const ManagedBuffer*, std::unique_ptr<ManagedState>> buffers;
  struct Counters {
    std::uint64_t faults = 0, batches = 0;
    Bytes migrated_in{0}, migrated_out{0}, prefetched{0}, evicted{0}, counter_migrated{0};
    Seconds service{0};
  };
  std::map<int, Counters> counters;  // by location

  ManagedState& buffer(const ManagedPtr& spec) {
    auto& state = buffers[spec.get()];
    if (!state) state = std::make_unique<ManagedState>(spec, residency);  // used before its allocation ran
    return *state;
  }
};

UvmExecutor::Uvm& UvmExecutor::uvm_state() {
  if (!uvm_) {
    uvm_ = std::make_shared<Uvm>();
    for (std::size_t r = 0; r < context_.ranks(); ++r)
      uvm_->residency.gpus[static_cast<int>(r)].limit =
          models_.uvm->gpu_memory_limit.value_or(simulation_.fabric().device(device(static_cast<int>(r))).gpu->memory);
  }
  return *uvm_;
}

void UvmExecutor::migrate(int from, int to, Bytes bytes, Seconds fixed_cost, const Op& top, int rank) {
  Uvm& state = uvm_state();
  const Seconds start = Simulation::now();
  const BytesPerSecond cap = models_.uvm->params(path(from, to)).bandwidth;
  // The bytes flow from the source: a helper there sends them (Simulation::transfer sends from its caller).
  simulation_
      .start_pooled(device(from),
                    [this, from, to, bytes, fixed_cost, cap] {
                      simulation_.transfer(device(from), device(to), bytes, bytes, fixed_cost, cap);
                    })
      .join();
  state.counters[from].migrated_out += bytes;
  state.counters[to].migrated_in += bytes;
  context_.record({rank, top.phase, top.tag, MIGRATE_KIND.name,
                   fmt::format("migrate {} {} -> {}", bytes, location_name(from), location_name(to)), bytes, start,
                   Simulation::now()});
}

void UvmExecutor::evict(int gpu, Bytes bytes, const Op& top, int rank) {
  migrate(gpu, HOST, bytes, Seconds{0}, top, rank);
  uvm_state().counters[gpu].evicted += bytes;
}

void UvmExecutor::fault(int rank, const ManagedPtr& spec, Bytes offset, Bytes bytes, bool write, const Op& top) {
  const auto& model = *models_.uvm;
  Uvm& state = uvm_state();
  ManagedState& buffer = state.buffer(spec);
  state.residency.now = Simulation::now();
  const auto [first, last] = page_range(buffer, offset, bytes);
  const auto batches = plan_faults(buffer, rank, first, last, write, model);
  buffer.compact(first, last);
  const Bytes page = spec->page;
  auto& mine = state.counters[rank];
  for (const Batch& batch : batches) {
    const Seconds start = Simulation::now();
    const auto k = static_cast<double>(batch.count);
    Seconds service = model.batch_service * k;
    for (const auto& [from, n] : batch.faults)
      service += model.params(path(from, rank)).fault_service * (static_cast<double>(n) * k);
    sleep_for(service);
    const std::uint64_t faults = batch.fault_count() * batch.count;
    context_.record({rank, top.phase, top.tag, FAULT_KIND.name,
                     fmt::format("fault {} {} faults in {} batches", spec->name, faults, batch.count), Bytes{0}, start,
                     Simulation::now()});
    if (batch.evicted > 0) evict(rank, Bytes{batch.evicted * batch.count}, top, rank);
    for (const auto& [from, n] : batch.moves) {
      // A round of k batches pays each batch's route latency; the transfer pays one of them.
      const Seconds more = simulation_.route(device(from), device(rank)).latency * (k - 1);
      migrate(from, rank, Bytes{n * page.count() * batch.count}, more, top, rank);
    }
    mine.faults += faults;
    mine.batches += batch.count;
    mine.prefetched += Bytes{batch.promoted * page.count() * batch.count};
    mine.service += Simulation::now() - start;
  }
}

void UvmExecutor::run(int, const ManagedOp& op, const Op&) {
  Uvm& uvm = uvm_state();
  auto& state = uvm.buffers[op.buffer.get()];
  state.reset();  // (re)allocated: the old pages give their memory back first; first placement, no advice
  state = std::make_unique<ManagedState>(op.buffer, uvm.residency);
}

void UvmExecutor::run(int rank, const AdviseOp& op, const Op&) {
  ManagedState& buffer = uvm_state().buffer(op.buffer);
  buffer.preferred = op.preferred;
  buffer.accessed_by = 0;
  for (int gpu : op.accessed_by) buffer.accessed_by |= bit(gpu);
  buffer.read_mostly = op.read_mostly;
  (void)rank;
}

void UvmExecutor::run(int rank, const TouchOp& op, const Op& top) {
  sleep_for(models_.uvm->kernel_start);
  fault(rank, op.buffer, op.offset, op.bytes, op.write, top);
}

void UvmExecutor::run(int rank, const PrefetchOp& op, const Op& top) {
  ManagedState& buffer = uvm_state().buffer(op.buffer);
  const auto [first, last] = page_range(buffer, op.offset, op.bytes);
  const Where to = bit(op.to);
  std::map<int, std::uint64_t> moves;  // pages by source
  std::uint64_t evicted = 0;
  for (std::uint64_t p = first; p < last; ++p) {
    const PageState s = buffer.get(p);
    if (s.resident & to) {
      if (!buffer.read_mostly) buffer.set(p, {to, s.mapped});  // the other copies of a duplicate go
      continue;
    }
    evicted += buffer.room(op.to, p);
    ++moves[buffer.source(s)];
    buffer.set(p, buffer.read_mostly ? PageState{s.resident | to, s.mapped} : PageState{to, 0});
  }
  buffer.compact(first, last);
  if (evicted > 0) evict(op.to, Bytes{evicted}, top, rank);
  // One migration per source, one after the other (the driver walks the range block by block).
  for (const auto& [from, n] : moves)
    migrate(from, op.to, Bytes{n * buffer.spec->page.count()}, models_.uvm->params(path(from, op.to)).prefetch_setup,
            top, rank);
}

void UvmExecutor::run(int rank, const ReadOp& op, const Op& top) {
  sleep_for(models_.uvm->kernel_start);
  fault(rank, op.buffer, op.offset, op.bytes, false, top);
  // Every page is now resident here or mapped: read each where it is.
  ManagedState& buffer = uvm_state().buffer(op.buffer);
  const auto [first, last] = page_range(buffer, op.offset, op.bytes);
  const std::uint64_t page = buffer.spec->page.count();
  const std::uint64_t begin = op.offset.count(), end = begin + op.bytes.count();
  std::map<int, std::uint64_t> bytes;  // by location read from
  for (std::uint64_t p = first; p < last; ++p) {
    const PageState s = buffer.get(p);
    const std::uint64_t lo = std::max(begin, p * page), hi = std::min(end, (p + 1) * page);
    bytes[(s.resident & bit(rank)) ? rank : buffer.source(s)] += hi - lo;
  }
  // The PGAS model's streaming loads, one location after the other (a kernel's warps would overlap them).
  for (const auto& [from, n] : bytes) loads_.run(rank, LoadOp{from, Bytes{n}, models::LoadPattern::stream, op.passes});
  if (models_.uvm->access_counters.enabled) count_accesses(rank, buffer, op, top);
}

void UvmExecutor::count_accesses(int rank, ManagedState& buffer, const ReadOp& op, const Op& top) {
  const auto& model = *models_.uvm;
  const auto& ac = model.access_counters;
  Uvm& state = uvm_state();
  state.residency.now = Simulation::now();
  const Where me = bit(rank);
  const auto [first, last] = page_range(buffer, op.offset, op.bytes);
  const std::uint64_t page = buffer.spec->page.count(), granularity = ac.granularity.count();
  const std::uint64_t begin = op.offset.count(), end = begin + op.bytes.count();
  std::map<std::uint64_t, std::uint64_t> remote;  // bytes read from elsewhere, by region
  for (std::uint64_t p = first; p < last; ++p)
    if (!(buffer.get(p).resident & me))
      remote[p * page / granularity] += std::min(end, (p + 1) * page) - std::max(begin, p * page);
  const std::uint64_t line = models::UvmModel::ACCESS_BYTES.count();
  for (const auto& [region, n] : remote) {
    std::uint64_t& count = buffer.counts[{region, rank}];
    count += (n + line - 1) / line * op.passes;
    if (count < ac.threshold) continue;
    count = 0;  // the notification clears the counter
    // The region migrates to the reader (pages of thrashing-pinned blocks stay), evicting to make room.
    const std::uint64_t rf = region * granularity / page;
    const std::uint64_t rl = std::min(buffer.pages, ((region + 1) * granularity + page - 1) / page);
    std::map<int, std::uint64_t> moves;
    std::uint64_t evicted = 0;
    std::set<std::uint64_t> noted;
    for (std::uint64_t p = rf; p < rl; ++p) {
      const PageState s = buffer.get(p);
      const std::uint64_t b = p / buffer.per_block;
      if ((s.resident & me) || buffer.pinned(b, state.residency.now)) continue;
      if (noted.insert(b).second && buffer.thrashes(b, rank, state.residency.now, model)) continue;
      evicted += buffer.room(rank, p);
      ++moves[buffer.source(s)];
      buffer.set(p, {me, 0});
    }
    buffer.compact(rf, rl);
    if (evicted > 0) evict(rank, Bytes{evicted}, top, rank);
    for (const auto& [from, k] : moves) {
      const Bytes moved{k * page};
      migrate(from, rank, moved, model.params(path(from, rank)).prefetch_setup, top, rank);
      state.counters[rank].counter_migrated += moved;
    }
  }
}

std::optional<Table> UvmExecutor::uvm_table() const {
  if (!uvm_) return std::nullopt;
  Table t{"uvm: faults and migrations per location",
          {"location", "faults", "fault_batches", "migrated_in_bytes", "migrated_out_bytes", "density_prefetched_bytes",
           "fault_service_us", "evicted_bytes", "access_counter_migrated_bytes", "thrashing_pins"},
          {}};
  std::vector<int> locations{HOST};
  for (std::size_t r = 0; r < context_.ranks(); ++r) locations.push_back(static_cast<int>(r));
  for (int location : locations) {
    const auto it = uvm_->counters.find(location);
    const Uvm::Counters c = it == uvm_->counters.end() ? Uvm::Counters{} : it->second;
    t.rows.push_back({location_name(location), c.faults, c.batches, c.migrated_in.count(), c.migrated_out.count(),
                      c.prefetched.count(), c.service.count() * 1e6, c.evicted.count(), c.counter_migrated.count(),
                      uvm_->residency.pins.contains(location) ? uvm_->residency.pins.at(location) : 0});
  }
  return t;
}

}  // namespace snsim::workloads
