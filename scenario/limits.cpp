#include "scenario/limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/uvm.hpp"
#include "sim/error.hpp"
#include "sim/simulation.hpp"

namespace snsim::workloads {
namespace {

// Costs per item, from peak RSS (GNU time's %M) of `snsim run --out` on the development machine (Debian 12,
// SimGrid 3.32, Release build), rounded up so that the estimate stays above what was measured:
//   PROCESS   2-GPU HGX, one kernel per GPU: 36,488 KiB (libraries, SimGrid's engine, the scenario)
//   ENDPOINT  superpods: HGX nodes, 512 -> 4,096 GPUs (7,168 -> 57,344 channels, one kernel per GPU): 245,560 KiB
//   CHANNEL   more; NVL72 nodes, 10,008 GPUs (423,360 channels): 1,336,468 KiB. Fitted to both: 38.2 KiB per GPU
//             (actor, host, HBM link) and 2.17 KiB per channel (graph edge, spare link, hub routes), rounded up to
//             40 and 2.25; NVL576 (576 GPUs, 25,920 channels, 71,992 KiB) comes out 1.6x over
//   ROUTE     NVL72, 73 endpoints routed up front (5,256 routes): 2.4 MiB above the 2-GPU run, all parts included
//   OP        8-GPU HGX, 200,000 -> 800,000 ops per run (25,000 -> 100,000 per GPU): without files, 0.27 KiB per
//             op (kernels alone; the same with copies and all-reduces among them); a training step's ops, nested
//             in streams and waited on, 0.46-0.49 KiB (Llama 3.1 405B's plan on 1,024 and 8,192 H100 and with a
//             slow GPU: 3.05 and 6.11 million simulated ops, 1,542, 1,843 and 3,279 MiB at peak, less the fabric's
//             448 MiB at 8,192 GPUs): 0.55 KiB. With --out, report.json and report.csv take 1.03-1.05 KiB more per
//             op of those 8 GPUs, 1.36 KiB per op of GPT-3 175B's step on 128 H100 (625,000 ops, longer labels:
//             337 -> 1,169 MiB): 1.4. timeline.json 0.14 KiB more for kernels, 0.55 for the GPT-3 step, 1.04 with
//             copies' rate counters: 1.1
//   PGAS      8-GPU HGX, 200,000 -> 800,000 ops of puts and quiets: 1.46 KiB per op, ~0.1 KiB per put beyond its
//             record (a mailbox and a helper actor SimGrid keeps)
//   FLOW      NVL72 all-to-all on the exact path (5,112 flows at once) against a ring all-gather: 12,352 KiB more,
//             2.4 KiB per flow in flight
//   HELPER    8-GPU HGX, 3,000 puts of 1 MiB per GPU without a quiet (23,992 helper actors alive at once, each with
//             its flow) against a quiet after each put: 827,960 KiB (killed after 120 s, every put issued) against
//             117,752 KiB, 29.6 KiB per helper
//   MANAGED   2-GPU HGX, a 16 GiB managed buffer touched by GPU 0 in 4 KiB pages (4,194,304 pages) against 2 MiB
//             pages: 109,108 KiB against 43,576 KiB, 16.4 B per page (a 1 TiB buffer in 4 KiB pages took 5.3 GB,
//             19.7 B per page); 24 B per page and 256 B per 2 MiB block (its entries in the LRU and thrashing maps)
constexpr double KiB = 1024;
constexpr double PROCESS = 36 * 1024 * KiB;
constexpr double ENDPOINT = 40 * KiB;
constexpr double CHANNEL = 2.25 * KiB;
constexpr double ROUTE = 0.25 * KiB;
constexpr double OP = 0.55 * KiB;
constexpr double OP_REPORTS = 1.4 * KiB;
constexpr double OP_TIMELINE = 1.1 * KiB;
// A folded rank's op is neither built (Workload::replicas_alike) nor recorded, and the summaries read its
// representative's records (RankRecords::simulated): Llama 3.1 405B on 8,192 H100 (workloads/bench/
// llama405b_8192h100.yaml, 3,054,352 simulated and 192,424,176 folded ops) peaked at 1,843 MiB against 1,542 MiB for
// the same plan on 1,024 (21,380,464 folded ops), a difference the fabric's growth alone accounts for (367 MiB for
// one kernel per GPU, most of it the 7,168 more rank actors that a folded run does not have): well under a byte per
// folded op (stop 46 measured 3 B, when every rank's waits held a time per rank), rounded up to 1.
constexpr double FOLDED_OP = 1;
// Who waited on whom (RankWaits::on) holds only the ranks each rank waited on, a few per rank. Until stop 47 every
// rank held a time per rank, ranks^2 entries, and the ENDPOINT and CHANNEL fit's runs held them (at 10,008 GPUs, 764
// MiB of the 1.27 GiB measured): those terms stay above what such runs need now.
constexpr double PGAS = 0.25 * KiB;
constexpr double FLOW = 2.5 * KiB;
constexpr double HELPER = 32 * KiB;
constexpr double MANAGED_PAGE = 24;
constexpr double MANAGED_BLOCK = 256;
// timeline.json per op, measured here on 8-GPU HGX runs: 20,000 kernels per GPU, 17,033,607 B (106 B per op); 5,000
// steps of a kernel, a copy and an all-reduce per GPU, 26,265,414 B (219 B per op: copies add rate counters). The
// larger, rounded up.
constexpr double TIMELINE_OP = 220;

constexpr std::uint64_t MAX = std::numeric_limits<std::uint64_t>::max();

std::uint64_t saturating_times(std::uint64_t a, std::uint64_t b) {
  return a != 0 && b > MAX / a ? MAX : a * b;
}
std::uint64_t saturating_plus(std::uint64_t a, std::uint64_t b) {
  return b > MAX - a ? MAX : a + b;
}

/// Puts whose helper actors may be alive at once on one rank, over a list of ops: a put's helper lives until the
/// put is complete (and its signal delivered). Only a quiet or shmem_barrier waits for that; the estimate also ends
/// the puts issued before a barrier, a collective or a signal wait (a PGAS step waits on its peers' signals, never
/// quiets, and its puts complete within the round trip that wait takes), so that only puts issued without any wait
/// between them pile up. `lead`: puts before the list's first wait, `trail`: after its last, `peak`: the most open
/// at once inside it; without a wait (`waits` false) the three are the list's puts.
struct OpenPuts {
  std::uint64_t lead = 0, trail = 0, peak = 0;
  bool waits = false;

