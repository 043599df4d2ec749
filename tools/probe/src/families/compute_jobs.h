// The GEMMs the `compute` family times, as a host-only list (no CUDA here, so that the list, its size and its
// expected run time can be checked on a machine without a GPU).
//
// Conventions are cuBLAS's (column-major): C (m x n) = op(A) (m x k) . op(B) (k x n); `ta`/`tb` say whether A/B
// are transposed (layout "TN" = A transposed, B not). A PyTorch nn.Linear(in, out) over T tokens (row-major
// activations [T, in], weight [out, in]) runs as:
//   forward  Y = X W^T      -> TN with m = out, n = T,   k = in
//   dgrad    dX = dY W      -> NN with m = in,  n = T,   k = out
//   wgrad    dW = dY^T X    -> NT with m = in,  n = out, k = T
// fp8 GEMMs on Hopper take only TN operands (Transformer Engine transposes its fp8 copies before dgrad and wgrad),
// so fp8 jobs keep each pass's (m, n, k) and use TN.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace probe::compute {

enum class Dtype { bf16, fp16, tf32, fp8_e4m3 };

inline const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp16:
      return "fp16";
    case Dtype::tf32:
      return "tf32";
    case Dtype::fp8_e4m3:
      return "fp8_e4m3";
  }
  return "?";
}

// Bytes of one input element (A, B) and of one output element (C; fp8 GEMMs write bf16, as Transformer Engine's).
inline std::uint64_t input_bytes(Dtype dtype) {
  return dtype == Dtype::tf32 ? 4 : dtype == Dtype::fp8_e4m3 ? 1 : 2;
}
inline std::uint64_t output_bytes(Dtype dtype) {
  return dtype == Dtype::tf32 ? 4 : 2;
}

// Rates used only to size the repetitions and to leave out GEMMs that are too short or too long: about what an
// H200 reaches (datasheet dense peaks 989 / 494 / 1979 TFLOP/s; measured bf16 ~ 790 on 8192^3).
inline double planning_flop_rate(Dtype dtype) {
  switch (dtype) {
    case Dtype::tf32:
      return 3.5e14;
    case Dtype::fp8_e4m3:
      return 1.2e15;
    default:
      return 7.0e14;
  }
}
constexpr double kPlanningBytesPerSecond = 3.5e12;

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool ta = true, tb = false;
  std::int64_t batch = 1;

  std::string layout() const { return std::string(ta ? "T" : "N") + (tb ? "T" : "N"); }
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * batch;
  }
  std::uint64_t a_elements() const { return static_cast<std::uint64_t>(m * k * batch); }
  std::uint64_t b_elements() const { return static_cast<std::uint64_t>(k * n * batch); }
  std::uint64_t c_elements() const { return static_cast<std::uint64_t>(m * n * batch); }
};

enum class GemmKind { single, batched, grouped };

struct GemmJob {
  // grid, square, nonpow2, unaligned, skinny, layout, transformer, moe, batched, attention_bmm: every set that asked
  // for this shape (a shape is measured once)
  std::vector<std::string> sets;
  GemmKind kind = GemmKind::single;
  Dtype dtype = Dtype::bf16;
  GemmShape shape;
  // grouped: one GEMM per group, each with its own n (tokens routed to that expert); shape.n is their sum.
  std::vector<std::int64_t> group_n;
  std::vector<std::string> uses;  // "model=...;tp=...;gemm=qkv;pass=fwd", for the layer shapes
  std::string id_suffix;

  // A grouped GEMM has one A (expert weights) per group.
  std::uint64_t a_elements() const {
    return kind == GemmKind::grouped ? static_cast<std::uint64_t>(shape.m * shape.k) * group_n.size()
                                     : shape.a_elements();
  }
  std::uint64_t bytes() const {
    return (a_elements() + shape.b_elements()) * input_bytes(dtype) + shape.c_elements() * output_bytes(dtype);
  }
  double estimate_seconds() const {
    return std::max(shape.flops() / planning_flop_rate(dtype), static_cast<double>(bytes()) / kPlanningBytesPerSecond);
  }
};

