#include "workloads/training/schedule.hpp"

#include <algorithm>

namespace snsim::workloads::training {

int interleaved_warmup(const ParallelPlan& plan, int stage) {
  const int p = plan.pp, v = plan.vp, total = plan.micro_batches * v;
  if (v == 1) return std::min(p - stage - 1, plan.micro_batches);  // 1F1B without interleaving
  if (plan.micro_batches == p) return total;
  return std::min((p - stage - 1) * 2 + (v - 1) * p, total);
}

std::vector<PipelineTask> interleaved_order(const ParallelPlan& plan, int stage) {
  const int p = plan.pp, v = plan.vp, total = plan.micro_batches * v, group = p * v;
  auto task = [&](int k, bool forward) {
    const int in_group = (k % group) / p;
    return PipelineTask{forward, (k / group) * p + k % p, forward ? in_group : v - 1 - in_group};
  };
  const int warmup = interleaved_warmup(plan, stage);
  std::vector<PipelineTask> order;
  order.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) order.push_back(task(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(task(warmup + k, true));
    order.push_back(task(k, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(task(k, false));
  return order;
}

int interleaved_in_flight(const ParallelPlan& plan, int stage) {
  return std::min(interleaved_warmup(plan, stage) + 1, plan.micro_batches * plan.vp);
}

int global_layer(const ModelSpec& model, const ParallelPlan& plan, int stage, int local) {
  const int per_chunk = model.layers / (plan.pp * plan.vp);
  return (local / per_chunk * plan.pp + stage) * per_chunk + local % per_chunk;
}

}  // namespace snsim::workloads::training
