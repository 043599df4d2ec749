// The interleaved 1F1B schedule: Megatron-Core's order and warm-up, its bubble and its pipeline traffic measured on
// simulated steps against Narayanan et al. 2021's (p - 1) / (v m), its activations in flight, and its input errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/schedule.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;
using snsim::workloads::testing::metric;

namespace {

ParallelPlan plan(int pp, int vp, int micro_batches) {
  ParallelPlan p;
  p.pp = pp;
  p.vp = vp;
  p.micro_batches = micro_batches;
  return p;
}

/// Four uniform stages on one HGX (no TP, no DP), 16 layers, 8 micro-batches, a small vocabulary so that the last
/// stage's logits add under 1 % to its work. A transfer kernel waiting for its peer takes no SMs from compute here
/// (models.compute.comm_sm_share 0), and clocks are not power-capped (power_duty 1: a bubble would let the GPU
/// cool and run faster after it), so that the kernels take as long in every schedule and the bubble is the
/// schedule's alone.
std::string pipeline_scenario(int vp) {
  return fmt::format(
      "topology: {{type: hgx, gpu: h100, gpus: 4}}\n"
      "models: {{compute: {{comm_sm_share: 0, power_duty: 1}}}}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {{layers: 16, hidden: 4096, heads: 32, sequence: 4096, vocabulary: 1024, micro_batches: 8}}\n"
      "    parallel: {{pp: 4, vp: {}}}\n",
      vp);
}

struct PipelineRun {
  double bubble = 0;          // the pipeline's span over the busiest stage's forward and backward kernels, minus 1
  double transfer = 0;        // the shortest transfer between stages, over that busiest stage's kernels
  double pipeline_bytes = 0;  // bytes of the broadcasts between stages, both ends' records
  int transfers = 0;
};

PipelineRun run_pipeline(int vp) {
  const std::string text = run_isolated([vp] {
    const std::string yaml = pipeline_scenario(vp);
    const Report r = load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const auto doc = ConfigDocument::load_string(yaml, "t.yaml");
    const auto scenario = Scenario::load(ConfigDocument::load_string(yaml, "t.yaml"));
    const auto t = make_training(doc->root().child("workloads").elements().front(), scenario.fabric());
    double start = 1e300, end = 0, bytes = 0, shortest = 1e300;
    int transfers = 0;
    std::map<int, double> busy;
    for (const auto& o : r.ops) {
      if (o.tag < 0 || t->info(o.tag).pass == OpInfo::step_level) continue;
      start = std::min(start, o.start.count());
      end = std::max(end, o.end.count());
      if (o.kind == "compute") busy[o.rank] += (o.end - o.start).count();
      if (o.kind == "collective") {  // without TP and DP, only the stages' transfers
        bytes += static_cast<double>(o.bytes.count());
        shortest = std::min(shortest, (o.end - o.start).count());
        ++transfers;
      }
    }
    double ideal = 0;
    for (const auto& [rank, b] : busy) ideal = std::max(ideal, b);
    return fmt::format("{} {} {} {}", (end - start) / ideal - 1, shortest / ideal, bytes, transfers);
  });
  PipelineRun out;
  std::istringstream in(text);
  in >> out.bubble >> out.transfer >> out.pipeline_bytes >> out.transfers;
  return out;
}

std::string schedule_scenario(const std::string& training) {
  return "topology: {type: hgx, gpus: 8}\nworkloads:\n  - type: training\n" + training;
}

}  // namespace

