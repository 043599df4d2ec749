// Unified-memory ops executed by the Runner (models/uvm.hpp has the formulas).
//
// Residency is kept per page, compressed per 2 MiB VA block: a block whose pages all share one state stores it
// once (a 4 GiB buffer is 2,048 blocks until ops split them), and an op that leaves a block uniform folds it back.
// A page's state is two bit sets over the locations (bit 0 the host, bit 1 + r GPU r): where it is resident (more
// than one place only for read-mostly duplicates) and which GPUs map it remotely.
//
// A touch or read plans its faults when it starts: it walks its pages in address order, groups the faults into
// batches of fault_batch_size, runs the density prefetcher after each batch and updates residency, then spends the
// batches' time: the driver's service as a wait, each migration as a transfer from the source (a helper actor
// there), capped at the path's migration rate and sharing links with all other traffic. Residency changes when the
// batch is planned, not when its data lands: another GPU faulting on the same pages meanwhile sees them moved.
// Consecutive identical batches run as one round (up to MAX_ROUNDS rounds per op): the same time alone, and a
// 4 GiB first touch stays a few dozen events instead of 4,096 batches.
//
// Oversubscription: every GPU's managed bytes are counted as pages become resident there; a page about to become
// resident past the GPU's limit first evicts the GPU's least recently migrated-in 2 MiB block (never the one being
// filled) to the host, and the batch moves those bytes over the route before its own migrations. Access counters
// and thrashing pins (models/uvm.hpp) keep their state per block (thrashing) and per region and reader (counters).
#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "runtime/runner.hpp"

namespace sg4 = simgrid::s4u;

namespace snsim::workloads {

namespace {

constexpr std::uint64_t MAX_ROUNDS = 64;

using Where = std::uint64_t;

Where bit(int location) {
  return Where{1} << static_cast<unsigned>(location + 1);
}

int first_location(Where where) {
  return std::countr_zero(where) - 1;
}

std::string location_name(int location) {
  return location == HOST ? std::string("host") : fmt::format("gpu{}", location);
}

bool is_gpu(int location) {
  return location != HOST;
}

/// Calls f(location) for every location whose bit is set in `where`.
template <class F>
void for_each_location(Where where, F f) {
  while (where != 0) {
    f(first_location(where));
    where &= where - 1;
  }
}

struct PageState {
  Where resident = 0;
  Where mapped = 0;
  bool operator==(const PageState&) const = default;
};

/// One fault batch (or a round of identical ones): faults and migrated pages by source location.
struct Batch {
  std::map<int, std::uint64_t> faults;
  std::map<int, std::uint64_t> moves;
  std::uint64_t promoted = 0;  // pages the density prefetcher added
  std::uint64_t evicted = 0;   // bytes evicted to the host to make room, moved before the batch's migrations
  std::uint64_t count = 1;     // identical batches in this round
  std::uint64_t fault_count() const {
    std::uint64_t n = 0;
    for (const auto& [from, k] : faults) n += k;
    return n;
  }
  bool same(const Batch& o) const {
    return faults == o.faults && moves == o.moves && promoted == o.promoted && evicted == o.evicted;
  }
};

}  // namespace

struct ManagedState;

/// Every GPU's managed memory: bytes resident, its limit, and its blocks in LRU order of migration in.
struct Residency {
  struct Memory {
    Bytes limit{0};
    Bytes used{0};
    std::uint64_t clock = 0;
    using Key = std::pair<ManagedState*, std::uint64_t>;  // buffer, block
    std::map<Key, std::uint64_t> stamp;                   // block -> tick of its last migration in
    std::set<std::pair<std::uint64_t, Key>> lru;          // by tick: oldest first (ticks are unique)
    Key newest{nullptr, 0};
  };
  std::map<int, Memory> gpus;
  std::map<int, std::uint64_t> pins;  // thrashing pins by the location the block is pinned at
  Seconds now{0};                     // simulated time of the op being planned (thrashing)

