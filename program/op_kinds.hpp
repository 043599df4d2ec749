// The op-kind table: one entry per kind of op that a program holds or a run records, with its name, the timeline
// thread its records are drawn on, whether its bytes move while it runs, whether a rank waits on others in it, who
// writes it and how a scenario's `ops:` parse it. Each op's entry sits with the op, as its `KIND`
// (program/*_ops.hpp); op_kinds() lists every one, so that the parser, the records and the report's timeline
// (sim/record_kind.hpp) read one table instead of lists of names. An entry is constant data: it can carry an op's
// keys (name, unit, default, one-line doc) as well, for a reference generated from it.
//
// Also here: what every op family shares (groups, the host and NVMe as peers, what a record says about an op).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config.hpp"
#include "sim/record_kind.hpp"
#include "sim/units.hpp"

namespace snsim::workloads {

/// The ranks taking part in a collective or barrier, sorted; shared by every member's op.
using Group = std::shared_ptr<const std::vector<int>>;

/// The host CPU as the other end of a copy.
inline constexpr int HOST = -1;
/// The topology's NVMe drives as the other end of a copy: striped over all of them (GPUDirect Storage).
inline constexpr int NVME = -2;

struct OpParse;  // where an op is being parsed (program/program.hpp)

/// Who writes an op: a scenario's `ops:` (generators too), generators only, or the runtime only, which records work
/// that an op caused (a UVM fault, a migration) as records of their own.
enum class OpSource { scenario, generator, runtime };

struct OpKind {
  std::string_view name;                       // in a scenario's `ops:` and in the records' `kind`
  TimelineTrack track = TimelineTrack::other;  // the timeline thread its records are drawn on
  bool moves_bytes = false;  // its bytes cross links or HBM while it runs: a record's rate is bytes / duration
  bool blocks = false;       // a rank can wait on other ranks inside it (runtime/waits.hpp)
  OpSource source = OpSource::scenario;
  /// Parses the op's value into the programs of the ranks being parsed. None for what a scenario does not write as
  /// one op: repeat and streams (parsed with the lists they hold), and the generators' and the runtime's kinds.
  void (*parse)(const ConfigNode& op, const OpParse& at) = nullptr;
};

/// Every kind: each alternative of Op in its order (program/program.hpp), then the kinds only the runtime records.
std::span<const OpKind> op_kinds();

/// The same table as the report reads it (Report::record_kinds).
std::span<const RecordKind> record_kinds();

/// What an op's record says about it (runtime/runner.cpp records it).
struct OpDescription {
  std::string label;  // "put 1 MiB to gpu1 thread"
  Bytes bytes{0};     // payload the op moves (or reads, for compute)
  /// The other end of the op as written (a rank, HOST or NVME), when it has one: a copy's, put's, get's or load's.
  std::optional<int> peer = std::nullopt;
};

}  // namespace snsim::workloads
