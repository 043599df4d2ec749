// `snsim sweep`: plans, keys and results files in process, then the command through the built binary
// (tools/test_support.hpp): resume, torn and corrupted results, shards and merge, determinism, and a kill -9.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "tools/python.hpp"
#include "tools/sweep_command.hpp"
#include "tools/test_support.hpp"

extern char** environ;

using namespace snsim;
using namespace snsim::tools;
using namespace snsim::testing;
using nlohmann::json;

namespace {

/// A small BSP loop on 2-4 H200s: a run takes milliseconds.
const std::string BASE =
    "name: tiny\n"
    "seed: 3\n"
    "topology: {type: hgx, gpu: h200, gpus: 2}\n"
    "workloads:\n"
    "  - type: program\n"
    "    ops: [{repeat: 2, ops: [{compute: {time: 1ms}}, {collective: {op: all_reduce, bytes: 1MiB}}]}]\n";

/// 3 x 2 points, 2 trials each: 12 runs.
const std::string PLAN =
    "name: tiny\n"
    "base: base.yaml\n"
    "trials: 2\n"
    "axes:\n"
    "  - name: gpus\n"
    "    key: topology.gpus\n"
    "    values: [2, 4, 8]\n"
    "  - name: loop\n"
    "    values:\n"
    "      - label: short\n"
    "        set:\n"
    "          workloads[0].ops[0].repeat: 1\n"
    "      - label: long\n"
    "        set:\n"
    "          workloads[0].ops[0].repeat: 3\n"
    "          workloads[0].ops[0].ops[1].collective: {op: all_reduce, bytes: 4MiB}\n"
    "goal: {metric: makespan_s, at_most: 0.003, minimize: gpus}\n"
    "report: {x: gpus, y: makespan_s}\n";

constexpr std::size_t RUNS = 12;

/// Writes base.yaml and plan.yaml (the plan with `plan` as its text) into `dir`; returns the plan's path.
std::string write_plan(const TempDir& dir, const std::string& plan = PLAN) {
  dir.write("base.yaml", BASE);
  dir.write("plan.yaml", plan);
  return (dir.path() / "plan.yaml").string();
}

/// The message SweepPlan::load throws for `plan`, with the folder's path cut to "plan.yaml".
std::string plan_error(const std::string& plan) {
  const TempDir dir;
  const std::string path = write_plan(dir, plan);
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

/// The results of a folder, each without its wall time (the one part that is not deterministic), sorted.
std::vector<std::string> results_without_wall(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(read_file(dir / "results.jsonl"))) {
    json v = json::parse(line);
    v.erase("wall_s");
    out.push_back(v.dump());
  }
  std::ranges::sort(out);
  return out;
}

/// The keys of a results file, each as often as it appears.
std::multiset<std::string> keys_of(const fs::path& results) {
  std::multiset<std::string> keys;
  for (const auto& line : lines_of(read_file(results))) keys.insert(json::parse(line)["key"].get<std::string>());
  return keys;
}

bool each_once(const std::multiset<std::string>& keys, std::size_t count) {
  return keys.size() == count && std::set<std::string>(keys.begin(), keys.end()).size() == count;
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
  const SweepPlan grid = SweepPlan::load(write_plan(dir));
  REQUIRE(grid.points.size() == 6);
  CHECK(grid.points.front() == std::vector<std::size_t>{0, 0});
  CHECK(grid.points[1] == std::vector<std::size_t>{0, 1});  // the last axis fastest
  CHECK(grid.points.back() == std::vector<std::size_t>{2, 1});
  CHECK(grid.label(3) == "gpus=4 loop=long");
  CHECK(grid.trials == 2);

  std::string random = PLAN;
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
  const SweepPlan plan = SweepPlan::load(write_plan(dir));
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

TEST_CASE("sweep: a torn last line is dropped, a corrupted line elsewhere is an error naming file and line") {
  const TempDir dir;
  const std::string good = R"({"key":"a","point":0,"trial":0,"outcome":"completed","metrics":{}})";
  dir.write("torn.jsonl", good + "\n" + good.substr(0, 20));
  std::size_t valid = 0;
  const auto lines = read_results((dir.path() / "torn.jsonl").string(), &valid);
  CHECK(lines.size() == 1);
  CHECK(valid == good.size() + 1);

  dir.write("bad.jsonl", good + "\n{\"key\": \n" + good + "\n");
  const std::string bad = (dir.path() / "bad.jsonl").string();
  CHECK_THROWS_WITH_AS(read_results(bad), (bad + ":2: corrupted line: not JSON").c_str(), InputError);
  dir.write("odd.jsonl", good + "\n[1, 2]\n" + good + "\n");
  const std::string odd = (dir.path() / "odd.jsonl").string();
  CHECK_THROWS_WITH_AS(
      read_results(odd),
      (odd + ":2: corrupted line: not a sweep result (an object with key, point, trial, outcome and metrics)").c_str(),
      InputError);
}

TEST_CASE("sweep: merging drops exact duplicates and rejects conflicting results") {
  auto line = [](const std::string& key, double makespan, double wall, std::string where) {
    return ResultLine{json{{"key", key},
                           {"point", key == "b" ? 1 : 0},
                           {"trial", 0},
                           {"outcome", "completed"},
                           {"metrics", {{"makespan_s", makespan}}},
                           {"wall_s", wall}},
                      std::move(where)};
  };
  std::size_t duplicates = 0;
  const auto merged =
      merge_results({line("b", 2, 0.1, "x:1"), line("a", 1, 0.1, "x:2"), line("a", 1, 0.7, "y:1")}, &duplicates);
  REQUIRE(merged.size() == 2);
  CHECK(duplicates == 1);  // the same result, another wall time
  CHECK(merged[0]["key"] == "a");
  CHECK(merged[1]["key"] == "b");
  CHECK_THROWS_WITH_AS(merge_results({line("a", 1, 0.1, "x:2"), line("a", 1.5, 0.1, "y:4")}),
                       "y:4: result a (point 0, trial 0) conflicts with x:2: the same scenario and seed gave different "
                       "results",
                       InputError);
}

TEST_CASE("sweep: a resumed sweep runs only what is missing, and repairs a torn last line") {
  const TempDir dir;
  write_plan(dir);
  auto r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out", "--jobs", "2"});
  REQUIRE(r.code == 0);
  const fs::path results = dir.path() / "out" / "results.jsonl";
  const auto full = lines_of(read_file(results));
  REQUIRE(full.size() == RUNS);
  CHECK(each_once(keys_of(results), RUNS));
  CHECK(fs::exists(dir.path() / "out" / "sweep.md"));

  // Keep 5 lines and half of the 6th, as a kill in the middle of a write would.
  std::string partial;
  for (std::size_t i = 0; i < 5; ++i) partial += full[i] + "\n";
  partial += full[5].substr(0, full[5].size() / 2);
  dir.write("out/results.jsonl", partial);
  r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out", "--jobs", "2"});
  REQUIRE(r.code == 0);
  CHECK(r.err.find("results.jsonl:6: warning: dropped a torn last line") != std::string::npos);
  CHECK(r.out.find("12 runs here, 5 already in out/results.jsonl, 7 to run") != std::string::npos);
  const auto resumed = lines_of(read_file(results));
  CHECK(each_once(keys_of(results), RUNS));
  for (std::size_t i = 0; i < 5; ++i) CHECK(resumed[i] == full[i]);  // nothing rewritten

  // Once complete, nothing runs again.
  r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out"});
  CHECK(r.out.find("12 already in out/results.jsonl, 0 to run") != std::string::npos);
  CHECK(lines_of(read_file(results)).size() == RUNS);
}

TEST_CASE("sweep: a corrupted line in the middle of the results stops the sweep with exit 2") {
  const TempDir dir;
  write_plan(dir);
  const std::string good = R"({"key":"a","point":0,"trial":0,"outcome":"completed","metrics":{}})";
  fs::create_directories(dir.path() / "out");
  dir.write("out/results.jsonl", good + "\nnot json\n" + good + "\n");
  const auto r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out"});
  CHECK(r.code == 2);
  CHECK(r.err == "out/results.jsonl:2: corrupted line: not JSON\n");
}

TEST_CASE("sweep: three shards are the whole sweep, and merge joins them") {
  const TempDir dir;
  write_plan(dir);
  for (const char* shard : {"0/3", "1/3", "2/3"}) {
    const auto r = run_snsim(
        dir, {"sweep", "plan.yaml", "--shard", shard, "--out", std::string("shard") + shard[0], "--jobs", "2"});
    REQUIRE(r.code == 0);
    CHECK(lines_of(read_file(dir.path() / (std::string("shard") + shard[0]) / "results.jsonl")).size() == 4);
  }
  // shard0 again as an exact duplicate: dropped.
  auto r = run_snsim(dir, {"sweep", "merge", "shard0", "shard1", "shard2/results.jsonl", "shard0", "-o", "merged"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("12 results (4 exact duplicates dropped)") != std::string::npos);
  CHECK(r.out.find("complete: all 12 runs of the plan, each once") != std::string::npos);
  CHECK(each_once(keys_of(dir.path() / "merged" / "results.jsonl"), RUNS));

  // The same as one unsharded sweep.
  r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "whole", "--jobs", "2"});
  REQUIRE(r.code == 0);
  CHECK(results_without_wall(dir.path() / "merged") == results_without_wall(dir.path() / "whole"));
  // The plot is drawn where matplotlib is (CI sets SNSIM_REQUIRE_PLOTS: a missing one fails there).
  std::vector<std::string> tried;
  if (find_python(tried))
    CHECK(fs::file_size(dir.path() / "merged" / "sweep.png") > 10000);
  else if (std::getenv("SNSIM_REQUIRE_PLOTS"))
    FAIL("SNSIM_REQUIRE_PLOTS is set but no python3 has matplotlib");
  const std::string md = read_file(dir.path() / "merged" / "sweep.md");
  CHECK(md.find("| point | gpus | loop | topology | trials | outcome | makespan_s | wall_s |") != std::string::npos);
  CHECK(md.find("Goal: `makespan_s` <= 0.003 with the least `gpus`. **Point 0 (gpus=2, loop=short)**") !=
        std::string::npos);

  // A conflicting result for the same run: exit 2, naming both lines.
  auto lines = lines_of(read_file(dir.path() / "shard1" / "results.jsonl"));
  json changed = json::parse(lines[0]);
  changed["metrics"]["makespan_s"] = 1.0;
  dir.write("conflict.jsonl", changed.dump() + "\n");
  r = run_snsim(dir, {"sweep", "merge", "shard1", "conflict.jsonl", "-o", "bad"});
  CHECK(r.code == 2);
  CHECK(r.err == fmt::format("conflict.jsonl:1: result {} (point {}, trial {}) conflicts with shard1/results.jsonl:1: "
                             "the same scenario and seed gave different results\n",
                             changed["key"].get<std::string>(), changed["point"].dump(), changed["trial"].dump()));
}

TEST_CASE("sweep: the same plan gives the same results, whatever --jobs") {
  const TempDir dir;
  write_plan(dir);
  REQUIRE(run_snsim(dir, {"sweep", "plan.yaml", "--out", "one", "--jobs", "1"}).code == 0);
  REQUIRE(run_snsim(dir, {"sweep", "plan.yaml", "--out", "two", "--jobs", "2"}).code == 0);
  const auto one = results_without_wall(dir.path() / "one");
  CHECK(one.size() == RUNS);
  CHECK(one == results_without_wall(dir.path() / "two"));
}

TEST_CASE("sweep: killed with SIGKILL and started again, it loses and repeats no run") {
  const TempDir dir;
  // Slower runs (a few hundred ms each), so that the kill lands in the middle of the sweep.
  std::string base = BASE;
  base.replace(base.find("repeat: 2"), 9, "repeat: 3000");
  dir.write("base.yaml", base);
  dir.write("plan.yaml",
            "name: slow\nbase: base.yaml\ntrials: 2\naxes: [{name: gpus, key: topology.gpus, values: [2, 4, 8]}]\n");
  constexpr std::size_t runs = 6;
  const fs::path results = dir.path() / "out" / "results.jsonl";

  std::vector<std::string> args{
      SNSIM_BINARY, "sweep", (dir.path() / "plan.yaml").string(), "--out", (dir.path() / "out").string(),
      "--jobs",     "2"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, SNSIM_BINARY, &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  // Kill it once two runs are in.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (!fs::exists(results) || lines_of(read_file(results)).size() < 2))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const auto before = lines_of(read_file(results));
  REQUIRE(before.size() >= 2);
  REQUIRE(before.size() < runs);  // killed in the middle

  const auto r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out", "--jobs", "2"});
  REQUIRE(r.code == 0);
  CHECK(each_once(keys_of(results), runs));
  const auto after = lines_of(read_file(results));
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i] == before[i]);
}