struct Limits {
  double min_seconds_grid = 20e-6;               // planned time below which a grid GEMM is left out
  double min_seconds_layer = 10e-6;              // the same for layer and expert shapes (TP8 shards of small models)
  double max_flops = 2.0e13;                     // ~30 ms in bf16: the largest GEMM kept
  std::uint64_t max_operand_bytes = 4ull << 30;  // each of A, B, C must fit one operand pool
};

inline std::string shape_suffix(const GemmShape& s) {
  std::string text = s.layout() + "_m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
  if (s.batch > 1) text += "_b" + std::to_string(s.batch);
  return text;
}

class JobList {
 public:
  explicit JobList(Limits limits) : limits_(limits) {}

  // Adds a GEMM unless it is out of bounds; the same (kind, dtype, shape) is measured once and lists every use.
  void add(const std::string& set, Dtype dtype, GemmShape shape, const std::string& use = "", bool layer = false) {
    if (dtype == Dtype::fp8_e4m3) {
      shape.ta = true;
      shape.tb = false;
    }
    GemmJob job;
    job.sets = {set};
    job.kind = shape.batch > 1 ? GemmKind::batched : GemmKind::single;
    job.dtype = dtype;
    job.shape = shape;
    job.id_suffix = shape_suffix(shape);
    if (!fits(job, layer)) return;
    merge(std::move(job), use);
  }

  void add_grouped(const std::string& set, Dtype dtype, GemmShape shape, std::vector<std::int64_t> group_n,
                   const std::string& name, const std::string& use) {
    GemmJob job;
    job.sets = {set};
    job.kind = GemmKind::grouped;
    job.dtype = dtype;
    std::int64_t total = 0;
    for (auto n : group_n) total += n;
    shape.n = total;
    shape.batch = 1;
    job.shape = shape;
    job.group_n = std::move(group_n);
    job.id_suffix = name;
    if (!fits(job, true)) return;
    merge(std::move(job), use);
  }

  const std::vector<GemmJob>& jobs() const { return jobs_; }
  int skipped() const { return skipped_; }

 private:
  bool fits(const GemmJob& job, bool layer) {
    const double seconds = job.estimate_seconds();
    const bool ok = seconds >= (layer ? limits_.min_seconds_layer : limits_.min_seconds_grid) &&
                    job.shape.flops() <= limits_.max_flops &&
                    job.a_elements() * input_bytes(job.dtype) <= limits_.max_operand_bytes &&
                    job.shape.b_elements() * input_bytes(job.dtype) <= limits_.max_operand_bytes &&
                    job.shape.c_elements() * output_bytes(job.dtype) <= limits_.max_operand_bytes;
    if (!ok) ++skipped_;
    return ok;
  }

  void merge(GemmJob job, const std::string& use) {
    const std::string key =
        std::to_string(static_cast<int>(job.kind)) + "|" + dtype_name(job.dtype) + "|" + job.id_suffix;
    auto [it, inserted] = index_.try_emplace(key, jobs_.size());
    const std::string set = job.sets.front();
    if (inserted) jobs_.push_back(std::move(job));
    GemmJob& kept = jobs_[it->second];
    if (std::find(kept.sets.begin(), kept.sets.end(), set) == kept.sets.end()) kept.sets.push_back(set);
    if (!use.empty()) kept.uses.push_back(use);
  }

  Limits limits_;
  std::vector<GemmJob> jobs_;
  std::map<std::string, std::size_t> index_;
  int skipped_ = 0;
};

// A decoder model's GEMM dimensions (Megatron-LM's layout: fused QKV, fused gate+up for SwiGLU, vocab padded to a
// multiple of 128 x TP).
struct LayerModel {
  const char* name;
  std::int64_t hidden, heads, kv_heads, ffn, vocab;
  bool swiglu;
};