  void touch(int gpu, ManagedState* state, std::uint64_t block) {
    Memory& m = gpus[gpu];
    const Memory::Key key{state, block};
    if (m.newest == key) return;  // already the most recent: a block filled page by page stamps once
    if (const auto it = m.stamp.find(key); it != m.stamp.end()) m.lru.erase({it->second, key});
    m.stamp[key] = ++m.clock;
    m.lru.insert({m.clock, key});
    m.newest = key;
  }
  void forget(int gpu, ManagedState* state, std::uint64_t block) {
    Memory& m = gpus[gpu];
    const Memory::Key key{state, block};
    if (const auto it = m.stamp.find(key); it != m.stamp.end()) {
      m.lru.erase({it->second, key});
      m.stamp.erase(it);
    }
    if (m.newest == key) m.newest = {nullptr, 0};
  }
  /// Evicts `gpu`'s least recently migrated-in blocks (not `keep`) until `need` more bytes fit; returns the bytes
  /// that must move to the host (pages with another copy are dropped).
  std::uint64_t make_room(int gpu, Bytes need, ManagedState* state, std::uint64_t keep);
};

/// A managed buffer's residency and advice.
struct ManagedState {
  ManagedPtr spec;
  std::uint64_t pages = 0;
  std::uint64_t per_block = 0;  // pages per VA block
  struct Block {
    PageState uniform;
    std::vector<PageState> pages;  // empty while every page is `uniform`
  };
  std::vector<Block> blocks;
  std::optional<int> preferred;
  Where accessed_by = 0;
  bool read_mostly = false;
  Residency* residency;
  struct Thrash {
    Seconds last{-1};  // last migration of the block
    int to = 0;        // where it went
    int events = 0;    // consecutive thrashing events
    Seconds pinned_until{-1};
  };
  std::map<std::uint64_t, Thrash> thrash;                         // by block
  std::map<std::pair<std::uint64_t, int>, std::uint64_t> counts;  // access counters by region and reader

  /// Every page starts at `on`; on a GPU, only while the blocks fit under its limit (the rest on the host).
  ManagedState(ManagedPtr buffer, Residency& where) : spec{std::move(buffer)}, residency{&where} {
    const std::uint64_t page = spec->page.count();
    pages = (spec->bytes.count() + page - 1) / page;
    per_block = models::UvmModel::BLOCK.count() / page;
    blocks.assign((pages + per_block - 1) / per_block, Block{{bit(HOST), 0}, {}});
    if (!is_gpu(spec->on)) return;
    auto& memory = residency->gpus[spec->on];
    for (std::uint64_t b = 0; b < blocks.size(); ++b) {
      const Bytes size{block_pages(b) * page};
      if (memory.used + size > memory.limit) break;
      blocks[b].uniform = {bit(spec->on), 0};
      memory.used += size;
      residency->touch(spec->on, this, b);
    }
  }
  ManagedState(const ManagedState&) = delete;
  ManagedState& operator=(const ManagedState&) = delete;
  /// One page leaves `gpu`.
  void release(int gpu) {
    Bytes& used = residency->gpus[gpu].used;
    used = used - spec->page;
  }
  /// Gives the GPUs' memory back (the buffer is allocated again).
  ~ManagedState() {
    for (std::uint64_t b = 0; b < blocks.size(); ++b) {
      for (std::uint64_t p = b * per_block; p < b * per_block + block_pages(b); ++p)
        for_each_location(get(p).resident & ~bit(HOST), [&](int gpu) { release(gpu); });
      for (auto& [gpu, memory] : residency->gpus) residency->forget(gpu, this, b);
    }
  }
  std::uint64_t block_pages(std::uint64_t b) const { return std::min(per_block, pages - b * per_block); }
  PageState get(std::uint64_t p) const {
    const Block& b = blocks[p / per_block];
    return b.pages.empty() ? b.uniform : b.pages[p % per_block];
  }
  void set(std::uint64_t p, PageState s) {
    const PageState old = get(p);
    for_each_location(s.resident & ~old.resident & ~bit(HOST), [&](int gpu) {
      residency->gpus[gpu].used += spec->page;
      residency->touch(gpu, this, p / per_block);
    });
    for_each_location(old.resident & ~s.resident & ~bit(HOST), [&](int gpu) { release(gpu); });
    Block& b = blocks[p / per_block];
    if (b.pages.empty()) {
      if (b.uniform == s) return;
      b.pages.assign(block_pages(p / per_block), b.uniform);
    }
    b.pages[p % per_block] = s;
  }
  /// Folds the blocks of pages [first, last) whose pages all agree back into one state.
  void compact(std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t b = first / per_block; b * per_block < last; ++b) {
      Block& block = blocks[b];
      if (block.pages.empty()) continue;
      if (std::ranges::all_of(block.pages, [&](const PageState& s) { return s == block.pages.front(); })) {
        block.uniform = block.pages.front();
        block.pages.clear();
      }
    }
  }
  /// Where `reader` reads page state `s` from when it does not hold it: the preferred location if the page is
  /// there, else its first copy.
  int source(PageState s) const {
    if (preferred && (s.resident & bit(*preferred))) return *preferred;
    return first_location(s.resident);
  }
  /// Makes room on `gpu` for page `p` about to become resident there; returns the bytes evicted to the host.
  std::uint64_t room(int gpu, std::uint64_t p) {
    if (!is_gpu(gpu) || (get(p).resident & bit(gpu))) return 0;
    return residency->make_room(gpu, spec->page, this, p / per_block);
  }
  /// Moves block `b`'s pages off `gpu` to the host; returns the bytes that travel (not those with another copy).
  std::uint64_t evict(std::uint64_t b, int gpu) {
    std::uint64_t moved = 0;
    for (std::uint64_t p = b * per_block; p < b * per_block + block_pages(b); ++p) {
      const PageState s = get(p);
      if (!(s.resident & bit(gpu))) continue;
      if (s.resident & ~bit(gpu)) {
        set(p, {s.resident & ~bit(gpu), s.mapped});
      } else {
        set(p, {bit(HOST), 0});
        moved += spec->page.count();
      }
    }
    compact(b * per_block, b * per_block + 1);
    return moved;
  }
  bool pinned(std::uint64_t b, Seconds now) const {
    const auto it = thrash.find(b);
    return it != thrash.end() && now < it->second.pinned_until;
  }
  /// Notes that block `b` migrates to `to` now; true when this makes it thrash past the threshold (it is pinned
  /// where it is and the migration does not happen).
  bool thrashes(std::uint64_t b, int to, Seconds now, const models::UvmModel& model) {
    if (!model.thrashing.enabled || read_mostly) return false;
    Thrash& t = thrash[b];
    const bool event = t.last.count() >= 0 && now - t.last <= model.thrashing.lapse && t.to != to;
    t.events = event ? t.events + 1 : 0;
    t.last = now;
    t.to = to;
    if (t.events < model.thrashing.threshold) return false;
    t.events = 0;
    t.pinned_until = now + model.thrashing.epoch;
    ++residency->pins[first_location(get(b * per_block).resident)];
    return true;
  }
};

