// The slow-node study: how much a job loses to one slow GPU, and who waits on whom (issue 7; `snsim study
// slow-node`, docs/ has the user's side).
//
// A Monte Carlo over the scenario's variability -- per-GPU clock and HBM factors (models.variation), per-transfer
// latency and rate jitter (models.jitter) -- for each point of a sweep of slowed GPUs: the healthy job (no GPU
// slowed, whatever the scenario's models.slow says), then every --slow point (default: GPU G's compute time x1.02,
// x1.05, x1.10, x1.20 and the scenario's own factor, where G is the scenario's first slowed GPU, else GPU 0). Every
// point runs the same N trials: trial i has seed S + i at every point (common random numbers: the points differ only in
// the slow GPU, so their differences are not drowned by the noise). Each trial is one run in its own process, J at a
// time.
//
// Variability the scenario leaves at `none` gets the study's defaults (and the report says which): clock sigma
// 0.5 %, HBM sigma 1 % (normal: "clocks ±0.5 %, HBM ±2 %" as two sigmas), and the link jitter measured on our H200s
// (validation/params/h200.yaml: factors on each transfer's fixed costs, |factor - 1| 0.7 % median, 4 % p90, 9 % p99 --
// on a copy's 5-9 us of fixed costs about 50 ns typical to 500 ns in the tail; rate factors lognormal sigma 0.4 %).
//
// A trial's step time is its makespan divided by the number of steps: --steps, else the scenario's top-level repeat
// count when every workload's ops are one `repeat` of the same count (10 in bsp_step_slow_gpu.yaml), else 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/jitter.hpp"
#include "program/program.hpp"
#include "sim/report.hpp"
#include "sim/statistics.hpp"

namespace snsim::studies {

/// One point of the sweep: the GPUs slowed and their compute-time (and HBM-time) factors. No GPU: the healthy job.
struct SlowPoint {
  std::vector<models::SlowGpu> gpus;
  /// "healthy", or "gpu3 x1.05" ("gpu3 x1.05 hbm x1.1"; several GPUs joined by '+').
  std::string label() const;
  /// The throughput the slowest of its GPUs lost, 1 - 1 / factor (0.0476 for x1.05), the larger of its compute
  /// and HBM factors; 0 when healthy.
  double slowdown() const;
  /// The models.slow value that sets it: [{gpu: 3, compute: 1.05}].
  std::string yaml() const;
};

/// Parses one --slow value: GPU:FACTOR[:HBM_FACTOR][,GPU:FACTOR...], a factor on the GPU's kernels' FLOP time
/// (1.05, or the percentage 5%, the same) and optionally on their HBM time (a throttled clock leaves HBM alone, so
/// the default is 1). Errors are InputErrors naming "--slow TEXT".
SlowPoint parse_slow_point(const std::string& text, int gpus);

/// The step count a scenario implies (see the header comment), and how it was found.
struct Steps {
  int count = 1;
  std::string why;
};
Steps infer_steps(const std::vector<workloads::Program>& programs);

/// The most trials per point (each one a process: 10,000 already take hours) and trials at a time. A --slow point's
/// factors take models.slow's range (models::MAX_SLOW_FACTOR).
inline constexpr std::size_t MAX_TRIALS = 10'000;
inline constexpr std::size_t MAX_JOBS = 1'024;

struct SlowNodeOptions {
  std::string scenario;
  std::size_t trials = 30;
  std::optional<std::string> seed;  // the first trial's seed; default the scenario's
  std::optional<std::size_t> jobs;  // default: the CPUs this process may use
  std::vector<std::string> slow;    // sweep points; default x1.02 x1.05 x1.10 x1.20 on one GPU
  std::optional<int> steps;
  std::vector<std::string> sets;
  std::string out;
};

/// One source of variability in the study: where it comes from and the --set that installs a default.
struct Variable {
  std::string key;         // models.variation.clock
  std::string what;        // "normal, 1 sigma 0.5 %"
  std::string source;      // "scenario" or "study default: ..."
  std::string assignment;  // for a default: key=value; empty when the scenario's own applies
};

/// What every trial shares: the scenario as checked once here, the points, seeds and defaults.
struct SlowNodePlan {
  std::string name;
  int gpus = 0;
  std::uint64_t seed = 0;  // trial i's seed is seed + i
  std::size_t trials = 0;
  std::size_t jobs = 1;
  Steps steps;
  std::vector<SlowPoint> points;  // healthy first
  std::vector<Variable> variables;
};

/// Checks the options and the scenario (bad input fails here, before anything forks) and plans the study.
SlowNodePlan plan_slow_node(const SlowNodeOptions& options);

/// One trial's result.
struct Trial {
  std::uint64_t seed = 0;
  double makespan = 0;
  double step = 0;
  std::vector<RankWaits> waits;
};

/// A point's trials and what the study says about them.
struct PointResult {
  std::vector<Trial> trials;
  Summary step;
  std::vector<double> busy, waiting;      // by rank, mean over trials
  std::vector<std::map<int, double>> on;  // by rank, then rank waited on: mean over trials
  std::vector<std::optional<int>> most;   // by rank: the rank most waited on (mean), if any
  std::optional<double> efficiency_lost;  // 1 - healthy p50 / this p50 (not for the healthy point)
  std::optional<double> amplification;    // efficiency lost / slowdown
  std::optional<Summary> paired_lost;     // per trial 1 - healthy_i / this_i (same seeds)
};

/// Runs every trial, plan.jobs at a time, each in its own process (trial t of point p is task p x trials + t), and
/// analyses them per point; `finished(task)` is called as each ends. A trial that does not complete is an error.
std::vector<PointResult> run_slow_node(const SlowNodeOptions& options, const SlowNodePlan& plan,
                                       const std::function<void(std::size_t task)>& finished);

/// The per-point table: step time distribution, efficiency lost and amplification.
Table steps_table(const SlowNodePlan& plan, const std::vector<PointResult>& results);
/// Who waited on whom: per rank and point, the mean waiting time per step and the rank most waited on.
Table waits_by_point(const SlowNodePlan& plan, const std::vector<PointResult>& results);

/// The study's files, as written.
struct SlowNodeFiles {
  bool plotted = false;
  std::string plot_problem;  // why study.png is missing; empty when it was drawn
};
/// Writes study.json (everything), study.csv (one line per trial), study.png (with matplotlib) and study.md into
/// `out`.
SlowNodeFiles write_slow_node_files(const std::filesystem::path& out, const SlowNodeOptions& options,
                                    const SlowNodePlan& plan, const std::vector<PointResult>& results,
                                    const Table& steps, const Table& waits);

}  // namespace snsim::studies
