// The plan search's enumeration, footprint filter and fast estimate, in process; the whole command (sweep, ranking,
// errors) is tested through the binary in tools/plan_command_test.cpp.
#include "studies/plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

using namespace snsim;
using namespace snsim::studies;
using namespace snsim::workloads::training;

namespace {

/// A small dense model: 4 layers, 4 query heads and 2 KV heads (tp 4 is out), FFN 64, 16-token sequences.
ModelSpec small_model() {
  ModelSpec m;
  m.layers = 4;
  m.hidden = 32;
  m.ffn_hidden = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 8;
  m.sequence = 16;
  m.vocabulary = 128;
  return m;
}

}  // namespace

TEST_CASE("plan: the enumeration of a small dense job is the count by hand") {
  // 4 GPUs in one domain, a global batch of 4. tp in {1, 2} (4 does not divide the 2 KV heads), pp | 4 layers and
  // | 4 / tp, dp = 4 / (tp pp), micro batch | 4 / dp, 3 recomputations, 3 optimizer shardings (none, the
  // distributed optimizer, FSDP) only when dp > 1:
  //   tp1 pp1 dp4: 1 micro batch  x 3 x 3 =  9
  //   tp1 pp2 dp2: 2 micro batches x 3 x 3 = 18
  //   tp1 pp4 dp1: 3 micro batches x 3 x 1 =  9
  //   tp2 pp1 dp2: 2               x 3 x 3 = 18
  //   tp2 pp2 dp1: 3               x 3 x 1 =  9
  // and interleaved (vp 2: pp x 2 divides the 4 layers, micro-batches a multiple of pp; vp 4 never divides):
  //   tp1 pp2 dp2 vp2: micro batch 1 (2 micro-batches)       x 3 x 3 = 9
  //   tp2 pp2 dp1 vp2: micro batch 1 or 2 (4 or 2)           x 3 x 1 = 6
  const auto plans = enumerate_plans(small_model(), {4, 4, 4});
  CHECK(plans.size() == 63 + 15);
  std::set<std::string> labels;
  for (const auto& c : plans) labels.insert(c.label());
  CHECK(labels.size() == plans.size());  // no plan twice
  CHECK(labels.contains("tp1-pp2-vp2-dp2-ep1-mb1-full-zero3"));
  // A domain of 2 GPUs caps tp at 2: the same 78; of 1, tp 1 alone: 9 + 18 + 9 + 9.
  CHECK(enumerate_plans(small_model(), {4, 2, 4}).size() == 78);
  CHECK(enumerate_plans(small_model(), {4, 1, 4}).size() == 45);
}

TEST_CASE("plan: a MoE job adds expert parallelism dividing the experts and dp") {
  ModelSpec m = small_model();
  m.moe = MoeSpec{};
  m.moe->experts = 2;
  // ep | dp and ep | 2 experts: dp 4 and dp 2 take ep 1 or 2, dp 1 only ep 1: 2 x 9 + 2 x 18 + 9 + 2 x 18 + 9,
  // and interleaved 2 x 9 (tp1 pp2 dp2) + 6 (tp2 pp2 dp1).
  // Each plan with tp > 1 comes twice more: its experts' FFN unsplit (etp 1) or split over the TP group (etp = tp).
  const auto plans = enumerate_plans(m, {4, 4, 4});
  std::size_t unsplit = 0, split = 0;
  std::set<std::string> twins;
  for (const auto& c : plans) {
    CHECK(c.parallel.dp % c.parallel.ep == 0);
    CHECK(m.moe->experts % c.parallel.ep == 0);
    CHECK((c.parallel.etp == 1 || c.parallel.etp == c.parallel.tp));
    if (c.parallel.etp == 1) ++unsplit;
    if (c.parallel.etp > 1) {
      ++split;
      PlanCandidate twin = c;
      twin.parallel.etp = 1;
      twins.insert(twin.label());
      CHECK(c.label().find(fmt::format("-etp{}", c.parallel.tp)) != std::string::npos);
    }
  }
  CHECK(unsplit == 108 + 24);
  const auto with_tp =
      std::ranges::count_if(plans, [](const PlanCandidate& c) { return c.parallel.tp > 1 && c.parallel.etp == 1; });
  CHECK(split == static_cast<std::size_t>(with_tp));
  CHECK(twins.size() == split);
  for (const auto& label : twins)
    CHECK(std::ranges::any_of(plans, [&](const PlanCandidate& c) { return c.label() == label; }));
}

TEST_CASE("plan: long sequences add context parallelism, each CP rank keeping 4096 tokens or more") {
  ModelSpec m = small_model();
  m.sequence = 8192;
  // cp 2 keeps 4096 tokens a rank, cp 4 2048 (out). With cp 2 on 4 GPUs (3 shardings, since dp x cp > 1):
  //   tp1 pp1 dp2: micro batch 1 or 2                        x 3 x 3 = 18
  //   tp1 pp2 dp1: micro batch 1, 2 or 4                     x 3 x 3 = 27
  //   tp1 pp2 dp1 vp2: micro batch 1 or 2 (4 or 2 of them)   x 3 x 3 = 18
  //   tp2 pp1 dp1: micro batch 1, 2 or 4                     x 3 x 3 = 27
  const auto plans = enumerate_plans(m, {4, 4, 4});
  int context = 0;
  for (const auto& c : plans) {
    CHECK(c.parallel.gpus() == 4);
    CHECK(c.parallel.cp <= 2);
    if (c.parallel.cp > 1) ++context;
  }
  CHECK(context == 90);
  CHECK(std::ranges::any_of(plans,
                            [](const PlanCandidate& c) { return c.label() == "tp2-cp2-pp1-dp1-ep1-mb1-none-zero1"; }));
  // A sliding window shorter than the sequence keeps cp 1 (ring attention over a window is not modelled); one of the
  // whole sequence is no window.
  m.sliding_window = SlidingWindow{.tokens = 4096, .global_every = 2};
  const auto local = enumerate_plans(m, {4, 4, 4});
  CHECK(local.size() == plans.size() - 90);
  CHECK(std::ranges::none_of(local, [](const PlanCandidate& c) { return c.parallel.cp > 1; }));
  m.sliding_window->tokens = 8192;
  CHECK(enumerate_plans(m, {4, 4, 4}).size() == plans.size());
}