std::uint64_t Residency::make_room(int gpu, Bytes need, ManagedState* state, std::uint64_t keep) {
  Memory& m = gpus[gpu];
  std::uint64_t moved = 0;
  while (m.used + need > m.limit) {
    auto it = m.lru.begin();
    if (it != m.lru.end() && it->second == Memory::Key{state, keep}) ++it;
    if (it == m.lru.end()) break;  // nothing else to evict: the limit is below one block
    const auto [victim, block] = it->second;
    forget(gpu, victim, block);
    moved += victim->evict(block, gpu);
  }
  return moved;
}

struct Runner::Uvm {
  Residency residency;  // before the buffers: they give their memory back to it when destroyed
  std::map<const ManagedBuffer*, std::unique_ptr<ManagedState>> buffers;
  struct Counters {
    std::uint64_t faults = 0, batches = 0;
    Bytes migrated_in{0}, migrated_out{0}, prefetched{0}, evicted{0}, counter_migrated{0};
    Seconds service{0};
  };
  std::map<int, Counters> counters;  // by location
  std::uint64_t helpers = 0;         // names migration actors

  ManagedState& buffer(const ManagedPtr& spec) {
    auto& state = buffers[spec.get()];
    if (!state) state = std::make_unique<ManagedState>(spec, residency);  // used before its allocation ran
    return *state;
  }
};

Runner::Uvm& Runner::uvm_state() {
  if (!uvm_) {
    uvm_ = std::make_shared<Uvm>();
    for (std::size_t r = 0; r < programs_.size(); ++r)
      uvm_->residency.gpus[static_cast<int>(r)].limit =
          models_.uvm->gpu_memory_limit.value_or(simulation_.fabric().device(device(static_cast<int>(r))).gpu->memory);
  }
  return *uvm_;
}

