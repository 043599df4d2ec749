// A sweep: every run of a plan (studies/sweep_plan.hpp), one process per run, resumably (issues 8 and 9).
//
// Runs are appended to DIR/results.jsonl as they finish (studies/results.hpp); a sweep started again reads the file
// and runs only what is missing. A shard i/N runs the points whose index % N == i; merging joins the shards'
// results. Both write DIR/sweep.md (a table, point x metrics) and DIR/sweep.png (tools/plot/plot_sweep.py; skipped
// without matplotlib).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"
#include "sim/report.hpp"
#include "studies/sweep_plan.hpp"

namespace snsim::studies {

struct SweepOptions {
  std::string plan;
  std::string out;  // default: sweep-<plan name>
  std::optional<std::size_t> jobs;
  std::string shard;  // "i/N"
  bool dry_run = false;
};

/// A sweep ready to run: its plan and runs, and what the results file already holds.
struct SweepSetup {
  SweepPlan plan;
  std::size_t shard = 0, shards = 1;
  std::size_t jobs = 1;
  std::string dir;              // the results folder
  std::string results;          // DIR/results.jsonl
  std::vector<SweepRun> runs;   // every run of the plan
  std::set<std::string> done;   // keys of the runs the results file holds
  std::vector<SweepRun> todo;   // this shard's runs not done yet
  std::size_t in_shard = 0;     // this shard's runs
  std::size_t already = 0;      // of which done
  std::size_t valid_bytes = 0;  // the results file's good prefix (a torn last line after it)
  nlohmann::json meta;          // what DIR/sweep.json holds

  /// "to run", "done", or "other" (another shard's), as a dry run lists it.
  std::string status(const SweepRun& run) const;
};

/// Loads and checks the plan and every scenario to run (before anything forks: a bad scenario fails here, not in a
/// child), reads what the results file holds, and writes DIR/sweep.json. Nothing runs yet.
SweepSetup prepare_sweep(const SweepOptions& options);

/// How a sweep's runs went.
struct SweepOutcome {
  std::size_t finished = 0;           // runs that ended, completed or failed
  std::vector<std::string> failures;  // "point 3 (gpus=8) seed 4: why"
  std::string plot_problem;           // why sweep.png is missing; empty when it was drawn
};

/// Runs setup.todo, setup.jobs at a time, each in its own process, appending each result to the results file as it
/// ends; `ended(run, failure, outcome)` is called after each (`failure` empty when it completed). Then writes
/// sweep.md from this plan's results.
SweepOutcome execute_sweep(
    const SweepSetup& setup,
    const std::function<void(const SweepRun& run, const std::string& failure, const SweepOutcome& so_far)>& ended);

/// What a run measured, from its report: makespan, GPUs, the topology, and for training its step time, MFU and
/// samples per second, its footprint and the time a GPU communicates without computing (the training summary).
nlohmann::json metrics_of(const Report& report, const workloads::Scenario& scenario);

/// sweep.md and sweep.png, as written.
struct SweepReport {
  std::string markdown;
  std::string plot_problem;  // empty when sweep.png was drawn
};
/// Writes DIR/sweep.md and DIR/sweep.png from the results and the plan's meta. Without matplotlib there is no
/// picture (and the problem says why), unless SNSIM_REQUIRE_PLOTS is set: then that is an error.
SweepReport write_sweep_report(const std::string& dir, const nlohmann::json& meta,
                               const std::vector<nlohmann::json>& results);

/// What merging found.
struct MergeSummary {
  std::size_t lines = 0;                 // read, from every file
  std::size_t results = 0;               // after merging
  std::size_t duplicates = 0;            // exact duplicates dropped
  std::optional<std::size_t> plan_runs;  // the plan's runs, when a sweep.json says
  std::vector<std::string> missing;      // keys of the plan's runs no file has
  std::string plot_problem;              // empty when sweep.png was drawn
};
/// Merges results files (or folders holding results.jsonl) into `out`: results.jsonl, sweep.json (the inputs' plan;
/// results of different plans do not merge), sweep.md and sweep.png.
MergeSummary merge_sweep(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace snsim::studies
