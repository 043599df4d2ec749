// `snsim compare` as a user runs it: both schedules side by side, and its input errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tools/test_support.hpp"

using namespace snsim::testing;

TEST_CASE("compare: a scenario without a training workload is bad input (exit 2)") {
  TempDir dir;
  dir.write("s.yaml",
            "topology: {type: hgx, gpus: 2}\n"
            "workloads:\n"
            "  - {type: program, ops: [{barrier: {}}]}\n");
  const Result r = run_snsim(dir, {"compare", "s.yaml"});
  CHECK(r.code == 2);
  CHECK(r.err ==
        "s.yaml:3:3: workloads: no workload of type training; snsim compare runs a training workload as bsp and as "
        "pgas\n");
}

TEST_CASE("compare: runs a training step as BSP and as PGAS and writes both reports") {
  TempDir dir;
  dir.write("s.yaml",
            "name: small\n"
            "topology: {type: hgx, gpus: 4}\n"
            "workloads:\n"
            "  - type: training\n"
            "    steps: 2\n"
            "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1024, micro_batches: 2}\n"
            "    parallel: {tp: 2, dp: 2}\n");
  const Result r = run_snsim(dir, {"compare", "s.yaml", "--out", "o"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("step_mean_ms") != std::string::npos);
  CHECK(r.out.find("pgas/bsp") != std::string::npos);
  const auto summary = nlohmann::json::parse(read_file(dir.path() / "o" / "compare.json"));
  CHECK(summary["bsp"]["outcome"] == "completed");
  CHECK(summary["pgas"]["outcome"] == "completed");
  CHECK(fs::exists(dir.path() / "o" / "bsp" / "report.json"));
  CHECK(fs::exists(dir.path() / "o" / "pgas" / "report.json"));
  // Both ran the same model: the same model FLOPs per step.
  auto value = [&](const char* side, const char* name) {
    for (const auto& row : summary[side]["summary"])
      if (row["metric"] == name) return row["value"].get<double>();
    return -1.0;
  };
  CHECK(value("bsp", "model_tflop_per_step") == value("pgas", "model_tflop_per_step"));
  CHECK(value("bsp", "step_mean_ms") > 0);
  CHECK(value("pgas", "step_mean_ms") > 0);
}
