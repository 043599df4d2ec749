// Context parallelism: Megatron-Core's rank order with CP, the per-rank kernels and footprint against the whole
// model's, the ring attention's KV bytes by hand, its overlap with the attention compute, and the input errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "runtime/waits.hpp"
#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "workloads/training/context.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/presets.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;

namespace {

/// Two layers of Llama 3.1 8B (h 4096, 32 query heads and 8 KV heads of 128, SwiGLU 14336) on `sequence` tokens.
ModelSpec llama_layer(int sequence) {
  ModelSpec m = *find_preset("llama3.1-8b");
  m.layers = 2;
  m.sequence = sequence;
  return m;
}

std::string cp_scenario(int gpus, const std::string& training) {
  return fmt::format("topology: {{type: hgx, gpu: h100, gpus: {}}}\nworkloads:\n  - type: training\n", gpus) + training;
}

/// One layer of llama_layer's shape on 4 CP ranks, one step of one micro-batch.
std::string ring_scenario(int sequence) {
  return cp_scenario(4, fmt::format("    steps: 1\n"
                                    "    model: {{layers: 1, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, "
                                    "ffn_hidden: 14336, mlp: swiglu, norm: rmsnorm, vocabulary: 32000, sequence: {}, "
                                    "micro_batches: 1}}\n"
                                    "    parallel: {{cp: 4}}\n",
                                    sequence));
}

struct Ring {
  double forward_bytes = 0, backward_bytes = 0;  // the ring's broadcasts, every record (sender and receiver)
  double exposed = 0, in_flight = 0;             // ring time no kernel of the rank overlaps, and all ring time
};

Ring run_ring(int sequence) {
  const std::string text = run_isolated([sequence] {
    const std::string yaml = ring_scenario(sequence);
    const Report r = load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const auto doc = ConfigDocument::load_string(yaml, "t.yaml");
    const auto scenario = Scenario::load(ConfigDocument::load_string(yaml, "t.yaml"));
    const auto t = make_training(doc->root().child("workloads").elements().front(), scenario.fabric());
    Ring ring;
    std::map<int, std::vector<std::pair<Seconds, Seconds>>> kernels, both;
    for (const auto& o : r.ops) {
      if (o.tag < 0) continue;
      const OpInfo info = t->info(o.tag);
      if (info.pass == OpInfo::step_level) continue;  // the gradients' and the norm's reductions
      if (o.kind == "compute") {
        kernels[o.rank].push_back({o.start, o.end});
        both[o.rank].push_back({o.start, o.end});
      }
      if (o.kind != "collective") continue;  // without TP, DP or PP: the ring's transfers alone
      (info.pass == OpInfo::forward ? ring.forward_bytes : ring.backward_bytes) += static_cast<double>(o.bytes.count());
      both[o.rank].push_back({o.start, o.end});
      ring.in_flight += (o.end - o.start).count();
    }
    for (auto& [rank, spans] : both) ring.exposed += (covered(spans) - covered(kernels[rank])).count();
    return fmt::format("{} {} {} {}", ring.forward_bytes, ring.backward_bytes, ring.exposed, ring.in_flight);
  });
  Ring out;
  std::istringstream in(text);
  in >> out.forward_bytes >> out.backward_bytes >> out.exposed >> out.in_flight;
  return out;
}

}  // namespace

TEST_CASE("context parallel: ranks in Megatron-Core's order, tp fastest, then cp, dp, pp, gradients over DP x CP") {
  ParallelPlan p;
  p.tp = 2;
  p.cp = 2;
  p.dp = 2;
  p.pp = 2;
  CHECK(p.gpus() == 16);
  for (int r = 0; r < 16; ++r) CHECK(rank_of(p, coord_of(p, r)) == r);
  const Coord c = coord_of(p, 13);  // 13 = 1 + 2 x (0 + 2 x (1 + 2 x 1))
  CHECK(c.tp == 1);
  CHECK(c.cp == 0);
  CHECK(c.dp == 1);
  CHECK(c.pp == 1);
  CHECK(tp_group(p, 13) == std::vector{12, 13});
  CHECK(cp_group(p, 13) == std::vector{13, 15});
  CHECK(dp_group(p, 13) == std::vector{9, 13});
  CHECK(dp_cp_group(p, 13) == std::vector{9, 11, 13, 15});
}

