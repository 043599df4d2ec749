// tools/plot/plot_validation.py, run as `snsim validate --out` runs it, on a hand-made validation.json.
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "sim/files.hpp"
#include "studies/python.hpp"
#include "tools/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using snsim::testing::python_with_matplotlib;

const std::string SCRIPT = std::string(SNSIM_SOURCE_DIR) + "/tools/plot/plot_validation.py";

struct ScriptResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// A temporary folder, removed when the test ends.
struct PlotScratchDir {
  explicit PlotScratchDir(const std::string& name)
      : path{fs::temp_directory_path() / ("snsim-plot-validation-test-" + std::to_string(::getpid()) + "-" + name)} {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~PlotScratchDir() { fs::remove_all(path); }
  PlotScratchDir(const PlotScratchDir&) = delete;
  PlotScratchDir& operator=(const PlotScratchDir&) = delete;
  fs::path operator/(const std::string& leaf) const { return path / leaf; }
  fs::path path;
};

/// Runs the script on `python` with `arguments` (shell words), capturing its output in `dir`.
ScriptResult run_script(const std::string& python, const std::string& arguments, const PlotScratchDir& dir) {
  const std::string command = fmt::format("'{}' '{}' {} > '{}' 2> '{}'", python, SCRIPT, arguments,
                                          (dir / "out").string(), (dir / "err").string());
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, snsim::read_file(dir / "out"), snsim::read_file(dir / "err")};
}

