// FSDP (ZeRO-3): the per-unit all-gathers and reduce-scatters by hand, the prefetch's overlap on a simulated step,
// the sharded footprint, and the input errors.
#include <doctest/doctest.h>

#include <functional>
#include <map>

#include <fmt/format.h>

#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;

namespace {

/// Two GPT layers (h 1024, 8 heads, GeLU 4h, LayerNorm, untied 32000-token embeddings) on 4 GPUs.
std::string fsdp_scenario(const std::string& parallel, int micro_batches = 1) {
  return fmt::format(
      "topology: {{type: hgx, gpu: h100, gpus: 4}}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {{layers: 2, hidden: 1024, heads: 8, sequence: 512, vocabulary: 32000, micro_batches: {}}}\n"
      "    parallel: {}\n",
      micro_batches, parallel);
}

/// The parameters by hand: per layer QKV and projection 4 h^2, MLP 8 h^2, two LayerNorms 4 h; the embedding and
/// the logits V h each, the final norm 2 h.
constexpr double H = 1024, V = 32000;
constexpr double LAYER = 12 * H * H + 4 * H, MODEL = 2 * LAYER + 2 * V * H + 2 * H;

std::map<models::CollectiveKind, double> collective_bytes(const std::vector<Op>& ops) {
  std::map<models::CollectiveKind, double> out;
  std::function<void(const std::vector<Op>&)> walk = [&](const std::vector<Op>& list) {
    for (const auto& op : list) {
      if (const auto* c = std::get_if<CollectiveOp>(&op.what)) out[c->kind] += static_cast<double>(c->bytes.count());
      if (const auto* s = std::get_if<StreamsOp>(&op.what))
        for (const auto& stream : s->streams) walk(stream);
    }
  };
  walk(ops);
  return out;
}

}  // namespace

TEST_CASE("fsdp: a step all-gathers the parameters twice and reduce-scatters the gradients once per micro-batch") {
  using models::CollectiveKind;
  for (int m : {1, 3}) {
    CAPTURE(m);
    const auto s = load(fsdp_scenario("{dp: 4, fsdp: true}", m));
    auto bytes = collective_bytes(s.programs()[0].ops);
    // nccl-tests' sizes: the gathered whole and the scattered whole, 2 B (bf16) per parameter; before the forward
    // and again before the backward of each unit, its gradients once after the backward.
    CHECK(bytes[CollectiveKind::all_gather] == doctest::Approx(2 * m * MODEL * 2).epsilon(1e-9));
    CHECK(bytes[CollectiveKind::reduce_scatter] == doctest::Approx(m * MODEL * 2).epsilon(1e-9));
    CHECK(bytes[CollectiveKind::all_reduce] == 8);  // the gradient norm alone: no DP all-reduce
  }
  // Without FSDP the same model's gradients go by one all-reduce each.
  const auto plain = load(fsdp_scenario("{dp: 4}"));
  auto bytes = collective_bytes(plain.programs()[0].ops);
  CHECK(bytes[CollectiveKind::all_reduce] == doctest::Approx(MODEL * 2 + 8).epsilon(1e-9));
  CHECK(bytes[CollectiveKind::all_gather] == 0);
}

TEST_CASE("fsdp: the next unit's parameters are gathered while this one computes") {
  const std::string out = run_isolated([] {
    const std::string yaml = fsdp_scenario("{dp: 4, fsdp: true}");
    const Report r = load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const auto doc = ConfigDocument::load_string(yaml, "t.yaml");
    const auto sc = Scenario::load(ConfigDocument::load_string(yaml, "t.yaml"));
    const auto t = make_training(doc->root().child("workloads").elements().front(), sc.fabric());
    // Rank 0's forward: when unit 1's (the first layer's) kernels end, and when unit 2's gather starts.
    double layer1_end = 0, gather2_start = 1e300, gather2_end = 0;
    for (const auto& o : r.ops) {
      if (o.rank != 0 || o.tag < 0) continue;
      const OpInfo i = t->info(o.tag);
      if (i.pass != OpInfo::forward) continue;
      if (i.unit == 1 && o.kind == "compute") layer1_end = std::max(layer1_end, o.end.count());
      if (i.unit == 2 && o.kind == "collective" && o.bytes.count() > 1000) {
        gather2_start = std::min(gather2_start, o.start.count());
        gather2_end = std::max(gather2_end, o.end.count());
      }
    }
    return fmt::format("{}", gather2_start < layer1_end ? "overlapped" : "serial");
  });
  CHECK(out == "overlapped");
}

TEST_CASE("fsdp: weights, gradients and optimizer state are sharded over DP, two units' weights whole") {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.sequence = 512;
  m.vocabulary = 32000;
  ParallelPlan p;
  p.dp = 4;
  p.fsdp = true;
  const Footprint f = stage_footprint(m, p, {}, 0);
  // The largest unit is the logits with the final norm, V h + 2 h.
  const double largest = V * H + 2 * H;
  CHECK(static_cast<double>(f.weights.count()) == doctest::Approx(2 * (MODEL / 4 + 2 * largest)).epsilon(1e-9));
  CHECK(static_cast<double>(f.gradients.count()) == doctest::Approx(2 * (MODEL / 4 + largest)).epsilon(1e-9));
  CHECK(static_cast<double>(f.optimizer.count()) == doctest::Approx(12 * MODEL / 4).epsilon(1e-9));
  p.fsdp = false;
  CHECK(stage_footprint(m, p, {}, 0).weights.count() > f.weights.count());
}

TEST_CASE("fsdp: invalid combinations name the key") {
  using snsim::InputError;
  CHECK_THROWS_WITH_AS(load(fsdp_scenario("{tp: 4, fsdp: true}")),
                       doctest::Contains("parallel.fsdp: shards over dp x cp: needs dp x cp > 1, got dp 1 and cp 1"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx, gpus: 4}\nworkloads:\n  - type: training\n    schedule: pgas\n"
                            "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512}\n"
                            "    parallel: {dp: 4, fsdp: true}\n"),
                       doctest::Contains("parallel.fsdp: FSDP's per-layer gathers are NCCL collectives: needs "
                                         "schedule bsp"),
                       InputError);
}

TEST_CASE("fsdp: a step completes with TP, CP, an interleaved pipeline and experts") {
  const std::string out = run_isolated([] {
    const Report r = load(
                         "topology: {type: hgx, gpu: h100, gpus: 8}\nworkloads:\n  - type: training\n"
                         "    steps: 2\n"
                         "    model: {layers: 4, hidden: 1024, heads: 8, sequence: 2048, micro_batches: 2, "
                         "moe: {experts: 4, top_k: 2}}\n"
                         "    parallel: {tp: 2, cp: 2, pp: 2, vp: 2, ep: 2, sequence_parallel: true, fsdp: true}\n")
                         .run();
    return r.outcome;
  });
  CHECK(out == "completed");
}
