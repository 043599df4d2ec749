#include "workloads/training/context.hpp"

#include <cmath>

namespace snsim::workloads::training {

LayerForward context_parallel_forward(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer) {
  ModelSpec local = model;
  local.sequence = model.sequence / plan.cp;
  ParallelPlan one = plan;
  one.cp = 1;
  LayerForward l = layer_forward(local, one, moe_layer);
  // The local attention is the rank's queries against its own s / cp keys; the ring brings the other cp - 1 chunks.
  const double cp = plan.cp;
  l.attention.flops = Flops{l.attention.flops.count() * cp};
  l.attention.bytes =
      Bytes{static_cast<std::uint64_t>(std::llround(static_cast<double>(l.attention.bytes.count()) * cp))};
  return l;
}

Bytes ring_kv_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const auto w = attention_widths(model);
  const double tokens = static_cast<double>(model.micro_batch) * model.sequence / plan.cp;
  return Bytes{
      static_cast<std::uint64_t>(std::llround(tokens * (w.k + w.v) / plan.tp * activation_bytes(model.dtype)))};
}

}  // namespace snsim::workloads::training