  /// This list followed by `next`: the puts left open here are still open while `next` issues its first ones.
  void then(const OpenPuts& next) {
    peak = std::max({peak, next.peak, saturating_plus(trail, next.lead)});
    if (!waits) lead = saturating_plus(lead, next.lead);
    trail = next.waits ? next.trail : saturating_plus(trail, next.trail);
    waits = waits || next.waits;
  }
  /// This list run `n` times in a row.
  OpenPuts repeated(std::uint64_t n) const {
    if (n == 0) return {};
    if (!waits) {
      const std::uint64_t all = saturating_times(lead, n);
      return {all, all, all, false};
    }
    return {lead, trail, n > 1 ? std::max(peak, saturating_plus(trail, lead)) : peak, true};
  }
};

/// What one rank's program holds besides its ops: the actors its streams run at once beside its own, the helper
/// actors of its puts, gets, migrations and tree collectives, and its largest collective fan-out.
struct RankCounts {
  std::uint64_t fanout = 0;
  std::uint64_t streams = 0;
  bool helper = false;  // a get's, a UVM migration's or a tree collective's helper, one at a time
};

/// Ops of a list run `count` times, into `e` and `rank`; returns the list's open puts (run once).
OpenPuts count(const std::vector<Op>& ops, std::uint64_t count_, MemoryEstimate& e, RankCounts& rank,
               std::set<const ManagedBuffer*>& buffers) {
  OpenPuts list;
  for (const auto& op : ops) {
    if (const auto* r = std::get_if<RepeatOp>(&op.what)) {
      list.then(count(r->body, saturating_times(count_, static_cast<std::uint64_t>(r->count)), e, rank, buffers)
                    .repeated(static_cast<std::uint64_t>(r->count)));
      continue;
    }
    if (const auto* s = std::get_if<StreamsOp>(&op.what)) {
      // Its lists run at once: each one's own streams may be alive together with the others', and their puts too.
      std::uint64_t inner = 0;
      OpenPuts together;
      for (const auto& stream : s->streams) {
        RankCounts in_list;
        const OpenPuts puts = count(stream, count_, e, in_list, buffers);
        inner = saturating_plus(inner, in_list.streams);
        rank.fanout = std::max(rank.fanout, in_list.fanout);
        rank.helper = rank.helper || in_list.helper;
        together = {saturating_plus(together.lead, puts.lead), saturating_plus(together.trail, puts.trail),
                    saturating_plus(together.peak, puts.peak), together.waits || puts.waits};
      }
      list.then(together);
      rank.streams = std::max<std::uint64_t>(rank.streams, saturating_plus(s->streams.size() - 1, inner));
      continue;
    }
    // A quiet waits for the rank's puts; a barrier, a collective or a signal wait does not, but the puts issued
    // before one have had a round trip's time to complete (an estimate: see OpenPuts).
    if (std::holds_alternative<QuietOp>(op.what) || std::holds_alternative<ShmemBarrierOp>(op.what) ||
        std::holds_alternative<BarrierOp>(op.what) || std::holds_alternative<CollectiveOp>(op.what) ||
        std::holds_alternative<SignalWaitOp>(op.what))
      list.then({0, 0, 0, true});
    if (const auto* b = std::get_if<BarrierOp>(&op.what); b && b->sync) continue;  // bookkeeping, not recorded
    e.ops = saturating_plus(e.ops, count_);
    if (std::holds_alternative<PutOp>(op.what) || std::holds_alternative<GetOp>(op.what))
      e.pgas = saturating_plus(e.pgas, count_);
    if (std::holds_alternative<PutOp>(op.what)) list.then({1, 1, 1, false});
    if (std::holds_alternative<GetOp>(op.what) || std::holds_alternative<TouchOp>(op.what) ||
        std::holds_alternative<ReadOp>(op.what) || std::holds_alternative<PrefetchOp>(op.what))
      rank.helper = true;
    std::visit(
        [&](const auto& o) {
          if constexpr (requires { o.buffer; }) buffers.insert(o.buffer.get());  // managed memory's ops
        },
        op.what);
    if (const auto* c = std::get_if<CollectiveOp>(&op.what)) {
      rank.helper = true;  // a tree's upward pipeline
      // All-peers patterns start a transfer to every peer at once; rings, trees and chains one out, one in.
      const bool all_peers = c->kind == models::CollectiveKind::all_to_all ||
                             c->algorithm == models::Algorithm::one_shot || c->algorithm == models::Algorithm::two_shot;
      rank.fanout = std::max<std::uint64_t>(rank.fanout, all_peers ? c->group->size() - 1 : 2);
    }
  }
  return list;
}

Bytes cost(std::uint64_t items, double each) {
  const double bytes = static_cast<double>(items) * each;
  return bytes >= 0x1p64 ? Bytes{MAX} : Bytes{static_cast<std::uint64_t>(bytes)};
}

/// A simulated op's bytes: itself, its record and bookkeeping, and its rows in the files built in memory.
double op_cost(RunFiles files) {
  switch (files) {
    case RunFiles::none:
      return OP;
    case RunFiles::reports:
      return OP + OP_REPORTS;
    case RunFiles::reports_and_timeline:
      return OP + OP_REPORTS + OP_TIMELINE;
  }
  return OP + OP_REPORTS + OP_TIMELINE;
}

}  // namespace

std::string MemoryEstimate::breakdown() const {
  std::vector<std::string> parts;
  parts.push_back(fmt::format("{} endpoints and {} channels {}", grouped(endpoints), grouped(channels),
                              cost(endpoints, ENDPOINT) + cost(channels, CHANNEL)));
  if (routes > 0) parts.push_back(fmt::format("{} routes {}", grouped(routes), cost(routes, ROUTE)));
  parts.push_back(fmt::format("{} ops {}", grouped(ops), cost(ops, op_cost(files))));
  if (folded_ops > 0)
    parts.push_back(fmt::format("{} folded ops {}", grouped(folded_ops), cost(folded_ops, FOLDED_OP)));
  if (pgas > 0) parts.push_back(fmt::format("{} puts and gets {}", grouped(pgas), cost(pgas, PGAS)));
  if (flows > 0) parts.push_back(fmt::format("{} collective transfers at once {}", grouped(flows), cost(flows, FLOW)));
  if (helpers > 0) parts.push_back(fmt::format("{} helper actors at once {}", grouped(helpers), cost(helpers, HELPER)));
  if (managed_pages > 0)
    parts.push_back(fmt::format("{} managed pages {}", grouped(managed_pages),
                                cost(managed_pages, MANAGED_PAGE) + cost(managed_blocks, MANAGED_BLOCK)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

MemoryEstimate estimate_memory(const Fabric& fabric, const std::vector<Program>& programs, const Folding* folding,
                               RunFiles files) {
  MemoryEstimate e;
  e.files = files;
  e.endpoints = fabric.gpus().size() + (fabric.host() ? 1 : 0) + fabric.nvme_drives().size();
  e.channels = fabric.channel_count();
  if (e.endpoints <= Simulation::EAGER_ENDPOINTS) e.routes = e.endpoints * (e.endpoints - 1);
  e.actors = 1;  // the failures' actor
  std::set<const ManagedBuffer*> buffers;
  // A program's counts, walked once: every folded rank of a representative counts its program again.
  struct Counted {
    RankCounts rank;
    OpenPuts puts;
    std::uint64_t ops = 0, pgas = 0;
  };
  std::unordered_map<std::size_t, Counted> counted;  // by program index
  for (std::size_t r = 0; r < programs.size(); ++r) {
    const bool folded = folding && !folding->simulated(static_cast<int>(r));
    // A folded rank's program is its representative's, whether or not it was built (Workload::replicas_alike).
    const std::size_t index = folded ? static_cast<std::size_t>(folding->representative(static_cast<int>(r))) : r;
    const auto& program = programs[index];
    auto [it, fresh] = counted.try_emplace(index);
    if (fresh) {
      MemoryEstimate alone;
      it->second.puts = count(program.ops, 1, alone, it->second.rank, buffers);
      it->second.ops = alone.ops;
      it->second.pgas = alone.pgas;
    }
    const auto& [rank, puts, ops, pgas] = it->second;
    e.pgas = saturating_plus(e.pgas, pgas);
    if (folded)  // its proxies' flows and helpers stay counted
      e.folded_ops = saturating_plus(e.folded_ops, ops);
    else
      e.ops = saturating_plus(e.ops, ops);
    e.flows = saturating_plus(e.flows, rank.fanout);
    e.helpers = saturating_plus(e.helpers, saturating_plus(puts.peak, rank.helper ? 1 : 0));
    // A folded rank has no actor of its own: a proxy at a time per stream of its representative.
    e.actors = saturating_plus(e.actors, program.ops.empty() ? 0 : (folded ? 0 : 1) + rank.streams);
  }
  e.actors = saturating_plus(e.actors, e.helpers);
  for (const ManagedBuffer* b : buffers) {
    const std::uint64_t page = b->page.count(), block = models::UvmModel::BLOCK.count();
    e.managed_pages =
        saturating_plus(e.managed_pages, b->bytes.count() / page + (b->bytes.count() % page != 0 ? 1 : 0));
    e.managed_blocks =
        saturating_plus(e.managed_blocks, b->bytes.count() / block + (b->bytes.count() % block != 0 ? 1 : 0));
  }
  const double total = PROCESS + static_cast<double>(e.endpoints) * ENDPOINT +
                       static_cast<double>(e.channels) * CHANNEL + static_cast<double>(e.routes) * ROUTE +
                       static_cast<double>(e.ops) * op_cost(files) + static_cast<double>(e.folded_ops) * FOLDED_OP +
                       static_cast<double>(e.pgas) * PGAS + static_cast<double>(e.flows) * FLOW +
                       static_cast<double>(e.helpers) * HELPER + static_cast<double>(e.managed_pages) * MANAGED_PAGE +
                       static_cast<double>(e.managed_blocks) * MANAGED_BLOCK;
  e.total = total >= 0x1p64 ? Bytes{MAX} : Bytes{static_cast<std::uint64_t>(total)};
  return e;
}

MemoryLimit memory_limit(const std::optional<std::string>& option) {
  auto parse = [](const std::string& text, const std::string& where) {
    Bytes limit{0};
    try {
      limit = parse_bytes(text);
    } catch (const UnitError& e) {
      throw_input_error({where, 0, 0}, "", e.what());
    }
    if (limit.count() == 0) throw_input_error({where, 0, 0}, "", "must be > 0, got 0 B");
    return limit;
  };
  if (option) return {parse(*option, "--max-memory " + *option), "--max-memory"};
  if (const char* env = std::getenv("SNSIM_MAX_MEMORY"); env && *env)
    return {parse(env, fmt::format("SNSIM_MAX_MEMORY={}", env)), "SNSIM_MAX_MEMORY"};
  const auto pages = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES));
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  const Bytes physical{pages * page};
  return {Bytes{physical.count() / 4 * 3},
          fmt::format("3/4 of this machine's {}; set --max-memory or SNSIM_MAX_MEMORY", physical)};
}

void check_memory(const MemoryEstimate& estimate, const MemoryLimit& limit, const std::string& scenario,
                  std::uint64_t actor_limit) {
  if (estimate.total > limit.bytes)
    throw_input_error({scenario, 0, 0}, "memory",
                      fmt::format("the run needs about {} ({}), more than the limit of {} ({})", estimate.total,
                                  estimate.breakdown(), limit.bytes, limit.source));
  if (estimate.actors > actor_limit)
    throw_input_error(
        {scenario, 0, 0}, "memory",
        fmt::format(
            "the run needs {} actors at once (one per GPU, its streams, helpers, the failures'), more than the {} this "
            "machine allows (two memory maps per actor's stack with its guard page, vm.max_map_count; raise it with "
            "sysctl, leave contexts/guard-size unset so that snsim runs the stacks without guard pages, or simulate "
            "fewer GPUs)",
            grouped(estimate.actors), grouped(actor_limit)));
}

Bytes timeline_size(std::uint64_t ops) {
  return cost(ops, TIMELINE_OP);
}

std::string timeline_warning(std::uint64_t ops) {
  const Bytes size = timeline_size(ops);
  if (size <= LARGE_TIMELINE) return "";
  return fmt::format(
      "timeline.json will take about {} ({} ops); output.timeline_gpus selects the GPUs it shows (--set "
      "'output.timeline_gpus=[0, 1]')",
      size, grouped(ops));
}

}  // namespace snsim::workloads
