// The workload plugin interface: a generator that appends ops to every rank's Program, and turns the records of
// its ops back into result tables (like nccl-tests' output for collective_sweep).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "program/program.hpp"
#include "runtime/folding.hpp"
#include "sim/registry.hpp"
#include "sim/report.hpp"

namespace snsim::workloads {

class Workload {
 public:
  virtual ~Workload() = default;
  /// Appends this workload's ops, marked with `phase`, to the programs (one per rank).
  virtual void emit(std::vector<Program>& programs, int phase) const = 0;
  /// The scenario's seed, given before emit(): generators that draw (a training step's MoE routing) draw from
  /// streams seeded by it (sim/random.hpp).
  virtual void set_seed(std::uint64_t /*seed*/) {}
  /// Why this workload declined to run (it emitted no op), for the run's outcome; nullopt when it ran.
  virtual std::optional<std::string> outcome() const { return std::nullopt; }
  /// What a user must know to read this workload's results, one sentence each (Report::notes); known once it is
  /// parsed.
  virtual std::vector<std::string> notes() const { return {}; }
  /// Ranks that run identical programs, which the run may simulate once (runtime/folding.hpp, docs/folding.md):
  /// replicas[d][p], the rank at position p of replica d. The run checks the programs and the hardware before it
  /// folds any. Empty: none proposed.
  virtual Replicas replicas() const { return {}; }
  /// Result tables from the records of this workload's ops (those with its phase).
  virtual std::vector<Table> summarize(const RankRecords& /*records*/, int /*phase*/) const { return {}; }
};

using WorkloadRegistry = Registry<Workload, Fabric>;

/// Every built-in workload, listed on one screen.
void register_workloads(WorkloadRegistry& registry);

/// A size range {from, to, factor}: from, from*factor, ... up to `to`.
std::vector<Bytes> parse_sizes(const ConfigNode& node, const Fabric& fabric, Bytes from, Bytes to);

}  // namespace snsim::workloads
