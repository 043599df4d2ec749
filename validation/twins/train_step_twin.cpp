// Twins of whole single-GPU training steps (tools/probe/torch/train_steps.py, compute/train_step): a GPT- or
// Llama-style model trained in PyTorch on one GPU, each sample one step between two events (events_between_steps).
// The twin is the training workload's own step on one GPU of the record's shape (workloads/training): the same
// kernels a capacity-planning run times, so the record checks training's compute end to end, with autocast's casts of
// fp32 parameters as the record's `precision` says (model.autocast) and HF's eager RoPE (model.eager_rope). What
// PyTorch does that the training model does not (the eager host launching every kernel, autocast's fp32 norms) is
// not in the twin: its error says how much that is.
#include <algorithm>

#include <fmt/format.h>

#include "topologies/gpus.hpp"
#include "validation/importers/platform.hpp"
#include "validation/twins/twin_builders.hpp"
#include "workloads/training/training.hpp"

namespace snsim::validation::twins {
namespace {

/// The record's model: `arch` gpt (LayerNorm, GeLU MLP, learned positions) or llama (RMSNorm, SwiGLU, RoPE).
std::variant<workloads::training::ModelSpec, std::string> recorded_model(const TraceRecord& r) {
  workloads::training::ModelSpec m;
  const std::string arch = r.extra.value("arch", std::string());
  if (arch != "gpt" && arch != "llama")
    return fmt::format("compute/train_step: architecture '{}' is not modelled", arch);
  const auto dimension = [&](const char* key) { return static_cast<int>(extra_number(r, key)); };
  m.layers = dimension("layers");
  m.hidden = dimension("hidden");
  m.heads = dimension("heads");
  m.kv_heads = dimension("kv_heads");
  m.head_dim = dimension("head_dim");
  m.ffn_hidden = dimension("ffn");
  m.vocabulary = dimension("vocab");
  m.micro_batch = dimension("micro_batch");
  m.sequence = dimension("seq");
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.head_dim < 1 || m.ffn_hidden < 1 ||
      m.vocabulary < 1 || m.micro_batch < 1 || m.sequence < 1)
    return std::string("compute/train_step record without its model's dimensions");
  m.dtype = Dtype::bf16;
  m.flash_attention = true;
  m.tied_embeddings = r.extra.value("tied_embeddings", false);
  m.linear_bias = r.extra.value("linear_bias", false);
  // torch.autocast over fp32 parameters, as the probe trains (extra `precision`).
  m.autocast = r.extra.value("precision", std::string()).find("autocast") != std::string::npos;
  if (arch == "llama") {
    m.mlp = workloads::training::Mlp::swiglu;
    m.norm = workloads::training::Norm::rmsnorm;
    m.rotary = true;
    // HF Llama's rotate_half, eager: the record's `positions` names it.
    m.eager_rope = r.extra.value("positions", std::string()).find("rotary") != std::string::npos;
    // silu(gate) * up on the chunks of a fused gate/up Linear's output, eager: the record's `mlp` names it.
    m.eager_glu = r.extra.value("mlp", std::string()).find("fused gate_up") != std::string::npos;
  }
  return m;
}

}  // namespace

std::variant<Twin, std::string> train_step(const Trace& trace, const TraceRecord& r, int gpus,
                                           const models::Models& models) {
  auto model = recorded_model(r);
  if (auto* reason = std::get_if<std::string>(&model)) return *reason;
  // The GPU the trace ran on, alone: the training workload reads its peaks, SMs and boost clock.
  const std::string name = trace.header.gpus.empty() ? std::string() : trace.header.gpus.front().name;
  const auto preset = detail::gpu_model(name).preset;
  const auto& presets = topologies::gpu_presets();
  const auto gpu = std::ranges::find_if(presets, [&](const GpuSpec& g) { return preset && g.model == *preset; });
  if (gpu == presets.end()) return fmt::format("compute/train_step: GPU '{}' is no preset", name);
  Fabric fabric;
  fabric.add_device({"gpu0", DeviceKind::gpu, 0, *gpu});
  workloads::training::TrainingConfig config;
  config.model = std::get<workloads::training::ModelSpec>(model);
  config.steps = 1;
  const workloads::training::Training training(config, fabric);
  std::vector<workloads::Program> programs(1);
  training.emit(programs, 0, {});
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  twin.sample[static_cast<std::size_t>(rank_at(r, 0))] = std::move(programs[0].ops);
  // Warm-up steps, as the record's: the power-capped clock settles.
  if (r.median > 0)
    twin.warmup = std::max(static_cast<int>(extra_number(r, "warmup_steps", 3)), power_warmup(r.median, models));
  return twin;
}

}  // namespace snsim::validation::twins
