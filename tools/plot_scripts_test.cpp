// tools/plot/plot_study.py and plot_compare.py, run as `snsim study slow-node --out` and `snsim compare --out` run
// them, and plot_timeline.py, on hand-made study.json, compare.json and timeline.json files.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "studies/python.hpp"
#include "tools/test_support.hpp"

using namespace snsim::testing;

namespace {

std::string script(const std::string& name) {
  return std::string(SNSIM_SOURCE_DIR) + "/tools/plot/" + name;
}

/// Any python3: bad input is found before matplotlib is imported.
std::optional<std::string> any_python() {
  std::vector<std::string> tried;
  const std::string python = snsim::studies::find_python(tried).value_or("python3");
  if (snsim::studies::run_program(python, {"-c", "pass"}, /*quiet=*/true) != 0) {
    MESSAGE("skipped: no python3");
    return std::nullopt;
  }
  return python;
}

/// Runs `python script args` in `dir`, capturing exit code, stdout and stderr.
Result run_script(const TempDir& dir, const std::string& python, const std::string& name, const std::string& args) {
  const std::string command = fmt::format("cd {} && {} {} {} >.stdout 2>.stderr", quote(dir.path().string()),
                                          quote(python), quote(script(name)), args);
  const int status = std::system(command.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir.path() / ".stdout");
  r.err = read_file(dir.path() / ".stderr");
  return r;
}

// Two points of a 2-GPU study: healthy and GPU 1 x1.1 (9.1 % slower), GPU 0 waiting on it.
constexpr const char* STUDY_JSON = R"({"study": "slow-node", "scenario": "s", "gpus": 2, "trials": 3, "steps": 10,
 "points": [
  {"label": "healthy", "gpu_slowdown": 0,
   "step_time_s": {"n": 3, "mean": 0.0101, "p50": 0.0101, "p99": 0.0103, "ci95_low": 0.0100, "ci95_high": 0.0102},
   "efficiency_lost": null, "amplification": null, "efficiency_lost_paired": null,
   "ranks": [{"rank": 0, "waiting_per_step_s": 1e-5, "most_waited_on": 1},
             {"rank": 1, "waiting_per_step_s": 2e-5, "most_waited_on": 0}]},
  {"label": "gpu1 x1.1", "gpu_slowdown": 0.0909,
   "step_time_s": {"n": 3, "mean": 0.0110, "p50": 0.0110, "p99": 0.0112, "ci95_low": 0.0109, "ci95_high": 0.0111},
   "efficiency_lost": 0.0818, "amplification": 0.9,
   "efficiency_lost_paired": {"mean": 0.081, "ci95_low": 0.079, "ci95_high": 0.083},
   "ranks": [{"rank": 0, "waiting_per_step_s": 9e-4, "most_waited_on": 1},
             {"rank": 1, "waiting_per_step_s": 0, "most_waited_on": null}]}]})";

constexpr const char* COMPARE_JSON = R"({"scenario": "s", "seed": 1,
 "bsp": {"summary": [{"metric": "step_mean_ms", "value": 10.5}, {"metric": "step_last_ms", "value": 10.4},
                     {"metric": "mfu_pct", "value": 41.0}],
         "per_gpu": [{"rank": 0, "compute_ms": 15, "communication_ms": 4, "waiting_ms": 1, "idle_ms": 1},
                     {"rank": 1, "compute_ms": 15, "communication_ms": 5, "waiting_ms": 0, "idle_ms": 1}]},
 "pgas": {"summary": [{"metric": "step_mean_ms", "value": 9.5}, {"metric": "step_last_ms", "value": 9.4},
                      {"metric": "mfu_pct", "value": 45.0}],
          "per_gpu": [{"rank": 0, "compute_ms": 15, "communication_ms": 2, "waiting_ms": 2, "idle_ms": 0},
                      {"rank": 1, "compute_ms": 15, "communication_ms": 3, "waiting_ms": 1, "idle_ms": 0}]}})";