TEST_CASE("interleaved 1F1B: Megatron-Core's warm-up, chunk order, and every task once, backward after forward") {
  // (p - i - 1) x 2 + (v - 1) x p warm-up forwards (schedules.py), all m v when m = p; 1F1B's p - i - 1 when v = 1.
  CHECK(interleaved_warmup(plan(4, 2, 8), 0) == 10);
  CHECK(interleaved_warmup(plan(4, 2, 8), 3) == 4);
  CHECK(interleaved_warmup(plan(4, 3, 8), 1) == 12);
  CHECK(interleaved_warmup(plan(4, 2, 4), 3) == 8);
  CHECK(interleaved_warmup(plan(4, 1, 8), 1) == 2);
  CHECK(interleaved_warmup(plan(4, 1, 2), 0) == 2);
  for (const auto& p : {plan(4, 2, 8), plan(4, 4, 12), plan(2, 3, 4), plan(4, 1, 8)})
    for (int stage = 0; stage < p.pp; ++stage) {
      CAPTURE(p.vp);
      CAPTURE(stage);
      const auto order = interleaved_order(p, stage);
      REQUIRE(order.size() == static_cast<std::size_t>(2 * p.micro_batches * p.vp));
      std::set<std::pair<int, int>> forwarded, backwarded;
      for (const auto& task : order) {
        const std::pair key{task.micro_batch, task.chunk};
        if (task.forward) {
          CHECK(forwarded.insert(key).second);
        } else {
          CHECK(forwarded.contains(key));
          CHECK(backwarded.insert(key).second);
        }
      }
      CHECK(backwarded.size() == static_cast<std::size_t>(p.micro_batches * p.vp));
      const int warmup = interleaved_warmup(p, stage);
      CHECK(order[static_cast<std::size_t>(warmup)].forward == (warmup < p.micro_batches * p.vp));
    }
  // Groups of p micro-batches through each chunk: stage 0 of p 2, v 2 runs micro-batches 0, 1 through chunk 0, then
  // through chunk 1, then 2, 3 through chunk 0; its backwards start with chunk 1.
  const auto order = interleaved_order(plan(2, 2, 4), 0);
  CHECK(order[0] == PipelineTask{true, 0, 0});
  CHECK(order[1] == PipelineTask{true, 1, 0});
  CHECK(order[2] == PipelineTask{true, 0, 1});
  CHECK(order[3] == PipelineTask{true, 1, 1});
  CHECK(order[4] == PipelineTask{true, 2, 0});
  CHECK(order[5] == PipelineTask{false, 0, 1});
}

TEST_CASE("interleaved 1F1B: stage i holds chunks i, i + p, ... of the model's layers") {
  ModelSpec m;
  m.layers = 8;
  const auto p = plan(2, 2, 4);
  std::vector<int> stage0, stage1;
  for (int local = 0; local < 4; ++local) {
    stage0.push_back(global_layer(m, p, 0, local));
    stage1.push_back(global_layer(m, p, 1, local));
  }
  CHECK(stage0 == std::vector{0, 1, 4, 5});
  CHECK(stage1 == std::vector{2, 3, 6, 7});
  CHECK(global_layer(m, plan(2, 1, 4), 1, 3) == 7);
}

TEST_CASE("interleaved 1F1B: the simulated bubble is (p - 1) / (v m) of the ideal step, for v times the transfers") {
  const double p = 4, m = 8;
  const PipelineRun one = run_pipeline(1), two = run_pipeline(2), four = run_pipeline(4);
  // The fill and the drain each cross the p v - 1 chunk boundaries once, a transfer each, on the critical path
  // (the shortest transfer: one whose two ends were ready); within 3 % of the bubble itself (the last stage's
  // logits add a little).
  auto bubble = [&](double v, const PipelineRun& run) {
    return doctest::Approx((p - 1) / (v * m) + 2 * (p * v - 1) * run.transfer).epsilon(0.03).scale(0);
  };
  CHECK(one.bubble == bubble(1, one));
  CHECK(two.bubble == bubble(2, two));
  CHECK(four.bubble == bubble(4, four));
  CHECK(2 * (p * 4 - 1) * four.transfer < 0.2 * (p - 1) / (4 * m));  // the transfers are a small part of it
  // Each of the p v - 1 chunk boundaries carries every micro-batch's activation forward and its gradient back, b s h
  // bf16 elements, recorded at the sender and the receiver: v = 1 has p - 1 boundaries.
  const double activation = 4096.0 * 4096 * 2;
  for (const auto& [chunks, pipeline] : {std::pair{1.0, one}, std::pair{2.0, two}, std::pair{4.0, four}}) {
    const double v = chunks;  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
    const PipelineRun& run = pipeline;
    CAPTURE(v);
    CHECK(run.transfers == static_cast<int>(2 * 2 * (p * v - 1) * m));
    CHECK(run.pipeline_bytes == doctest::Approx(2 * 2 * (p * v - 1) * m * activation).epsilon(1e-12));
  }
}

