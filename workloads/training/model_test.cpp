// Training workloads without a simulation: FLOP counts against the published formulas, the rank mapping, the MoE
// load balancer's capacity guarantee, and the input errors.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <numeric>

#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "workloads/training/balancer.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/model.hpp"
#include "workloads/training/presets.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;

namespace {
double total(const LayerForward& l) {
  return l.qkv.flops.count() + l.attention.flops.count() + l.projection.flops.count() + l.mlp_up.flops.count() +
         l.mlp_down.flops.count() + l.router.flops.count();
}

std::string model_scenario(const std::string& training) {
  return "topology: {type: hgx, gpus: 8}\nworkloads:\n  - type: training\n" + training;
}
}  // namespace

TEST_CASE("training: a layer's forward FLOPs are 24 b s h^2 (1 + s / 6h), split evenly over TP ranks") {
  ModelSpec m;
  m.layers = 4;
  m.hidden = 4096;
  m.ffn_hidden = 4 * 4096;
  m.heads = 32;
  m.sequence = 2048;
  m.micro_batch = 2;
  const double b = 2, s = 2048, h = 4096;
  const double by_hand = 24 * b * s * h * h * (1 + s / (6 * h));  // Narayanan et al. 2021, §5.1
  CHECK(layer_model_flops(m, 0).count() == doctest::Approx(by_hand).epsilon(1e-12));
  for (int tp : {1, 2, 8}) {
    CAPTURE(tp);
    ParallelPlan p;
    p.tp = tp;
    CHECK(total(layer_forward(m, p, false)) * tp == doctest::Approx(by_hand).epsilon(1e-12));
  }
  // The QKV GEMM alone: 6 b s h^2, reading the input and weights and writing Q, K, V (bf16).
  ParallelPlan p;
  const auto l = layer_forward(m, p, false);
  CHECK(l.qkv.flops.count() == doctest::Approx(6 * b * s * h * h));
  CHECK(l.qkv.bytes.count() == static_cast<std::uint64_t>(2 * (b * s * h + h * 3 * h + b * s * 3 * h)));
  // Attention as FlashAttention moves Q, K, V and O only; unfused, four passes over the b a s^2 scores too.
  CHECK(l.attention.bytes.count() == static_cast<std::uint64_t>(2 * 4 * b * s * h));
  m.flash_attention = false;
  CHECK(layer_forward(m, p, false).attention.bytes.count() ==
        static_cast<std::uint64_t>(2 * 4 * b * s * h + 2 * 4 * b * 32 * s * s));
  // A step: 3 x forward over the global batch, logits included: 72 B s l h^2 (1 + s/6h + V/12lh) (eq. 3 without
  // recomputation), with B = micro_batch x micro_batches x dp sequences.
  m.flash_attention = true;
  m.vocabulary = 50304;
  p.dp = 4;
  p.micro_batches = 8;
  const double B = 2 * 8 * 4, l_ = 4, V = 50304;
  CHECK(step_model_flops(m, p).count() ==
        doctest::Approx(72 * B * s * l_ * h * h * (1 + s / (6 * h) + V / (12 * l_ * h))).epsilon(1e-12));
}

TEST_CASE("training: a MoE layer counts the router and top_k experts per token") {
  ModelSpec m;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.sequence = 512;
  m.moe = MoeSpec{8, 2, 1.25, 0};
  const double s = 512, h = 1024, f = 4096;
  const double attention = 8 * s * h * h + 4 * s * s * h;
  CHECK(layer_model_flops(m, 0).count() == doctest::Approx(attention + 2 * s * h * 8 + 2 * 4 * s * h * f));
  // One expert on n tokens: up and down GEMMs, 4 n h f.
  CHECK(expert_forward(m, 100).flops.count() == doctest::Approx(4 * 100 * h * f));
}

TEST_CASE("training: every rank's groups are those its coordinates define, found over all ranks") {
  // The builders scan one pipeline stage or walk one coordinate; the definition compares every rank's coordinates.
  for (const auto& shape : {std::array{2, 2, 2, 2, 1}, std::array{4, 1, 3, 2, 2}, std::array{1, 2, 4, 3, 4}}) {
    const int tp = shape[0], cp = shape[1], dp = shape[2], pp = shape[3], ep = shape[4];
    ParallelPlan p;
    p.tp = tp;
    p.cp = cp;
    p.dp = dp;
    p.pp = pp;
    p.ep = ep;
    auto where = [&](int rank, auto same) {
      std::vector<int> out;
      for (int r = 0; r < p.gpus(); ++r)
        if (same(coord_of(p, rank), coord_of(p, r))) out.push_back(r);
      return out;
    };
    for (int r = 0; r < p.gpus(); ++r) {
      CAPTURE(r);
      CHECK(tp_group(p, r) == where(r, [](Coord a, Coord b) { return a.dp == b.dp && a.pp == b.pp && a.cp == b.cp; }));
      CHECK(dp_group(p, r) == where(r, [](Coord a, Coord b) { return a.tp == b.tp && a.pp == b.pp && a.cp == b.cp; }));
      CHECK(cp_group(p, r) == where(r, [](Coord a, Coord b) { return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp; }));
      CHECK(dp_cp_group(p, r) == where(r, [](Coord a, Coord b) { return a.tp == b.tp && a.pp == b.pp; }));
      const int block = (r % (tp * cp * dp)) / ep;
      CHECK(ep_group(p, r) ==
            where(r, [&](Coord a, Coord b) { return a.pp == b.pp && (rank_of(p, b) % (tp * cp * dp)) / ep == block; }));
    }
  }
}

TEST_CASE("training: ranks map tensor parallel innermost, then data parallel, then pipeline (Megatron-LM)") {
  ParallelPlan p;
  p.tp = 2;
  p.dp = 2;
  p.pp = 2;
  for (int r = 0; r < 8; ++r) CHECK(rank_of(p, coord_of(p, r)) == r);
  const Coord c = coord_of(p, 5);
  CHECK(c.tp == 1);
  CHECK(c.dp == 0);
  CHECK(c.pp == 1);
  CHECK(tp_group(p, 5) == std::vector<int>{4, 5});
  CHECK(dp_group(p, 5) == std::vector<int>{5, 7});
  p.ep = 2;  // EP groups: consecutive ranks of a stage; the experts' DP group: the same place in each
  CHECK(ep_group(p, 5) == std::vector<int>{4, 5});
  CHECK(expert_dp_group(p, 5) == std::vector<int>{5, 7});
  CHECK(ep_rank(p, 5) == 1);
  p.ep = 4;
  CHECK(ep_group(p, 1) == std::vector<int>{0, 1, 2, 3});
  CHECK(ep_group(p, 6) == std::vector<int>{4, 5, 6, 7});
  CHECK(expert_dp_group(p, 6) == std::vector<int>{6});
}

TEST_CASE("training: the MoE load balancer never overfills an expert, whatever the seed and skew") {
  int cases = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed)
    for (double skew : {0.0, 0.5, 1.0, 2.0, 4.0})
      for (double factor : {1.0, 1.25, 2.0})
        for (double threshold : {1.0, 1.5}) {
          CAPTURE(seed);
          CAPTURE(skew);
          CAPTURE(factor);
          RandomStream rng(seed, "test");
          const int experts = 4 + static_cast<int>(seed % 13);
          const auto p = popularity(experts, skew, rng);
          const auto choices = route(p, 8, 1000 + seed * 37, 2, rng);
          std::uint64_t sent = 0;
          for (const auto& row : choices) sent += std::accumulate(row.begin(), row.end(), std::uint64_t{0});
          REQUIRE(sent == 8 * (1000 + seed * 37) * 2);
          const Balanced b = balance(choices, factor, threshold);
          std::uint64_t placed = 0;
          for (std::size_t e = 0; e < b.loads.size(); ++e) {
            CHECK(b.loads[e] <= b.capacity);
            std::uint64_t column = 0;
            for (const auto& row : b.placed) column += row[e];
            CHECK(column == b.loads[e]);
            placed += b.loads[e];
          }
          CHECK(placed + b.dropped == sent);  // every choice is placed or dropped, none twice
          // Each source places exactly what it routed, less its drops.
          for (std::size_t src = 0; src < choices.size(); ++src)
            CHECK(std::accumulate(b.placed[src].begin(), b.placed[src].end(), std::uint64_t{0}) <=
                  std::accumulate(choices[src].begin(), choices[src].end(), std::uint64_t{0}));
          // With 25 % headroom every choice finds room: the balancer moves tokens instead of dropping them.
          if (factor >= 1.25) CHECK(b.dropped == 0);
          // BSP drops what exceeds each rank's capacity instead.
          std::uint64_t slots = 0;
          const auto kept = capacity_drop(choices, factor, slots);
          for (const auto& row : kept)
            for (auto n : row) CHECK(n <= slots);
          ++cases;
        }
  CHECK(cases == 40 * 5 * 3 * 2);
}

