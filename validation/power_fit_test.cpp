// The compute model's fits (validation/fits/compute_fit.cpp): the GEMM model with what its records' clock readings
// mean, the power-capped clock, the memory-bound kernels. Records written with the model's own times give back the
// parameters that made them.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "topologies/gpus.hpp"
#include "validation/calibrate.hpp"
#include "validation/twins.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

constexpr double PEAK = 989e12, N = 4096;

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

GpuSpec h200_preset() {
  const auto& presets = topologies::gpu_presets();
  return *std::ranges::find_if(presets, [](const GpuSpec& g) { return g.model == "h200"; });
}

}  // namespace

TEST_CASE("power fit: bursts on low-entropy data and sustained normal-data GEMMs give back the power model") {
  // The truth: the GEMM model's defaults (no GEMM records here to fit it); on normal data the cap sustains a duty of
  // 0.5 at boost, exponent 2.5; the bursts' low-entropy operands draw 0.7 of normal data's power, so they throttle
  // above a duty of 0.5 / 0.7. A GEMM runs at the clock factor's share of the model's rate at boost.
  const double exponent = 2.5, duty_normal = 0.5, low_entropy = 0.7;
  const auto defaults = snsim::models::testing::load();
  const auto& model = *defaults.compute;
  const GpuSpec h200 = h200_preset();
  const double queue_gap = model.queue_gap.count();  // the default, as no launch record is given
  const auto n = static_cast<std::int64_t>(N);
  const double flops = 2 * N * N * N;
  Trace t;
  t.source = "synthetic.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}};
  t.complete = true;
  for (const double duty : {0.6, 0.7, 0.8, 0.9, 1.0}) {
    const double clock = std::min(1.0, std::pow(duty_normal / (duty * low_entropy), 1 / exponent));
    auto r = record(Family::step, "gemm", fmt::format("duty_gap_{}", static_cast<int>(1000 * (1 - duty))),
                    queue_gap + model.gemm_time(h200, step_gemm(n), Dtype::bf16, clock).count());
    r.extra = {{"flops", flops}, {"duty", duty}, {"m", N}, {"n", N}, {"k", N}, {"dtype", "bf16"}};
    t.records.push_back(r);
  }
  const models::Gemm big{8192, 8192, 8192};
  const double sustained_clock = std::pow(duty_normal, 1 / exponent);
  auto sustained = record(Family::compute, "gemm_sustained", "bf16",
                          queue_gap + model.gemm_time(h200, big, Dtype::bf16, sustained_clock).count());
  sustained.extra = {{"method", "events_per_chunk"},
                     {"m", 8192},
                     {"n", 8192},
                     {"k", 8192},
                     {"dtype", "bf16"},
                     {"layout", "TN"},
                     {"seconds", 25}};
  t.records.push_back(sustained);

  const auto fitted = fitted_models(t);
  const auto& m = *fitted.compute;
  // The roofline's efficiency is what the bursts at boost reach: the GEMM model's time there.
  const double boost_kernel = model.gemm_time(h200, step_gemm(n), Dtype::bf16).count();
  CHECK(m.flop_efficiency == doctest::Approx(flops / (PEAK * boost_kernel)).epsilon(1e-4));
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

TEST_CASE("gemm fit: GEMMs timed at clock readings and bursts at boost give back the model and what a reading means") {
  // The truth: the default GEMM model with its own efficiency, tile overhead and ramp; a GEMM read at f MHz runs at
  // 0.85 x (f / 1980)^0.4 of its unthrottled rate; GEMM bursts with long idle gaps run unthrottled.
  const double efficiency = 0.93, overhead = 1.5e-6, ramp = 1.2e-6, elasticity = 0.4, boost_reading = 0.85;
  const double event = 2e-6;
  const auto defaults = snsim::models::testing::load();
  models::ComputeModel truth = *defaults.compute;
  truth.gemm_efficiency = efficiency;
  truth.gemm_tile_overhead = Seconds{overhead};
  truth.gemm_ramp = Seconds{ramp};
  truth.clock_elasticity = elasticity;
  truth.boost_reading_rate = boost_reading;
  const GpuSpec h200 = h200_preset();
  const double gap = truth.queue_gap.count();
  Trace t;
  t.source = "synthetic.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}};
  t.complete = true;
  int clock_index = 0;
  for (const int m : {512, 1024, 2048, 4096, 8192})
    for (const int n : {1024, 4096, 16384})
      for (const int k : {1024, 4096, 16384}) {
        const double mhz = std::array{1350.0, 1500.0, 1650.0, 1800.0, 1950.0}[clock_index++ % 5];
        const models::Gemm g{m, n, k};
        const double kernel = truth.gemm_time(h200, g, Dtype::bf16, truth.rate_at_reported_clock(mhz / 1980)).count();
        for (const bool events : {true, false}) {
          const std::string method = events ? "events_back_to_back" : "batch_events";
          auto r = record(Family::compute, events ? "gemm" : "gemm_method", events ? "bf16" : "batch_events",
                          gap + (events ? event : 0) + kernel);
          r.id = fmt::format("compute/{}/{}/0/0/bf16_TN_m{}_n{}_k{}", r.test, r.variant, m, n, k);
          r.extra = {{"m", m},
                     {"n", n},
                     {"k", k},
                     {"dtype", "bf16"},
                     {"layout", "TN"},
                     {"method", method},
                     {"sm_clock_mhz", mhz}};
          t.records.push_back(r);
        }
      }
  for (const int gap_us : {1000, 2000}) {  // long idle gaps: below the cap, at the unthrottled rate
    auto r = record(Family::step, "gemm", fmt::format("duty_gap_{}", gap_us),
                    gap + truth.gemm_time(h200, step_gemm(4096), Dtype::bf16).count());
    r.extra = {{"flops", 2 * N * N * N}, {"duty", 0.3}, {"m", N}, {"n", N}, {"k", N}, {"dtype", "bf16"}};
    t.records.push_back(r);
  }

  const auto fitted = fitted_models(t);
  const auto& m = *fitted.compute;
  CHECK(m.clock_elasticity == doctest::Approx(elasticity).epsilon(0.05));
  CHECK(m.boost_reading_rate == doctest::Approx(boost_reading).epsilon(0.01));
  CHECK(m.gemm_efficiency == doctest::Approx(efficiency).epsilon(0.01));
  CHECK(m.gemm_tile_overhead.count() == doctest::Approx(overhead).epsilon(0.05));
  CHECK(fitted.stream->event_record.count() == doctest::Approx(event).epsilon(0.05));
}

TEST_CASE("memory kernel fit: PyTorch-style kernels of known rates give back the ramp and each kind's share") {
  // Written with the model's own time: the default event and queue gap + ramp + bytes / (4.8 TB/s x share), streams at
  // 0.9.
  const double ramp = 1.2e-6, hbm = 4.8e12;
  const auto defaults = snsim::models::testing::load();
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