inline const std::vector<LayerModel>& layer_models() {
  static const std::vector<LayerModel> models = {
      {"gpt-1.3b", 2048, 16, 16, 8192, 50257, false},   {"gpt3-6.7b", 4096, 32, 32, 16384, 50257, false},
      {"gpt3-13b", 5120, 40, 40, 20480, 50257, false},  {"gpt3-175b", 12288, 96, 96, 49152, 50257, false},
      {"llama2-7b", 4096, 32, 32, 11008, 32000, true},  {"llama3-8b", 4096, 32, 8, 14336, 128256, true},
      {"llama3-70b", 8192, 64, 8, 28672, 128256, true}, {"llama3-405b", 16384, 128, 8, 53248, 128256, true},
  };
  return models;
}

struct Linear {
  const char* name;
  std::int64_t in, out;
};

inline std::vector<Linear> layer_linears(const LayerModel& model, std::int64_t tp) {
  const std::int64_t head_dim = model.hidden / model.heads;
  const std::int64_t qkv = (model.heads + 2 * model.kv_heads) * head_dim / tp;
  const std::int64_t padded_vocab = (model.vocab + 128 * tp - 1) / (128 * tp) * (128 * tp);
  std::vector<Linear> linears = {{"qkv", model.hidden, qkv}, {"proj", model.heads * head_dim / tp, model.hidden}};
  if (model.swiglu) {
    linears.push_back({"gate_up", model.hidden, 2 * model.ffn / tp});
    linears.push_back({"down", model.ffn / tp, model.hidden});
  } else {
    linears.push_back({"fc1", model.hidden, model.ffn / tp});
    linears.push_back({"fc2", model.ffn / tp, model.hidden});
  }
  linears.push_back({"logits", model.hidden, padded_vocab / tp});
  return linears;
}

inline GemmShape pass_shape(const Linear& linear, std::int64_t tokens, const std::string& pass) {
  if (pass == "fwd") return {linear.out, tokens, linear.in, true, false};
  if (pass == "dgrad") return {linear.in, tokens, linear.out, false, false};
  return {linear.in, linear.out, tokens, false, true};  // wgrad
}

inline std::string layer_use(const LayerModel& model, std::int64_t tp, std::int64_t tokens, const Linear& linear,
                             const std::string& pass) {
  return "model=" + std::string(model.name) + ";hidden=" + std::to_string(model.hidden) +
         ";heads=" + std::to_string(model.heads) + ";kv_heads=" + std::to_string(model.kv_heads) +
         ";ffn=" + std::to_string(model.ffn) + ";vocab=" + std::to_string(model.vocab) + ";tp=" + std::to_string(tp) +
         ";tokens=" + std::to_string(tokens) + ";gemm=" + linear.name + ";in=" + std::to_string(linear.in) +
         ";out=" + std::to_string(linear.out) + ";pass=" + pass;
}

inline void add_layer_gemms(JobList& list, Dtype dtype, const std::vector<std::string>& models,
                            const std::vector<std::int64_t>& tokens_list, const std::vector<std::int64_t>& tps) {
  for (const LayerModel& model : layer_models()) {
    if (std::find(models.begin(), models.end(), model.name) == models.end()) continue;
    for (std::int64_t tokens : tokens_list)
      for (std::int64_t tp : tps)
        for (const Linear& linear : layer_linears(model, tp))
          for (const char* pass : {"fwd", "dgrad", "wgrad"})
            list.add("transformer", dtype, pass_shape(linear, tokens, pass), layer_use(model, tp, tokens, linear, pass),
                     true);
  }
}

// MoE expert GEMMs: every local expert runs the same Linear over the tokens routed to it.
struct MoeModel {
  const char* name;
  std::int64_t hidden, expert_ffn, experts, top_k;
};

inline const std::vector<MoeModel>& moe_models() {
  static const std::vector<MoeModel> models = {
      {"mixtral-8x7b", 4096, 14336, 8, 2},
      {"deepseek-v3", 7168, 2048, 256, 8},
      {"olmoe-1b-7b", 2048, 1024, 64, 8},
  };
  return models;
}

// Token counts routed to each of `experts` experts, summing to `experts x mean`: a fixed skew (weights 1/sqrt(e+1)),
// each rounded to a multiple of 16 (at least 16), as uneven routing gives.
inline std::vector<std::int64_t> skewed_tokens(std::int64_t experts, std::int64_t mean) {
  std::vector<double> weights;
  double sum = 0;
  for (std::int64_t e = 0; e < experts; ++e) sum += weights.emplace_back(1.0 / std::sqrt(static_cast<double>(e + 1)));
  std::vector<std::int64_t> counts;
  for (double w : weights) {
    const auto count = static_cast<std::int64_t>(std::llround(w / sum * experts * mean / 16.0)) * 16;
    counts.push_back(std::max<std::int64_t>(16, count));
  }
  return counts;
}