// Two GPUs of a timeline.json (sim/report.cpp): names, a kernel, a collective and a wait.
constexpr const char* TIMELINE_JSON = R"({"traceEvents": [
 {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "gpu0"}},
 {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "gpu1"}},
 {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "compute"}},
 {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2001, "args": {"name": "collectives"}},
 {"name": "thread_name", "ph": "M", "pid": 2, "tid": 2001, "args": {"name": "collectives"}},
 {"name": "thread_name", "ph": "M", "pid": 2, "tid": 8001, "args": {"name": "waiting"}},
 {"name": "k", "cat": "compute", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {}},
 {"name": "all_reduce", "cat": "collective", "ph": "X", "pid": 1, "tid": 2001, "ts": 100, "dur": 50, "args": {}},
 {"name": "all_reduce", "cat": "collective", "ph": "X", "pid": 2, "tid": 2001, "ts": 0, "dur": 150, "args": {}},
 {"name": "wait on gpu0", "cat": "wait", "ph": "X", "pid": 2, "tid": 8001, "ts": 0, "dur": 100, "args": {}}],
 "otherData": {"scenario": "s"}})";

}  // namespace

TEST_CASE("plot_study.py, plot_compare.py and plot_timeline.py: one picture each") {
  const auto python = python_with_matplotlib();
  if (!python) return;
  TempDir dir;
  dir.write("study.json", STUDY_JSON);
  dir.write("compare.json", COMPARE_JSON);
  const Result study = run_script(dir, *python, "plot_study.py", "study.json --out study.png");
  INFO(study.err);
  CHECK(study.code == 0);
  CHECK(study.out == "wrote study.png\n");
  CHECK(fs::file_size(dir.path() / "study.png") > 10000);
  const Result compare = run_script(dir, *python, "plot_compare.py", "compare.json --out compare.svg --quiet");
  INFO(compare.err);
  CHECK(compare.code == 0);
  CHECK(compare.out.empty());
  CHECK(fs::file_size(dir.path() / "compare.svg") > 10000);
  dir.write("timeline.json", TIMELINE_JSON);
  const Result timeline = run_script(dir, *python, "plot_timeline.py", "timeline.json --out timeline.png --quiet");
  INFO(timeline.err);
  CHECK(timeline.code == 0);
  CHECK(fs::file_size(dir.path() / "timeline.png") > 10000);
}

TEST_CASE("plot_study.py and plot_compare.py: bad input exits 2 with one line naming the file and the field") {
  const auto python = any_python();
  if (!python) return;
  TempDir dir;
  std::string name, text, expected;
  SUBCASE("study: missing file") {
    name = "plot_study.py";
    expected = "none.json: cannot open the file: No such file or directory\n";
  }
  SUBCASE("study: not a study") {
    name = "plot_study.py";
    text = R"({"pass": true})";
    expected =
        "none.json: not a study.json of `snsim study slow-node --out` (no \"study\": \"slow-node\" at the top)\n";
  }
  SUBCASE("study: a step time that is not a number") {
    name = "plot_study.py";
    text = STUDY_JSON;
    text.replace(text.find("\"p99\": 0.0112"), 13, "\"p99\": \"slow\"");
    expected = "none.json: points[1].step_time_s.p99: expected a number, found \"slow\"\n";
  }
  SUBCASE("compare: malformed JSON") {
    name = "plot_compare.py";
    text = "{\"bsp\":\n [}";
    expected = "none.json:2:3: malformed JSON: Expecting value\n";
  }
  SUBCASE("compare: a GPU without its idle time") {
    name = "plot_compare.py";
    text = COMPARE_JSON;
    text.replace(text.find(", \"idle_ms\": 0}"), 15, "}");
    expected = "none.json: pgas.per_gpu[0]: missing \"idle_ms\"\n";
  }
  if (!text.empty()) dir.write("none.json", text);
  const Result r = run_script(dir, *python, name, "none.json --out x.png");
  CHECK(r.code == 2);
  CHECK(r.err == expected);
  CHECK_FALSE(fs::exists(dir.path() / "x.png"));
}