/// Two copy curves (ranks 0-1 and 1-0, time) and a bandwidth curve whose variant needs a safe file name, a jitter
/// record compared on quantiles, and a family that was not simulated: every kind of figure the script draws.
constexpr const char* VALIDATION_JSON = R"({
 "pass": false,
 "families": [
  {"family": "copy", "validation_records": 3, "calibration_records": 4, "skipped_records": 0,
   "median_abs_error": 0.03, "max_abs_error": 0.2, "bound": {"median": 0.05, "max": 0.15}, "pass": false, "note": ""},
  {"family": "jitter", "validation_records": 1, "calibration_records": 0, "skipped_records": 0,
   "median_abs_error": 0.02, "max_abs_error": 0.04, "bound": {"max": 0.1}, "pass": true, "note": ""},
  {"family": "uvm", "validation_records": 0, "calibration_records": 0, "skipped_records": 2,
   "median_abs_error": 0, "max_abs_error": 0, "bound": {}, "pass": true, "note": "not modelled"}
 ],
 "comparisons": [
  {"trace": "t.jsonl", "id": "copy/ce_peer/single/0-1/4", "family": "copy", "test": "ce_peer", "variant": "single",
   "bytes": 4, "use": "calibration", "statistic": "median", "unit": "s", "measured": 9e-6, "predicted": 9.1e-6,
   "error": 0.011},
  {"trace": "t.jsonl", "id": "copy/ce_peer/single/0-1/1024", "family": "copy", "test": "ce_peer",
   "variant": "single", "bytes": 1024, "use": "validation", "statistic": "median", "unit": "s", "measured": 9.5e-6,
   "predicted": 9.2e-6, "error": -0.0316},
  {"trace": "t.jsonl", "id": "copy/ce_peer/single/0-1/1048576", "family": "copy", "test": "ce_peer",
   "variant": "single", "bytes": 1048576, "use": "calibration", "statistic": "median", "unit": "s",
   "measured": 2.5e-5, "predicted": 2.5e-5, "error": 0},
  {"trace": "t.jsonl", "id": "copy/ce_peer/single/1-0/4", "family": "copy", "test": "ce_peer", "variant": "single",
   "bytes": 4, "use": "calibration", "statistic": "median", "unit": "s", "measured": 8.8e-6, "predicted": 9.1e-6,
   "error": 0.034},
  {"trace": "t.jsonl", "id": "copy/ce_peer/single/1-0/1024", "family": "copy", "test": "ce_peer",
   "variant": "single", "bytes": 1024, "use": "validation", "statistic": "median", "unit": "s", "measured": 9.4e-6,
   "predicted": 9.2e-6, "error": -0.02},
  {"trace": "t.jsonl", "id": "copy/sm_push/in place/0-1/65536", "family": "copy", "test": "sm_push",
   "variant": "in place", "bytes": 65536, "use": "calibration", "statistic": "median", "unit": "B/s",
   "measured": 2e10, "predicted": 2.1e10, "error": 0.05},
  {"trace": "t.jsonl", "id": "copy/sm_push/in place/0-1/1048576", "family": "copy", "test": "sm_push",
   "variant": "in place", "bytes": 1048576, "use": "validation", "statistic": "median", "unit": "B/s",
   "measured": 1e11, "predicted": 1.2e11, "error": 0.2},
  {"trace": "t.jsonl", "id": "jitter/ce_peer/single/0-1/4096", "family": "jitter", "test": "ce_peer",
   "variant": "single", "bytes": 4096, "use": "validation", "statistic": "median", "unit": "s", "measured": 9e-6,
   "predicted": 9.1e-6, "error": 0.011},
  {"trace": "t.jsonl", "id": "jitter/ce_peer/single/0-1/4096", "family": "jitter", "test": "ce_peer",
   "variant": "single", "bytes": 4096, "use": "validation", "statistic": "p99", "unit": "s", "measured": 1e-5,
   "predicted": 1.04e-5, "error": 0.04},
  {"trace": "t.jsonl", "id": "jitter/ce_peer/single/0-1/4096", "family": "jitter", "test": "ce_peer",
   "variant": "single", "bytes": 4096, "use": "validation", "statistic": "p99.9", "unit": "s", "measured": 1.2e-5,
   "predicted": 1.18e-5, "error": -0.0167}
 ],
 "skipped": ["t.jsonl:uvm/a: not modelled", "t.jsonl:uvm/b: not modelled"]
})";

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("plot_validation.py: one figure per test and variant, and a summary") {
  const auto python = python_with_matplotlib();
  if (!python) return;
  const PlotScratchDir dir{"plots"};
  std::ofstream(dir / "validation.json") << VALIDATION_JSON;
  const std::string plots = (dir / "plots").string();
  const ScriptResult r =
      run_script(*python, fmt::format("'{}' --out '{}'", (dir / "validation.json").string(), plots), dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Curves of one test/variant share a figure; the variant's space becomes '_'; uvm had nothing to draw.
  const std::set<std::string> expected{"copy-ce_peer-single.png", "copy-sm_push-in_place.png",
                                       "jitter-ce_peer-single.png", "summary.png"};
  CHECK(files_in(plots) == expected);
  for (const std::string& name : expected) {
    CHECK(fs::file_size(fs::path(plots) / name) > 1000);
    CHECK(r.out.find("wrote " + (fs::path(plots) / name).string() + "\n") != std::string::npos);
  }

  // --quiet (as `snsim validate` runs it) prints nothing, and svg is drawn too.
  const ScriptResult svg = run_script(
      *python, fmt::format("'{}' --out '{}' --format svg --quiet", (dir / "validation.json").string(), plots), dir);
  CHECK(svg.exit_code == 0);
  CHECK(svg.out.empty());
  CHECK(fs::file_size(fs::path(plots) / "summary.svg") > 1000);
}

// Bad input is found before matplotlib is imported: any python3 will do.
TEST_CASE("plot_validation.py: bad input exits 2 with one line naming the file and the field") {
  std::vector<std::string> tried;
  const std::string python = snsim::studies::find_python(tried).value_or("python3");
  if (snsim::studies::run_program(python, {"-c", "pass"}, /*quiet=*/true) != 0) {
    MESSAGE("skipped: no python3");
    return;
  }
  const PlotScratchDir dir{"bad"};
  const std::string file = (dir / "validation.json").string();
  auto run_on = [&](const std::string& text) {
    std::ofstream(file) << text;
    return run_script(python, fmt::format("'{}' --out '{}'", file, (dir / "plots").string()), dir);
  };
  std::string expected;
  ScriptResult r;
  SUBCASE("missing file") {
    r = run_script(python, fmt::format("'{}'", (dir / "none.json").string()), dir);
    expected = (dir / "none.json").string() + ": cannot open the file: No such file or directory\n";
  }
  SUBCASE("malformed JSON") {
    r = run_on("{\"pass\": true,\n \"families\": [}");
    expected = file + ":2:15: malformed JSON: Expecting value\n";
  }
  SUBCASE("not a validation result") {
    r = run_on(R"({"schema": "snsim-trace/1"})");
    expected = file + ": not a validation.json of `snsim validate --out` (no \"pass\": true/false at the top)\n";
  }
  SUBCASE("a comparison without its measured value") {
    std::string text = VALIDATION_JSON;
    text.replace(text.find("\"measured\": 9.5e-6,"), 19, "");
    r = run_on(text);
    expected = file + ": comparisons[1]: missing \"measured\"\n";
  }
  SUBCASE("a bound that is not a number") {
    std::string text = VALIDATION_JSON;
    text.replace(text.find("{\"max\": 0.1}"), 12, "{\"max\": \"10 %\"}");
    r = run_on(text);
    expected = file + ": families[1].bound: expected {median: number, max: number}, found {\"max\": \"10 %\"}\n";
  }
  CHECK(r.exit_code == 2);
  CHECK(r.err == expected);
  CHECK_FALSE(fs::exists(dir / "plots"));
}

// Plots are for looking: whether they are drawn or not, `snsim validate` exits by the validation result.
TEST_CASE("snsim validate --out: plots into DIR/plots, or one line saying why not") {
  const PlotScratchDir dir{"validate"};
  const std::string trace = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200/h200x1-launch.jsonl";
  const std::string out = (dir / "v").string();
  auto validate = [&](const std::string& environment) {
    const std::string command = fmt::format("{} '{}' validate '{}' --out '{}' > '{}' 2> '{}'", environment,
                                            SNSIM_BINARY, trace, out, (dir / "out").string(), (dir / "err").string());
    const int status = std::system(command.c_str());
    return ScriptResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, snsim::read_file(dir / "out"),
                        snsim::read_file(dir / "err")};
  };
  SUBCASE("no python3 with matplotlib") {
    const ScriptResult r = validate("SNSIM_PYTHON=/nonexistent/python3");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\nno plots: needs python3 with matplotlib (Debian: apt install python3-matplotlib; or set "
                     "SNSIM_PYTHON); tried: /nonexistent/python3 (not found)\nvalidation passed\n") !=
          std::string::npos);
    CHECK(fs::exists(fs::path(out) / "validation.json"));
    CHECK_FALSE(fs::exists(fs::path(out) / "plots"));
  }
  SUBCASE("found") {
    if (!python_with_matplotlib()) return;
    const ScriptResult r = validate("");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\nwrote plots into " + (fs::path(out) / "plots").string() + "\nvalidation passed\n") !=
          std::string::npos);
    CHECK(fs::file_size(fs::path(out) / "plots" / "summary.png") > 1000);
  }
}