TEST_CASE("training: a skewed router overloads an expert that the balancer relieves") {
  RandomStream rng(3, "test");
  const auto p = popularity(8, 2.0, rng);
  const auto choices = route(p, 8, 4096, 2, rng);
  std::vector<std::uint64_t> router(8, 0);
  for (const auto& row : choices)
    for (std::size_t e = 0; e < 8; ++e) router[e] += row[e];
  const double mean = 8 * 4096 * 2 / 8.0;
  CHECK(static_cast<double>(*std::ranges::max_element(router)) > 2 * mean);  // Zipf(2): the top expert takes ~61 %
  const Balanced b = balance(choices, 1.25, 1.0);
  CHECK(static_cast<double>(*std::ranges::max_element(b.loads)) <= 1.25 * mean);
  CHECK(b.dropped == 0);
}

TEST_CASE("training: the same seed draws the same routing, another seed another") {
  auto draw = [](std::uint64_t seed) {
    RandomStream rng(seed, "training.moe.routing.layer0.group0");
    return route(popularity(8, 1.0, rng), 4, 512, 2, rng);
  };
  CHECK(draw(5) == draw(5));
  CHECK(draw(5) != draw(6));
}

TEST_CASE("training: input errors name file, line, column and key") {
  using snsim::InputError;
  const std::string model = "    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512}\n";
  SUBCASE("unknown key") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario(model + "    parallel: {tp: 2, dp: 4, ppp: 1}\n")),
        doctest::Contains(
            "t.yaml:5:30: workloads[0].parallel.ppp: unknown key (did you mean 'pp'?); known "
            "keys: bucket, "
            "cp, dp, ep, etp, fsdp, pipeline, pp, recompute, sequence_parallel, tp, tp_overlap, vp, zero"),
        InputError);
  }
  SUBCASE("tp x pp x dp is not the GPU count") {
    CHECK_THROWS_WITH_AS(load(model_scenario(model + "    parallel: {tp: 2, dp: 2}\n")),
                         "t.yaml:5:27: workloads[0].parallel.dp: tp x pp x dp must equal the topology's 8 GPUs, got "
                         "2 x 1 x 2 = 4",
                         InputError);
  }
  SUBCASE("ep does not divide the stage") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 9}}\n"
                            "    parallel: {tp: 1, dp: 4, pp: 2, ep: 3}\n")),
        "t.yaml:5:41: workloads[0].parallel.ep: must divide tp x dp = 4 (the ranks of a pipeline stage), got 3",
        InputError);
  }
  SUBCASE("ep does not divide the experts") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 6}}\n"
                            "    parallel: {dp: 8, ep: 4}\n")),
        "t.yaml:5:27: workloads[0].parallel.ep: must divide model.moe.experts (6), got 4", InputError);
  }
  SUBCASE("ep without experts") {
    CHECK_THROWS_WITH_AS(load(model_scenario(model + "    parallel: {dp: 8, ep: 2}\n")),
                         "t.yaml:5:27: workloads[0].parallel.ep: expert parallelism needs model.moe", InputError);
  }
  SUBCASE("fewer experts than top_k") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario(
            "    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 2, top_k: 4}}\n")),
        "t.yaml:4:88: workloads[0].model.moe.top_k: must be <= experts (2), got 4", InputError);
  }
  SUBCASE("layers do not split over the stages") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 3, hidden: 1024, heads: 8, sequence: 512}\n    parallel: {pp: 2}\n")),
        "t.yaml:5:20: workloads[0].parallel.pp: must divide model.layers (3), got 2", InputError);
  }
  SUBCASE("heads do not split over tp") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 4, sequence: 512}\n    parallel: {tp: 8}\n")),
        "t.yaml:5:20: workloads[0].parallel.tp: must divide model.heads (4), got 8", InputError);
  }
  SUBCASE("global batch not a multiple of micro_batch x dp") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, global_batch: "
                            "12}\n")),
        "t.yaml:4:77: workloads[0].model.global_batch: must be a positive multiple of micro_batch x "
        "dp = 1 x 8 = 8, got 12",
        InputError);
  }
  SUBCASE("both global_batch and micro_batches") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, global_batch: "
                            "8, micro_batches: 1}\n")),
        "t.yaml:4:77: workloads[0].model.global_batch: give either global_batch or micro_batches, "
        "not both",
        InputError);
  }
  SUBCASE("unknown schedule and pipeline") {
    CHECK_THROWS_WITH_AS(load(model_scenario("    schedule: async\n" + model)),
                         "t.yaml:4:15: workloads[0].schedule: expected bsp or pgas, found 'async'", InputError);
    CHECK_THROWS_WITH_AS(load(model_scenario(model + "    parallel: {pipeline: zb}\n")),
                         "t.yaml:5:26: workloads[0].parallel.pipeline: expected 1f1b or gpipe, found 'zb'", InputError);
  }
  SUBCASE("a missing model size") {
    CHECK_THROWS_WITH_AS(load(model_scenario("    model: {layers: 4, hidden: 1024, sequence: 512}\n")),
                         doctest::Contains("workloads[0].model.heads"), InputError);
  }
  SUBCASE("an unknown dtype") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, dtype: int4}\n")),
        "t.yaml:4:70: workloads[0].model.dtype: unknown number format 'int4'; known: bf16, fp16, fp32, fp64, fp8, "
        "tf32",
        InputError);
  }
}

// ---- architectures -------------------------------------------------------------------------------------------------

namespace {
/// Two layers of Llama 3.1 8B (h 4096, 32 heads of 128, 8 KV heads, SwiGLU of 14336) on one 4096-token sequence.
ModelSpec llama_layer() {
  ModelSpec m = *find_preset("llama3.1-8b");
  m.layers = 2;
  m.sequence = 4096;
  return m;
}

/// Every collective of a program, streams and repeats unrolled.
void collectives(const std::vector<snsim::workloads::Op>& ops, std::vector<snsim::workloads::CollectiveOp>& out) {
  for (const auto& op : ops) {
    if (const auto* c = std::get_if<snsim::workloads::CollectiveOp>(&op.what)) out.push_back(*c);
    if (const auto* s = std::get_if<snsim::workloads::StreamsOp>(&op.what))
      for (const auto& stream : s->streams) collectives(stream, out);
    if (const auto* r = std::get_if<snsim::workloads::RepeatOp>(&op.what))
      for (int i = 0; i < r->count; ++i) collectives(r->body, out);
  }
}
}  // namespace

