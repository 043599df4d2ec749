// `snsim sweep` through the built binary (tools/test_support.hpp): resume, torn and corrupted results, shards and
// merge, determinism, and a kill -9. The plan and results logic is tested in process in studies/.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "studies/python.hpp"
#include "tools/test_support.hpp"

extern char** environ;

using namespace snsim::testing;
using nlohmann::json;

namespace {

constexpr std::size_t RUNS = SWEEP_RUNS;
const std::string& BASE = SWEEP_BASE;

/// Writes base.yaml and plan.yaml (the small plan) into `dir`.
void write_plan(const TempDir& dir) {
  write_sweep_plan(dir);
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
  if (snsim::studies::find_python(tried))
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

TEST_CASE(
    "sweep: a plot that SNSIM_REQUIRE_PLOTS requires and cannot be drawn is an internal error, in the one format") {
  const TempDir dir;
  write_plan(dir);
  setenv("SNSIM_REQUIRE_PLOTS", "1", 1);  // inherited by the snsim process
  setenv("SNSIM_PYTHON", "/nonexistent/python3", 1);
  const auto r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out", "--jobs", "2"});
  CHECK(r.code == 3);
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  CHECK(last ==
        "snsim sweep: internal error: no plot (SNSIM_REQUIRE_PLOTS is set): needs python3 with matplotlib (Debian: "
        "apt install python3-matplotlib; or set SNSIM_PYTHON); tried: /nonexistent/python3 (not found)\n");
  CHECK(lines_of(read_file(dir.path() / "out" / "results.jsonl")).size() == RUNS);  // the runs are kept
}

TEST_CASE("sweep: a bucket sweep whose points cannot differ says why in sweep.md, point by point") {
  const TempDir dir;
  dir.write("base.yaml",
            "name: buckets\ntopology: {type: hgx, gpu: h200, gpus: 2}\nworkloads:\n  - type: training\n    steps: 1\n"
            "    model: {layers: 4, hidden: 512, heads: 8, sequence: 256}\n    parallel: {dp: 2}\n");
  dir.write("plan.yaml",
            "name: buckets\nbase: base.yaml\naxes:\n  - name: bucket\n    key: workloads[0].parallel.bucket\n"
            "    values: [1MiB, 2MiB, 16MiB]\n");
  const auto r = run_snsim(dir, {"sweep", "plan.yaml", "--out", "out", "--jobs", "2"});
  REQUIRE(r.code == 0);
  const std::string md = read_file(dir.path() / "out" / "sweep.md");
  CHECK(md.find("\n## Notes\n") != std::string::npos);
  CHECK(md.find("- point 0: parallel.bucket 1 MiB is at most one layer's gradient on a GPU") != std::string::npos);
  CHECK(md.find("- point 1: parallel.bucket 2 MiB is at most one layer's gradient on a GPU") != std::string::npos);
  CHECK(md.find("- point 2:") == std::string::npos);  // three layers to a bucket: it matters
  std::map<int, json> metrics;
  for (const auto& line : lines_of(read_file(dir.path() / "out" / "results.jsonl"))) {
    const json v = json::parse(line);
    metrics[v["point"].get<int>()] = v["metrics"];
    CHECK(v.contains("notes") == (v["point"].get<int>() != 2));
  }
  REQUIRE(metrics.size() == 3);
  CHECK(metrics[0] == metrics[1]);  // what the notes say
  CHECK(metrics[0]["step_time_s"] != metrics[2]["step_time_s"]);
}
