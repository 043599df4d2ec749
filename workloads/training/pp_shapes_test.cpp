// Pipeline-parallel training shapes that used to abort SimGrid ("No rendez-vous point defined for recv" in
// CollectiveExecutor::ring_steps): two ranks asked for the same pair mailbox in one scheduling round, and the second
// got the first's still-empty entry (CollectiveExecutor::mailbox). Each TEST_CASE runs one simulation, except the
// sweep, which runs each shape in a forked child (sim/isolated.hpp).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "scenario/test_support.hpp"
#include "sim/isolated.hpp"

using namespace snsim;
using namespace snsim::workloads;
using snsim::workloads::testing::load;
using snsim::workloads::testing::metric;
using snsim::workloads::testing::table;

namespace {

/// A small dense model (or MoE with `experts`) on `topology` with the given plan, one BSP step.
std::string shapes_scenario(const std::string& topology, int tp, int pp, int dp, int ep = 1, int experts = 0) {
  const std::string moe = experts > 0 ? fmt::format(", moe: {{experts: {}, top_k: 2}}", experts) : "";
  return fmt::format(
      "topology: {}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {{layers: 4, hidden: 1024, heads: 16, sequence: 512, micro_batches: 4{}}}\n"
      "    parallel: {{tp: {}, pp: {}, dp: {}, ep: {}}}\n",
      topology, moe, tp, pp, dp, ep);
}

constexpr const char* HGX8 = "{type: hgx, gpu: h200, gpus: 8}";
constexpr const char* NVL16 = "{type: nvl72, gpus: 16}";          // 16 GB200s of one NVLink domain
constexpr const char* SUPERPOD16 = "{type: superpod, nodes: 2}";  // two 8 x H200 HGX nodes over InfiniBand

/// Runs the scenario and checks that the step completes on every rank with sane figures: every rank computes, no
/// rank computes for longer than the step, and the step is no faster than the model's FLOPs at the GPUs' peak.
void check_step(const std::string& yaml, int gpus, int pp) {
  CAPTURE(yaml);
  const Report r = load(yaml).run();
  REQUIRE(r.outcome == "completed");
  const double step_ms = metric(r, "step_mean_ms");
  const auto& per_gpu = table(r, "training: time per GPU").rows;
  REQUIRE(per_gpu.size() == static_cast<std::size_t>(gpus));
  double compute_max = 0;
  for (const auto& row : per_gpu) {
    CAPTURE(row[0].dump());           // the rank
    CHECK(row[4].get<double>() > 0);  // compute_ms: every rank ran its kernels
    compute_max = std::max(compute_max, row[4].get<double>());
  }
  CHECK(step_ms >= compute_max);
  const double mfu = metric(r, "mfu_pct");
  CHECK(mfu > 0);
  CHECK(mfu < 100);
  // A pipeline leaves each stage idle in its bubble: with pp stages and m = 4 micro-batches (1F1B) a stage is busy
  // computing at most m / (m + pp - 1) of the step.
  if (pp > 1) CHECK(compute_max <= step_ms * 4 / (4 + pp - 1) * 1.05);
}

}  // namespace

TEST_CASE("training pp shapes: TP 4 x PP 2 on 8 H200s completes") {
  check_step(shapes_scenario(HGX8, 4, 2, 1), 8, 2);
}

TEST_CASE("training pp shapes: TP 8 x PP 2 on 16 NVL72 GPUs completes") {
  check_step(shapes_scenario(NVL16, 8, 2, 1), 16, 2);
}

TEST_CASE("training pp shapes: TP 2 x PP 2 x DP 4 on 16 NVL72 GPUs completes") {
  check_step(shapes_scenario(NVL16, 2, 2, 4), 16, 2);
}

TEST_CASE("training pp shapes: TP 2 x PP 2 x DP 2 on 8 H200s completes") {
  check_step(shapes_scenario(HGX8, 2, 2, 2), 8, 2);
}

TEST_CASE("training pp shapes: every tp x pp x dp (x ep) shape on 8 and 16 GPUs completes") {
  struct Shape {
    const char* topology;
    int gpus, tp, pp, dp, ep, experts;
  };
  std::vector<Shape> shapes;
  for (const auto& [topology, gpus] : {std::pair{HGX8, 8}, std::pair{NVL16, 16}, std::pair{SUPERPOD16, 16}})
    for (int tp = 1; tp <= 8; tp *= 2)
      for (int pp = 1; pp <= 4 && tp * pp <= gpus; pp *= 2)  // 4 layers: pp divides them
        shapes.push_back({topology, gpus, tp, pp, gpus / (tp * pp), 1, 0});
  // Expert parallelism within a stage's tp x dp ranks.
  shapes.push_back({HGX8, 8, 1, 2, 4, 4, 4});
  shapes.push_back({HGX8, 8, 2, 2, 2, 2, 4});
  shapes.push_back({NVL16, 16, 2, 2, 4, 4, 8});
  shapes.push_back({SUPERPOD16, 16, 2, 2, 4, 4, 8});
  const auto outcomes = run_isolated_each(shapes.size(), 2, [&](std::size_t i) {
    const auto& s = shapes[i];
    const Report r = load(shapes_scenario(s.topology, s.tp, s.pp, s.dp, s.ep, s.experts)).run();
    return fmt::format("{} {}", r.outcome, metric(r, "mfu_pct") > 0 && metric(r, "mfu_pct") < 100);
  });
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    CAPTURE(fmt::format("{} GPUs: tp {} pp {} dp {} ep {}", s.gpus, s.tp, s.pp, s.dp, s.ep));
    CHECK(outcomes[i] == "completed true");
  }
}