namespace {

models::UvmPath path(int from, int to) {
  if (from == HOST) return models::UvmPath::host_to_gpu;
  if (to == HOST) return models::UvmPath::gpu_to_host;
  return models::UvmPath::gpu_to_gpu;
}

/// The faults of a kernel on `rank` touching pages [first, last) of `buffer`, batched, with residency updated.
std::vector<Batch> plan_faults(ManagedState& buffer, int rank, std::uint64_t first, std::uint64_t last, bool write,
                               const models::UvmModel& model) {
  const Where me = bit(rank);
  const Seconds now = buffer.residency->now;
  std::set<std::uint64_t> noted;  // blocks whose migration thrashing detection has seen in this op
  std::vector<Batch> batches;
  Batch current;
  std::uint64_t in_batch = 0;
  std::set<std::uint64_t> migrated_blocks;  // blocks a migrating fault of this batch hit
  auto flush = [&] {
    if (in_batch == 0) return;
    if (model.density_prefetch) {
      for (std::uint64_t b : migrated_blocks) {
        const std::uint64_t n = buffer.block_pages(b), begin = b * buffer.per_block;
        std::uint64_t here = 0;
        for (std::uint64_t p = begin; p < begin + n; ++p) here += (buffer.get(p).resident & me) ? 1 : 0;
        if (here == n || static_cast<double>(here) <= model.prefetch_threshold * static_cast<double>(n)) continue;
        if (buffer.pinned(b, now)) continue;
        for (std::uint64_t p = begin; p < begin + n; ++p) {
          PageState s = buffer.get(p);
          if (s.resident & me) continue;
          // A page kept at its preferred location stays there (it is mapped on fault, not moved).
          if (buffer.preferred && *buffer.preferred != rank && (s.resident & bit(*buffer.preferred))) continue;
          current.evicted += buffer.room(rank, p);
          ++current.moves[buffer.source(s)];
          ++current.promoted;
          s = buffer.read_mostly ? PageState{s.resident | me, s.mapped} : PageState{me, 0};
          buffer.set(p, s);
        }
      }
    }
    if (!batches.empty() && batches.back().same(current) &&
        batches.back().count < (last - first) / (MAX_ROUNDS * static_cast<std::uint64_t>(model.fault_batch_size)) + 1)
      ++batches.back().count;
    else
      batches.push_back(current);
    current = Batch{};
    in_batch = 0;
    migrated_blocks.clear();
  };
  for (std::uint64_t p = first; p < last; ++p) {
    PageState s = buffer.get(p);
    const bool others = (s.resident & ~me) != 0;
    if ((s.resident & me) && !(write && others)) continue;  // here (a write to a duplicate invalidates the others)
    if (!(s.resident & me) && (s.mapped & me)) continue;    // mapped: accessed where it is
    if (!(s.resident & me) && (buffer.accessed_by & me)) {  // accessed-by: the driver keeps a mapping, no fault
      buffer.set(p, {s.resident, s.mapped | me});
      continue;
    }
    const int from = (s.resident & me) ? rank : buffer.source(s);
    ++current.faults[from];
    if (s.resident & me) {  // write to a read-mostly duplicate: the other copies go
      s = {me, 0};
    } else if (buffer.preferred && *buffer.preferred != rank && (s.resident & bit(*buffer.preferred))) {
      s.mapped |= me;  // kept at its preferred location: mapped, not moved
    } else if (const std::uint64_t b = p / buffer.per_block;
               buffer.pinned(b, now) || (noted.insert(b).second && buffer.thrashes(b, rank, now, model))) {
      s.mapped |= me;  // pinned where it is by thrashing protection: mapped, not moved
    } else {
      current.evicted += buffer.room(rank, p);
      s = buffer.read_mostly && !write ? PageState{s.resident | me, s.mapped} : PageState{me, 0};
      ++current.moves[from];
      migrated_blocks.insert(p / buffer.per_block);
    }
    buffer.set(p, s);
    if (++in_batch == static_cast<std::uint64_t>(model.fault_batch_size)) flush();
  }
  flush();
  return batches;
}

/// Pages [first, last) of the byte range [offset, offset + bytes).
std::pair<std::uint64_t, std::uint64_t> page_range(const ManagedState& buffer, Bytes offset, Bytes bytes) {
  const std::uint64_t page = buffer.spec->page.count();
  return {offset.count() / page, (offset.count() + bytes.count() + page - 1) / page};
}

}  // namespace

void Runner::migrate(int from, int to, Bytes bytes, Seconds fixed_cost, const Op& top, int rank) {
  Uvm& state = uvm_state();
  const Seconds start = Simulation::now();
  const BytesPerSecond cap = models_.uvm->params(path(from, to)).bandwidth;
  // The bytes flow from the source: a helper actor there sends them (Simulation::transfer sends from its caller).
  sg4::Actor::create(fmt::format("uvm.migrate{}", state.helpers++), simulation_.host(device(from)),
                     [this, from, to, bytes, fixed_cost, cap] {
                       simulation_.transfer(device(from), device(to), bytes, bytes, fixed_cost, cap);
                     })
      ->join();
  state.counters[from].migrated_out += bytes;
  state.counters[to].migrated_in += bytes;
  records_[static_cast<std::size_t>(rank)].push_back(
      {rank, top.phase, top.tag, "migrate",
       fmt::format("migrate {} {} -> {}", bytes, location_name(from), location_name(to)), bytes, start,
       Simulation::now()});
}

