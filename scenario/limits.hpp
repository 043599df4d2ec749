// Memory limits: a scenario too large for this machine is refused before it runs, with the estimate and the limit
// (exit 2), instead of being killed by the kernel part way (issue 9).
//
// The estimate adds, for what the scenario fixes before it runs, a cost per item measured on the 2-core, 23 GiB
// development machine (peak RSS of whole `snsim run --out` processes, GNU time; scenario/limits.cpp has the
// figures): the process with SimGrid; every endpoint (its host, actor, HBM link) and channel (its link, graph edge,
// spare link); every route of a platform routed up front (up to Simulation::EAGER_ENDPOINTS endpoints); every op
// after repeats (its record and bookkeeping and, when the run writes them, its rows in report.json, report.csv
// and timeline.json, which are built in memory first); every put and get (a mailbox and a helper actor that
// SimGrid keeps); and the most collective transfers in flight at once (every rank's largest collective fan-out:
// n - 1 flows for all-to-all and one/two-shot, 2 for the others); the helper actors alive at once (each put's until
// a quiet or shmem_barrier waits for it, one more for a rank's gets, migrations or tree collectives); and every page
// of every managed buffer (UVM residency: a page's state while an op splits its 2 MiB block, and each block's
// entries). It is an upper bound for the runs measured (estimate / measured peak: 1.05 for 10,008 GPUs, 1.1-1.9
// for 800,000 ops with and without files, 1.3-1.6 for training steps of 1,024-8,192 GPUs, up to 1.6 for NVL576),
// not a promise: failures, waits and SimGrid's own queues
// are not counted. Each rank's actor context (its stack, touched only where it runs) is in the per-endpoint cost;
// the number of actors alive at once, helpers included, is limited apart, by the kernel's memory maps (max_actors,
// sim/simulation.hpp).
//
// The limit: `snsim run --max-memory SIZE`, else the environment's SNSIM_MAX_MEMORY, else 3/4 of the machine's
// physical memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "program/program.hpp"
#include "runtime/folding.hpp"
#include "sim/fabric.hpp"
#include "sim/simulation.hpp"
#include "sim/units.hpp"

namespace snsim::workloads {

/// The files a run writes (`snsim run --out`, and `--timeline`): report.json and report.csv are built in memory with
/// a row per recorded op before they are written, timeline.json likewise with an event (and rate counters) per op.
/// Each costs far more per op than the op itself.
enum class RunFiles { none, reports, reports_and_timeline };

/// What a run will hold at its peak, by part.
struct MemoryEstimate {
  std::uint64_t endpoints = 0;   // GPUs, host, NVMe drives
  std::uint64_t channels = 0;    // directed channels of the fabric
  std::uint64_t routes = 0;      // routed up front (small platforms), else 0
  std::uint64_t ops = 0;         // after repeats, every simulated rank
  std::uint64_t folded_ops = 0;  // after repeats, the folded ranks' (docs/folding.md): a few bytes each
  std::uint64_t pgas = 0;        // puts and gets, after repeats
  std::uint64_t flows = 0;       // collective transfers in flight at once, at most
  std::uint64_t helpers = 0;     // helper actors alive at once, at most: open puts', a get's, a migration's, a tree's
  std::uint64_t managed_pages = 0;   // pages of the managed buffers (UVM), each a residency entry at worst
  std::uint64_t managed_blocks = 0;  // their 2 MiB VA blocks
  std::uint64_t actors = 0;  // SimGrid actors alive at once, at most: one per GPU, its streams, the failures', helpers
  RunFiles files = RunFiles::none;  // what each op costs in the files built in memory
  Bytes total{0};
  /// "8 endpoints, 1,000,000 ops (1.4 GiB), ..." : the counts and what the largest parts cost.
  std::string breakdown() const;
};

/// Estimates a run's peak memory from its fabric and programs (Scenario::programs()), with the ranks `folding`
/// folds (Scenario::folding) costing a few bytes per op, counted from their representatives' programs, and each
/// simulated op its part of the `files` the run writes. Saturates at 2^64 - 1 bytes.
MemoryEstimate estimate_memory(const Fabric& fabric, const std::vector<Program>& programs, const Folding* folding,
                               RunFiles files);

/// The memory a run may use, and where that figure came from.
struct MemoryLimit {
  Bytes bytes{0};
  std::string source;  // "--max-memory", "SNSIM_MAX_MEMORY", "3/4 of this machine's 23.4 GiB"
};

/// `option` (a --max-memory value), else SNSIM_MAX_MEMORY, else 3/4 of the physical memory. A value that is not a
/// size, or is 0, is an InputError naming where it came from.
MemoryLimit memory_limit(const std::optional<std::string>& option);

/// Throws an InputError "`scenario`: memory: the run needs about E (...), more than the limit L (source)" when the
/// estimate exceeds the limit, or "`scenario`: memory: the run needs N actors at once (...), more than the A this
/// machine allows (...)" when its actors do.
void check_memory(const MemoryEstimate& estimate, const MemoryLimit& limit, const std::string& scenario,
                  std::uint64_t actor_limit = max_actors());

/// The bytes timeline.json will take for `ops` ops recorded (after repeats, on the GPUs the timeline shows).
Bytes timeline_size(std::uint64_t ops);
/// Above this a run says, before it runs, how large its timeline will be and how to select GPUs.
inline constexpr Bytes LARGE_TIMELINE{Bytes{256} * (std::uint64_t{1} << 20)};
/// "timeline.json will take about 1.2 GiB (3,200,000 ops); output.timeline_gpus selects ..." above LARGE_TIMELINE,
/// else "".
std::string timeline_warning(std::uint64_t ops);

}  // namespace snsim::workloads
