// Unified memory's residency, as the UVM executor keeps it (runtime/uvm_executor.cpp runs the ops on it).
//
// Residency is kept per page, compressed per 2 MiB VA block: a block whose pages all share one state stores it
// once (a 4 GiB buffer is 2,048 blocks until ops split them), and an op that leaves a block uniform folds it back.
// A page's state is two bit sets over the locations (bit 0 the host, bit 1 + r GPU r): where it is resident (more
// than one place only for read-mostly duplicates) and which GPUs map it remotely.
//
// Oversubscription: every GPU's managed bytes are counted as pages become resident there; a page about to become
// resident past the GPU's limit first evicts the GPU's least recently migrated-in 2 MiB block (never the one being
// filled) to the host. Access counters and thrashing pins (models/uvm.hpp) keep their state per block (thrashing)
// and per region and reader (counters).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "models/uvm.hpp"
#include "program/program.hpp"

namespace snsim::workloads::uvm {

/// Most rounds of identical fault batches per op (a round runs as one).
inline constexpr std::uint64_t MAX_ROUNDS = 64;

using Where = std::uint64_t;

inline Where bit(int location) {
  return Where{1} << static_cast<unsigned>(location + 1);
}

inline int first_location(Where where) {
  return std::countr_zero(where) - 1;
}

inline bool is_gpu(int location) {
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

/// The path a migration from `from` to `to` takes.
models::UvmPath path(int from, int to);

/// The faults of a kernel on `rank` touching pages [first, last) of `buffer`, batched, with residency updated.
std::vector<Batch> plan_faults(ManagedState& buffer, int rank, std::uint64_t first, std::uint64_t last, bool write,
                               const models::UvmModel& model);

/// Pages [first, last) of the byte range [offset, offset + bytes).
std::pair<std::uint64_t, std::uint64_t> page_range(const ManagedState& buffer, Bytes offset, Bytes bytes);

}  // namespace snsim::workloads::uvm
