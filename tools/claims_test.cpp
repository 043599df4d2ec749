// The claims of the project's seeds, each simulated by its scenarios in workloads/claims/
// (docs/studies.md#claims-from-the-seeds). Every TEST_CASE runs one scenario -- in this process (one simulation), or
// through the built `snsim compare` / `snsim study` (one simulation per child process) -- and checks snsim's result
// against the figure the table of docs/studies.md states, so that a model change cannot move the table silently: when a
// check fails, rerun the scenario, then update the table in docs/studies.md, workloads/claims/README.md and the figure
// here together.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"
#include "scenario/test_support.hpp"
#include "sim/config.hpp"
#include "tools/test_support.hpp"

using namespace snsim;
using namespace snsim::testing;
using snsim::workloads::testing::span;

namespace {

// docs/studies.md gives 3 significant digits; 1 % covers that rounding and little else.
constexpr double TOLERANCE = 0.01;

std::string claim_file(const std::string& name) {
  return std::string(SNSIM_SOURCE_DIR) + "/workloads/claims/" + name;
}

Report run_claim(const std::string& name) {
  const auto scenario = workloads::Scenario::load(ConfigDocument::load_file(claim_file(name)));
  Report report = scenario.run();
  REQUIRE(report.outcome == "completed");
  return report;
}

/// A metric of the training summary table, from a Report or from report.json.
double training_metric(const Report& report, const std::string& name) {
  for (const auto& t : report.tables)
    if (t.title == "training summary")
      for (const auto& row : t.rows)
        if (row[0] == name) return row[1].get<double>();
  FAIL("no training summary metric " << name);
  return 0;
}
double summary_metric(const nlohmann::json& summary, const std::string& name) {
  for (const auto& row : summary)
    if (row["metric"] == name) return row["value"].get<double>();
  FAIL("no training summary metric " << name);
  return 0;
}

/// Bus bandwidth utilisation of an all-reduce of `bytes` per GPU on n GPUs taking `seconds`, against a line rate.
double bus_utilisation(double bytes, int n, double seconds, double line_rate) {
  return bytes / seconds * 2.0 * (n - 1) / n / line_rate;
}

void check_near(double got, double stated) {
  INFO("snsim now gives " << got << ", the docs/studies.md table states " << stated);
  CHECK(got == doctest::Approx(stated).epsilon(TOLERANCE));
}

/// Kernels and collectives a rank launches from the host (everything but device-side PGAS ops and stream events).
int host_launches(const nlohmann::json& report, int rank) {
  int n = 0;
  for (const auto& o : report["ops"])
    if (o["rank"] == rank && (o["kind"] == "compute" || o["kind"] == "collective")) ++n;
  return n;
}

constexpr double H200_LINE = 450e9;  // NVLink 4: 18 x 25 GB/s per GPU per direction
constexpr double LAUNCH = 4.799e-6;  // stream launch, validation/params/h200.yaml (compute.launch)
constexpr double GRAPH = 0.5213e-6;  // CUDA-graph launch, same file (collective.graph_launch)

}  // namespace

TEST_CASE("claims: 1 -- 24 layers of GPT-3 175B on an NVL72 under BSP: MFU") {
  const Report r = run_claim("claim1_dense_nvl72.yaml");
  check_near(training_metric(r, "mfu_pct"), 52.66);
}

// What `snsim compare` runs for PGAS.
TEST_CASE("claims: 1 -- 24 layers of GPT-3 175B on an NVL72 under PGAS: MFU") {
  auto doc = ConfigDocument::load_file(claim_file("claim1_dense_nvl72.yaml"));
  doc->set("workloads[0].schedule=pgas", "claims test");
  const Report r = workloads::Scenario::load(doc).run();
  REQUIRE(r.outcome == "completed");
  check_near(training_metric(r, "mfu_pct"), 54.87);
}

