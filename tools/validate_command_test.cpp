// `snsim validate` and `snsim calibrate` on other tools' output, as a user runs them on a folder of their logs.
#include <doctest/doctest.h>

#include <filesystem>

#include "tools/test_support.hpp"

using namespace snsim::testing;

namespace {

namespace fs = std::filesystem;

const fs::path REAL = fs::path(SNSIM_SOURCE_DIR) / "validation/importers/samples/real";

/// A folder of logs as a user has them: tool output under its own names, and a README.
fs::path my_logs(const TempDir& dir, const std::vector<std::string>& files) {
  const fs::path logs = dir.path() / "my-logs";
  fs::create_directories(logs);
  for (const auto& f : files) fs::copy_file(REAL / f, logs / f);
  dir.write("my-logs/README.md", "# notes\n");
  return logs;
}

}  // namespace

TEST_CASE(
    "snsim validate my-logs/ reports per tool and test without pass/fail, snsim calibrate my-logs/ with provenance") {
  TempDir dir;
  const auto logs = my_logs(dir, {"nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt", "nvbandwidth-v0.8-1xh200.txt"});
  // Two GPU models in one folder validate together (one platform each) ...
  const Result v = run_snsim(dir, {"validate", logs.string(), "--out", "check"});
  INFO(v.out, v.err);
  REQUIRE(v.code == 0);
  CHECK(v.err.find("README.md: not a format snsim reads") != std::string::npos);
  CHECK(v.out.find("simulated on an HGX node of 8 h100 GPUs") != std::string::npos);
  CHECK(v.out.find("collective (imported)") != std::string::npos);
  CHECK(v.out.find("not judged (no --bounds)") != std::string::npos);
  CHECK(v.out.find("nccl-tests         all_reduce_perf") != std::string::npos);
  CHECK(v.out.find("worst: ") != std::string::npos);
  CHECK(v.out.find("no twin (1): GPU loads from host memory") != std::string::npos);
  CHECK(v.out.find("PASS") == std::string::npos);
  CHECK(v.out.find("FAIL") == std::string::npos);
  CHECK(fs::exists(dir.path() / "check/validation.json"));
  // ... but one parameter file describes one GPU model.
  const Result mixed = run_snsim(dir, {"calibrate", logs.string(), "-o", "mine.yaml"});
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("one parameter file describes one GPU model") != std::string::npos);

  TempDir one;
  const auto h100 = my_logs(one, {"nvbandwidth-d2d-ce-latency-8xh100-sxm-kr-unresolved.txt",
                                  "nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt"});
  // The nvbandwidth log prints no device names: the user says which GPU.
  const Result c = run_snsim(one, {"calibrate", h100.string(), "--set", "gpu=h100", "-o", "mine.yaml"});
  INFO(c.out, c.err);
  REQUIRE(c.code == 0);
  const std::string yaml = read_file(one.path() / "mine.yaml");
  // The CE rate from nvbandwidth's one-way peer copies, with the files and records it came from.
  CHECK(yaml.find("      efficiency: ") != std::string::npos);
  CHECK(yaml.find("nvbandwidth-d2d-ce-latency-8xh100-sxm-kr-unresolved.txt") != std::string::npos);
  CHECK(yaml.find(":nvbandwidth/device_to_device_memcpy_write_ce/gpu0-gpu1") != std::string::npos);
  CHECK(yaml.find("records are no experiment the fits read") != std::string::npos);
  // The parameter file reads back as --params.
  const Result back = run_snsim(one, {"validate", h100.string(), "--set", "gpu=h100", "--params", "mine.yaml"});
  CHECK(back.code == 0);
}

TEST_CASE("snsim validate: a log whose records snsim cannot compare exits 2 with the reasons, never 0.0 %") {
  TempDir dir;
  const Result r = run_snsim(
      dir, {"validate", (REAL / "perftest-nvshmem39-reduction_on_stream-cut.txt").string(), "--set", "gpu=h100"});
  CHECK(r.code == 2);
  CHECK(r.err.find("none of its 7 records can be compared with snsim: 7 x reduction_on_stream: snsim models no "
                   "NVSHMEM collectives") != std::string::npos);
  CHECK(r.out.empty());
  // Without the GPU model the platform is the error, and it says how to give it.
  const Result no_gpu =
      run_snsim(dir, {"validate", (REAL / "perftest-nvshmem39-reduction_on_stream-cut.txt").string()});
  CHECK(no_gpu.code == 2);
  CHECK(no_gpu.err.find("pass --set gpu=PRESET or --platform SCENARIO.yaml") != std::string::npos);
  CHECK(no_gpu.out.empty());
  // A platform scenario: its topology replaces the one read from the file.
  dir.write("pcie.yaml", "topology: {type: pcie, gpu: h100, gpus: 6}\n");
  const Result pcie = run_snsim(dir, {"validate", (REAL / "nvbandwidth-issue50-v0.8-d2d-read-ce-6xa6000.txt").string(),
                                      "--platform", "pcie.yaml"});
  INFO(pcie.out, pcie.err);
  CHECK(pcie.code == 0);
  CHECK(pcie.out.find("simulated on the topology of pcie.yaml") != std::string::npos);
}

TEST_CASE("snsim traces show names the platform an imported log is simulated on, or what it leaves to the user") {
  TempDir dir;
  const Result two = run_snsim(
      dir, {"traces", "show", (REAL / "nccl-tests-issue290-all_reduce-16xh100-2node-srun-label.txt").string()});
  CHECK(two.code == 0);
  CHECK(two.out.find("  platform a superpod of 2 HGX h100 nodes over InfiniBand, 8 GPUs of each used\n") !=
        std::string::npos);
  const Result cut = run_snsim(
      dir,
      {"traces", "show", (REAL / "nccl-tests-coreweave-pr43-all_reduce-72xgb200-nvl72-rank-list-cut.txt").string()});
  CHECK(cut.code == 0);
  CHECK(cut.out.find("  platform not known from the file: ") != std::string::npos);
  CHECK(cut.out.find("pass --set gpu=PRESET") != std::string::npos);
}

TEST_CASE("snsim validate: a bound on family/test judges that test's comparisons in a row of their own") {
  TempDir dir;
  const std::string steps = (fs::path(SNSIM_SOURCE_DIR) / "validation/traces/h200/h200x1-compute-steps.jsonl").string();
  // The whole steps are within 10 % of their measurement (docs/models-and-validation.md#train-steps), not 0.1 %.
  dir.write("loose.yaml", "compute/train_step: {median: 0.05, max: 0.10}\n");
  dir.write("tight.yaml", "compute/train_step: {max: 0.001}\n");
  const Result loose = run_snsim(dir, {"validate", steps, "--params", "h200", "--bounds", "loose.yaml"});
  INFO(loose.out, loose.err);
  CHECK(loose.code == 0);
  CHECK(loose.out.find("compute/train_step") != std::string::npos);
  const Result tight = run_snsim(dir, {"validate", steps, "--params", "h200", "--bounds", "tight.yaml"});
  CHECK(tight.code == 1);
  CHECK(tight.out.find("FAIL") != std::string::npos);
  dir.write("bad.yaml", "compute/: {max: 0.1}\n");
  const Result bad = run_snsim(dir, {"validate", steps, "--bounds", "bad.yaml"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("bad.yaml:1:11: compute/: not a trace family, family/test or known_misses") != std::string::npos);
}
