// A sweep plan: a base scenario and a design of points over axes, each point x trial one run keyed by a hash of
// its resolved scenario (issues 8 and 9). The plan's format, as `snsim sweep PLAN.yaml` reads it:
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
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/config.hpp"

namespace snsim::studies {

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

/// The numbers every run of a sweep reports (metrics_of), in the order sweep.md lists them: the only names a goal
/// may bound or minimize. step_time_s, samples_per_s, mfu_pct, peak_hbm_gib and fits (1 or 0) come from training
/// workloads only.
inline const std::vector<std::string> SWEEP_METRICS{"gpus",    "makespan_s",   "step_time_s", "samples_per_s",
                                                    "mfu_pct", "peak_hbm_gib", "fits",        "wall_s"};

/// What sweep.md states as the answer: among completed points with `metric` >= at_least (or <= at_most), the one
/// with the least `minimize`.
struct Goal {
  std::string metric;
  std::optional<double> at_least, at_most;
  std::string minimize;
};

/// One run of a plan: a point, a trial, the seed it runs with and its key.
struct SweepRun {
  std::size_t point = 0, trial = 0;
  std::uint64_t seed = 0;
  std::string key;
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
  /// Every run of the plan, point by point, trial by trial. Two points that resolve to the same scenario would
  /// share one result: an InputError naming both.
  std::vector<SweepRun> runs() const;
  /// "fabric=nvl72 gpus=16".
  std::string label(std::size_t p) const;
  /// The label of each axis's value at point `p`, by axis name (what a result line records).
  nlohmann::json labels(std::size_t p) const;
  /// The plan as sweep.json records it (what merge and the plot read).
  nlohmann::json meta() const;
};

/// A node as YAML flow text ({a: 1, b: [x, y]}), for `key.path=value` assignments of maps and sequences.
std::string flow_yaml(const ConfigNode& node);

/// The key of a run: FNV-1a (64 bits, hex) of its scenario as canonical JSON. Stable across runs and platforms.
std::string run_key(ConfigDocument& scenario);

}  // namespace snsim::studies