TEST_CASE("training: grouped-query attention projects K and V to kv_heads x head_dim only") {
  const ModelSpec gqa = llama_layer();
  ModelSpec mha = gqa;
  mha.kv_heads = 32;
  const double T = 4096, h = 4096, d = 128, e = 2;
  for (int tp : {1, 8}) {
    CAPTURE(tp);
    ParallelPlan p;
    p.tp = tp;
    const auto l = layer_forward(gqa, p, false);
    // Q 32 x 128 and K, V 8 x 128 each: 2 T h (4096 + 2 x 1024) / tp FLOPs; input, weights, Q K V written once.
    CHECK(l.qkv.flops.count() == doctest::Approx(2 * T * h * (4096 + 2 * 1024) / tp));
    CHECK(static_cast<double>(l.qkv.bytes.count()) ==
          doctest::Approx(e * (T * h + h * 6144.0 / tp + T * 6144.0 / tp)).epsilon(1e-12));
    // FlashAttention reads Q, K, V and writes O: (4096 + 1024 + 1024 + 4096) T / tp elements.
    CHECK(static_cast<double>(l.attention.bytes.count()) == doctest::Approx(e * T * 10240 / tp).epsilon(1e-12));
    // MHA moves 2 x (32 - 8) x 128 more K, V columns per token, and holds as many more weight columns.
    const auto m = layer_forward(mha, p, false);
    CHECK(static_cast<double>(m.qkv.bytes.count() - l.qkv.bytes.count()) ==
          doctest::Approx(e * (h + T) * 2 * 24 * d / tp).epsilon(1e-12));
    CHECK(dense_layer_params(mha, p, 0) - dense_layer_params(gqa, p, 0) == doctest::Approx(h * 2 * 24 * d / tp));
    // The attention scores' FLOPs do not change: every query head still sees every key, 4 b s^2 a d.
    CHECK(l.attention.flops.count() == doctest::Approx(4 * T * T * 32 * d / tp));
    CHECK(m.attention.flops.count() == l.attention.flops.count());
  }
}

TEST_CASE("training: SwiGLU is three h x f matrices, squared ReLU and GeLU two") {
  ModelSpec m = llama_layer();
  const double T = 4096, h = 4096, f = 14336;
  ParallelPlan p;
  const double attention = h * (4096 + 2 * 1024) + 4096 * h + 2 * h;  // QKV, projection, two RMSNorm weights
  CHECK(dense_layer_params(m, p, 0) == doctest::Approx(attention + 3 * h * f));
  const auto l = layer_forward(m, p, false);
  CHECK(l.mlp_up.flops.count() == doctest::Approx(2 * T * h * 2 * f));  // gate and up, one GEMM
  CHECK(l.mlp_down.flops.count() == doctest::Approx(2 * T * f * h));
  CHECK(layer_model_flops(m, 0).count() ==
        doctest::Approx(2 * T * h * 6144 + 4 * T * T * 4096 + 2 * T * 4096 * h + 6 * T * h * f));
  m.mlp = Mlp::squared_relu;
  CHECK(dense_layer_params(m, p, 0) == doctest::Approx(attention + 2 * h * f));
  CHECK(layer_forward(m, p, false).mlp_up.flops.count() == doctest::Approx(2 * T * h * f));
  // LayerNorm adds a bias to each norm's weight: 2 h more a layer.
  m.norm = Norm::layernorm;
  CHECK(dense_layer_params(m, p, 0) == doctest::Approx(attention + 2 * h + 2 * h * f));
  // A gated activation reads two f-wide inputs and writes one: T f more elements than GeLU's read and write. Fused:
  // one kernel each way, its backward reading three and writing two (5 / 3); no concatenation of its own.
  ModelSpec gelu = llama_layer(), swiglu = llama_layer();
  gelu.mlp = Mlp::gelu;
  const auto fused = layer_forward(swiglu, p, false), gelu_layer = layer_forward(gelu, p, false);
  REQUIRE(fused.activation.size() == 1);
  REQUIRE(gelu_layer.activation.size() == 1);
  CHECK(static_cast<double>(fused.activation[0].bytes.count() - gelu_layer.activation[0].bytes.count()) ==
        doctest::Approx(2 * T * f));
  CHECK(fused.activation_grad[0].backward == doctest::Approx(5.0 / 3));
  CHECK(fused.mlp_split.bytes.count() == 0);
  // Eager: PyTorch's two kernels forward and three backward on the chunks, then the chunk's concatenation of the
  // two gradients (read 2 f, write 2 f per token).
  swiglu.eager_glu = true;
  const auto eager = layer_forward(swiglu, p, false);
  CHECK(eager.activation.size() == 2);
  CHECK(eager.activation_grad.size() == 3);
  CHECK(static_cast<double>(eager.mlp_split.bytes.count()) == doctest::Approx(4 * T * f * 2));
}

TEST_CASE("training: tied embeddings hold one V x h matrix on a single stage, two across stages") {
  ModelSpec m = llama_layer();
  ParallelPlan p;
  const double Vh = 128256.0 * 4096;
  CHECK(logits_params(m, p) == doctest::Approx(Vh + 4096));  // its matrix and the final RMSNorm
  m.tied_embeddings = true;
  CHECK(logits_params(m, p) == doctest::Approx(4096));
  CHECK(total_params(m) == doctest::Approx(Vh + 4096 + 2 * dense_layer_params(m, p, 0)));
  p.pp = 2;
  CHECK(logits_params(m, p) == doctest::Approx(Vh + 4096));  // the last stage's own copy
}

TEST_CASE("training: a MoE layer's active parameters are top_k of its experts, plus the shared ones") {
  // Fine-grained experts (DeepSeekMoE): 64 experts of 512, top 6, 2 shared, after 1 dense layer, every 2nd layer.
  ModelSpec m = llama_layer();
  m.layers = 6;
  m.moe = MoeSpec{64, 6, 1.25, 0, 512, 2, 1, 2};
  const double T = 4096, h = 4096, f = 14336, fe = 512;
  std::vector<bool> pattern;
  for (int l = 0; l < 6; ++l) pattern.push_back(is_moe_layer(m, l));
  CHECK(pattern == std::vector<bool>{false, true, false, true, false, true});
  ParallelPlan p;
  const double attention = h * 6144 + 4096 * h + 2 * h;
  CHECK(dense_layer_params(m, p, 0) == doctest::Approx(attention + 3 * h * f));
  CHECK(dense_layer_params(m, p, 1) == doctest::Approx(attention + h * 64 + 3 * h * 2 * fe));  // router, shared
  CHECK(expert_layer_params(m, p, 1) == doctest::Approx(64 * 3 * h * fe));
  CHECK(expert_layer_params(m, p, 2) == 0);
  CHECK(total_params(m) - active_params(m) == doctest::Approx(3 * (64 - 6) * 3 * h * fe));
  // FLOPs: the router, 6 routed and 2 shared experts per token, each 6 T h fe for a SwiGLU.
  const double attention_flops = 2 * T * h * 6144 + 4 * T * T * 4096 + 2 * T * 4096 * h;
  CHECK(layer_model_flops(m, 1).count() ==
        doctest::Approx(attention_flops + 2 * T * h * 64 + 6 * 6 * T * h * fe + 6 * T * h * 2 * fe));
  CHECK(layer_model_flops(m, 0).count() == doctest::Approx(attention_flops + 6 * T * h * f));
  // The shared experts run as a tensor-parallel MLP; expert_forward is the routed ones, unsplit.
  p.tp = 4;
  p.dp = 2;
  CHECK(layer_forward(m, p, true).mlp_up.flops.count() == doctest::Approx(2 * T * h * 2 * 2 * fe / 4));
  CHECK(layer_forward(m, p, true).router.flops.count() == doctest::Approx(2 * (T / 4) * h * 64));
  CHECK(expert_forward(m, 100).flops.count() == doctest::Approx(6 * 100 * h * fe));
  CHECK(dense_layer_params(m, p, 1) ==
        doctest::Approx(attention / 4 + 2 * h * 0.75 + h * 64 + 3 * h * 2 * fe / 4));  // norms, router replicated
}