TEST_CASE("context parallel: a rank's kernels are 1 / cp of the layer's, attention included, its KV by hand") {
  const ModelSpec m = llama_layer(16384);
  ParallelPlan whole, split;
  split.cp = 4;
  const auto a = layer_forward(m, whole, false), b = layer_forward(m, split, false);
  CHECK(b.attention.flops.count() == doctest::Approx(a.attention.flops.count() / 4).epsilon(1e-12));
  CHECK(b.qkv.flops.count() == doctest::Approx(a.qkv.flops.count() / 4).epsilon(1e-12));
  CHECK(b.mlp_up.flops.count() == doctest::Approx(a.mlp_up.flops.count() / 4).epsilon(1e-12));
  CHECK(b.mlp_down.flops.count() == doctest::Approx(a.mlp_down.flops.count() / 4).epsilon(1e-12));
  CHECK(logits_forward(m, split).flops.count() == doctest::Approx(logits_forward(m, whole).flops.count() / 4));
  // One round's K and V: s / cp tokens x 2 x kv_heads x head_dim x 2 B (bf16) x the micro-batch; / tp with TP.
  CHECK(ring_kv_bytes(m, split).count() == 16384 / 4 * 2 * 8 * 128 * 2);
  split.tp = 2;
  CHECK(ring_kv_bytes(m, split).count() == 16384 / 4 * 2 * 8 * 128 * 2 / 2);
  ModelSpec two = m;
  two.micro_batch = 2;
  CHECK(routed_tokens(two, split) == 2 * 16384 / 4 / 2);
}

TEST_CASE(
    "context parallel: each rank sends 2 (cp - 1) (s / cp) kv_heads head_dim bytes a layer forward, twice "
    "that backward, behind the attention") {
  const double cp = 4, s = 16384;
  const Ring ring = run_ring(16384);
  const double sent = 2 * (cp - 1) * (s / cp) * 8 * 128 * 2;  // K and V, cp - 1 rounds, bf16, micro-batch 1
  // Every transfer is recorded by its sender and its receiver, on each of the cp ranks.
  CHECK(ring.forward_bytes == doctest::Approx(2 * cp * sent).epsilon(1e-12));
  CHECK(ring.backward_bytes == doctest::Approx(2 * 2 * cp * sent).epsilon(1e-12));
  // At 16k tokens a round's attention (1.1 TFLOP / 4 per rank) outlasts its 16.8 MB exchange many times: the ring
  // time that no kernel overlaps is a small share of it (the launch of each round's kernel).
  CHECK(ring.in_flight > 0);
  CHECK(ring.exposed < 0.05 * ring.in_flight);
  // At 512 tokens a round's attention is microseconds and the exchange's latency shows.
  const Ring short_ring = run_ring(512);
  CHECK(short_ring.exposed > 0.2 * short_ring.in_flight);
}

TEST_CASE("context parallel: a GPU keeps 1 / cp of the activations, its optimizer state shards over DP x CP") {
  const ModelSpec m = llama_layer(8192);
  ParallelPlan whole, split;
  whole.dp = 4;
  whole.zero = true;
  split = whole;
  split.dp = 2;
  split.cp = 2;
  const Footprint a = stage_footprint(m, whole, {}, 0), b = stage_footprint(m, split, {}, 0);
  CHECK(static_cast<double>(b.activations.count()) ==
        doctest::Approx(static_cast<double>(a.activations.count()) / 2).epsilon(1e-6));
  CHECK(b.weights == a.weights);
  CHECK(b.optimizer == a.optimizer);                                           // 4 ranks share it either way
  CHECK(b.communication.count() == a.communication.count() + (128ull << 20));  // the ring's communicator
}