// Other tools' output: one figure per tool and test, one line per file and variant, no bound without --bounds.
constexpr const char* IMPORTED_JSON = R"({
 "pass": true,
 "families": [
  {"family": "collective", "imported": true, "validation_records": 4, "calibration_records": 0,
   "skipped_records": 1, "median_abs_error": 0.1, "max_abs_error": 0.3, "bound": {}, "pass": true, "note": ""}
 ],
 "comparisons": [
  {"trace": "logs/a.txt", "id": "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024", "source": "nccl-tests",
   "family": "collective", "test": "all_reduce_perf", "variant": "out_of_place", "bytes": 1024, "use": "validation",
   "statistic": "median", "unit": "s", "measured": 2e-5, "predicted": 2.2e-5, "error": 0.1},
  {"trace": "logs/a.txt", "id": "nccl-tests/all_reduce_perf/out_of_place/float/sum/1048576", "source": "nccl-tests",
   "family": "collective", "test": "all_reduce_perf", "variant": "out_of_place", "bytes": 1048576,
   "use": "validation", "statistic": "median", "unit": "s", "measured": 4e-5, "predicted": 5.2e-5, "error": 0.3},
  {"trace": "logs/a.txt", "id": "nccl-tests/all_reduce_perf/in_place/float/sum/1024", "source": "nccl-tests",
   "family": "collective", "test": "all_reduce_perf", "variant": "in_place", "bytes": 1024, "use": "validation",
   "statistic": "median", "unit": "s", "measured": 2e-5, "predicted": 2.2e-5, "error": 0.1},
  {"trace": "logs/b.txt", "id": "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024", "source": "nccl-tests",
   "family": "collective", "test": "all_reduce_perf", "variant": "out_of_place", "bytes": 1024, "use": "validation",
   "statistic": "median", "unit": "s", "measured": 2.1e-5, "predicted": 2.2e-5, "error": 0.048}
 ],
 "skipped": ["logs/a.txt:nccl-tests/all_reduce_perf/in_place/float/sum/0: 0 bytes"]
})";

TEST_CASE("plot_validation.py: imported tool output is drawn per tool and test, one line per file") {
  const auto python = python_with_matplotlib();
  if (!python) return;
  const PlotScratchDir dir{"imported"};
  std::ofstream(dir / "validation.json") << IMPORTED_JSON;
  const std::string plots = (dir / "plots").string();
  const ScriptResult r =
      run_script(*python, fmt::format("'{}' --out '{}'", (dir / "validation.json").string(), plots), dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // in_place and out_of_place of one test share the figure (their lines), named after the tool ('-' becomes '_').
  CHECK(files_in(plots) == std::set<std::string>{"nccl_tests-collective-all_reduce_perf.png", "summary.png"});
  CHECK(fs::file_size(fs::path(plots) / "nccl_tests-collective-all_reduce_perf.png") > 1000);
}
