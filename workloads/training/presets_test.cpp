// Every named model against its published size: total and active parameters, counted by total_params and
// active_params from the preset's shapes alone, within 2 % of the number its authors give.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "workloads/training/presets.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;

namespace {
const ModelSpec& preset(std::string_view name) {
  const ModelSpec* m = find_preset(name);
  REQUIRE(m != nullptr);
  return *m;
}

void check_size(std::string_view name, double total, double active) {
  CAPTURE(name);
  const ModelSpec& m = preset(name);
  CHECK(total_params(m) == doctest::Approx(total).epsilon(0.02));
  CHECK(active_params(m) == doctest::Approx(active).epsilon(0.02));
}
}  // namespace

TEST_CASE("presets: the Llama 3.1 models are 8.03, 70.6 and 405.9 billion parameters") {
  // 8B by hand: a layer is Q and O 2 x 4096^2, K and V 2 x 4096 x 1024, SwiGLU 3 x 4096 x 14336 and two RMSNorms:
  // 33.55M + 8.39M + 176.16M + 8192 = 218.1M; x 32 = 6.98B; embedding and logits 2 x 128256 x 4096 = 1.05B: 8.03B.
  check_size("llama3.1-8b", 8.03e9, 8.03e9);
  // 70B: (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672) x 80 = 68.45B, + 2 x 128256 x 8192 = 2.10B: 70.55B.
  check_size("llama3.1-70b", 70.6e9, 70.6e9);
  // 405B: (2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248) x 126 = 401.6B, + 2 x 128256 x 16384 = 4.2B: 405.8B.
  check_size("llama3.1-405b", 405.9e9, 405.9e9);
}

TEST_CASE("presets: Mixtral 8x7B is 46.7B total and 12.9B active, 8x22B 141B and 39B") {
  // 8x7B: attention 41.9M and 8 SwiGLU experts of 3 x 4096 x 14336 = 176.2M a layer: (41.9 + 1409.3)M x 32 = 46.4B,
  // + 2 x 32000 x 4096 = 0.26B: 46.7B; active: two experts, (41.9 + 352.3)M x 32 + 0.26B = 12.9B (Jiang et al. 2024).
  check_size("mixtral-8x7b", 46.7e9, 12.9e9);
  // 8x22B: attention 2 x 6144^2 + 2 x 6144 x 1024 = 88.1M, experts 8 x 3 x 6144 x 16384 = 2416M: x 56 = 140.2B,
  // + 0.39B = 140.6B; active (88.1 + 604)M x 56 + 0.39B = 39.1B (Mistral AI's announcement: 141B, 39B active).
  check_size("mixtral-8x22b", 141e9, 39e9);
}

TEST_CASE("presets: DeepSeek-V3 is 671B total and 37B active without its MTP module") {
  // MLA a layer: 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 x 128 x 256 + 128 x 128 x 7168 = 187.1M; x 61 =
  // 11.4B. 3 dense SwiGLU layers of 18432: 3 x 396.4M = 1.19B. 58 MoE layers of 256 + 1 experts of 3 x 7168 x 2048
  // = 44.0M and a 7168 x 256 router: 58 x 11.32B = 656.4B. Embedding and logits 2 x 129280 x 7168 = 1.85B.
  // Total 670.9B; active: 9 experts a MoE layer, 58 x 398M + 11.4 + 1.19 + 1.85 = 37.5B (DeepSeek-AI 2024, §1).
  check_size("deepseek-v3", 671e9, 37e9);
}

TEST_CASE("presets: Qwen3-30B-A3B is 30.5B total and 3.3B active, 235B-A22B 235B and 22B") {
  // 30B: attention 2048 x (4096 + 2 x 512) + 4096 x 2048 = 18.9M, 128 experts of 3 x 2048 x 768 = 4.72M: 623M x 48 =
  // 29.9B, + 2 x 151936 x 2048 = 0.62B: 30.5B; active: 8 experts, (18.9 + 37.7 + 0.26)M x 48 + 0.62B = 3.35B.
  check_size("qwen3-30b-a3b", 30.5e9, 3.3e9);
  // 235B: attention 4096 x (8192 + 1024) + 8192 x 4096 = 71.3M, 128 experts of 18.9M: 2488M x 94 = 233.8B, + 1.24B
  // = 235.1B; active (71.3 + 151 + 0.5)M x 94 + 1.24B = 22.2B (Yang et al. 2025, Table 2).
  check_size("qwen3-235b-a22b", 235e9, 22e9);
}