TEST_CASE("training: multi-head latent attention's projections, by hand") {
  // DeepSeek-V3's attention (config.json): h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128.
  ModelSpec m = llama_layer();
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 128;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  ParallelPlan p;
  const double h = 7168, a = 128;
  const double by_hand = h * 1536 + 1536 * a * 192 + h * (512 + 64) + 512 * a * (128 + 128) + a * 128 * h + 1536 + 512 +
                         2 * h;  // the latents' norms and the layer's two
  CHECK(dense_layer_params(m, p, 0) - 3 * h * 14336 == doctest::Approx(by_hand));
  // Per token: the down projections, the up projections, QK^T over 192 and PV over 128 dimensions, the output.
  const double T = 4096, s = 4096;
  const double flops = 2 * T * (h * (1536 + 512 + 64) + 1536 * a * 192 + 512 * a * 256) + 2 * T * s * a * (192 + 128) +
                       2 * T * a * 128 * h + 6 * T * h * 14336;
  CHECK(layer_model_flops(m, 0).count() == doctest::Approx(flops));
  // Under TP the down projections are on every rank, the rest split.
  p.tp = 8;
  p.dp = 1;
  const auto l = layer_forward(m, p, false);
  CHECK(l.qkv.flops.count() == doctest::Approx(2 * T * (h * (1536 + 512 + 64) + (1536 * a * 192 + 512 * a * 256) / 8)));
}

TEST_CASE("training: the data-parallel all-reduce carries every gradient of a GQA SwiGLU model once") {
  // Two Llama-shaped layers (h 1024, 16 heads, 4 KV heads of 64, SwiGLU of 2816, vocabulary 32000, untied) on 8 DP
  // ranks: rank 0's all-reduces sum to 2 B per parameter of the whole model.
  const auto s = load(model_scenario(
      "    steps: 1\n    model: {layers: 2, hidden: 1024, heads: 16, kv_heads: 4, ffn_hidden: 2816, mlp: "
      "swiglu, norm: rmsnorm, "
      "rotary: true, vocabulary: 32000, sequence: 256}\n"));
  const double h = 1024, layer = h * (1024 + 2 * 256) + 1024 * h + 2 * h + 3 * h * 2816;
  const double params = 2 * layer + 32000 * h + 32000 * h + h;  // layers, embedding, logits, final norm
  std::vector<snsim::workloads::CollectiveOp> all;
  collectives(s.programs()[0].ops, all);
  double reduced = 0;
  for (const auto& c : all)
    if (c.kind == snsim::models::CollectiveKind::all_reduce && c.group->size() == 8 && c.bytes.count() > 8)
      reduced += static_cast<double>(c.bytes.count());
  CHECK(reduced == doctest::Approx(2 * params).epsilon(1e-6));
}

namespace {
double compute_flops(const std::vector<snsim::workloads::Op>& ops) {
  double sum = 0;
  for (const auto& op : ops) {
    if (const auto* c = std::get_if<snsim::workloads::ComputeOp>(&op.what)) sum += c->flops.count();
    if (const auto* st = std::get_if<snsim::workloads::StreamsOp>(&op.what))
      for (const auto& stream : st->streams) sum += compute_flops(stream);
  }
  return sum;
}
}  // namespace

TEST_CASE("training: recomputation adds the forward it recomputes to the backward") {
  // 4 layers of h 1024, s 512 on 8 DP ranks, 2 micro-batches each: full recomputation runs every layer's forward
  // once more, selective the attention core's forward: causal, the half of 4 b s^2 h that FlashAttention computes
  // (the model's FLOPs count all of it).
  auto flops = [](const std::string& recompute) {
    const auto s = load(
        model_scenario("    steps: 1\n    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, micro_batches: 2}\n"
                       "    parallel: {recompute: " +
                       recompute + "}\n"));
    return compute_flops(s.programs()[0].ops);
  };
  ModelSpec m;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.sequence = 512;
  const double none = flops("none"), s = 512, h = 1024;
  CHECK(flops("full") - none == doctest::Approx(4 * 2 * (layer_model_flops(m, 0).count() - 2 * s * s * h)));
  CHECK(flops("selective") - none == doctest::Approx(4 * 2 * 2 * s * s * h));
}

TEST_CASE("training: dense first layers, MoE layers and shared experts emit their own collectives") {
  // 4 layers, the first dense, then MoE with 1 shared expert, on tp 2 x dp 4 with ep 2 (no SP), 2 micro-batches.
  auto count = [](const std::string& moe) {
    const auto s =
        load(model_scenario("    steps: 1\n    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, "
                            "micro_batches: 2, moe: " +
                            moe + "}\n    parallel: {tp: 2, dp: 4, ep: 2}\n"));
    std::vector<snsim::workloads::CollectiveOp> all;
    collectives(s.programs()[0].ops, all);
    std::map<snsim::models::CollectiveKind, int> n;
    for (const auto& c : all)
      if (c.group->size() == 2 && c.group->front() == 0 && c.group->back() == 1) ++n[c.kind];  // rank 0's TP = EP
    return n;
  };
  using K = snsim::models::CollectiveKind;
  const auto routed = count("{experts: 4, top_k: 2, dense_layers: 1}");
  // Dispatch and combine in each of the 3 MoE layers, forward and backward, per micro-batch: 3 x 2 x 2 x 2.
  CHECK(routed.at(K::all_to_all) == 24);
  // TP all-reduces: attention forward and backward in every layer, the dense layer's MLP forward and backward:
  // (4 + 1) x 2 x 2; the MoE layers all-gather their routed tokens, forward and backward: 3 x 2 x 2.
  CHECK(routed.at(K::all_reduce) == 20);
  CHECK(routed.at(K::all_gather) == 12);
  // A shared expert is a tensor-parallel MLP in each MoE layer: 3 x 2 x 2 all-reduces more.
  const auto shared = count("{experts: 4, top_k: 2, dense_layers: 1, shared_experts: 1}");
  CHECK(shared.at(K::all_reduce) == 20 + 12);
  CHECK(shared.at(K::all_to_all) == 24);
}

TEST_CASE("training: architecture input errors") {
  using snsim::InputError;
  SUBCASE("kv_heads must divide heads") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, kv_heads: 3, sequence: 512}\n")),
        "t.yaml:4:58: workloads[0].model.kv_heads: must divide heads (8), got 3", InputError);
  }
  SUBCASE("tp must divide kv_heads") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, kv_heads: 2, sequence: 512}\n"
                            "    parallel: {tp: 4, dp: 2}\n")),
        "t.yaml:5:20: workloads[0].parallel.tp: must divide model.kv_heads (2), got 4", InputError);
  }
  SUBCASE("an unknown MLP") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, mlp: relu}\n")),
        "t.yaml:4:68: workloads[0].model.mlp: expected one of gelu, squared_relu, swiglu, geglu, found 'relu'",
        InputError);
  }
  SUBCASE("every layer dense") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 4, "
                            "dense_layers: 2}}\n")),
        doctest::Contains("workloads[0].model.moe.dense_layers: must be between 0 and 1, got 2"), InputError);
  }
  SUBCASE("autocast casts to a 16-bit format") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario(
            "    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, dtype: fp8, autocast: true}\n")),
        "t.yaml:4:85: workloads[0].model.autocast: casts fp32 parameters to bf16 or fp16, not to fp8", InputError);
  }
  SUBCASE("rope needs rotary embeddings and is fused or eager") {
    CHECK_THROWS_WITH_AS(
        load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, rope: eager}\n")),
        "t.yaml:4:69: workloads[0].model.rope: applies to rotary embeddings: set rotary: true", InputError);
    CHECK_THROWS_WITH_AS(
        load(model_scenario(
            "    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, rotary: true, rope: slow}\n")),
        "t.yaml:4:83: workloads[0].model.rope: expected fused or eager, found 'slow'", InputError);
  }
  SUBCASE("an unknown recompute") {
    CHECK_THROWS_WITH_AS(load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512}\n"
                                             "    parallel: {recompute: some}\n")),
                         "t.yaml:5:27: workloads[0].parallel.recompute: expected one of none, selective, full, found "
                         "'some'",
                         InputError);
  }
}

