#include "runtime/uvm_residency.hpp"

namespace snsim::workloads::uvm {

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

models::UvmPath path(int from, int to) {
  if (from == HOST) return models::UvmPath::host_to_gpu;
  if (to == HOST) return models::UvmPath::gpu_to_host;
  return models::UvmPath::gpu_to_gpu;
}

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

std::pair<std::uint64_t, std::uint64_t> page_range(const ManagedState& buffer, Bytes offset, Bytes bytes) {
  const std::uint64_t page = buffer.spec->page.count();
  return {offset.count() / page, (offset.count() + bytes.count() + page - 1) / page};
}

}  // namespace snsim::workloads::uvm