TEST_CASE("presets: GPT-3 is 175B and the Nemotron-4 models 15.7B and 341B") {
  // GPT-3: 12 x 12288^2 x 96 = 174.0B, + the tied 50257 x 12288 = 0.62B: 174.6B (Brown et al. 2020, Table 2.1).
  check_size("gpt3-175b", 175e9, 175e9);
  // 15B: attention 2 x 6144^2 + 2 x 6144 x 1024 = 88.1M, squared-ReLU MLP 2 x 6144 x 24576 = 302M: 390M x 32 = 12.5B,
  // + 2 x 256000 x 6144 = 3.1B embedding: 15.6B (Parmar et al. 2024: 12.5B non-embedding, 3.2B embedding).
  check_size("nemotron-4-15b", 15.7e9, 15.7e9);
  // 340B: (2 x 18432^2 + 2 x 18432 x 1536 + 2 x 18432 x 73728) x 96 = 331.6B, + 2 x 256000 x 18432 = 9.4B: 341.0B
  // (NVIDIA 2024: 331.6B non-embedding, 9.4B embedding).
  check_size("nemotron-4-340b", 341e9, 341e9);
}

TEST_CASE("presets: Gemma 2 27B is 27.2B, its local layers attending to 4,096 keys, every second layer to all") {
  // Q and O 2 x 4608 x 4096, K and V 2 x 4608 x 2048, GeGLU 3 x 4608 x 36864 and two RMSNorms: 566.2M x 46 = 26.05B,
  // + the tied 256000 x 4608 = 1.18B: 27.23B (Gemma Team 2024, Table 2: 26.05B non-embedding, 1.18B embedding).
  check_size("gemma2-27b", 27.2e9, 27.2e9);
  const ModelSpec& m = preset("gemma2-27b");
  CHECK(attention_window(m, 0) == 4096);
  CHECK(attention_window(m, 1) == 0);
  CHECK(attention_window(m, 44) == 4096);
  CHECK(attention_window(m, 45) == 0);
}

TEST_CASE("presets: a preset takes overrides, and unknown names list the known ones") {
  const auto s = load(
      "topology: {type: hgx, gpus: 8}\nworkloads:\n  - type: training\n"
      "    model: {preset: llama3.1-70b, layers: 8, sequence: 2048}\n    parallel: {tp: 8, dp: 1}\n");
  const auto doc = ConfigDocument::load_string(
      "m: {type: training, model: {preset: llama3.1-70b, layers: 8, sequence: 2048}, parallel: {tp: 8, dp: 1}}",
      "m.yaml");
  const auto t = make_training(doc->root().child("m"), s.fabric());
  const ModelSpec& m = t->config().model;
  CHECK(m.preset == "llama3.1-70b");
  CHECK(m.layers == 8);
  CHECK(m.sequence == 2048);
  CHECK(m.hidden == 8192);
  CHECK(m.kv_heads == 8);
  CHECK(m.mlp == Mlp::swiglu);
  CHECK_THROWS_WITH_AS(
      load("topology: {type: hgx, gpus: 8}\nworkloads:\n  - type: training\n    model: llama4\n"),
      doctest::Contains("t.yaml:4:12: workloads[0].model: unknown model preset 'llama4'; known: "
                        "deepseek-v3, gemma2-27b, gpt3-175b, llama3.1-405b, llama3.1-70b, llama3.1-8b"),
      snsim::InputError);
}

TEST_CASE("presets: every preset runs a step (4 of its layers, 1024-token sequences) on 8 H200s") {
  // TP 8 where the KV heads allow it (Qwen3 has 4: TP 4 x DP 2); MoE presets fold EP 8 over the 8 ranks.
  const std::vector<std::pair<std::string, std::string>> plans{{"llama3.1-8b", "{tp: 8, dp: 1}"},
                                                               {"llama3.1-70b", "{tp: 8, dp: 1}"},
                                                               {"llama3.1-405b", "{tp: 8, dp: 1}"},
                                                               {"mixtral-8x7b", "{tp: 8, dp: 1, ep: 8}"},
                                                               {"mixtral-8x22b", "{tp: 8, dp: 1, ep: 8}"},
                                                               {"deepseek-v3", "{tp: 8, dp: 1, ep: 8}"},
                                                               {"qwen3-30b-a3b", "{tp: 4, dp: 2, ep: 8}"},
                                                               {"qwen3-235b-a22b", "{tp: 4, dp: 2, ep: 8}"},
                                                               {"gpt3-175b", "{tp: 8, dp: 1}"},
                                                               {"nemotron-4-15b", "{tp: 8, dp: 1}"},
                                                               {"nemotron-4-340b", "{tp: 8, dp: 1}"},
                                                               {"gemma2-27b", "{tp: 8, dp: 1}"}};
  REQUIRE(plans.size() == 12);
  for (const auto& entry : plans) {
    // Named copies, not structured bindings: clang 14 cannot capture those in the lambdas below (CAPTURE's too).
    const std::string name = entry.first, plan = entry.second;
    CAPTURE(name);
    REQUIRE(find_preset(name) != nullptr);
    const std::string outcome = run_isolated([&] {
      const Report r = load(
                           "topology: {type: hgx, gpu: h200, gpus: 8}\nworkloads:\n  - type: training\n"
                           "    steps: 1\n    model: {preset: " +
                           name + ", layers: 4, sequence: 1024}\n    parallel: " + plan + "\n")
                           .run();
      return r.outcome;
    });
    CHECK(outcome == "completed");
  }
}
