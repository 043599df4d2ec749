#include "tools/traces_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/files.hpp"
#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs the real `snsim` with `arguments` (shell words) in a fresh temporary folder.
CommandResult run_snsim(const std::string& arguments, const fs::path& dir) {
  fs::create_directories(dir);
  const std::string command = std::string("'") + SNSIM_BINARY + "' " + arguments + " > '" + (dir / "out").string() +
                              "' 2> '" + (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, snsim::read_file(dir / "out"), snsim::read_file(dir / "err")};
}

/// A temporary folder, removed when the test ends.
struct TracesScratchDir {
  explicit TracesScratchDir(const std::string& name)
      : path{fs::temp_directory_path() / ("snsim-traces-test-" + std::to_string(::getpid()) + "-" + name)} {
    fs::remove_all(path);
  }
  ~TracesScratchDir() { fs::remove_all(path); }
  TracesScratchDir(const TracesScratchDir&) = delete;
  TracesScratchDir& operator=(const TracesScratchDir&) = delete;
  operator const fs::path&() const { return path; }
  fs::path operator/(const std::string& leaf) const { return path / leaf; }
  fs::path path;
};

std::string sample_path(const std::string& name) {
  return std::string(SNSIM_SOURCE_DIR) + "/validation/importers/samples/" + name;
}

}  // namespace

// Expected numbers are printed through sim/units' to_string, so that these tests pin the layout, not the digits.
TEST_CASE("traces show: summary per family in human units") {
  const Trace trace = validation::testing::import_sample("nvbandwidth.txt");
  const std::string peak =
      to_string(BytesPerSecond{validation::testing::record(trace, "nvbandwidth/device_local_copy/gpu1-gpu1").median});
  const std::string lowest = to_string(
      Seconds{validation::testing::record(trace, "nvbandwidth/device_to_device_latency_sm/gpu1-gpu0").median});
  CHECK(tools::trace_summary(trace) ==
        "nvbandwidth.txt: complete, 14 records\n"
        "  from     nvbandwidth v0.8\n"
        "  host     gpunode   started unknown\n"
        "  gpus     2 x NVIDIA H200\n"
        "  driver   580.159   cuda 13.0   nccl unknown   nvshmem unknown\n"
        "  platform an HGX node of 2 h200 GPUs\n"
        "  family      records tests  sizes                 representative\n"
        "  copy             12     4  512 MiB               peak " +
            peak + " (device_local_copy, 512 MiB)\n" + "  latency           2     1  0 B                   lowest " +
            lowest + " (device_to_device_latency_sm, 0 B)\n");
}

TEST_CASE("traces show: collectives show bus bandwidth, incomplete traces say so") {
  const Trace trace = validation::testing::import_sample("nccl_tests_all_gather_cut.txt");
  const std::string summary = tools::trace_summary(trace);
  CHECK(summary.starts_with("nccl_tests_all_gather_cut.txt: INCOMPLETE (capture cut short?), 2 records\n"));
  CHECK(summary.find("  note: nccl_tests_all_gather_cut.txt: incomplete: no \"# Avg bus bandwidth\" line") !=
        std::string::npos);
  CHECK(summary.find(
            "peak busbw " + to_string(BytesPerSecond{0.05 * 1e9}) + " (1 KiB); lowest " +
            to_string(Seconds{
                validation::testing::record(trace, "nccl-tests/all_gather_perf/in_place/float/none/1024").median}) +
            " (all_gather_perf/in_place, 1 KiB)") != std::string::npos);
}

TEST_CASE("traces show: the command exits 0 on good traces and 2 with one line on a bad one") {
  const TracesScratchDir dir{"show"};
  SUBCASE("good") {
    const CommandResult r = run_snsim(
        "traces show '" + sample_path("nccl_tests_all_reduce.txt") + "' '" + sample_path("perftest_pt_to_pt.txt") + "'",
        dir);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("collective") != std::string::npos);
    CHECK(r.out.find("nvshmem") != std::string::npos);
  }
  SUBCASE("bad") {
    fs::create_directories(dir);
    std::ofstream(dir / "bad.jsonl") << R"({"schema": "snsim-trace/1", "probe": 1})" << '\n';
    const CommandResult r = run_snsim("traces show '" + (dir / "bad.jsonl").string() + "'", dir);
    CHECK(r.exit_code == 2);
    CHECK(r.err == (dir / "bad.jsonl").string() + ":1: probe: expected a string or null, found 1\n");
  }
}

