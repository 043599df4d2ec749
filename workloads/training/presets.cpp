#include "workloads/training/presets.hpp"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::workloads::training {
namespace {

struct Dense {
  int layers, hidden, heads, kv_heads, head_dim, ffn, vocabulary, sequence;
};

ModelSpec dense(std::string name, Dense d, Mlp mlp, Norm norm, bool rotary, bool tied) {
  ModelSpec m;
  m.preset = std::move(name);
  m.layers = d.layers;
  m.hidden = d.hidden;
  m.heads = d.heads;
  m.kv_heads = d.kv_heads;
  m.head_dim = d.head_dim;
  m.ffn_hidden = d.ffn;
  m.vocabulary = d.vocabulary;
  m.sequence = d.sequence;
  m.mlp = mlp;
  m.norm = norm;
  m.rotary = rotary;
  m.tied_embeddings = tied;
  return m;
}

/// A Llama-style decoder: SwiGLU, RMSNorm, rotary, untied embeddings (what every preset below but GPT-3 and
/// Nemotron-4 is).
ModelSpec llama_like(std::string name, Dense d) {
  return dense(std::move(name), d, Mlp::swiglu, Norm::rmsnorm, true, false);
}

ModelSpec with_moe(ModelSpec m, MoeSpec moe) {
  m.moe = moe;
  return m;
}

std::map<std::string, ModelSpec, std::less<>> make_presets() {
  std::map<std::string, ModelSpec, std::less<>> p;
  auto add = [&](ModelSpec m) { p.emplace(m.preset, std::move(m)); };
  // Llama 3.1: huggingface.co/meta-llama/Llama-3.1-{8B,70B,405B}, config.json (hidden_size, num_hidden_layers,
  // num_attention_heads, num_key_value_heads, intermediate_size, vocab_size; tie_word_embeddings false); sequence
  // 8192, the pre-training length (Dubey et al. 2024, "The Llama 3 Herd of Models", §3.4).
  add(llama_like("llama3.1-8b", {32, 4096, 32, 8, 128, 14336, 128256, 8192}));
  add(llama_like("llama3.1-70b", {80, 8192, 64, 8, 128, 28672, 128256, 8192}));
  add(llama_like("llama3.1-405b", {126, 16384, 128, 8, 128, 53248, 128256, 8192}));
  // Mixtral: huggingface.co/mistralai/Mixtral-8x7B-v0.1 and Mixtral-8x22B-v0.1, config.json (num_local_experts 8,
  // num_experts_per_tok 2); sequence: max_position_embeddings (32768; 65536), the context they were trained for
  // (Jiang et al. 2024, "Mixtral of Experts", §2: 32k). Experts are full SwiGLU MLPs of intermediate_size.
  add(with_moe(llama_like("mixtral-8x7b", {32, 4096, 32, 8, 128, 14336, 32000, 32768}), {8, 2, 1.25, 0, 0, 0, 0, 1}));
  add(with_moe(llama_like("mixtral-8x22b", {56, 6144, 48, 8, 128, 16384, 32000, 65536}), {8, 2, 1.25, 0, 0, 0, 0, 1}));
  // DeepSeek-V3: huggingface.co/deepseek-ai/DeepSeek-V3, config.json (61 layers, hidden 7168, 128 heads,
  // intermediate_size 18432 in the first_k_dense_replace = 3 dense layers, 256 routed experts of
  // moe_intermediate_size 2048 with num_experts_per_tok 8 and n_shared_experts 1, q_lora_rank 1536, kv_lora_rank
  // 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, vocab_size 129280); sequence 4096, the
  // pre-training length (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §4.2); group-limited routing with n_group 8
  // and topk_group 4 (§2.1.2); one multi-token-prediction module (num_nextn_predict_layers 1, §2.2: the 14B that the
  // checkpoint adds to 671B, counting its copies of the embedding and output head).
  {
    ModelSpec m = llama_like("deepseek-v3", {61, 7168, 128, 128, 128, 18432, 129280, 4096});
    m.mla = MlaSpec{1536, 512, 128, 64, 128};
    m.moe = MoeSpec{256, 8, 1.25, 0, 2048, 1, 3, 1};
    m.moe->groups = 8;
    m.moe->group_top_k = 4;
    m.mtp_layers = 1;
    add(m);
  }
  // Qwen3 MoE: huggingface.co/Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B, config.json (head_dim 128, num_experts 128,
  // num_experts_per_tok 8, moe_intermediate_size 768; 1536, decoder_sparse_step 1: every layer MoE, no shared
  // expert); sequence 4096, the general pre-training stage's length (Yang et al. 2025, "Qwen3 Technical Report",
  // §3.2). Left out: the per-head QK RMSNorm (2 x 128 weights a layer).
  add(with_moe(llama_like("qwen3-30b-a3b", {48, 2048, 32, 4, 128, 6144, 151936, 4096}),
               {128, 8, 1.25, 0, 768, 0, 0, 1}));
  add(with_moe(llama_like("qwen3-235b-a22b", {94, 4096, 64, 4, 128, 12288, 151936, 4096}),
               {128, 8, 1.25, 0, 1536, 0, 0, 1}));
  // Gemma 2 27B: huggingface.co/google/gemma-2-27b, config.json (46 layers, hidden 4608, 32 heads, 16 KV heads,
  // head_dim 128, intermediate_size 36864, vocab_size 256000, sliding_window 4096, max_position_embeddings 8192) and
  // Gemma Team 2024, "Gemma 2: Improving Open Language Models at a Practical Size", Table 1 and §2 (GeGLU, RMSNorm,
  // RoPE, tied embeddings; local sliding-window and global attention alternating, the first layer local). Left out:
  // the norms after each block (post-norm: two more RMSNorms a layer) and the logit soft-capping.
  {
    ModelSpec m =
        dense("gemma2-27b", {46, 4608, 32, 16, 128, 36864, 256000, 8192}, Mlp::geglu, Norm::rmsnorm, true, true);
    m.sliding_window = SlidingWindow{4096, 2};
    add(m);
  }
  // GPT-3 175B: Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1 (96 layers, d_model 12288,
  // 96 heads of 128, context 2048) and §2.1 (GPT-2's architecture: LayerNorm, GeLU MLP of 4 d_model, tied
  // embeddings, its 50257-token vocabulary). Left out: the learned position embeddings (2048 x 12288), and the
  // biases' gradient kernels (`linear_bias`): Megatron-Core's TransformerEngine layers compute a bias gradient in
  // the weight-gradient GEMM's epilogue, not as a kernel of its own.
  add(dense("gpt3-175b", {96, 12288, 96, 96, 128, 4 * 12288, 50257, 2048}, Mlp::gelu, Norm::layernorm, false, true));
  // Nemotron-4: Parmar et al. 2024, "Nemotron-4 15B Technical Report", Table 1 and §2 (32 layers, hidden 6144, 48
  // heads, 8 KV heads, sequence 4096, vocabulary 256000; squared ReLU, RoPE, untied embeddings, no biases), and
  // NVIDIA 2024, "Nemotron-4 340B Technical Report", Table 1 (96 layers, hidden 18432, 96 heads, 8 KV heads); MLP
  // 4 x hidden (the checkpoints' ffn_hidden_size); LayerNorm, as Megatron-LM trains them.
  add(dense("nemotron-4-15b", {32, 6144, 48, 8, 128, 4 * 6144, 256000, 4096}, Mlp::squared_relu, Norm::layernorm, true,
            false));
  add(dense("nemotron-4-340b", {96, 18432, 96, 8, 192, 4 * 18432, 256000, 4096}, Mlp::squared_relu, Norm::layernorm,
            true, false));
  return p;
}

const std::map<std::string, ModelSpec, std::less<>>& presets() {
  static const auto all = make_presets();
  return all;
}

}  // namespace

const ModelSpec* find_preset(std::string_view name) {
  const auto it = presets().find(name);
  return it == presets().end() ? nullptr : &it->second;
}

std::string preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : presets()) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace snsim::workloads::training