TEST_CASE("claims: 2 -- one GPU 5 % slower in a BSP training step on 8 H200s (snsim study slow-node)") {
  TempDir dir;
  const Result r = run_snsim(dir, {"study", "slow-node", claim_file("claim2_slow_node_8gpu.yaml"), "--trials", "1",
                                   "--slow", "0:1.05", "--jobs", "1", "--out", "o"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto study = nlohmann::json::parse(read_file(dir.path() / "o" / "study.json"));
  const auto& slowed = study["points"][1];
  check_near(100 * slowed["efficiency_lost"].get<double>(), 3.93);
  check_near(slowed["amplification"].get<double>(), 0.83);
}

TEST_CASE("claims: 2 -- one GPU 5 % slower in a BSP training step on an NVL72 (snsim study slow-node)") {
  TempDir dir;
  const Result r = run_snsim(dir, {"study", "slow-node", claim_file("claim2_slow_node_72gpu.yaml"), "--trials", "1",
                                   "--slow", "0:1.05", "--jobs", "1", "--out", "o"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto study = nlohmann::json::parse(read_file(dir.path() / "o" / "study.json"));
  const auto& slowed = study["points"][1];
  check_near(100 * slowed["efficiency_lost"].get<double>(), 2.26);
  check_near(slowed["amplification"].get<double>(), 0.48);
}

TEST_CASE("claims: 3 -- 8 B all-reduce on 2 H200s, one-sided vs NCCL (the measured pair)") {
  const Report r = run_claim("claim3_allreduce_latency_2gpu.yaml");
  check_near(span(r, 0) / 20 * 1e6, 1.98);   // one-sided; measured 1.96 us (half the put_signal ping-pong)
  check_near(span(r, 1) / 20 * 1e6, 12.09);  // NCCL, stream (host paced); measured 10.16 us
  check_near(span(r, 2) / 20 * 1e6, 5.66);   // NCCL, graph; measured 5.63 us
}

TEST_CASE("claims: 3 -- 8 B all-reduce on 8 H200s, one-sided vs NCCL") {
  const Report r = run_claim("claim3_allreduce_latency_8gpu.yaml");
  check_near(span(r, 0) / 20 * 1e6, 2.04);
  check_near(span(r, 1) / 20 * 1e6, 19.1);
  check_near(span(r, 2) / 20 * 1e6, 15.88);
}

TEST_CASE("claims: 3 -- 8 B all-reduce on an NVL72, one-sided vs NCCL") {
  const Report r = run_claim("claim3_allreduce_latency_72gpu.yaml");
  check_near(span(r, 0) / 5 * 1e6, 1.97);
  check_near(span(r, 1) / 20 * 1e6, 28.77);
  check_near(span(r, 2) / 20 * 1e6, 25.9);
}

TEST_CASE("claims: 4 -- host launch time per step, BSP vs PGAS, on 8 H200s (snsim compare)") {
  TempDir dir;
  const Result r = run_snsim(dir, {"compare", claim_file("claim2_slow_node_8gpu.yaml"), "--out", "o"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto compare = nlohmann::json::parse(read_file(dir.path() / "o" / "compare.json"));
  const auto bsp = nlohmann::json::parse(read_file(dir.path() / "o" / "bsp" / "report.json"));
  const auto pgas = nlohmann::json::parse(read_file(dir.path() / "o" / "pgas" / "report.json"));
  const double step_bsp = summary_metric(compare["bsp"]["summary"], "step_mean_ms") / 1e3;
  const double step_pgas = summary_metric(compare["pgas"]["summary"], "step_mean_ms") / 1e3;
  // Share of the step one host thread spends launching for its GPU: stream launches, then CUDA-graph launches.
  check_near(100 * host_launches(bsp, 0) * LAUNCH / step_bsp, 4.455);
  check_near(100 * host_launches(pgas, 0) * LAUNCH / step_pgas, 3.751);
  check_near(100 * host_launches(bsp, 0) * GRAPH / step_bsp, 0.484);
  check_near(100 * host_launches(pgas, 0) * GRAPH / step_pgas, 0.407);
}

TEST_CASE("claims: 5 -- bandwidth utilisation of a 256 MiB all-reduce on 2 H200s, NCCL vs one-sided") {
  const Report r = run_claim("claim5_bandwidth_utilisation_2gpu.yaml");
  const double bytes = 256.0 * (1 << 20);
  check_near(100 * bus_utilisation(bytes, 2, span(r, 0) / 3, H200_LINE), 67.3);
  check_near(100 * bus_utilisation(bytes, 2, span(r, 1) / 3, H200_LINE), 54.8);
}

TEST_CASE("claims: 5 -- bandwidth utilisation of a 1 GiB all-reduce on 8 H200s, NCCL vs one-sided") {
  const Report r = run_claim("claim5_bandwidth_utilisation_8gpu.yaml");
  const double bytes = 1024.0 * (1 << 20);
  check_near(100 * bus_utilisation(bytes, 8, span(r, 0) / 3, H200_LINE), 90.1);  // NVLS: busbw over-counts
  check_near(100 * bus_utilisation(bytes, 8, span(r, 1) / 3, H200_LINE), 74.5);
  check_near(100 * bus_utilisation(bytes, 8, span(r, 2) / 3, H200_LINE), 67.8);
}

TEST_CASE("claims: 6 -- GPT-3 175B on an NVL72 (BSP), samples/s") {
  const Report r = run_claim("claim6_gpt3_175b_nvl72.yaml");
  check_near(training_metric(r, "mfu_pct"), 52.57);
  // samples/s = global batch (32 x 9 = 288 sequences) / step time.
  check_near(288 / (training_metric(r, "step_mean_ms") / 1e3), 42.90);
}

TEST_CASE("claims: 6 -- GPT-3 175B on 9 HGX H200 nodes over InfiniBand (the conventional stack), samples/s") {
  const Report r = run_claim("claim6_conventional_9hgx_ib.yaml");
  check_near(288 / (training_metric(r, "step_mean_ms") / 1e3), 18.35);
}

TEST_CASE("claims: 7 -- the gradient all-reduce of GPT-3 175B (TP 8 x PP 3 x DP 3), InfiniBand") {
  const Report r = run_claim("claim7_gradient_allreduce_ib.yaml");
  check_near(span(r, 0) * 1e3, 405.2);
}

TEST_CASE("claims: 7 -- the gradient all-reduce of GPT-3 175B (TP 8 x PP 3 x DP 3), NVL72") {
  const Report r = run_claim("claim7_gradient_allreduce_nvl72.yaml");
  check_near(span(r, 0) * 1e3, 27.0);
}

TEST_CASE("claims: 8 -- BERT-large data-parallel on 32 H100s in 4 PCIe nodes, samples/s") {
  const Report r = run_claim("claim8_pcie.yaml");
  check_near(2048 / (training_metric(r, "step_mean_ms") / 1e3), 40190);
}

TEST_CASE("claims: 8 -- BERT-large data-parallel on 4 HGX H100 nodes, samples/s") {
  const Report r = run_claim("claim8_nvlink_node.yaml");
  check_near(2048 / (training_metric(r, "step_mean_ms") / 1e3), 47210);
}

TEST_CASE("claims: 8 -- BERT-large data-parallel on 32 H100s in one NVLink switch fabric, samples/s") {
  const Report r = run_claim("claim8_nvlink_mesh.yaml");
  check_near(2048 / (training_metric(r, "step_mean_ms") / 1e3), 48070);
}

TEST_CASE("claims: 9 -- sparsification with overlap and grouping, BERT-large on 4 HGX H100 nodes") {
  const Report r = run_claim("claim9_sparsification.yaml");
  const double baseline = span(r, 0), grouped = span(r, 1), overlapped = span(r, 2), sparse = span(r, 3),
               sparse10 = span(r, 4);
  check_near(baseline / 2 * 1e3, 46.59);
  check_near(100 * (baseline / sparse - 1), 8.62);    // the claim's three together, against a flat ring
  check_near(100 * (grouped / sparse - 1), 14.41);    // against the two-level grouping
  check_near(100 * (overlapped / sparse - 1), 5.65);  // sparsification alone (d = 1 %)
  check_near(100 * (overlapped / sparse10 - 1), 3.90);
}