void Runner::evict(int gpu, Bytes bytes, const Op& top, int rank) {
  migrate(gpu, HOST, bytes, Seconds{0}, top, rank);
  uvm_state().counters[gpu].evicted += bytes;
}

void Runner::fault(int rank, const ManagedPtr& spec, Bytes offset, Bytes bytes, bool write, const Op& top) {
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
    records_[static_cast<std::size_t>(rank)].push_back(
        {rank, top.phase, top.tag, "fault",
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

void Runner::uvm(int, const ManagedOp& op, const Op&) {
  Uvm& uvm = uvm_state();
  auto& state = uvm.buffers[op.buffer.get()];
  state.reset();  // (re)allocated: the old pages give their memory back first; first placement, no advice
  state = std::make_unique<ManagedState>(op.buffer, uvm.residency);
}

void Runner::uvm(int rank, const AdviseOp& op, const Op&) {
  ManagedState& buffer = uvm_state().buffer(op.buffer);
  buffer.preferred = op.preferred;
  buffer.accessed_by = 0;
  for (int gpu : op.accessed_by) buffer.accessed_by |= bit(gpu);
  buffer.read_mostly = op.read_mostly;
  (void)rank;
}

void Runner::uvm(int rank, const TouchOp& op, const Op& top) {
  sleep_for(models_.uvm->kernel_start);
  fault(rank, op.buffer, op.offset, op.bytes, op.write, top);
}

void Runner::uvm(int rank, const PrefetchOp& op, const Op& top) {
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

void Runner::uvm(int rank, const ReadOp& op, const Op& top) {
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
  for (const auto& [from, n] : bytes) pgas(rank, LoadOp{from, Bytes{n}, models::LoadPattern::stream, op.passes});
  if (models_.uvm->access_counters.enabled) count_accesses(rank, buffer, op, top);
}

void Runner::count_accesses(int rank, ManagedState& buffer, const ReadOp& op, const Op& top) {
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

std::optional<Table> Runner::uvm_table() const {
  if (!uvm_) return std::nullopt;
  Table t{"uvm: faults and migrations per location",
          {"location", "faults", "fault_batches", "migrated_in_bytes", "migrated_out_bytes", "density_prefetched_bytes",
           "fault_service_us", "evicted_bytes", "access_counter_migrated_bytes", "thrashing_pins"},
          {}};
  std::vector<int> locations{HOST};
  for (std::size_t r = 0; r < programs_.size(); ++r) locations.push_back(static_cast<int>(r));
  for (int location : locations) {
    const auto it = uvm_->counters.find(location);
    const Uvm::Counters c = it == uvm_->counters.end() ? Uvm::Counters{} : it->second;
    t.rows.push_back({location_name(location), c.faults, c.batches, c.migrated_in.count(), c.migrated_out.count(),
                      c.prefetched.count(), c.service.count() * 1e6, c.evicted.count(), c.counter_migrated.count(),
                      uvm_->residency.pins.contains(location) ? uvm_->residency.pins.at(location) : 0});
  }
  return t;
}

OpDescription describe(const ManagedOp& op) {
  return {"managed",
          fmt::format("managed {} {} on {} pages {}", op.buffer->name, op.buffer->bytes, location_name(op.buffer->on),
                      op.buffer->page),
          Bytes{0}};
}

OpDescription describe(const TouchOp& op) {
  return {"touch",
          fmt::format("touch {} {} at {} {}", op.buffer->name, op.bytes, op.offset, op.write ? "write" : "read"),
          Bytes{0}};
}

OpDescription describe(const PrefetchOp& op) {
  return {"prefetch",
          fmt::format("prefetch {} {} at {} to {}", op.buffer->name, op.bytes, op.offset, location_name(op.to)),
          op.bytes};
}

OpDescription describe(const AdviseOp& op) {
  std::string label = fmt::format("advise {}", op.buffer->name);
  if (op.preferred) label += fmt::format(" preferred {}", location_name(*op.preferred));
  for (int gpu : op.accessed_by) label += fmt::format(" accessed_by gpu{}", gpu);
  if (op.read_mostly) label += " read_mostly";
  return {"advise", label, Bytes{0}};
}

OpDescription describe(const ReadOp& op) {
  return {"read", fmt::format("read {} {} at {} x{}", op.buffer->name, op.bytes, op.offset, op.passes),
          Bytes{op.bytes.count() * op.passes}};
}

}  // namespace snsim::workloads