TEST_CASE("context parallel: the gradients are reduced over DP x CP, the batch counts DP alone") {
  const auto s = load(cp_scenario(8,
                                  "    steps: 1\n"
                                  "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 2048, global_batch: 4}\n"
                                  "    parallel: {tp: 2, cp: 2, dp: 2}\n"));
  std::vector<std::size_t> sizes;
  std::function<void(const std::vector<Op>&)> walk = [&](const std::vector<Op>& ops) {
    for (const auto& op : ops) {
      if (const auto* c = std::get_if<CollectiveOp>(&op.what))
        if (c->kind == models::CollectiveKind::all_reduce && c->bytes.count() > 8) sizes.push_back(c->group->size());
      if (const auto* st = std::get_if<StreamsOp>(&op.what))
        for (const auto& stream : st->streams) walk(stream);
    }
  };
  walk(s.programs()[0].ops);
  // TP's all-reduces (no SP) over 2 and the gradients' over 4; 4 sequences on dp 2: 2 micro-batches.
  CHECK(std::ranges::count(sizes, 4) > 0);
  CHECK(std::ranges::count(sizes, 8) == 0);
  const auto doc = ConfigDocument::load_string(cp_scenario(8,
                                                           "    steps: 1\n"
                                                           "    model: {layers: 2, hidden: 1024, heads: 8, sequence: "
                                                           "2048, global_batch: 4}\n"
                                                           "    parallel: {tp: 2, cp: 2, dp: 2}\n"),
                                               "t.yaml");
  const auto t = make_training(doc->root().child("workloads").elements().front(), s.fabric());
  CHECK(t->config().plan.micro_batches == 2);
}

TEST_CASE("context parallel: invalid combinations name the key and what divides what") {
  using snsim::InputError;
  CHECK_THROWS_WITH_AS(load(cp_scenario(8,
                                        "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1000}\n"
                                        "    parallel: {cp: 8}\n")),
                       "t.yaml:5:20: workloads[0].parallel.cp: 2 x cp = 16 must divide model.sequence (1000): each "
                       "CP rank takes two of its 2 x cp chunks",
                       InputError);
  CHECK_THROWS_WITH_AS(load(cp_scenario(8,
                                        "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1024, attention: "
                                        "unfused}\n"
                                        "    parallel: {cp: 8}\n")),
                       doctest::Contains("parallel.cp: ring attention runs on FlashAttention's partial results"),
                       InputError);
  CHECK_THROWS_WITH_AS(load(cp_scenario(8,
                                        "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1024}\n"
                                        "    parallel: {cp: 2, tp: 2, dp: 4}\n")),
                       doctest::Contains("parallel.dp: tp x cp x pp x dp must equal the topology's 8 GPUs, got 2 x 2 "
                                         "x 1 x 4 = 16"),
                       InputError);
}

TEST_CASE("context parallel: steps complete under BSP and PGAS with TP, an interleaved pipeline and experts") {
  for (const char* schedule : {"bsp", "pgas"}) {
    CAPTURE(schedule);
    const std::string out = run_isolated([schedule] {
      const Report r = load("topology: {type: superpod, gpu: h100, nodes: 2}\nworkloads:\n  - type: training\n" +
                            fmt::format("    schedule: {}\n"
                                        "    steps: 2\n"
                                        "    model: {{layers: 4, hidden: 1024, heads: 8, sequence: 2048, "
                                        "micro_batches: 2, moe: {{experts: 4, top_k: 2}}}}\n"
                                        "    parallel: {{tp: 2, cp: 2, pp: 2, vp: 2, dp: 2, ep: 4, "
                                        "sequence_parallel: true, zero: true}}\n",
                                        schedule))
                           .run();
      return r.outcome;
    });
    CHECK(out == "completed");
  }
}
