// Programs: what each GPU does, as a list of ops (docs/design.md#workloads-are-programs).
//
// Every workload -- an explicit program from the scenario or a generator such as collective_sweep -- expands into
// one Program per rank; the Runner (runtime/runner.hpp) executes them, one SimGrid actor per GPU. Peers and groups
// are resolved to concrete ranks when the Program is built, so bad references are input errors before the run.
//
// The ops come in families, each in its own file with its parsing and its record's description: kernels and copies
// (program/device_ops.hpp), collectives and barriers (collective_ops.hpp), PGAS and stream events (pgas_ops.hpp),
// unified memory (uvm_ops.hpp), the host thread (host_ops.hpp); every op's entry in the op-kind table
// (program/op_kinds.hpp) sits with it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "program/collective_ops.hpp"
#include "program/device_ops.hpp"
#include "program/host_ops.hpp"
#include "program/op_kinds.hpp"
#include "program/pgas_ops.hpp"
#include "program/uvm_ops.hpp"
#include "sim/config.hpp"
#include "sim/fabric.hpp"

namespace snsim::workloads {

struct Op;

/// The most times a list repeats, and the most puts of one put op.
inline constexpr int MAX_REPEAT = 1'000'000'000;

struct RepeatOp {
  static constexpr OpKind KIND{.name = "repeat"};
  int count = 1;
  std::vector<Op> body;
};

/// Runs op lists concurrently on the same GPU, like CUDA streams: each list in order, the lists at once; the op
/// ends when every list has.
struct StreamsOp {
  static constexpr OpKind KIND{.name = "streams"};
  std::vector<std::vector<Op>> streams;
};

struct Op {
  std::variant<ComputeOp, CopyOp, CollectiveOp, BarrierOp, RepeatOp, StreamsOp, PutOp, GetOp, SignalWaitOp, QuietOp,
               FenceOp, ShmemBarrierOp, LoadOp, ManagedOp, TouchOp, PrefetchOp, AdviseOp, ReadOp, EventRecordOp,
               EventWaitOp, HostOp>
      what;
  int phase = 0;  // index of the workload that emitted it
  int tag = -1;   // generators' key for summarising records (a sweep point); -1 when not summarised
};

struct Program {
  std::vector<Op> ops;
};

/// The op's entry in the op-kind table.
const OpKind& kind_of(const Op& op);

/// What the op's record says: its label, the bytes it moves and its peer.
OpDescription describe(const Op& op);

/// A sync barrier: the free one that separates workloads and measurements, which has no record.
bool is_free_barrier(const Op& op);

/// Where an op is being parsed: the ranks whose programs get it, their group, the fabric and the workload's phase.
/// Refuses programs larger than this many ops after expanding repeats (a million ops per rank); the ops written out
/// (YAML aliases expanded) are counted against it while they are parsed, so that an alias bomb stops at the limit.
inline constexpr std::uint64_t MAX_OPS_PER_RANK = 1'000'000;

struct OpParse {
  const std::vector<int>& ranks;
  const Fabric& fabric;
  int phase;
  const Group& group;
  std::vector<Program>& programs;

  int gpus() const { return static_cast<int>(fabric.gpus().size()); }
  /// Appends make_op(rank) to the program of every rank.
  template <class MakeOp>
  void for_each_rank(MakeOp make_op) const {
    for (int r : ranks) programs[static_cast<std::size_t>(r)].ops.push_back(Op{make_op(r), phase, -1});
  }
};

/// Parses a rank selector: all | 3 | [0, 2] | "0-3" | even | odd. Fails on `node` for bad or absent ranks.
std::vector<int> parse_ranks(const ConfigNode& node, int gpus);

/// The `ranks` selector of `parent`, or every rank when it has none.
std::vector<int> parse_ranks_or_all(const ConfigNode& parent, int gpus);

/// Parses a peer expression relative to `rank`: an index, next, prev, xor:K, host.
int parse_peer(const ConfigNode& node, int rank, int gpus);

/// Parses a list of ops for the given ranks into their programs. Checks sizes against the GPUs' memory.
void parse_ops(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
               std::vector<Program>& programs);

/// Size limit of one op's buffer: what one GPU's memory can hold.
void check_size(const ConfigNode& parent, std::string_view key, Bytes bytes, const Fabric& fabric);

/// An op without parameters (barrier, quiet, fence): `{}` or nothing.
void check_no_parameters(const ConfigNode& op);

/// Counts ops after expanding repeats (for limits and progress).
std::uint64_t expanded_size(const std::vector<Op>& ops);

}  // namespace snsim::workloads
