// FP8 training: the linear layers' GEMMs at the fp8 peak and the rest in bf16, activations moved in bf16, and the
// amax reduction of delayed scaling, counted on the emitted programs.
#include <doctest/doctest.h>

#include <functional>

#include <fmt/format.h>

#include "scenario/test_support.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;

namespace {

std::string fp8_scenario(const char* dtype) {
  return fmt::format(
      "topology: {{type: hgx, gpu: h100, gpus: 4}}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 1\n"
      "    model: {{layers: 2, hidden: 1024, heads: 8, sequence: 1024, vocabulary: 32000, micro_batches: 3, "
      "dtype: {}}}\n"
      "    parallel: {{tp: 2, dp: 2, sequence_parallel: true}}\n",
      dtype);
}

struct Emitted {
  double fp8_flops = 0, bf16_flops = 0, tp_bytes = 0;
  int amax_reductions = 0;
};

Emitted emitted(const std::vector<Op>& ops) {
  Emitted out;
  std::function<void(const std::vector<Op>&)> walk = [&](const std::vector<Op>& list) {
    for (const auto& op : list) {
      if (const auto* c = std::get_if<ComputeOp>(&op.what))
        (c->dtype == Dtype::fp8 ? out.fp8_flops : out.bf16_flops) += c->flops.count();
      if (const auto* c = std::get_if<CollectiveOp>(&op.what)) {
        if (c->kind == models::CollectiveKind::all_reduce && c->bytes.count() == 32 && c->group->size() == 4)
          ++out.amax_reductions;
        if (c->group->size() == 2 &&
            (c->kind == models::CollectiveKind::all_gather || c->kind == models::CollectiveKind::reduce_scatter))
          out.tp_bytes += static_cast<double>(c->bytes.count());
      }
      if (const auto* s = std::get_if<StreamsOp>(&op.what))
        for (const auto& stream : s->streams) walk(stream);
    }
  };
  walk(ops);
  return out;
}

}  // namespace

TEST_CASE("fp8: the linear layers run at the fp8 peak, attention and the rest in bf16, activations move in bf16") {
  const auto fp8 = load(fp8_scenario("fp8")), bf16 = load(fp8_scenario("bf16"));
  const Emitted a = emitted(fp8.programs()[0].ops), b = emitted(bf16.programs()[0].ops);
  // By hand, per layer, micro-batch and TP rank (h 1024, s 1024, tp 2): QKV and projection 8 s h^2 / 2, the MLP
  // 16 s h^2 / 2; the logits 2 s h V / 2; forward once, backward twice. Causal attention runs half of 4 s^2 h / 2
  // forward and 2.5 times that backward (FlashAttention recomputes the scores).
  const double s = 1024, h = 1024, V = 32000, passes = 3, m = 3, layers = 2;
  CHECK(a.fp8_flops == doctest::Approx(passes * m * layers * 24 * s * h * h / 2).epsilon(1e-9));
  CHECK(a.bf16_flops ==
        doctest::Approx(m * (layers * 3.5 * 0.5 * 4 * s * s * h + passes * 2 * s * h * V) / 2).epsilon(1e-9));
  CHECK(b.fp8_flops == 0);
  CHECK(a.fp8_flops + a.bf16_flops == doctest::Approx(b.bf16_flops).epsilon(1e-9));
  // The TP all-gathers and reduce-scatters carry bf16 activations either way.
  CHECK(a.tp_bytes > 0);
  CHECK(a.tp_bytes == b.tp_bytes);
  // Delayed scaling: one amax all-reduce over the stage's 4 ranks per layer forward, none in bf16.
  CHECK(a.amax_reductions == layers * m);
  CHECK(b.amax_reductions == 0);
}
