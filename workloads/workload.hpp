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
  /// Appends this workload's ops, marked with `phase`, to the programs (one per rank). `needed`, by rank (empty:
  /// every rank): the ranks a run needs programs for. The others are folded into representatives whose programs
  /// stand for theirs, which a workload whose replicas are alike by construction (replicas_alike()) may leave empty.
  virtual void emit(std::vector<Program>& programs, int phase, const std::vector<bool>& needed) const = 0;
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
  /// Whether the replicas proposed run the same programs by construction, peers and groups relabelled
  /// (runtime/folding.hpp): then a run builds only the programs it simulates, instead of building every replica's to
  /// compare them (at 8,192 GPUs, tens of GB). Tests hold a workload that says so to it.
  virtual bool replicas_alike() const { return false; }
  /// Result tables from the records of this workload's ops (those with its phase).
  virtual std::vector<Table> summarize(const RankRecords& /*records*/, int /*phase*/) const { return {}; }
};

using WorkloadRegistry = Registry<Workload, Fabric>;

/// Every built-in workload, listed on one screen.
void register_workloads(WorkloadRegistry& registry);

/// A size range {from, to, factor}: from, from*factor, ... up to `to`.
std::vector<Bytes> parse_sizes(const ConfigNode& node, const Fabric& fabric, Bytes from, Bytes to);

}  // namespace snsim::workloads