TEST_CASE("training: autocast keeps the residual stream in fp32: norms, residual adds, casts and the loss") {
  ModelSpec m;
  m.layers = 1;
  m.hidden = 2048;
  m.ffn_hidden = 8192;
  m.heads = 16;
  m.sequence = 4096;
  m.micro_batch = 2;
  m.vocabulary = 50304;
  const ParallelPlan p;
  const double T = 8192, h = 2048, V = 50304;
  ModelSpec amp = m;
  amp.autocast = true;
  const auto plain = layer_forward(m, p, false), mixed = layer_forward(amp, p, false);
  const auto bytes = [](const Kernel& k) { return static_cast<double>(k.bytes.count()); };
  // A norm reads and writes [T, h]: bf16 without autocast, fp32 with it; its backward reads x and dy, writes dx.
  CHECK(bytes(plain.norm) == doctest::Approx(2 * T * h * 2));
  CHECK(bytes(mixed.norm) == doctest::Approx(2 * T * h * 4));
  CHECK(mixed.norm.backward == doctest::Approx(1.5));
  // A residual add: bf16 + bf16 into bf16 (6 B an element), or fp32 + bf16 into fp32 (10 B) as PyTorch's
  // mixed-type kernel; its gradient's add is of the stream's format.
  CHECK(bytes(plain.residual) == doctest::Approx(T * h * 6));
  CHECK(bytes(mixed.residual) == doctest::Approx(T * h * 10));
  CHECK(mixed.residual.memory == models::MemoryKernel::mixed_add);
  CHECK(bytes(plain.residual_grad) == doctest::Approx(T * h * 6));
  CHECK(bytes(mixed.residual_grad) == doctest::Approx(T * h * 12));
  // Each cast between fp32 and bf16 of a [T, h] activation reads one and writes the other: none without autocast.
  CHECK(bytes(plain.input_casts) == 0);
  CHECK(bytes(mixed.input_casts) == doctest::Approx(T * h * 6));
  CHECK(mixed.input_grad_casts.memory == models::MemoryKernel::widen);
  CHECK(mixed.output_grad_casts.memory == models::MemoryKernel::stream);
  // The loss reads the logits in fp32 (Megatron's cast) or, under autocast, as bf16 after a widening cast.
  CHECK(static_cast<double>(loss_forward(m, p).bytes.count()) == doctest::Approx(T * V * 4));
  CHECK(static_cast<double>(loss_forward(amp, p).bytes.count()) == doctest::Approx(T * V * 2));
  CHECK(loss_cast(m, p).bytes.count() == 0);
  CHECK(static_cast<double>(loss_cast(amp, p).bytes.count()) == doctest::Approx(T * V * 6));
  // The embedding's table gradient: the whole table zeroed, the tokens' gradient rows summed into it, in the
  // gradients' format (fp32 under autocast).
  CHECK(static_cast<double>(embedding_grad(amp, p).bytes.count()) == doctest::Approx((T + V) * h * 4));
  CHECK(static_cast<double>(embedding_grad(m, p).bytes.count()) == doctest::Approx((T + V) * h * 2));
}

TEST_CASE("training: linear biases add a bias gradient per linear layer, reading its output's gradient") {
  ModelSpec m;
  m.layers = 1;
  m.hidden = 4096;
  m.ffn_hidden = 16384;
  m.heads = 32;
  m.kv_heads = 8;
  m.sequence = 2048;
  const double T = 2048, h = 4096, f = 16384, kv = 8 * 128;
  ParallelPlan p;
  p.tp = 4;
  CHECK(layer_forward(m, p, false).qkv.bias_grad.count() == 0);
  m.linear_bias = true;
  const auto l = layer_forward(m, p, false);
  // Column-parallel layers (QKV, MLP-up) hold 1 / tp of the outputs; row-parallel ones (projection, MLP-down) add
  // their bias after the reduction, over all h outputs.
  CHECK(static_cast<double>(l.qkv.bias_grad.count()) == doctest::Approx(T * (h + 2 * kv) / 4 * 2));
  CHECK(static_cast<double>(l.projection.bias_grad.count()) == doctest::Approx(T * h * 2));
  CHECK(static_cast<double>(l.mlp_up.bias_grad.count()) == doctest::Approx(T * f / 4 * 2));
  CHECK(static_cast<double>(l.mlp_down.bias_grad.count()) == doctest::Approx(T * h * 2));
}

TEST_CASE("training: FlashAttention is timed by its shape: this rank's heads, causal unless the model says not") {
  ModelSpec m = llama_layer();  // 32 heads, 8 KV heads of 128, sequence 4096
  m.micro_batch = 2;
  ParallelPlan p;
  p.tp = 4;
  const auto a = layer_forward(m, p, false).attention.attention;
  REQUIRE(a);
  CHECK(a->batch == 2);
  CHECK(a->heads == 8);
  CHECK(a->kv_heads == 2);
  CHECK(a->seq == 4096);
  CHECK(a->head_dim == 128);
  CHECK(a->causal);
  // An encoder (BERT) attends to every token.
  m.causal = false;
  CHECK_FALSE(layer_forward(m, p, false).attention.attention->causal);
  // Unfused attention stays a roofline of its FLOPs and score bytes.
  m.flash_attention = false;
  CHECK_FALSE(layer_forward(m, p, false).attention.attention);
}

namespace {
/// The attention kernels of a program, in order: their windows (0: all keys before).
void attention_windows(const std::vector<snsim::workloads::Op>& ops, std::vector<std::int64_t>& out) {
  for (const auto& op : ops) {
    if (const auto* c = std::get_if<snsim::workloads::ComputeOp>(&op.what))
      if (c->attention() && !c->attention()->backward) out.push_back(c->attention()->window);
    if (const auto* st = std::get_if<snsim::workloads::StreamsOp>(&op.what))
      for (const auto& stream : st->streams) attention_windows(stream, out);
  }
}
}  // namespace

TEST_CASE("training: sliding-window layers attend to their window, every global_every-th layer to all keys") {
  ModelSpec m = llama_layer();  // 32 heads, 8 KV heads of 128, sequence 4096
  m.layers = 6;
  m.sliding_window = SlidingWindow{.tokens = 1024, .global_every = 3};
  // Gemma's pattern: layers 2 and 5 (every third) global, the others local.
  std::vector<int> windows;
  for (int l = 0; l < m.layers; ++l) windows.push_back(attention_window(m, l));
  CHECK(windows == std::vector<int>{1024, 1024, 0, 1024, 1024, 0});
  // A local layer's model FLOPs count 2 s w - w^2 (query, key) pairs where a global one counts s^2 (Megatron's full
  // count): the difference is 2 b a (d_qk + d_v) (s - w)^2.
  const double s = 4096, w = 1024, a = 32, d = 128;
  CHECK(layer_model_flops(m, 2).count() - layer_model_flops(m, 0).count() ==
        doctest::Approx(2 * a * 2 * d * (s - w) * (s - w)));
  ParallelPlan p;
  p.tp = 2;
  const LayerForward l = layer_forward(m, p, false);
  REQUIRE(l.local_attention.attention);
  CHECK(l.local_attention.attention->window == 1024);
  CHECK(l.attention.attention->window == 0);
  CHECK(l.attention.flops.count() - l.local_attention.flops.count() ==
        doctest::Approx(2 * (a / 2) * 2 * d * (s - w) * (s - w)));
  // Q, K, V and O move the same bytes either way (FlashAttention keeps no scores).
  CHECK(l.local_attention.bytes == l.attention.bytes);
  // global_every 0: every layer local; a window of the whole sequence: none.
  m.sliding_window->global_every = 0;
  CHECK(attention_window(m, 2) == 1024);
  m.sliding_window->tokens = 4096;
  CHECK(attention_window(m, 0) == 0);
  // The program: each forward (and selective recompute) of a layer runs its own window.
  const auto sc =
      load(model_scenario("    steps: 1\n    model: {layers: 4, hidden: 1024, heads: 8, sequence: 2048, "
                          "sliding_window: {tokens: 512, global_every: 2}}\n"
                          "    parallel: {dp: 8, recompute: selective}\n"));
  std::vector<std::int64_t> seen;
  attention_windows(sc.programs()[0].ops, seen);
  // 4 forwards, then the backward's recomputed forwards from the last layer down
  CHECK(seen == std::vector<std::int64_t>{512, 0, 512, 0, 0, 512, 0, 512});
}

