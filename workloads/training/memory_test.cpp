// The HBM footprint per GPU against Korthikanti et al. 2022's activation formulas (their Table 2) and a whole
// configuration counted by hand; a plan that does not fit is reported as such, and runs when allowed to.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"
#include "workloads/training/memory.hpp"
#include "workloads/training/presets.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;
using snsim::workloads::testing::metric;
using snsim::workloads::testing::table;

namespace {
/// A GPT-3-like layer as Korthikanti et al. count it: 16-bit, dropout, the attention scores kept (unfused).
ModelSpec gpt_layer() {
  ModelSpec m;
  m.layers = 4;
  m.hidden = 4096;
  m.heads = 32;
  m.ffn_hidden = 4 * 4096;
  m.sequence = 2048;
  m.micro_batch = 2;
  m.vocabulary = 51200;
  m.flash_attention = false;
  m.dropout = true;
  return m;
}

double activations(const ModelSpec& m, int tp, bool sp, Recompute r) {
  ParallelPlan p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.recompute = r;
  return static_cast<double>(layer_activations(m, p, 0).count());
}

}  // namespace

TEST_CASE("memory: a layer's activations follow Korthikanti et al. 2022, Table 2") {
  const ModelSpec m = gpt_layer();
  const double s = 2048, b = 2, h = 4096, a = 32, t = 8, sbh = s * b * h;
  // No parallelism: s b h (34 + 5 a s / h).
  CHECK(activations(m, 1, false, Recompute::none) == doctest::Approx(sbh * (34 + 5 * a * s / h)));
  // Tensor parallel: s b h (10 + 24 / t + 5 a s / (h t)).
  CHECK(activations(m, 8, false, Recompute::none) == doctest::Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  // Tensor and sequence parallel: s b h / t (34 + 5 a s / h).
  CHECK(activations(m, 8, true, Recompute::none) == doctest::Approx(sbh / t * (34 + 5 * a * s / h)));
  // ... with selective recomputation: 34 s b h / t, and the softmax's fp32 log-sum-exp, 4 b a s / t.
  CHECK(activations(m, 8, true, Recompute::selective) == doctest::Approx(sbh / t * 34 + 4 * b * a * s / t));
  // Full recomputation: the layer's input, 2 s b h (Table 2's last row; divided by t with SP).
  CHECK(activations(m, 8, false, Recompute::full) == doctest::Approx(2 * sbh));
  CHECK(activations(m, 8, true, Recompute::full) == doctest::Approx(2 * sbh / t));
}

TEST_CASE("memory: grouped-query attention and a gated MLP change the kept tensors as their widths do") {
  ModelSpec m = *find_preset("llama3.1-8b");
  m.sequence = 4096;
  const double T = 4096, h = 4096, f = 14336, a = 32;
  // Norm inputs 2, QKV input 1, Q K V (4096 + 2 x 1024) / h, O 1, SwiGLU: its input h, gate and up 2 f, product f;
  // FlashAttention's log-sum-exp 4 a s; all in bf16 and no dropout.
  const double by_hand = 2 * T * (2 * h + h + 6144 + 4096 + h + 2 * f + f) + 4 * a * T;
  CHECK(activations(m, 1, false, Recompute::none) == doctest::Approx(by_hand));
}

TEST_CASE("memory: the footprint of a pipelined GQA model, counted by hand") {
  // 8 layers of h 2048 (16 heads of 128, 4 KV heads, SwiGLU 8192, RMSNorm), vocabulary 32000 untied, sequence 4096,
  // micro_batch 1, 8 micro-batches; on 8 H100s as tp 2 (SP), pp 2, dp 2, distributed optimizer.
  const std::string yaml =
      "topology: {type: hgx, gpu: h100, gpus: 8}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {layers: 8, hidden: 2048, heads: 16, kv_heads: 4, ffn_hidden: 8192, mlp: swiglu, norm: rmsnorm,\n"
      "            rotary: true, vocabulary: 32000, sequence: 4096, micro_batches: 8}\n"
      "    parallel: {tp: 2, pp: 2, dp: 2, sequence_parallel: true, zero: true}\n"
      "    memory: {framework_overhead: 1GiB, communicator_buffers: 100MiB}\n";
  const auto s = load(yaml);
  const auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  const auto t = make_training(doc->root().child("workloads").elements().front(), s.fabric());
  const auto& f = t->footprints();
  REQUIRE(f.size() == 2);
  const double h = 2048, T = 4096, V = 32000;
  // Per rank a layer: Q and O 2 x 2048^2 / 2, K and V 2 x 2048 x 512 / 2, SwiGLU 3 x 2048 x 8192 / 2, and two
  // RMSNorm weights (replicated): 4194304 + 1048576 + 25165824 + 4096 = 30412800; 4 layers on a stage.
  const double layer = 30412800;
  const double stage0 = 4 * layer + V * h / 2, stage1 = 4 * layer + V * h / 2 + h;  // embedding; logits, final norm
  CHECK(f[0].params == doctest::Approx(stage0));
  CHECK(f[1].params == doctest::Approx(stage1));
  CHECK(static_cast<double>(f[0].weights.count()) == doctest::Approx(2 * stage0).epsilon(1e-9));
  CHECK(static_cast<double>(f[0].gradients.count()) == doctest::Approx(2 * stage0).epsilon(1e-9));
  CHECK(static_cast<double>(f[0].optimizer.count()) == doctest::Approx(12 * stage0 / 2).epsilon(1e-9));  // dp 2
  // Activations of a layer, bf16, everything split over tp 2 by TP and SP: norm inputs 2 h, QKV input h, Q K V
  // (2048 + 2 x 512), O 2048, MLP input h, gate and up 2 x 8192, product 8192; and the 4-byte log-sum-exp of 16
  // heads. 1F1B: stage 0 holds pp = 2 micro-batches, stage 1 one, plus its logits (bf16 and fp32) and the final
  // norm's input.
  const double per_layer = 2 * T * (2 * h + h + 3072 + 2048 + h + 2 * 8192 + 8192) / 2 + 4 * 16 * T / 2;
  CHECK(f[0].in_flight == 2);
  CHECK(f[1].in_flight == 1);
  CHECK(static_cast<double>(f[0].activations.count()) == doctest::Approx(2 * 4 * per_layer).epsilon(1e-9));
  CHECK(static_cast<double>(f[1].activations.count()) ==
        doctest::Approx(4 * per_layer + 2 * T * h / 2 + 6 * T * V / 2).epsilon(1e-9));
  // Communicators: TP, DP, one pipeline neighbour and the global norm's: 4 x 100 MiB.
  CHECK(f[0].communication.count() == 4 * (100ull << 20));
  CHECK(f[0].overhead.count() == 1ull << 30);
  CHECK(f[0].total() ==
        f[0].weights + f[0].gradients + f[0].optimizer + f[0].activations + f[0].communication + f[0].overhead);
  CHECK(t->fits());
}

TEST_CASE("memory: autocast keeps fp32 weights and gradients and two fp32 moments, no second master copy") {
  const std::string yaml =
      "topology: {type: hgx, gpu: h100, gpus: 2}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {layers: 2, hidden: 1024, heads: 8, vocabulary: 32000, sequence: 1024, autocast: true}\n"
      "    parallel: {dp: 2, zero: true}\n";
  const auto s = load(yaml);
  const auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  const auto t = make_training(doc->root().child("workloads").elements().front(), s.fabric());
  const auto& f = t->footprints().front();
  CHECK(static_cast<double>(f.weights.count()) == doctest::Approx(4 * f.params).epsilon(1e-9));
  CHECK(static_cast<double>(f.gradients.count()) == doctest::Approx(4 * f.params).epsilon(1e-9));
  CHECK(static_cast<double>(f.optimizer.count()) == doctest::Approx(8 * f.params / 2).epsilon(1e-9));  // dp 2
}

TEST_CASE("memory: a plan that does not fit is reported with its numbers and runs nothing") {
  // Llama 3.1 70B (8 of its layers) on one HGX without model parallelism: 8 x 855.6M parameters and the 2.1B of
  // the embeddings at 16 B each (ZeRO off) are ~137 GiB, over the H100's HBM.
  const std::string yaml =
      "topology: {type: hgx, gpu: h100, gpus: 8}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {preset: llama3.1-70b, layers: 8, sequence: 1024}\n"
      "    parallel: {dp: 8}\n";
  const Report r = load(yaml).run();
  CHECK(r.outcome.starts_with("does not fit: a GPU of pipeline stage 0 needs "));
  CHECK(r.outcome.find(fmt::format("of its {:.1f} GiB HBM (weights", metric(r, "hbm_capacity_gib"))) !=
        std::string::npos);
  CHECK(metric(r, "fits") == 0);
  CHECK(metric(r, "peak_hbm_gib") > metric(r, "hbm_capacity_gib"));
  CHECK(r.ops.empty());
  const double params = 8 * 855.6e6 + 2 * 128256.0 * 8192;
  CHECK(metric(r, "weights_gib") * (1ull << 30) == doctest::Approx(2 * params).epsilon(0.001));
  CHECK(metric(r, "optimizer_gib") * (1ull << 30) == doctest::Approx(12 * params).epsilon(0.001));
}

TEST_CASE("memory: allow_oversubscribe simulates a plan that does not fit") {
  const std::string yaml =
      "topology: {type: hgx, gpu: h100, gpus: 8}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {preset: llama3.1-70b, layers: 8, sequence: 1024}\n"
      "    parallel: {dp: 8}\n"
      "    memory: {allow_oversubscribe: true}\n";
  const Report r = load(yaml).run();
  CHECK(r.outcome == "completed");
  CHECK(metric(r, "fits") == 0);
  CHECK(metric(r, "step_mean_ms") > 0);
}