TEST_CASE("plot scripts: snsim finds them in share/snsim/plot above its own folder, wherever it is copied or linked") {
  // As installed: PREFIX/bin/snsim and PREFIX/share/snsim/plot, with no source tree in sight.
  TempDir dir;
  fs::create_directories(dir.path() / "prefix" / "bin");
  const fs::path snsim = dir.path() / "prefix" / "bin" / "snsim";
  fs::copy_file(SNSIM_BINARY, snsim);
  fs::create_directories(dir.path() / "elsewhere");
  fs::create_symlink(snsim, dir.path() / "elsewhere" / "snsim");  // started through a link on PATH
  const std::string trace = std::string(SNSIM_SOURCE_DIR) + "/validation/importers/samples/snsim_trace.jsonl";
  auto plot = [&](const fs::path& binary) {
    const std::string command = fmt::format("cd {} && {} traces plot {} --out plots >.stdout 2>.stderr",
                                            quote(dir.path().string()), quote(binary.string()), quote(trace));
    const int status = std::system(command.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(dir.path() / ".stdout");
    r.err = read_file(dir.path() / ".stderr");
    return r;
  };

  const fs::path share = dir.path() / "prefix" / "share" / "snsim" / "plot";
  const Result missing = plot(snsim);
  CHECK(missing.code == 3);
  CHECK(missing.err == "snsim traces plot: the plotting script " + (share / "plot_trace.py").string() +
                           " is missing (it is installed with snsim, in share/snsim/plot)\n");

  fs::create_directories(share);
  for (const auto& entry : fs::directory_iterator(fs::path(SNSIM_SOURCE_DIR) / "tools" / "plot"))
    if (entry.path().extension() == ".py") fs::copy_file(entry.path(), share / entry.path().filename());
  for (const fs::path& binary : {snsim, dir.path() / "elsewhere" / "snsim"}) {
    CAPTURE(binary);
    const Result found = plot(binary);
    if (python_with_matplotlib()) {
      CHECK(found.code == 0);
      CHECK(fs::exists(dir.path() / "plots" / "snsim_trace_copy_bandwidth.png"));
    } else {
      // The script was found: what is missing now is matplotlib.
      CHECK(found.code == 3);
      CHECK(found.err.find("needs python3 with matplotlib") != std::string::npos);
    }
  }
}

TEST_CASE("plot_step_kernels.py: a profiled step's kernel groups beside snsim's, and bad input exits 2") {
  const auto python = python_with_matplotlib();
  if (!python) return;
  TempDir dir;
  const std::string kernels =
      std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200/h200x1-compute-steps-kernels.json";
  const Result r = run_script(
      dir, *python, "plot_step_kernels.py",
      fmt::format("{} --snsim {} --model gpt-h2048-l8 --out . --quiet", quote(kernels), quote(SNSIM_BINARY)));
  INFO(r.err);
  REQUIRE(r.code == 0);
  // The measured side is the profile's: 59.94 ms of kernels (its AdamW annotation left out), 30.54 of them GEMMs.
  CHECK(r.out.find("| gemm | 30.54 |") != std::string::npos);
  CHECK(r.out.find("| **kernels** | **59.94** |") != std::string::npos);
  CHECK(r.out.find("| step | 61.65 |") != std::string::npos);
  CHECK(fs::file_size(dir.path() / "step-kernels-gpt-h2048-l8.png") > 10000);

  dir.write("bad.json", R"({"schema": "snsim-kernels/1", "models": [{"model": "m", "arch": "bert"}]})");
  const Result bad = run_script(dir, *python, "plot_step_kernels.py", "bad.json --snsim x");
  CHECK(bad.code == 2);
  CHECK(bad.err == "bad.json: models[0] has no 'layers'\n");
  dir.write("other.json", R"({"traceEvents": []})");
  const Result other = run_script(dir, *python, "plot_step_kernels.py", "other.json --snsim x");
  CHECK(other.code == 2);
  CHECK(other.err == "other.json: not a snsim-kernels/1 file (expected an object with schema and models)\n");
}
