// Sweep plans in process: their errors, grid and random designs, and the runs' keys.
#include "studies/sweep_plan.hpp"

#include <algorithm>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "studies/test_support.hpp"

using namespace snsim;
using namespace snsim::studies;
using namespace snsim::testing;

namespace {

/// The message SweepPlan::load throws for `plan`, with the folder's path cut to "plan.yaml".
std::string plan_error(const std::string& plan) {
  const TempDir dir;
  const std::string path = write_sweep_plan(dir, plan);
  try {
    SweepPlan::load(path);
  } catch (const InputError& e) {
    std::string what = e.what();
    const std::string prefix = dir.path().string() + "/";
    for (auto at = what.find(prefix); at != std::string::npos; at = what.find(prefix)) what.erase(at, prefix.size());
    return what;
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("sweep: plan errors name file, line, column and key") {
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}]\ntrails: 2\n") ==
        "plan.yaml:3:1: trails: unknown key (did you mean 'trials'?); known keys: axes, base, design, goal, name, "
        "report, sample_seed, samples, set, trials");
  CHECK(plan_error("base: nothere.yaml\naxes: [{name: a, key: seed, values: [1]}]\n") ==
        "plan.yaml:1:7: base: no scenario at 'nothere.yaml' (the path is relative to the plan)");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, values: [1, 2]}]\n") ==
        "plan.yaml:2:27: axes[0].values[0]: a plain value needs the axis's `key` (the key.path it sets); or give "
        "{label: ..., set: {key.path: value, ...}}");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1, 1]}]\n") ==
        "plan.yaml:2:41: axes[0].values[1]: the label '1' is used twice on axis 'a'");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}, {name: a, key: seed, values: [2]}]\n") ==
        "plan.yaml:2:50: axes[1].name: axis 'a' is named twice");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: []}]\n") ==
        "plan.yaml:2:37: axes[0].values: expected a non-empty list of values");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}]\ndesign: latin\n") ==
        "plan.yaml:3:9: design: expected grid or random, found 'latin'");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}]\nsamples: 3\n") ==
        "plan.yaml:3:10: samples: only with design: random");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1, 2]}]\ndesign: random\nsamples: 3\n") ==
        "plan.yaml:4:10: samples: must be between 1 and 2, got 3");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}]\ntrials: 0\n") ==
        "plan.yaml:3:9: trials: must be between 1 and 10000, got 0");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: seed, values: [1]}]\ngoal: {metric: gpus, at_least: 1, "
                   "at_most: 2}\n") ==
        "plan.yaml:3:7: goal: give one of at_least or at_most (the bound on the metric)");
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, values: [{label: x, set: {}}]}]\n") ==
        "plan.yaml:2:43: axes[0].values[0].set: sets nothing: give at least one key.path: value");
  // An override that names no place in the scenario is reported where the plan writes it.
  CHECK(plan_error("base: base.yaml\naxes: [{name: a, key: 'workloads[3].steps', values: [1]}]\n") ==
        "plan.yaml:2:54: there is no element [3] to set");
}

TEST_CASE("sweep: a grid is the cartesian product, a random design distinct points of it") {
  const TempDir dir;
  const SweepPlan grid = SweepPlan::load(write_sweep_plan(dir));
  REQUIRE(grid.points.size() == 6);
  CHECK(grid.points.front() == std::vector<std::size_t>{0, 0});
  CHECK(grid.points[1] == std::vector<std::size_t>{0, 1});  // the last axis fastest
  CHECK(grid.points.back() == std::vector<std::size_t>{2, 1});
  CHECK(grid.label(3) == "gpus=4 loop=long");
  CHECK(grid.trials == 2);

  std::string random = SWEEP_PLAN;
  random.replace(random.find("trials: 2"), 9, "design: random\nsamples: 4\nsample_seed: 11");
  dir.write("random.yaml", random);
  const SweepPlan a = SweepPlan::load((dir.path() / "random.yaml").string());
  const SweepPlan b = SweepPlan::load((dir.path() / "random.yaml").string());
  CHECK(a.points.size() == 4);
  CHECK(std::set(a.points.begin(), a.points.end()).size() == 4);  // distinct
  CHECK(a.points == b.points);                                    // the same seed draws the same points
  CHECK(std::ranges::is_sorted(a.points));                        // in grid order
  CHECK(a.trials == 1);
}

TEST_CASE("sweep: a run's key is a stable hash of its resolved scenario and seed") {
  const TempDir dir;
  const SweepPlan plan = SweepPlan::load(write_sweep_plan(dir));
  // Pinned: the key must not change between versions or platforms, or a resumed sweep would run everything again.
  // (The base path is part of nothing hashed: only the scenario's content.)
  CHECK(run_key(*plan.scenario(0, 0)) == "2219ec2eaefd6e93");
  CHECK(run_key(*plan.scenario(0, 0)) == run_key(*plan.scenario(0, 0)));
  CHECK(run_key(*plan.scenario(0, 0)) != run_key(*plan.scenario(0, 1)));  // another seed
  CHECK(run_key(*plan.scenario(0, 0)) != run_key(*plan.scenario(1, 0)));  // another point
  // Key order and flow or block style do not matter: the scenario does.
  auto a = ConfigDocument::load_string("seed: 1\ntopology: {type: hgx, gpus: 2}\n", "a.yaml");
  auto b = ConfigDocument::load_string("topology:\n  gpus: 2\n  type: hgx\nseed: 1\n", "b.yaml");
  CHECK(run_key(*a) == run_key(*b));
}

TEST_CASE("sweep: a plan's runs are its points x trials, seeded from the base, two points alike are an error") {
  const TempDir dir;
  const SweepPlan plan = SweepPlan::load(write_sweep_plan(dir));
  const auto runs = plan.runs();
  REQUIRE(runs.size() == SWEEP_RUNS);
  CHECK(runs[0].point == 0);
  CHECK(runs[1].point == 0);
  CHECK(runs[1].trial == 1);
  CHECK(runs[0].seed == 3);  // the base's seed
  CHECK(runs[1].seed == 4);  // + the trial
  CHECK(runs[2].point == 1);
  CHECK(runs[3].key == run_key(*plan.scenario(1, 1)));
  CHECK(plan.labels(3).dump() == R"({"gpus":"4","loop":"long"})");
  std::set<std::string> keys;
  for (const auto& r : runs) keys.insert(r.key);
  CHECK(keys.size() == SWEEP_RUNS);

  dir.write("same.yaml",
            "base: base.yaml\naxes: [{name: a, values: [{label: x, set: {name: n}}, {label: y, set: {name: n}}]}]\n");
  const std::string same = (dir.path() / "same.yaml").string();
  CHECK_THROWS_WITH_AS(SweepPlan::load(same).runs(),
                       (same + ": axes: points 0 (a=x) and 1 (a=y) are the same scenario: an axis value changes "
                               "nothing")
                           .c_str(),
                       InputError);
}