inline void add_moe_gemms(JobList& list) {
  // (model, local experts): Mixtral's 8 on one GPU; DeepSeek-V3 with 8 and 32 experts per GPU (EP 32 and 8);
  // OLMoE's 64 on one GPU.
  const std::vector<std::pair<const char*, std::int64_t>> placements = {
      {"mixtral-8x7b", 8}, {"deepseek-v3", 8}, {"deepseek-v3", 32}, {"olmoe-1b-7b", 64}};
  for (const auto& [name, local] : placements) {
    const MoeModel* model = nullptr;
    for (const MoeModel& m : moe_models())
      if (std::string(m.name) == name) model = &m;
    const std::vector<Linear> linears = {{"gate_up", model->hidden, 2 * model->expert_ffn},
                                         {"down", model->expert_ffn, model->hidden}};
    for (std::int64_t per_expert : {256, 1024, 4096}) {
      for (const Linear& linear : linears) {
        for (const char* pass : {"fwd", "dgrad", "wgrad"}) {
          GemmShape shape = pass_shape(linear, per_expert, pass);
          shape.batch = local;
          const std::string use =
              "model=" + std::string(model->name) + ";hidden=" + std::to_string(model->hidden) +
              ";expert_ffn=" + std::to_string(model->expert_ffn) + ";experts=" + std::to_string(model->experts) +
              ";top_k=" + std::to_string(model->top_k) + ";local_experts=" + std::to_string(local) +
              ";tokens_per_expert=" + std::to_string(per_expert) + ";gemm=" + linear.name + ";pass=" + pass;
          list.add("moe", Dtype::bf16, shape, use, true);
          if (std::string(pass) == "fwd") {
            const GemmShape fwd = pass_shape(linear, 0, "fwd");
            list.add_grouped("moe", Dtype::bf16, fwd, skewed_tokens(local, per_expert),
                             std::string(model->name) + "_e" + std::to_string(local) + "_t" +
                                 std::to_string(per_expert) + "_" + linear.name + "_skewed",
                             use + ";routing=skewed");
          }
        }
      }
    }
  }
}

// Every GEMM the family times, in the order it times them: `primary` (bf16 layer shapes and the bf16 grid), then
// `secondary` (the other formats, expert and batched GEMMs). A shape in both lists is timed once, in `primary`.
struct GemmPlan {
  std::vector<GemmJob> primary, secondary;
  int skipped = 0;  // asked for but out of bounds (too short, too long, too large)
};

