// Replaying a captured job: traces of its ranks (PyTorch profiler / Kineto, or Chakra) into one Program per GPU,
// in the op language, keeping each rank's dependency graph: its host thread and every GPU stream become the lists of
// one `streams` op, joined by stream events where one waited for another (docs/replay.md). Kernels are costed as
// recorded (scaled to the target GPU) or from their shapes; collectives and host copies are re-simulated on the
// target fabric. More ranks than captured replicate the captured ones as data-parallel replicas.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workloads/replay/trace.hpp"
#include "workloads/workload.hpp"

namespace snsim::workloads::replay {

enum class KernelCost {
  recorded,  // the measured duration, times the target's slowdown for the kernel's class (kernels.hpp)
  derived,   // from the operator's shapes where the trace has them (GEMMs), else as recorded
};

struct ReplayOptions {
  KernelCost cost = KernelCost::recorded;
  int ranks = 0;                            // ranks to replay: a multiple of the traces' ranks; 0 = as captured
  std::optional<std::string> source_gpu{};  // the GPU preset the traces ran on, when their header does not say
};

/// Reads each file by its content (Kineto JSON, Chakra protobuf; gzipped or not) and checks the set (check_traces).
/// InputErrors name the file.
std::vector<RankTrace> read_traces(const std::vector<std::string>& files);

/// One rank's trace from the bytes of its file (gzipped or not, Kineto or Chakra by content), named `file` in
/// errors; `position` is its place among the traces given.
RankTrace read_trace_bytes(std::string bytes, const std::string& file, int position);

/// Checks the traces of one job and sorts them by rank: one trace per rank 0..R-1, every group's collectives alike on
/// all its members, every send matched by its recv. A collective whose trace names no group (Chakra's) gets every
/// rank.
void check_traces(std::vector<RankTrace>& traces);

/// Gives `trace`'s kernels the shapes `shaped` derived for its own: `shaped` is a profile of the same steps taken
/// with record_shapes (and the execution trace), whose host the profiler slows; `trace` a light one, whose host
/// timing is the job's. Lane by lane (by name), the longest run of kernels that match name for name (the slowed
/// profile's window starts and ends a few kernels off) gives its shapes; kernels outside it keep their recorded
/// time. A lane where no run of half its kernels matches is an InputError naming both files, the lane and the
/// kernel counts.
void take_shapes(RankTrace& trace, const RankTrace& shaped);

/// The programs of the replay on `fabric` (one per GPU; GPUs past the replayed ranks stay idle), ops marked with
/// `phase`. Each node's step is its ops' tag. Fails (InputError naming `origin`) when the fabric has too few GPUs or
/// `ranks` is no multiple of the traces'.
std::vector<Program> build_programs(const std::vector<RankTrace>& traces, const Fabric& fabric,
                                    const ReplayOptions& options, int phase, const std::string& origin);

/// The `trace` workload: `paths`, `cost`, `ranks`, `source_gpu`.
WorkloadRegistry::Entry trace_entry();

}  // namespace snsim::workloads::replay
