// Report: the results of one run, as data (design.md, "Command-line contract").
//
// report.json holds only what the scenario and seed determine, so it is byte-identical across runs; wall time,
// memory and versions go to run.json (RunRecord), which is not part of that promise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulation.hpp"
#include "sim/units.hpp"

namespace snsim {

/// One op executed by one rank.
struct OpRecord {
  int rank = 0;
  int phase = 0;      // index of the workload in the scenario
  int tag = -1;       // the generator's sweep point, -1 when none
  std::string kind;   // "copy", "collective", "compute", "barrier"
  std::string label;  // "all_reduce 1 GiB ring/Simple"
  Bytes bytes;        // payload the op moves (or reads, for compute)
  Seconds start;
  Seconds end;
};

/// A result table, printed like the tool it imitates (nccl-tests, p2pBandwidthLatencyTest) and stored in JSON.
struct Table {
  std::string title;
  std::vector<std::string> columns;  // with units: "time_us", "busbw_GBps"
  std::vector<std::vector<nlohmann::json>> rows;
};

/// How one rank spent the run: in ops, or blocked on other ranks (workloads/waits.hpp computes it from the ops
/// and the waits the Runner attributes). busy + waiting <= span; the rest of the span it was between ops.
struct RankWaits {
  int rank = 0;
  Seconds span;             // from 0 to the end of its last op
  Seconds busy;             // in ops, not waiting
  Seconds waiting;          // blocked on other ranks
  std::vector<Seconds> on;  // waiting time by the rank waited on (index: rank)
  /// The rank waited on longest (the lowest of equals); nullopt when the rank never waited.
  std::optional<int> most_waited_on() const;
};
nlohmann::json to_json(const RankWaits& waits);
/// Reads back what to_json wrote (for commands that run simulations in child processes).
RankWaits rank_waits_from_json(const nlohmann::json& json);

struct Report {
  std::string scenario;  // scenario name
  std::uint64_t seed = 0;
  nlohmann::json config;  // the effective configuration, defaults included
  std::string outcome = "completed";
  Seconds simulated_time;
  std::vector<OpRecord> ops;
  std::vector<LinkUsage> links;
  std::vector<Table> tables;
  std::vector<RankWaits> waits;  // by rank: who waited on whom

  nlohmann::json to_json() const;
  /// One line per op: rank,phase,kind,label,bytes,start_s,end_s,duration_s.
  std::string ops_csv() const;
  /// The ops as a Chrome / Perfetto trace (open in ui.perfetto.dev): one track per rank, times in microseconds.
  nlohmann::json timeline() const;
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

}  // namespace snsim