TEST_CASE("plan: every enumerated plan keeps Megatron-Core's divisibility rules and the global batch") {
  ModelSpec m = small_model();
  m.layers = 12;
  m.heads = 8;
  m.kv_heads = 8;
  m.sequence = 6;
  const PlanSpace space{24, 8, 48};
  const auto plans = enumerate_plans(m, space);
  REQUIRE(!plans.empty());
  std::set<int> tps;
  for (const auto& c : plans) {
    const ParallelPlan& p = c.parallel;
    CAPTURE(c.label());
    CHECK(p.gpus() == space.gpus);
    CHECK(space.gpus_per_domain % p.tp == 0);
    CHECK(m.heads % p.tp == 0);
    CHECK(m.kv_heads % p.tp == 0);
    CHECK(m.layers % p.pp == 0);
    CHECK(m.layers % (p.pp * p.vp) == 0);
    if (p.vp > 1) CHECK(p.micro_batches % p.pp == 0);
    CHECK(c.micro_batch * m.sequence % p.tp == 0);
    CHECK(c.micro_batch * p.micro_batches * p.dp == space.global_batch);
    CHECK(p.sequence_parallel == (p.tp > 1));
    CHECK(!(p.zero && p.dp == 1));
    CHECK(!(p.fsdp && p.dp * p.cp == 1));
    CHECK(!(p.zero && p.fsdp));
    CHECK(p.ep == 1);
    tps.insert(p.tp);
  }
  // Every divisor of the domain's 8 GPUs that divides the 8 heads and the 24 GPUs: tp 8 leaves 3 for pp x dp.
  CHECK(tps == std::set<int>{1, 2, 4, 8});
}

TEST_CASE("plan: the footprint filter and the estimate move the way the plan does") {
  ModelSpec m = small_model();
  m.layers = 8;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.sequence = 2048;
  m.vocabulary = 32000;
  const MemorySpec memory;
  PlanCandidate base;
  base.parallel.dp = 4;
  base.parallel.micro_batches = 4;
  // The distributed optimizer shards Adam's state over dp: a quarter of it.
  PlanCandidate zero = base;
  zero.parallel.zero = true;
  const Footprint whole = peak_footprint(m, base, memory), sharded = peak_footprint(m, zero, memory);
  CHECK(sharded.optimizer.count() == doctest::Approx(whole.optimizer.count() / 4.0).epsilon(1e-9));
  // Full recomputation keeps less activation than none.
  PlanCandidate full = base;
  full.parallel.recompute = Recompute::full;
  CHECK(peak_footprint(m, full, memory).activations < whole.activations);
  // A larger micro batch holds more activations.
  PlanCandidate big = base;
  big.micro_batch = 4;
  big.parallel.micro_batches = 1;
  CHECK(peak_footprint(m, big, memory).activations > whole.activations);

  // Without communication (links of no cost) the estimate is the compute alone.
  const FlopsPerSecond peak{1e15};
  const BytesPerSecond free{1e30};
  auto estimate = [&](const PlanCandidate& c) { return estimate_step(m, c, peak, free, free, 8).count(); };
  const double none = estimate(base);
  CHECK(none == doctest::Approx(step_model_flops(m, base.parallel).count() / (4 * peak.count())));
  // Full recomputation adds one forward of the layers to forward + backward (3 forwards): at most 4/3.
  const double recomputed = estimate(full);
  CHECK(recomputed > none);
  CHECK(recomputed < 4.0 / 3 * none);
  // Selective recomputes the attention core alone: between the two.
  PlanCandidate selective = base;
  selective.parallel.recompute = Recompute::selective;
  CHECK(estimate(selective) > none);
  CHECK(estimate(selective) < recomputed);
  // A pipeline of 2 stages on 2 micro-batches idles (p - 1) / m = 1/2 of its compute more than no pipeline, on the
  // same global batch and GPUs.
  PlanCandidate piped = base;
  piped.parallel.dp = 2;
  piped.parallel.pp = 2;
  piped.parallel.micro_batches = 2;
  piped.micro_batch = 2;
  PlanCandidate flat = piped;
  flat.parallel.pp = 1;
  flat.parallel.dp = 4;
  flat.parallel.micro_batches = 1;
  CHECK(estimate(piped) == doctest::Approx(1.5 * estimate(flat)));
  // Interleaved over 2 chunks per stage, the bubble halves: (p - 1) / (v m) = 1/4.
  PlanCandidate interleaved = piped;
  interleaved.parallel.vp = 2;
  CHECK(estimate(interleaved) == doctest::Approx(1.25 * estimate(flat)));
  // Gradients that cross a slower link take longer: a DP group of 4 in a domain of 2 against one of 8.
  const BytesPerSecond nvlink{450e9}, ib{50e9};
  CHECK(estimate_step(m, base, peak, nvlink, ib, 2).count() > estimate_step(m, base, peak, nvlink, ib, 8).count());
}
