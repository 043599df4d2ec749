// `snsim sweep`: run a scenario over a design of points, one process per point, resumably (issues 8 and 9).
//
//   snsim sweep PLAN.yaml [--out DIR] [--jobs J] [--shard i/N] [--dry-run]
//   snsim sweep merge RESULTS... -o OUT
//
// A plan names a base scenario (relative to the plan) and a design over axes:
//
//   name: capacity
//   base: ../examples/training_dense_hgx.yaml
//   set: {workloads[0].steps: 1}           # every point: key.path: value (block style for keys with [i])
//   design: grid                           # grid: the cartesian product; random: `samples` distinct points
//   samples: 10                            # random only; `sample_seed` (default 1) picks them
//   trials: 1                              # seeds per point: the scenario's seed + 0 ... trials - 1
//   axes:
//     - name: gpus                         # a scalar value sets the axis's `key` (`snsim run --set` syntax)
//       key: topology.gpus
//       values: [4, 8]
//     - name: fabric                       # a labelled value sets several keys together (coupled points)
//       values:
//         - label: tp8
//           set: {workloads[0].parallel: {tp: 8, pp: 1}}
//   goal: {metric: samples_per_s, at_least: 400, minimize: gpus}   # optional: the answer in sweep.md
//   report: {x: gpus, y: samples_per_s, series: topology}           # optional: the plot's axes
//
// Every point x trial is a run, keyed by a hash of its resolved scenario (the base, every override and the seed).
// Runs are appended, one JSON line each, to DIR/results.jsonl as they finish (one write() and an fsync per line,
// so a kill -9 tears at most the last line); a sweep started again reads the file and runs only what is missing.
// `--shard i/N` runs the points whose index % N == i; `merge` joins the shards' results. Both write DIR/sweep.md
// (a table, point x metrics) and DIR/sweep.png (tools/plot/plot_sweep.py; skipped without matplotlib).
//
// Exit codes: 0 done, 2 bad input (plan, scenario, results file, conflicting results), 3 a run failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sim/config.hpp"

namespace snsim::tools {

/// One value of an axis: its label and the `key.path=value` assignments it makes, with where each is written.
struct AxisValue {
  std::string label;
  struct Assignment {
    std::string text;    // "topology.gpus=8"
    std::string origin;  // "plan.yaml:12:15": errors about the value point here
  };
  std::vector<Assignment> sets;
};

struct Axis {
  std::string name;
  std::vector<AxisValue> values;
};

/// What sweep.md states as the answer: among completed points with `metric` >= at_least (or <= at_most), the one
/// with the least `minimize`.
struct Goal {
  std::string metric;
  std::optional<double> at_least, at_most;
  std::string minimize;
};

/// A parsed, checked plan.
struct SweepPlan {
  std::string file;  // the plan's path
  std::string name;
  std::string base;  // the base scenario's path (resolved against the plan's folder)
  std::vector<AxisValue::Assignment> sets;
  std::string design;  // grid | random
  std::vector<Axis> axes;
  std::size_t trials = 1;
  /// The points: for each, the index of its value on every axis, in plan order (grid: the first axis slowest).
  std::vector<std::vector<std::size_t>> points;
  std::optional<Goal> goal;
  std::string x = "gpus", y, series = "topology";  // the plot; y empty: samples_per_s, else makespan_s

  /// Loads and checks a plan; every error is an InputError naming file:line:col and the key.
  static SweepPlan load(const std::string& path);
  /// The scenario of point `p`, trial `t`: the base with every override and its seed (the base's + t).
  std::shared_ptr<ConfigDocument> scenario(std::size_t p, std::size_t t) const;
  /// "fabric=nvl72 gpus=16".
  std::string label(std::size_t p) const;
  /// The plan as sweep.json records it (what merge and the plot read).
  nlohmann::json meta() const;
};

/// The key of a run: FNV-1a (64 bits, hex) of its scenario as canonical JSON. Stable across runs and platforms.
std::string run_key(ConfigDocument& scenario);

/// One line of a results file, where it was read.
struct ResultLine {
  nlohmann::json value;
  std::string where;  // "DIR/results.jsonl:3"
};

/// Reads a results file: a corrupted line is an InputError naming file:line, except a torn last line (an
/// interrupted write), which is dropped with a warning on stderr. `valid_bytes` receives the length of the good
/// prefix (to cut the torn line off before appending). A missing file has no lines.
std::vector<ResultLine> read_results(const std::string& path, std::size_t* valid_bytes = nullptr);

/// Joins results: exact duplicates (the same key and results, wall time aside) are dropped, the same key with
/// different results is an InputError naming both lines. Sorted by point, then trial.
std::vector<nlohmann::json> merge_results(const std::vector<ResultLine>& lines, std::size_t* duplicates = nullptr);

struct SweepOptions {
  std::string plan;
  std::string out;  // default: sweep-<plan name>
  std::optional<std::size_t> jobs;
  std::string shard;  // "i/N"
  bool dry_run = false;
};

/// Runs a sweep; returns the exit code. Input errors are thrown as InputError.
int run_sweep(const SweepOptions& options);

/// Merges results files (or folders holding results.jsonl) into `out`; returns the exit code.
int merge_sweep(const std::vector<std::string>& inputs, const std::string& out);

/// Writes DIR/sweep.md and DIR/sweep.png from the results and the plan's meta; returns sweep.md's text.
std::string write_sweep_report(const std::string& dir, const nlohmann::json& meta,
                               const std::vector<nlohmann::json>& results);

/// Adds `sweep` (and `sweep merge`) to `app`; the command that runs stores its exit code.
void add_sweep_command(CLI::App& app, int& exit_code);

}  // namespace snsim::tools