TEST_CASE("traces import: any format becomes an snsim trace that reads back the same") {
  const TracesScratchDir dir{"import"};
  const CommandResult r = run_snsim(
      "traces import '" + sample_path("p2p_bandwidth_latency.txt") + "' --out '" + (dir / "p2p.jsonl").string() + "'",
      dir);
  CHECK(r.exit_code == 0);
  const Trace back = read_trace(dir / "p2p.jsonl");
  CHECK(back.records == validation::testing::import_sample("p2p_bandwidth_latency.txt").records);
}

TEST_CASE("traces import --op: names the collective of an nccl-tests log that does not") {
  const TracesScratchDir dir{"import-op"};
  const std::string log = sample_path("real/nccl-tests-issue128-reduce_scatter-8gpu-2node-zero-size-rows.txt");
  // Copied under a name that says nothing, so that only --op can tell.
  fs::create_directories(dir.path);
  fs::copy_file(log, dir / "cluster.log");
  const CommandResult refused = run_snsim(
      "traces import '" + (dir / "cluster.log").string() + "' --out '" + (dir / "a.jsonl").string() + "'", dir);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("name it with --op") != std::string::npos);
  const CommandResult r = run_snsim("traces import '" + (dir / "cluster.log").string() +
                                        "' --op reduce_scatter --out '" + (dir / "a.jsonl").string() + "'",
                                    dir);
  CHECK(r.exit_code == 0);
  CHECK(read_trace(dir / "a.jsonl").records.front().test == "reduce_scatter_perf");
}

TEST_CASE("traces plot: images, or a clear message when matplotlib is missing") {
  const TracesScratchDir dir{"plot"};
  const CommandResult r =
      run_snsim("traces plot '" + sample_path("snsim_trace.jsonl") + "' --out '" + (dir / "plots").string() + "'", dir);
  if (r.exit_code == 3) {
    // No interpreter with matplotlib on this machine: the message must say what to install.
    CHECK(r.err.find("needs python3 with matplotlib") != std::string::npos);
    return;
  }
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir / "plots" / "snsim_trace_copy_bandwidth.png"));
  CHECK(fs::exists(dir / "plots" / "snsim_trace_latency_distribution.png"));
  CHECK(fs::exists(dir / "plots" / "snsim_trace_launch_distribution.png"));
  CHECK_FALSE(fs::exists(dir / "plots" / "snsim_trace.jsonl"));  // already an snsim trace: nothing converted

  // Other formats are converted first, and the conversion is kept beside the images.
  const CommandResult converted = run_snsim(
      "traces plot '" + sample_path("perftest_pt_to_pt.txt") + "' --out '" + (dir / "plots").string() + "'", dir);
  CHECK(converted.exit_code == 0);
  CHECK(fs::exists(dir / "plots" / "perftest_pt_to_pt.jsonl"));
  CHECK(fs::exists(dir / "plots" / "perftest_pt_to_pt_nvshmem_bandwidth.png"));
}

TEST_CASE("traces show and validate: a family that failed during the capture is reported, its records kept") {
  TracesScratchDir dir("failed-family");
  // The committed launch trace, cut after its second record and ended the way the probe ends a failed family.
  std::istringstream committed(
      snsim::read_file(std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200/h200x1-launch.jsonl"));
  std::string text, line;
  for (int i = 0; i < 3 && std::getline(committed, line); ++i) text += line + "\n";
  const std::string error =
      "rank 0: launch.cu:42: cudaLaunchKernel(...) failed: cudaErrorLaunchFailure: unspecified launch failure";
  text += R"({"incomplete":true,"family":"launch","error":")" + error + R"(","records":2})" + "\n";
  fs::create_directories(dir.path);
  const fs::path trace = dir / "failed.jsonl";
  std::ofstream(trace) << text;

  const CommandResult show = run_snsim("traces show '" + trace.string() + "'", dir / "show");
  CHECK(show.exit_code == 0);
  CHECK(show.out.starts_with(trace.string() + ": INCOMPLETE (launch failed), 2 records\n"));
  CHECK(show.err == "warning: " + trace.string() + ":4: family launch failed during the capture: " + error + "\n");

  const CommandResult validate = run_snsim("validate '" + trace.string() + "'", dir / "validate");
  CHECK((validate.exit_code == 0 || validate.exit_code == 1));  // a verdict, not an input error
  CHECK(validate.err == "warning: " + trace.string() +
                            ":4: family launch failed during the capture, its records are "
                            "incomplete: " +
                            error + "\n");
  CHECK(validate.out.find("INCOMPLETE: the capture failed (" + trace.string() + ":4)") != std::string::npos);
}