TEST_CASE("training: sliding-window input errors") {
  using snsim::InputError;
  CHECK_THROWS_WITH_AS(
      load(
          model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, causal: false, sliding_window: "
                         "{tokens: 128}}\n")),
      "t.yaml:4:94: workloads[0].model.sliding_window: a sliding window is causal attention's (a query sees the keys "
      "before it): needs causal: true",
      InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, sliding_window: "
                          "{global_every: 2}}\n")),
      doctest::Contains("workloads[0].model.sliding_window.tokens"), InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, sliding_window: "
                          "{tokens: 128, size: 2}}\n")),
      doctest::Contains("size"), InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, sliding_window: "
                          "{tokens: 128}}\n    parallel: {cp: 2, dp: 4}\n")),
      "t.yaml:5:20: workloads[0].parallel.cp: ring attention over a sliding window "
      "(model.sliding_window) is not modelled: use cp 1",
      InputError);
}

namespace {
/// `layers` GPT layers of h 1024 (8 heads of 128, GeLU MLP of 4h) on 512-token sequences.
ModelSpec small_gpt(int layers) {
  ModelSpec m;
  m.layers = layers;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.sequence = 512;
  return m;
}
}  // namespace

TEST_CASE("training: expert tensor parallelism folds an etp x ep grid over a stage's ranks, etp innermost") {
  // 8 ranks of one stage (tp 4 x dp 2), ep 2, etp 2: stage index i is ETP rank i % 2, EP rank (i / 2) % 2 and
  // expert-data rank i / 4 (Megatron-Core's "etp-ep-dp-pp").
  ParallelPlan p;
  p.tp = 4;
  p.dp = 2;
  p.ep = 2;
  p.etp = 2;
  CHECK(etp_group(p, 0) == std::vector<int>{0, 1});
  CHECK(etp_group(p, 6) == std::vector<int>{6, 7});
  CHECK(ep_group(p, 0) == std::vector<int>{0, 2});
  CHECK(ep_group(p, 1) == std::vector<int>{1, 3});
  CHECK(ep_group(p, 5) == std::vector<int>{5, 7});
  CHECK(expert_dp_group(p, 0) == std::vector<int>{0, 4});
  CHECK(expert_dp_group(p, 3) == std::vector<int>{3, 7});
  std::vector<int> ranks, groups;
  for (int r = 0; r < 8; ++r) {
    ranks.push_back(ep_rank(p, r));
    groups.push_back(ep_group_index(p, r));
  }
  CHECK(ranks == std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1});
  CHECK(groups == std::vector<int>{0, 1, 0, 1, 2, 3, 2, 3});
  // etp 1: EP groups of ep consecutive ranks, as before.
  p.etp = 1;
  CHECK(ep_group(p, 2) == std::vector<int>{2, 3});
  CHECK(ep_group_index(p, 5) == 2);
  // A rank holds 1 / etp of each of its experts' FFN: parameters and FLOPs split etp ways.
  ModelSpec m = small_gpt(2);
  m.moe = MoeSpec{.experts = 4, .top_k = 2};
  const double whole = expert_layer_params(m, p, 1);
  CHECK(whole == doctest::Approx(2.0 * 2 * 1024 * 4096));  // 2 of 4 experts a rank, two 1024 x 4096 matrices
  p.etp = 2;
  CHECK(expert_layer_params(m, p, 1) == doctest::Approx(whole / 2));
  CHECK(expert_forward(m, 1000, 2).flops.count() == doctest::Approx(expert_forward(m, 1000).flops.count() / 2));
}

TEST_CASE("training: with expert tensor parallelism each ETP group gathers its tokens, the expert work conserved") {
  // tp 2 x dp 4, ep 2, 4 experts top 2, 2 MoE layers (no dense one), one micro-batch: etp 2 against etp 1.
  const auto build = [](int etp) {
    return load(
        model_scenario("    steps: 1\n    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, micro_batches: 1, "
                       "moe: {experts: 4, top_k: 2}}\n    parallel: {tp: 2, dp: 4, ep: 2, etp: " +
                       std::to_string(etp) + "}\n"));
  };
  const auto one = build(1), two = build(2);
  using K = snsim::models::CollectiveKind;
  // Rank 0's ETP group is ranks 0 and 1: an all-gather before and a reduce-scatter after the experts, forward and
  // backward, in each MoE layer; none with etp 1.
  const auto etp_ops = [](const auto& s, K kind) {
    std::vector<snsim::workloads::CollectiveOp> all;
    collectives(s.programs()[0].ops, all);
    std::vector<double> bytes;
    for (const auto& c : all)
      if (c.kind == kind && *c.group == std::vector<int>{0, 1}) bytes.push_back(static_cast<double>(c.bytes.count()));
    return bytes;
  };
  // (tp 2 without sequence parallelism also all-gathers the routed tokens over the TP group 0-1 in both cases.)
  CHECK(etp_ops(two, K::all_gather).size() == etp_ops(one, K::all_gather).size() + 4);
  const auto scattered = etp_ops(two, K::reduce_scatter);
  REQUIRE(scattered.size() == 4);
  // Each the padded tokens the ETP group received for rank 0's 2 experts from its EP group of 2: etp x 2 x 2 x slots
  // tokens of 1024 bf16, slots = ceil(1.25 x 256 tokens (512 over tp 2) x 2 / 4) = 160.
  CHECK(scattered[0] == doctest::Approx(2.0 * 2 * 2 * 160 * 1024 * 2));
  // The experts' FLOPs over all ranks are the same: twice the tokens through half the FFN.
  const auto expert_flops = [](const auto& s) {
    double sum = 0;
    for (const auto& prog : s.programs()) sum += compute_flops(prog.ops);
    return sum;
  };
  CHECK(expert_flops(two) == doctest::Approx(expert_flops(one)).epsilon(1e-9));
}

TEST_CASE("training: expert tensor parallelism input errors") {
  using snsim::InputError;
  const std::string moe = "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 4}}\n";
  CHECK_THROWS_WITH_AS(load(model_scenario("    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512}\n"
                                           "    parallel: {tp: 2, dp: 4, etp: 2}\n")),
                       "t.yaml:5:35: workloads[0].parallel.etp: expert tensor parallelism needs model.moe", InputError);
  CHECK_THROWS_WITH_AS(load(model_scenario(moe + "    parallel: {tp: 2, dp: 4, ep: 4, etp: 4}\n")),
                       "t.yaml:5:42: workloads[0].parallel.etp: etp x ep = 4 x 4 must divide tp x dp = 8 (the ranks "
                       "of a pipeline stage)",
                       InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 4, "
                          "ffn_hidden: 1001}}\n    parallel: {tp: 1, dp: 8, etp: 8}\n")),
      doctest::Contains("workloads[0].parallel.etp: must divide the experts' FFN (1001), got 8"), InputError);
  CHECK_THROWS_WITH_AS(load(model_scenario("    schedule: pgas\n" + moe + "    parallel: {tp: 2, dp: 4, etp: 2}\n")),
                       doctest::Contains("workloads[0].parallel.etp: expert tensor parallelism's token gathers are "
                                         "NCCL collectives: needs schedule bsp"),
                       InputError);
}

