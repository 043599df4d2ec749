// Fits of the compute model's tensor rate and power-capped clocks (models/compute.hpp) from the probe's `step`
// family: bursts of 20 cuBLAS bf16 GEMMs of 4096^3, each burst followed by an idle gap of 0 - 2 ms
// (tools/probe/src/families/step.cu, test gemm, variants duty_gap_<us>, extra `duty`: the measured share of time in
// GEMMs). Kernels are queued back to back, so the model's time per GEMM is
//   t = queue_gap + 2 m n k / (peak_bf16 x flop_efficiency x clock),  clock = min(1, (power_duty / duty)^(1/k))
// with queue_gap fitted before (fits::launches).
//   1. The bursts with the longest gaps run at boost clock (their GEMMs take the least time, and the two longest
//      gaps agree): flop_efficiency from them.
//   2. The others are throttled: ln(t' / t'_boost) = (ln duty - ln power_duty) / k on the kernel part t' = t -
//      queue_gap, a line in ln duty: k and power_duty from its slope and intercept (least squares).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "validation/fit.hpp"

namespace snsim::validation::fits {
namespace {

constexpr std::string_view DUTY_PREFIX = "duty_gap_";
// GEMMs within this share of the fastest run at the same clock (the probe's run-to-run spread is ~0.3 %).
constexpr double SAME_CLOCK = 0.01;

}  // namespace

void compute(Fit& fit) {
  const auto records = fit.select(Family::step, {"gemm"}, std::nullopt, [](const TraceRecord& r) {
    return r.variant.starts_with(DUTY_PREFIX) && extra_number(r, "flops") > 0 && extra_number(r, "duty") > 0;
  });
  if (!fit.enough(records, 3, "compute.flop_efficiency and the power-capped clock")) return;
  const auto& gpu = fit.platform().gpu;
  const double peak = gpu.peak(Dtype::bf16).value_or(gpu.dense_bf16).count();
  const double gap = fit.value_or("compute.queue_gap", fit.platform().defaults.compute->queue_gap.count());
  const auto kernel = [&](const TraceRecord& r) { return r.median - gap; };

  const double fastest =
      kernel(*std::ranges::min(records, {}, [&](const TracedRecord& t) { return kernel(*t.record); }).record);
  std::vector<TracedRecord> boost, throttled;
  for (const auto& t : records) (kernel(*t.record) <= fastest * (1 + SAME_CLOCK) ? boost : throttled).push_back(t);
  const auto x = Fit::relative_least_squares(
      boost, [&](const TraceRecord& r) { return std::vector<double>{extra_number(r, "flops") / peak}; }, kernel);
  if (x.empty() || !(x[0] > 1)) {
    fit.note("compute.flop_efficiency: the GEMMs at boost clock do not give an efficiency below 1: kept the default");
    return;
  }
  fit.add_number("compute.flop_efficiency", 1 / x[0],
                 "least squares on relative errors of queue_gap + 2mnk / (peak bf16 x efficiency), bf16 GEMM bursts "
                 "at boost clock (the longest idle gaps)",
                 boost);

  if (throttled.size() < 2) {
    fit.note("compute.power_duty: fewer than two GEMM bursts are throttled: clocks kept uncapped");
    return;
  }
  const double boost_kernel = extra_number(*boost.front().record, "flops") / (peak / x[0]);
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& t : throttled) {
    rows.push_back({std::log(extra_number(*t.record, "duty")), 1.0});
    y.push_back(std::log(kernel(*t.record) / boost_kernel));
    w.push_back(1);
  }
  const auto line = least_squares(rows, y, w);  // y = ln(duty) / k - ln(power_duty) / k
  if (line.size() != 2 || !(line[0] > 0)) {
    fit.note("compute.power_duty: throttled GEMMs do not slow down with the duty cycle: clocks kept uncapped");
    return;
  }
  const double exponent = 1 / line[0];
  const double duty = std::exp(-line[1] * exponent);
  const std::string method =
      "ln(t / t_boost) = (ln duty - ln power_duty) / exponent, least squares over the throttled GEMM bursts";
  fit.add_number("compute.power_exponent", exponent, method, throttled);
  fit.add_number("compute.power_duty", std::min(1.0, duty), method, throttled);
}

}  // namespace snsim::validation::fits
