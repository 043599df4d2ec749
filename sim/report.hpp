// Report: the results of one run, as data (docs/design.md#command-line-contract).
//
// report.json holds only what the scenario and seed determine, so it is byte-identical across runs; wall time,
// memory and versions go to run.json (RunRecord), which is not part of that promise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/record_kind.hpp"
#include "sim/simulation.hpp"
#include "sim/units.hpp"

namespace snsim {

/// One op executed by one rank.
/// Its texts are views of static names or of interned() copies (sim/interned.hpp): a run records millions of ops
/// with a few dozen distinct labels.
struct OpRecord {
  int rank = 0;
  int phase = 0;           // index of the workload in the scenario
  int tag = -1;            // the generator's sweep point, -1 when none
  std::string_view kind;   // "copy", "collective", "compute", "barrier"
  std::string_view label;  // "all_reduce 1 GiB"
  Bytes bytes{};           // payload the op moves (or reads, for compute)
  Seconds start{};
  Seconds end{};
  /// The other GPU: a copy's, put's, get's or load's peer; for a signal_wait, the PE whose put made the signal hold.
  /// -1 when none (a collective, the host, the rank itself).
  int peer = -1;
  std::string_view detail{};  // what the run chose: a collective's "ring/LL128"; empty when nothing
  /// signal_wait: when the put (issued by `peer`) that made the signal hold started, for the timeline's arrows.
  std::optional<Seconds> cause{};
  std::string_view kernel{};  // a compute op's kernel name (ComputeOp::kernel): static storage; empty when none
};

/// One stretch of time a rank spent blocked on another rank (runtime/waits.hpp says how waits are attributed).
struct Wait {
  int rank = 0;  // who waited
  int on = 0;    // the rank it waited on
  Seconds start{};
  Seconds duration;
  friend bool operator==(const Wait&, const Wait&) = default;
};

/// A result table, printed like the tool it imitates (nccl-tests, p2pBandwidthLatencyTest) and stored in JSON.
struct Table {
  std::string title;
  std::vector<std::string> columns;  // with units: "time_us", "busbw_GBps"
  std::vector<std::vector<nlohmann::json>> rows;
};

/// The first of `tables` titled `title` exactly (a table's title is its name), or null.
const Table* find_table(const std::vector<Table>& tables, std::string_view title);
/// The value of the row named `metric` (its first cell) of a (metric, value) table, or null.
const nlohmann::json* find_metric(const Table& table, std::string_view metric);
/// A table as report.json holds it: title, columns, and each row as an object by column.
nlohmann::json to_json(const Table& table);

/// How one rank spent the run: in ops, or blocked on other ranks (runtime/waits.hpp computes it from the ops
/// and the waits the Runner attributes). busy + waiting <= span; the rest of the span it was between ops.
struct RankWaits {
  int rank = 0;
  Seconds span;     // from 0 to the end of its last op
  Seconds busy;     // in ops, not waiting
  Seconds waiting;  // blocked on other ranks
  // Waiting time by the rank waited on, for the ranks it waited on at all: a few of a job's thousands (dense rows
  // took ranks^2 entries, 512 MiB at 8,192 GPUs).
  std::map<int, Seconds> on;
  /// The time it waited on `rank` (0 when it never did).
  Seconds waiting_on(int rank) const;
  /// The rank waited on longest (the lowest of equals); nullopt when the rank never waited.
  std::optional<int> most_waited_on() const;
};
nlohmann::json to_json(const RankWaits& waits);
/// Reads back what to_json wrote (for commands that run simulations in child processes).
RankWaits rank_waits_from_json(const nlohmann::json& json);

/// An op that a rank started and never ended (the run deadlocked, or a GPU was lost), and what it waited for.
struct UnendedOp {
  int rank = 0;
  std::optional<std::uint64_t> index;  // the rank's n-th op started, from 0 (as in its records); none for the free
                                       // barrier between workloads
  std::string kind;                    // "signal_wait", "collective", ...
  std::string label;                   // as in the op records
  std::string waiting_for;             // "signal 2 >= 4 (it is 3)"; empty when nothing is known
  /// "rank 3: op 0, signal_wait 'signal_wait 2 >= 4', waits for signal 2 >= 4 (it is 3)"
  std::string describe() const;
};

/// What a run checked about itself at its end (sim/invariants.hpp): bytes conserved per transfer and in total, no
/// link above its capacity, simulated time never going back, every op that started ended (or why not).
struct Invariants {
  std::uint64_t transfers_finished = 0;  // SimGrid network actions that ended normally
  std::uint64_t transfers_failed = 0;    // and those that failed (a lost GPU)
  double bytes_sent = 0;                 // SimGrid bytes the transfers that ended were started with
  double bytes_received = 0;             // SimGrid bytes the finished ones delivered
  std::uint64_t link_samples = 0;        // (time step, link) pairs whose usage was compared with the bandwidth
  double max_link_load = 0;              // highest usage / bandwidth sampled
  std::uint64_t ops_started = 0;
  std::uint64_t ops_ended = 0;
  std::vector<UnendedOp> unended;       // why ops_started - ops_ended ops did not end
  std::vector<std::string> violations;  // empty when every invariant held
  nlohmann::json to_json() const;
};

/// Which path a run took (docs/folding.md): "full", every rank running its own program, or "folded", identical
/// replicas simulated once; how many ranks ran in full, and why any replica (or the whole run) was not folded.
struct FoldingSummary {
  std::string path = "full";
  std::size_t ranks = 0, simulated = 0;
  std::size_t replicas = 0;      // proposed by the workloads; 0 when none was
  std::string representative;    // the ranks of the replica the folded ones follow
  std::vector<std::string> why;  // one sentence per replica in full (or for the whole run)
  std::uint64_t proxies = 0;     // folded ranks' ops run where they meet simulated ranks or shared links