TEST_CASE("interleaved 1F1B: stage 0 holds (1 + (p - 1) / (p v)) times 1F1B's activations") {
  ModelSpec m;
  m.layers = 16;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.sequence = 1024;
  m.vocabulary = 50304;
  for (int v : {2, 4}) {
    CAPTURE(v);
    auto p = plan(4, v, 8);
    p.dp = 2;
    const Footprint interleaved = stage_footprint(m, p, {}, 0), plain = stage_footprint(m, plan(4, 1, 8), {}, 0);
    CHECK(interleaved.in_flight == 2 * (4 - 1) + (v - 1) * 4 + 1);
    CHECK(static_cast<double>(interleaved.activations.count()) ==
          doctest::Approx(static_cast<double>(plain.activations.count()) * (1 + 3.0 / (4 * v))).epsilon(1e-9));
    CHECK(interleaved.weights == plain.weights);
  }
}

TEST_CASE("interleaved 1F1B: a step completes under BSP and PGAS with two stages, and with TP, DP and MoE") {
  // Two stages: each pair of ranks carries activations and gradients both ways.
  for (const char* schedule : {"bsp", "pgas"}) {
    CAPTURE(schedule);
    const std::string out = run_isolated([schedule] {
      const Report r =
          load(schedule_scenario(fmt::format("    schedule: {}\n"
                                             "    steps: 2\n"
                                             "    model: {{layers: 8, hidden: 1024, heads: 8, sequence: 1024, "
                                             "micro_batches: 4, moe: {{experts: 4, top_k: 2}}}}\n"
                                             "    parallel: {{tp: 2, pp: 2, dp: 2, ep: 2, vp: 2, zero: true}}\n",
                                             schedule)))
              .run();
      return r.outcome + fmt::format(" {}", metric(r, "step_mean_ms") > 0);
    });
    CHECK(out == "completed true");
  }
}

TEST_CASE("interleaved 1F1B: invalid combinations name the key and what divides what") {
  using snsim::InputError;
  const std::string model = "    model: {layers: 12, hidden: 1024, heads: 8, sequence: 512, micro_batches: 8}\n";
  CHECK_THROWS_WITH_AS(load(schedule_scenario(model + "    parallel: {pp: 4, vp: 2, dp: 2}\n")),
                       "t.yaml:5:27: workloads[0].parallel.vp: pp x vp = 4 x 2 = 8 must divide model.layers (12)",
                       InputError);
  CHECK_THROWS_WITH_AS(
      load(schedule_scenario("    model: {layers: 16, hidden: 1024, heads: 8, sequence: 512, micro_batches: 6}\n"
                             "    parallel: {pp: 4, vp: 2, dp: 2}\n")),
      "t.yaml:4:79: workloads[0].model.micro_batches: gives 6 micro-batches per step; the interleaved pipeline "
      "(parallel.vp 2) needs a multiple of parallel.pp (4)",
      InputError);
  CHECK_THROWS_WITH_AS(load(schedule_scenario(model + "    parallel: {vp: 2}\n")),
                       "t.yaml:5:20: workloads[0].parallel.vp: interleaves pipeline stages: needs parallel.pp > 1, "
                       "got 1",
                       InputError);
  CHECK_THROWS_WITH_AS(load(schedule_scenario(model + "    parallel: {pp: 2, vp: 2, pipeline: gpipe}\n")),
                       doctest::Contains("parallel.vp: the interleaved schedule is a 1F1B one"), InputError);
}
