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

TEST_CASE("compare: per GPU waiting time and on whom, from the reports' waits tables") {
  TempDir dir;
  // GPU 1's kernels take 1.5x as long: under BSP its TP partner (GPU 0) and its DP partner (GPU 3) wait for it in
  // every all-reduce; with nothing varying, it is the one waited on most.
  dir.write("s.yaml",
            "name: slow\n"
            "topology: {type: hgx, gpus: 4}\n"
            "models: {slow: [{gpu: 1, compute: 1.5}]}\n"
            "workloads:\n"
            "  - type: training\n"
            "    steps: 2\n"
            "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1024, micro_batches: 2}\n"
            "    parallel: {tp: 2, dp: 2}\n");
  const Result r = run_snsim(dir, {"compare", "s.yaml", "--out", "o"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("bsp_waited_on") != std::string::npos);
  const auto summary = nlohmann::json::parse(read_file(dir.path() / "o" / "compare.json"));
  for (const char* side : {"bsp", "pgas"}) {
    INFO(side);
    const auto& gpus = summary[side]["per_gpu"];
    REQUIRE(gpus.size() == 4);
    const auto report = nlohmann::json::parse(read_file(dir.path() / "o" / side / "report.json"));
    const double run_ms = report["simulated_time_s"].get<double>() * 1e3;
    for (const auto& g : gpus) {
      // A partition of the run: compute + communication + waiting + idle is its length, for every GPU.
      const double sum = g["compute_ms"].get<double>() + g["communication_ms"].get<double>() +
                         g["waiting_ms"].get<double>() + g["idle_ms"].get<double>();
      CHECK(sum == doctest::Approx(run_ms).epsilon(1e-9));
      // Waiting not hidden behind compute is part of all the time blocked, which is the waits table's.
      const auto& w = report["waits"][g["rank"].get<std::size_t>()];
      CHECK(g["blocked_ms"].get<double>() == doctest::Approx(w["waiting_s"].get<double>() * 1e3));
      CHECK(g["waiting_ms"].get<double>() <= g["blocked_ms"].get<double>() + 1e-9);
      CHECK(g["most_waited_on"] == w["most_waited_on"]);
    }
  }
  const auto& bsp = summary["bsp"]["per_gpu"];
  CHECK(bsp[0]["most_waited_on"] == 1);
  CHECK(bsp[3]["most_waited_on"] == 1);
  CHECK(bsp[0]["waiting_ms"].get<double>() > 0.1 * bsp[0]["compute_ms"].get<double>());
  CHECK(bsp[1]["waiting_ms"].get<double>() < 0.1 * bsp[0]["waiting_ms"].get<double>());
  const std::string md = read_file(dir.path() / "o" / "compare.md");
  CHECK(md.starts_with("# BSP vs PGAS: slow\n"));
  CHECK(md.find("## Per GPU") != std::string::npos);
  CHECK(md.find("| gpu0 |") != std::string::npos);
}