inline GemmPlan plan_gemms(const Limits& limits, bool quick) {
  JobList list(limits);
  std::size_t primary_count = 0;
  const std::vector<std::int64_t> powers = {512, 1024, 2048, 4096, 8192, 16384};
  if (quick) {
    for (std::int64_t s : {1024, 4096}) list.add("square", Dtype::bf16, {s, s, s});
    add_layer_gemms(list, Dtype::bf16, {"gpt3-6.7b"}, {4096}, {1, 8});
    for (Dtype d : {Dtype::fp16, Dtype::tf32, Dtype::fp8_e4m3}) list.add("square", d, {4096, 4096, 4096});
    list.add("moe", Dtype::bf16, {1024, 1024, 1024, true, false, 8}, "quick", true);
    list.add_grouped("moe", Dtype::bf16, {4096, 0, 4096}, skewed_tokens(8, 512), "quick_skewed", "quick");
    return {
        {list.jobs().begin(), list.jobs().begin() + 3}, {list.jobs().begin() + 3, list.jobs().end()}, list.skipped()};
  }
  // bf16 first: the layer shapes, then the (M, N, K) grid, then the rest.
  add_layer_gemms(
      list, Dtype::bf16,
      {"gpt-1.3b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b", "llama2-7b", "llama3-8b", "llama3-70b", "llama3-405b"},
      {2048, 4096, 8192, 16384}, {1, 2, 4, 8});
  add_layer_gemms(list, Dtype::bf16, {"gpt3-6.7b", "llama3-8b", "llama3-70b"}, {512, 32768, 65536}, {1, 2, 4, 8});
  for (std::int64_t m : powers)
    for (std::int64_t n : powers)
      for (std::int64_t k : powers) list.add("grid", Dtype::bf16, {m, n, k});
  for (std::int64_t s : {768, 1536, 2560, 3072, 5120, 6144, 7168, 10240, 12288}) {
    list.add("nonpow2", Dtype::bf16, {s, s, s});
    list.add("nonpow2", Dtype::bf16, {s, s, 4096});
    list.add("nonpow2", Dtype::bf16, {8192, s, 8192});
  }
  // Leading dimensions that are not multiples of 8 or 16 elements (odd vocabularies, unpadded shards).
  for (std::int64_t s : {4000, 4095, 4097, 8000, 8191, 8193}) list.add("unaligned", Dtype::bf16, {s, s, s});
  list.add("unaligned", Dtype::bf16, {50257, 4096, 4096});
  list.add("unaligned", Dtype::bf16, {32000, 8192, 4096});
  for (std::int64_t small : {128, 256, 384, 512, 640, 768, 1024})
    for (std::int64_t big : {4096, 8192, 16384}) {
      list.add("skinny", Dtype::bf16, {small, big, big});
      list.add("skinny", Dtype::bf16, {big, small, big});
      list.add("skinny", Dtype::bf16, {big, big, small});
    }
  for (std::int64_t s : powers) {
    list.add("layout", Dtype::bf16, {s, s, s, false, false});
    list.add("layout", Dtype::bf16, {s, s, s, false, true});
    list.add("layout", Dtype::bf16, {s, s, s, true, true});
  }
  primary_count = list.jobs().size();
  // Other formats: squares, a coarse grid, skinny K, and the layer shapes of two to four models.
  for (Dtype d : {Dtype::fp8_e4m3, Dtype::fp16, Dtype::tf32}) {
    for (std::int64_t s : {1024, 2048, 4096, 6144, 8192, 12288, 16384}) list.add("square", d, {s, s, s});
    for (std::int64_t m : {1024, 4096, 16384})
      for (std::int64_t n : {1024, 4096, 16384})
        for (std::int64_t k : {1024, 4096, 16384}) list.add("grid", d, {m, n, k});
    for (std::int64_t small : {128, 256, 512, 1024}) {
      list.add("skinny", d, {8192, 8192, small});
      list.add("skinny", d, {small, 8192, 8192});
    }
    add_layer_gemms(list, d, {"gpt3-6.7b", "llama3-70b"}, {4096, 16384}, {1, 8});
    if (d == Dtype::fp8_e4m3) add_layer_gemms(list, d, {"gpt3-175b", "llama3-8b"}, {4096, 16384}, {1, 2, 4, 8});
  }
  // Strided batched GEMMs: uniform experts, and the unfused attention's score and value products (B x H batches).
  add_moe_gemms(list);
  for (std::int64_t batch : {4, 16, 64})
    for (std::int64_t s : {512, 1024, 2048}) list.add("batched", Dtype::bf16, {s, s, s, true, false, batch});
  for (std::int64_t seq : {1024, 2048, 4096})
    for (std::int64_t head_dim : {64, 128}) {
      const std::string use =
          "attention bmm: batch x heads = 64, seq=" + std::to_string(seq) + ", head_dim=" + std::to_string(head_dim);
      list.add("attention_bmm", Dtype::bf16, {seq, seq, head_dim, true, false, 64}, use + ", scores = K^T Q", true);
      list.add("attention_bmm", Dtype::bf16, {head_dim, seq, seq, false, false, 64}, use + ", out = V P", true);
    }
  const auto& jobs = list.jobs();
  return {{jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(primary_count)},
          {jobs.begin() + static_cast<std::ptrdiff_t>(primary_count), jobs.end()},
          list.skipped()};
}

}  // namespace probe::compute