TEST_CASE("training: the busiest exchange of a dropless all-to-all-v, by hand") {
  // 3 ranks, 2 experts each (rank q holds experts 2q and 2q + 1).
  const Routing placed{{5, 1, 4, 0, 2, 2}, {0, 3, 7, 1, 0, 0}, {6, 0, 0, 0, 9, 1}};
  // Rank 0 sends 4 + 2 + 2 = 8 and receives 3 + 6 = 9; rank 1 sends 3 and receives 4 + 0 = 4; rank 2 sends 6 and
  // receives 2 + 2 + 0 + 0 = 4.
  CHECK(busiest_exchange(placed, 2) == 9);
  // One rank holding every expert exchanges nothing.
  CHECK(busiest_exchange(Routing{{3, 4}}, 2) == 0);
}

TEST_CASE("training: a dropless MoE computes every choice, where capacity drops some of a skewed router's") {
  // 8 ranks (dp 8, ep 4), 8 experts top 2 with a Zipf-skewed router, 2 MoE layers, 2 micro-batches of 512 tokens.
  const auto build = [](const std::string& capacity) {
    return load(
        model_scenario("    steps: 1\n    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, micro_batches: 2, "
                       "moe: {experts: 8, top_k: 2, skew: 1.5, " +
                       capacity + "}}\n    parallel: {dp: 8, ep: 4}\n"));
  };
  const auto dropless = build("dropless: true"), padded = build("capacity_factor: 1.0");
  // Expert FLOPs over all ranks: 3 x (forward and backward) the choices' tokens through one expert's MLP.
  const auto expert_flops = [](const auto& s) {
    double sum = 0;
    std::function<void(const std::vector<snsim::workloads::Op>&)> walk = [&](const auto& ops) {
      for (const auto& op : ops) {
        if (const auto* c = std::get_if<snsim::workloads::ComputeOp>(&op.what))
          if (c->kernel == "expert") sum += c->flops.count();
        if (const auto* st = std::get_if<snsim::workloads::StreamsOp>(&op.what))
          for (const auto& stream : st->streams) walk(stream);
      }
    };
    for (const auto& prog : s.programs()) walk(prog.ops);
    return sum;
  };
  const double per_token = 2.0 * 2 * 1024 * 4096;  // GeLU MLP: up and down, 1024 x 4096
  const double choices = 8.0 * 512 * 2 * 2 * 2;    // ranks x tokens x top_k x layers x micro-batches
  CHECK(expert_flops(dropless) == doctest::Approx(3 * per_token * choices).epsilon(1e-9));
  CHECK(expert_flops(padded) < 0.99 * expert_flops(dropless));
  // The dispatch carries at least the mean exchange, 512 x 2 x 3 / 4 tokens a rank to others (2 KiB each), as
  // n / (n - 1) of a buffer; the capacity version the padded buffer, 8 experts x ceil(1.0 x 1024 / 8) slots.
  std::vector<snsim::workloads::CollectiveOp> exchanges, buffers;
  collectives(dropless.programs()[0].ops, exchanges);
  collectives(padded.programs()[0].ops, buffers);
  std::erase_if(exchanges, [](const auto& c) { return c.kind != snsim::models::CollectiveKind::all_to_all; });
  std::erase_if(buffers, [](const auto& c) { return c.kind != snsim::models::CollectiveKind::all_to_all; });
  REQUIRE(exchanges.size() == 16);  // dispatch and combine, forward and backward, 2 layers, 2 micro-batches
  for (const auto& c : exchanges) CHECK(static_cast<double>(c.bytes.count()) >= 512.0 * 2 * 2048 * (1 - 1e-9));
  for (const auto& c : buffers) CHECK(c.bytes.count() == 8u * 128 * 2048);
  CHECK_THROWS_WITH_AS(build("dropless: true, capacity_factor: 1.5"),
                       doctest::Contains("workloads[0].model.moe.capacity_factor: a dropless MoE has no capacity: give "
                                         "capacity_factor or dropless: true, not both"),
                       snsim::InputError);
}

TEST_CASE("training: group-limited routing keeps each token's experts in group_top_k groups") {
  RandomStream pick(7, "test");
  const auto p = popularity(16, 1.0, pick);
  // 4 groups of 4 experts. Picking 2 of 4 groups one at a time by weight: the 6 subsets' chances sum to 1, and a
  // subset {a, b} has w_a w_b / (1 - w_a) + w_b w_a / (1 - w_b) (Plackett-Luce without replacement).
  const GroupSubsets two = group_subsets(p, 4, 2);
  REQUIRE(two.masks.size() == 6);
  std::vector<double> w(4, 0.0);
  for (std::size_t e = 0; e < 16; ++e) w[e / 4] += p[e];
  double sum = 0;
  for (std::size_t s = 0; s < two.masks.size(); ++s) {
    sum += two.chance[s];
    std::vector<std::size_t> g;
    for (std::size_t i = 0; i < 4; ++i)
      if (two.masks[s] >> i & 1) g.push_back(i);
    REQUIRE(g.size() == 2);
    const double a = w[g[0]], b = w[g[1]];
    CHECK(two.chance[s] == doctest::Approx(a * b / (1 - a) + b * a / (1 - b)).epsilon(1e-12));
    CHECK(two.experts[s].size() == 8);
  }
  CHECK(sum == doctest::Approx(1).epsilon(1e-12));
  // One group a token: its top_k = 3 choices all land in one group, so every rank's count per group is a multiple of
  // 3, and the choices add up to tokens x top_k.
  const GroupSubsets one = group_subsets(p, 4, 1);
  RandomStream rng(11, "test");
  const Routing r = route_limited(p, one, 8, 1000, 3, rng);
  for (const auto& row : r) {
    CHECK(std::accumulate(row.begin(), row.end(), std::uint64_t{0}) == 3000);
    for (std::size_t g = 0; g < 4; ++g) CHECK((row[4 * g] + row[4 * g + 1] + row[4 * g + 2] + row[4 * g + 3]) % 3 == 0);
  }
  // Uniform popularity: by symmetry every expert gets tokens x top_k / experts on average (here 10,000 x 2 / 16).
  RandomStream flat(1, "test");
  const auto uniform = popularity(16, 0.0, flat);
  const Routing even = route_limited(uniform, group_subsets(uniform, 4, 2), 64, 10000, 2, flat);
  for (std::size_t e = 0; e < 16; ++e) {
    double load = 0;
    for (const auto& row : even) load += static_cast<double>(row[e]);
    CHECK(load / 64 == doctest::Approx(1250).epsilon(0.02));
  }
}

TEST_CASE("training: group-limited routing input errors, and DeepSeek-V3's 4 of 8 groups") {
  using snsim::InputError;
  const auto moe = [](const std::string& keys) {
    return load(model_scenario(
        "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, moe: {experts: 8, top_k: 4, " + keys + "}}\n"));
  };
  CHECK_THROWS_WITH_AS(moe("groups: 3"),
                       doctest::Contains("workloads[0].model.moe.groups: must divide experts (8), got 3"), InputError);
  CHECK_THROWS_WITH_AS(moe("groups: 4, group_top_k: 5"),
                       doctest::Contains("workloads[0].model.moe.group_top_k: must be between 1 and 4, got 5"),
                       InputError);
  CHECK_THROWS_WITH_AS(moe("groups: 4, group_top_k: 1"),
                       doctest::Contains("workloads[0].model.moe.group_top_k: leaves 1 x 2 experts to a token, fewer "
                                         "than top_k (4)"),
                       InputError);
  const ModelSpec& v3 = *find_preset("deepseek-v3");
  CHECK(v3.moe->groups == 8);
  CHECK(v3.moe->group_top_k == 4);
  // A step with limited routing runs, and each dispatch still carries the capacity-padded buffer.
  CHECK(moe("groups: 4, group_top_k: 2").programs().size() == 8);
}