  nlohmann::json to_json() const;
  /// The report's "folding" table.
  Table table() const;
};

struct Report {
  std::string scenario;  // scenario name
  std::uint64_t seed = 0;
  nlohmann::json config;  // the effective configuration, defaults included
  std::string outcome = "completed";
  /// What a user must know to read the results: assumptions the run made that its input does not show ("parallel.bucket
  /// 4 MiB is below ..."), one sentence each. In report.json as `notes`, and on stderr before the run.
  std::vector<std::string> notes;
  Seconds simulated_time;
  std::vector<OpRecord> ops;
  std::vector<LinkUsage> links;
  std::vector<Table> tables;
  FoldingSummary folding;
  std::vector<RankWaits> waits;  // by rank: who waited on whom
  Invariants invariants;
  /// Every stretch a rank waited, by rank then start (the intervals behind `waits`). Not in report.json, which
  /// stays small; the timeline draws them.
  std::vector<Wait> wait_spans;
  /// What each kind of op record is (program/op_kinds.hpp has the table): the timeline's threads, rates and waits
  /// read it. Not in report.json.
  std::span<const RecordKind> record_kinds;

  nlohmann::json to_json() const;
  /// One line per op: rank,phase,kind,label,bytes,start_s,end_s,duration_s.
  std::string ops_csv() const;
  /// The run as a Chrome trace (Trace Event Format, JSON object form) for ui.perfetto.dev or chrome://tracing.
  /// Times in microseconds, rounded to the nanosecond. Per GPU one process (pid = GPU + 1: Perfetto treats pid 0
  /// as the kernel's swapper), named "gpu N", with one thread per kind of work -- compute, copies, collectives,
  /// pgas (puts, gets, signal waits, quiet, barriers), uvm (managed-memory ops), uvm faults, uvm migrations -- and
  /// "waiting" (the wait spans: blocked on another rank, named after it). Ops of one kind that overlap (concurrent
  /// streams) go on extra threads of that kind ("collectives 2"), so that slices on a thread nest. Each op is a
  /// complete event ("X") with args: bytes, peer, algorithm, achieved GB/s. A flow ("s" -> "f") runs from each put
  /// to the signal_wait it satisfied; a counter ("C") per GPU gives its transfers' rate (each op's bytes spread
  /// evenly over its duration). `otherData` holds scenario, seed, simulated time and outcome. `gpus`: the GPUs to
  /// write (empty: all), for runs too large to open whole (Perfetto loads a few hundred MB of JSON at most).
  /// Needs record_kinds.
  nlohmann::json timeline(const std::vector<int>& gpus = {}) const;
};

/// What the simulator itself cost: not deterministic, kept apart from the Report.
struct RunRecord {
  double wall_time_s = 0;
  double peak_memory_mib = 0;
  std::string snsim_version;
  std::string simgrid_version;
  std::string host;
  nlohmann::json to_json() const;
  /// Fills wall time from `started` and peak memory, versions and host from the process.
  static RunRecord measure(double wall_time_s);
};

/// Writes `table` as aligned text, one header line starting with '#'.
std::string format_table(const Table& table);
/// Writes `table` as a GitHub Markdown table (numbers right-aligned, floats with 2 decimals, null as "-").
std::string format_markdown(const Table& table);

}  // namespace snsim
