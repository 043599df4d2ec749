// Scenario: one YAML file, parsed and validated before anything runs, and the run that turns it into a Report.
//
//   name: hgx-h200-default
//   seed: 42
//   topology: {type: hgx, gpu: h200, gpus: 8}
//   models: {copy: {ce: {efficiency: 0.88}}}   # optional: every model has sourced defaults
//   workloads:                                 # run one after another, as phases
//     - {type: collective_sweep, ops: all_reduce, sizes: {from: 8B, to: 1GiB}}
//   failures: [{at: 1ms, link: {gpu: 3, lanes: 1}}]  # optional what-ifs (scenario/failures.hpp)
//   output: {timeline: true, timeline_gpus: "0-7"}  # timeline.json (Perfetto) of GPUs 0-7 (default all)
//
// Every input check happens in Scenario::load, because an exception escaping a SimGrid actor aborts the process.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/models.hpp"
#include "scenario/failures.hpp"
#include "scenario/folding.hpp"
#include "sim/config.hpp"
#include "sim/report.hpp"
#include "workloads/workload.hpp"

namespace snsim::workloads {

class Scenario {
 public:
  /// Parses and validates the whole scenario; any mistake is an InputError naming file:line:col and key.
  static Scenario load(std::shared_ptr<ConfigDocument> document);

  const std::string& name() const { return name_; }
  std::uint64_t seed() const { return seed_; }
  const Fabric& fabric() const { return fabric_; }
  const models::Models& models() const { return models_; }
  bool timeline() const { return timeline_; }
  /// output.timeline_gpus: the GPUs the timeline writes (empty: all).
  const std::vector<int>& timeline_gpus() const { return timeline_gpus_; }

  /// The scenario's `fold` key (default true): whether identical replicas may be simulated once (docs/folding.md).
  bool fold() const { return fold_; }
  /// The replicas the workloads propose to fold: the first workload's that proposes any, when no other proposes
  /// different ones (the programs are checked before anything folds: scenario/folding.hpp).
  Replicas proposed_replicas() const;

  /// Which ranks a run of `programs` (programs()) simulates in full, and why (scenario/folding.hpp).
  FoldingDecision folding(const std::vector<Program>& programs) const;

  /// Every rank's program: each workload in turn, separated by a free barrier across all ranks; empty for a rank
  /// folded into a representative when the workloads build their replicas alike (Workload::replicas_alike). Built
  /// once, by load() (which checks them), and kept until a run takes them (empty after run() or take_programs()).
  const std::vector<Program>& programs() const { return programs_; }
  /// The programs, moved out for a run that consumes them (run(programs, folding, ...)): at a thousand GPUs they are
  /// gigabytes, neither built twice nor copied. programs() is empty afterwards.
  std::vector<Program> take_programs() { return std::move(programs_); }

  /// What a user must know to read the results (Report::notes): every workload's notes, in order.
  std::vector<std::string> notes() const;

  /// Runs the scenario in this process (once per process: see sim/simulation.hpp) on the programs load() built,
  /// which it takes (a later run builds them again), and returns the report. With a
  /// `progress` heading ("snsim run"), a progress line on stderr (sim/progress.hpp); the report is the same.
  Report run(const std::vector<std::string>& engine_args = {}, std::string_view progress = {}) const;
  /// The same run on `programs` (programs()) and `folding` (folding(programs)) already computed: `snsim run`
  /// estimates the memory from them first, and a large job's programs are not built twice.
  Report run(std::vector<Program> programs, FoldingDecision folding, const std::vector<std::string>& engine_args,
             std::string_view progress) const;

 private:
  /// When each workload ran (its ops' first start to last end), for scenarios with a program workload.
  Table phase_spans(const std::vector<OpRecord>& records) const;
  std::vector<Program> build_programs() const;

  std::shared_ptr<ConfigDocument> document_;
  std::string name_;
  std::uint64_t seed_ = 0;
  Fabric fabric_;
  models::Models models_;
  std::vector<std::unique_ptr<Workload>> workloads_;
  std::vector<std::string> workload_types_;  // each workload's `type`, in order
  bool timeline_ = false;
  bool fold_ = true;
  std::vector<int> timeline_gpus_;
  std::vector<Failure> failures_;  // what-ifs applied at their times (scenario/failures.hpp)
  bool alike_ = false;             // every workload builds the proposed replicas alike (Workload::replicas_alike)
  std::vector<bool> needed_;       // by rank, the programs to build; empty: all (scenario/folding.hpp needed_ranks)
  // Built by load() and handed to the first run, which a const run() may take: a process runs one simulation,
  // and holding a second copy through it would double the largest data of a large job.
  mutable std::vector<Program> programs_;
};

}  // namespace snsim::workloads