TEST_CASE("training: TP communication overlap replaces SP's collectives by ring exchanges beside GEMM chunks") {
  // 2 layers of h 1024 on TP 4 x DP 2 with sequence parallelism; with tp_overlap every all-gather and reduce-scatter
  // of the layers is tp - 1 = 3 puts to the next TP rank, each beside a quarter of the GEMM it feeds or drains.
  const auto build = [](bool overlap) {
    return load(
        model_scenario(std::string("    steps: 1\n    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, "
                                   "micro_batches: 1}\n    parallel: {tp: 4, dp: 2, sequence_parallel: true, "
                                   "tp_overlap: ") +
                       (overlap ? "true" : "false") + "}\n"));
  };
  const auto plain = build(false), overlapped = build(true);
  const auto count = [](const auto& s) {
    std::vector<snsim::workloads::CollectiveOp> all;
    collectives(s.programs()[0].ops, all);
    int tp = 0;
    for (const auto& c : all) tp += c.group->size() == 4;
    int puts = 0;
    std::function<void(const std::vector<snsim::workloads::Op>&)> walk = [&](const auto& ops) {
      for (const auto& op : ops) {
        if (const auto* p = std::get_if<snsim::workloads::PutOp>(&op.what)) puts += p->to == 1;
        if (const auto* st = std::get_if<snsim::workloads::StreamsOp>(&op.what))
          for (const auto& stream : st->streams) walk(stream);
      }
    };
    walk(s.programs()[0].ops);
    return std::pair{tp, puts};
  };
  // Without overlap: 4 TP collectives a layer each way (2 all-gathers, 2 reduce-scatters), 2 layers: 16.
  CHECK(count(plain) == std::pair{16, 0});
  // With it none; 16 sites x 3 rounds of a put (1 issuing block: a 64 KiB chunk) to rank 1, rank 0's next.
  CHECK(count(overlapped) == std::pair{0, 48});
  // The GEMMs' work is the same, cut in chunks.
  CHECK(compute_flops(overlapped.programs()[0].ops) ==
        doctest::Approx(compute_flops(plain.programs()[0].ops)).epsilon(1e-9));
}

TEST_CASE("training: TP communication overlap input errors") {
  using snsim::InputError;
  const std::string model = "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512}\n";
  CHECK_THROWS_WITH_AS(load(model_scenario(model + "    parallel: {tp: 4, dp: 2, tp_overlap: true}\n")),
                       doctest::Contains("workloads[0].parallel.tp_overlap: overlaps sequence parallelism's "
                                         "all-gathers and reduce-scatters with the GEMMs: needs sequence_parallel: "
                                         "true and tp > 1"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    model: {layers: 2, hidden: 1024, heads: 8, sequence: 512, autocast: true}\n"
                          "    parallel: {tp: 4, dp: 2, sequence_parallel: true, tp_overlap: true}\n")),
      doctest::Contains("workloads[0].parallel.tp_overlap: is TransformerEngine's, whose GEMMs take no PyTorch "
                        "autocast casts: needs model.autocast false"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load(model_scenario("    schedule: pgas\n" + model +
                          "    parallel: {tp: 4, dp: 2, sequence_parallel: true, tp_overlap: true}\n")),
      doctest::Contains("workloads[0].parallel.tp_overlap: overlaps NCCL's sequence-parallel "
                        "collectives: needs schedule bsp"),
      InputError);
}

TEST_CASE("training: a multi-token-prediction module adds a projection, a layer and an output head's pass") {
  // 4 layers of h 1024 (8 heads, GeLU 4h, vocabulary 32000, 512 tokens) on PP 2 x DP 4, 2 micro-batches.
  ModelSpec m = small_gpt(4);
  m.vocabulary = 32000;
  ParallelPlan p;
  p.pp = 2;
  p.dp = 4;
  p.micro_batches = 2;
  ModelSpec mtp = m;
  mtp.mtp_layers = 1;
  // Model FLOPs: 3 x (forward) over the global batch, the module's forward being its 2h -> h projection, a layer (model
  // layer 4) and one more pass through the V x h output head.
  const double T = 512, h = 1024, V = 32000;
  const double module = 2 * T * 2 * h * h + layer_model_flops(m, 4).count() + 2 * T * h * V;
  CHECK(step_model_flops(mtp, p).count() - step_model_flops(m, p).count() ==
        doctest::Approx(3 * module * 2 * 4).epsilon(1e-9));
  // Parameters on the last stage: the layer's, the projection's 2h x h, three LayerNorms (weight and bias, 2h each)
  // and, across stages, a copy of the embedding; none routed (a dense model); none without the module. total_params
  // leaves them out.
  CHECK(mtp_dense_params(mtp, p) == doctest::Approx(dense_layer_params(m, p, 4) + 2 * h * h + 3 * 2 * h + V * h));
  CHECK(mtp_expert_params(mtp, p) == 0);
  CHECK(mtp_dense_params(m, p) == 0);
  CHECK(total_params(mtp) == total_params(m));
  // The last stage's weights and gradients grow by them (bf16), the first stage's not.
  const MemorySpec memory;
  CHECK(static_cast<double>(stage_footprint(mtp, p, memory, 1).weights.count() -
                            stage_footprint(m, p, memory, 1).weights.count()) ==
        doctest::Approx(2 * mtp_dense_params(mtp, p)).epsilon(1e-6));
  CHECK(stage_footprint(mtp, p, memory, 0).weights == stage_footprint(m, p, memory, 0).weights);
  // The program: on the last stage each micro-batch's forward runs one attention and one output-head GEMM more.
  const auto count = [](int layers_extra) {
    const auto s =
        load(model_scenario("    steps: 1\n    model: {layers: 4, hidden: 1024, heads: 8, sequence: 512, vocabulary: "
                            "32000, micro_batches: 2, mtp_layers: " +
                            std::to_string(layers_extra) + "}\n    parallel: {pp: 2, dp: 4}\n"));
    std::vector<int> out;
    for (int rank : {0, 4}) {  // rank 0 on the first stage, rank 4 on the last
      int attention = 0, heads = 0;
      std::function<void(const std::vector<snsim::workloads::Op>&)> walk = [&](const auto& ops) {
        for (const auto& op : ops) {
          if (const auto* c = std::get_if<snsim::workloads::ComputeOp>(&op.what)) {
            attention += c->attention() && !c->attention()->backward;
            heads += c->gemm() && !c->gemm()->backward && c->gemm()->m == 32000;
          }
          if (const auto* st = std::get_if<snsim::workloads::StreamsOp>(&op.what))
            for (const auto& stream : st->streams) walk(stream);
        }
      };
      walk(s.programs()[static_cast<std::size_t>(rank)].ops);
      out.push_back(attention);
      out.push_back(heads);
    }
    return out;
  };
  // 2 micro-batches x 2 layers a stage; the output head on the last stage only.
  CHECK(count(0) == std::vector<int>{4, 0, 4, 2});
  CHECK(count(1) == std::vector<int>{4, 0, 6, 4});
}

TEST_CASE("training: DeepSeek-V3's multi-token-prediction module is 11.6B on top of its 671B") {
  // One MoE layer (model layer 61) as the others: MLA 187.1M, 257 experts of 3 x 7168 x 2048 = 44.04M and the router
  // 7168 x 256: 11.51B; the projection 2 x 7168^2 = 102.8M and three norms: 11.61B. With its copies of the embedding
  // and the output head (1.85B) that is the checkpoint's 14B of DeepSeek-AI 2024 §2.2 (13.5B counted).
  const ModelSpec& v3 = *find_preset("deepseek-v3");
  CHECK(v3.mtp_layers == 1);
  const ParallelPlan one;
  CHECK(mtp_dense_params(v3, one) + mtp_expert_params(v3, one) == doctest::Approx(11.61e9).epsilon(0.01));
}
