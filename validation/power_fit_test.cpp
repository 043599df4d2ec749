// The power-capped clock's fit (validation/fits/compute_fit.cpp, fits::compute): records written with the model's
// own clocks give back the parameters that made them.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "models/models.hpp"
#include "sim/config.hpp"
#include "validation/calibrate.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

constexpr double PEAK = 989e12, BOOST_MHZ = 1980, N = 4096;

TraceRecord record(Family family, const std::string& test, const std::string& variant, double median) {
  TraceRecord r;
  r.id = fmt::format("{}/{}/{}/0/0", to_string(family), test, variant);
  r.family = family;
  r.test = test;
  r.variant = variant;
  r.ranks = {0};
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median};
  return r;
}

/// The models `snsim calibrate` fits on `trace`, over the defaults.
models::Models fitted_models(const Trace& trace) {
  const auto calibration = calibrate({trace});
  auto params = ConfigDocument::load_string(calibration.to_yaml("test"), "p.yaml");
  auto overlay = ConfigDocument::load_string("{}", "<t>");
  overlay->overlay(*params, "models");
  return models::Models::load(overlay->root().section("models"));
}

}  // namespace

TEST_CASE("power fit: bursts on low-entropy data and sustained normal-data GEMMs give back the power model") {
  // The truth: flop_efficiency 0.9; on normal data the cap sustains a duty of 0.5 at boost, exponent 2.5; the
  // bursts' low-entropy operands draw 0.7 of normal data's power, so they throttle above a duty of 0.5 / 0.7.
  const double efficiency = 0.9, exponent = 2.5, duty_normal = 0.5, low_entropy = 0.7;
  const double queue_gap = 1.36e-6;  // the compute model's default, as no launch record is given
  const double flops = 2 * N * N * N;
  Trace t;
  t.source = "synthetic.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}};
  t.complete = true;
  for (const double duty : {0.6, 0.7, 0.8, 0.9, 1.0}) {
    const double clock = std::min(1.0, std::pow(duty_normal / (duty * low_entropy), 1 / exponent));
    auto r = record(Family::step, "gemm", fmt::format("duty_gap_{}", static_cast<int>(1000 * (1 - duty))),
                    queue_gap + flops / (PEAK * efficiency * clock));
    r.extra = {{"flops", flops}, {"duty", duty}, {"m", N}, {"n", N}, {"k", N}};
    t.records.push_back(r);
  }
  auto sustained = record(Family::compute, "gemm_sustained", "bf16", 1e-3);
  sustained.extra = {{"method", "events_per_chunk"},
                     {"sm_clock_mhz", BOOST_MHZ * std::pow(duty_normal, 1 / exponent)},
                     {"max_sm_clock_mhz", BOOST_MHZ},
                     {"seconds", 25}};
  t.records.push_back(sustained);

  const auto fitted = fitted_models(t);
  const auto& m = *fitted.compute;
  CHECK(m.flop_efficiency == doctest::Approx(efficiency).epsilon(1e-4));
  CHECK(m.power_exponent == doctest::Approx(exponent).epsilon(1e-3));
  CHECK(m.power_duty == doctest::Approx(duty_normal).epsilon(1e-3));
  CHECK(m.low_entropy_power == doctest::Approx(low_entropy).epsilon(1e-3));

  // Without the sustained record, the bursts' own duty stands for normal data, and says so.
  t.records.pop_back();
  const auto bursts_only = calibrate({t});
  bool noted = false;
  for (const auto& note : bursts_only.notes) noted |= note.starts_with("compute.power_duty: no sustained GEMMs");
  CHECK(noted);
}

TEST_CASE("memory kernel fit: PyTorch-style kernels of known rates give back the ramp and each kind's share") {
  // Written with the model's own time: the default event and queue gap + ramp + bytes / (4.8 TB/s x share), streams at
  // 0.9.
  const double ramp = 1.2e-6, hbm = 4.8e12;
  const auto defaults = models::Models::load(ConfigDocument::load_string("{}", "m.yaml")->root().section("models"));
  const double fixed = defaults.stream->event_record.count() + defaults.compute->queue_gap.count();
  Trace t;
  t.source = "synthetic-torch.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}};
  t.complete = true;
  for (const auto& [variant, op, share] :
       {std::tuple{"add", "add", 0.9}, std::tuple{"layernorm_fwd", "layernorm", 0.5},
        std::tuple{"layernorm_bwd", "layernorm", 0.3}, std::tuple{"softmax_fwd", "softmax", 0.25}}) {
    // The curve alternates calibration and validation along its sizes.
    for (double bytes = 1 << 22; bytes <= (1 << 30); bytes *= 2) {
      auto r = record(Family::compute, "memory_bound", variant, fixed + ramp + bytes / (hbm * share));
      r.id = fmt::format("compute/memory_bound/{}/0/{}/x", variant, bytes);
      r.bytes = Bytes{static_cast<std::uint64_t>(bytes)};
      r.extra = {{"op", op}, {"method", "events_queued"}};
      t.records.push_back(r);
    }
  }
  const auto fitted = fitted_models(t);
  const auto& m = *fitted.compute;
  CHECK(m.memory_ramp.count() == doctest::Approx(ramp).epsilon(1e-3));
  CHECK(m.efficiency({models::MemoryKernel::layernorm, false}) == doctest::Approx(0.5).epsilon(1e-4));
  CHECK(m.efficiency({models::MemoryKernel::layernorm, true}) == doctest::Approx(0.3).epsilon(1e-4));
  CHECK(m.efficiency({models::MemoryKernel::softmax, false}) == doctest::Approx(0.25).epsilon(1e-4));
  CHECK(m.hbm_efficiency == doctest::Approx(0.9));  // streams keep the model's share: they fix the ramp
}
