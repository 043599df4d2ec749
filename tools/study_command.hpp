// `snsim study slow-node`: how much a job loses to one slow GPU, and who waits on whom (issue 7, design.md
// "Slow-node studies").
//
//   snsim study slow-node SCENARIO [--trials N] [--seed S] [--jobs J] [--slow GPU:FACTOR[,GPU:FACTOR]]...
//                                  [--steps N] [--set key.path=value]... [--out DIR]
//
// A Monte Carlo over the scenario's variability -- per-GPU clock and HBM factors (models.variation), per-transfer
// latency and rate jitter (models.jitter) -- for each point of a sweep of slowed GPUs: the healthy job (no GPU
// slowed, whatever the scenario's models.slow says), then every --slow point (default: GPU G's compute time x1.02,
// x1.05, x1.10, x1.20 and the scenario's own factor, where G is the scenario's first slowed GPU, else GPU 0). Every
// point runs the same N trials: trial i has seed S + i at every point (common random numbers: the points differ only in
// the slow GPU, so their differences are not drowned by the noise). Each trial is one `snsim run` in its own process, J
// at a time.
//
// Variability the scenario leaves at `none` gets the study's defaults (and the report says which): clock sigma
// 0.5 %, HBM sigma 1 % (normal, the design's "clocks ±0.5 %, HBM ±2 %" as two sigmas), and the link jitter
// measured on our H200s (validation/params/h200.yaml: factors on each transfer's fixed costs, |factor - 1| 0.7 %
// median, 4 % p90, 9 % p99 -- on a copy's 5-9 us of fixed costs about 50 ns typical to 500 ns in the tail, the
// design's "link latency jitter of 50-500 ns"; rate factors lognormal sigma 0.4 %).
//
// A trial's step time is its makespan divided by the number of steps: --steps, else the scenario's top-level repeat
// count when every workload's ops are one `repeat` of the same count (10 in bsp_step_slow_gpu.yaml), else 1.
//
// Exit codes: 0 done, 2 bad input (scenario, --slow, --trials ...), 3 a trial failed or did not complete.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "models/jitter.hpp"
#include "program/program.hpp"

namespace snsim::tools {

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

/// Summary statistics of one sample.
struct Summary {
  std::size_t n = 0;
  double mean = 0, stddev = 0, min = 0, max = 0, p50 = 0, p99 = 0;
  std::optional<double> ci95_low, ci95_high;  // of the mean, Student t; needs n >= 2
};
/// Quantiles are snsim::quantile's (sim/statistics.hpp).
Summary summarize(std::vector<double> values);
/// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1): the 95 % two-sided interval's factor.
double t_975(std::size_t df);

struct StudyOptions {
  std::string scenario;
  std::size_t trials = 30;
  std::optional<std::string> seed;  // the first trial's seed; default the scenario's
  std::optional<std::size_t> jobs;  // default: the CPUs this process may use
  std::vector<std::string> slow;    // sweep points; default x1.02 x1.05 x1.10 x1.20 on one GPU
  std::optional<int> steps;
  std::vector<std::string> sets;
  std::string out;
};

/// Runs the study; returns the exit code. Input errors are thrown as InputError.
int run_slow_node_study(const StudyOptions& options);

/// Adds `study` (with its `slow-node` subcommand) to `app`; the command that runs stores its exit code.
void add_study_command(CLI::App& app, int& exit_code);

}  // namespace snsim::tools
