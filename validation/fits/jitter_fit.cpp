// Jitter distributions from the spread of single copies (the probe's `copy` family, 50 samples per size). The
// `jitter` family (2,000 samples at sizes not used here) validates them.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "validation/fit.hpp"

namespace snsim::validation::fits {
namespace {

// Distributions keep this many quantiles: enough for a p99.9 (validation/bounds.yaml checks it).
constexpr int DISTRIBUTION_POINTS = 1000;
// Single copies up to this size are fixed-cost bound (the data takes < 2 % of the time): their spread is latency
// jitter. From this size up they are bandwidth bound: their spread is bandwidth jitter.
constexpr std::uint64_t LATENCY_BOUND_MAX = 64 * 1024;
constexpr std::uint64_t BANDWIDTH_BOUND_MIN = 256ull << 20;
const std::vector<std::string> SINGLE_COPIES{"ce_peer", "sm_push", "sm_pull", "ce_local", "sm_local"};

/// An empirical distribution of `factors` (each sample over its record's median) as models.jitter writes one.
std::string empirical_distribution(const std::vector<double>& factors) {
  std::vector<std::string> points;
  for (int i = 0; i < DISTRIBUTION_POINTS; ++i)
    points.push_back(fmt::format("{:.4f}", quantile(factors, (i + 0.5) / DISTRIBUTION_POINTS)));
  return fmt::format("{{dist: empirical, samples: [{}]}}", fmt::join(points, ", "));
}

/// Samples divided by their record's median, pooled.
std::vector<double> normalised_samples(const std::vector<TracedRecord>& records) {
  std::vector<double> factors;
  for (const auto& t : records) {
    const double median = quantile(t.record->samples, 0.5);
    if (median <= 0) continue;
    for (double s : t.record->samples) factors.push_back(s / median);
  }
  return factors;
}

void latency(Fit& fit) {
  const auto records = fit.select(Family::copy, SINGLE_COPIES, "single",
                                  [](const TraceRecord& r) { return r.bytes.count() <= LATENCY_BOUND_MAX; });
  const auto factors = normalised_samples(records);
  if (factors.size() < 100) {
    fit.note(fmt::format("jitter.latency: {} samples, needs 100; not fitted", factors.size()));
    return;
  }
  fit.add_yaml("jitter.latency", empirical_distribution(factors),
               fmt::format("{} quantiles of {} samples of fixed-cost-bound single copies (<= {}), each over its "
                           "record's median",
                           DISTRIBUTION_POINTS, factors.size(), to_string(Bytes{LATENCY_BOUND_MAX})),
               records);
}

void bandwidth(Fit& fit) {
  const auto records = fit.select(Family::copy, SINGLE_COPIES, "single",
                                  [](const TraceRecord& r) { return r.bytes.count() >= BANDWIDTH_BOUND_MIN; });
  const auto factors = normalised_samples(records);
  if (factors.size() < 20) {
    fit.note(fmt::format("jitter.bandwidth: {} samples, needs 20; not fitted", factors.size()));
    return;
  }
  double sum = 0, squares = 0;
  for (double f : factors) {
    sum += std::log(f);
    squares += std::log(f) * std::log(f);
  }
  const double n = static_cast<double>(factors.size());
  const double sigma = std::sqrt(std::max(0.0, squares / n - (sum / n) * (sum / n)));
  fit.add_yaml("jitter.bandwidth", fmt::format("{{dist: lognormal, sigma: {:.3g}}}", sigma),
               fmt::format("standard deviation of log(sample / median) over {} samples of bandwidth-bound single "
                           "copies (>= {})",
                           factors.size(), to_string(Bytes{BANDWIDTH_BOUND_MIN})),
               records);
}

/// The host's runtime calls: snsim-crosscheck's long runs of single copies between events the host records around
/// its submission (events_single: 100,000 copies, every 10th kept) at their smallest size (1 MiB), less the copy's
/// own cost (the local copy fit), are one launch call's CPU time each; their spread over its median is the host's
/// jitter, rare large delays kept (the device's own, behind a gate, is 1.02 x its median at p99.9 against 3.4 x
/// here). The same runs at 64 MiB validate it.
void host(Fit& fit) {
  const auto records = fit.select(Family::jitter, {"ce_local", "sm_local"}, "single", {}, "events_single");
  const auto own_cost = local_copy_cost(fit);
  if (records.empty() || !own_cost) {
    fit.note(
        "jitter.host: no long run of copies between host-recorded events (snsim-crosscheck's events_single "
        "jitter records); not fitted");
    return;
  }
  std::vector<double> factors;
  for (const auto& t : records) {
    const auto& r = *t.record;
    const double own = own_cost(r);
    std::vector<double> calls;
    for (double s : r.samples) calls.push_back(std::max(s - own, 1e-9));
    const double median = quantile(calls, 0.5);
    for (double c : calls) factors.push_back(c / median);
  }
  fit.add_yaml("jitter.host", empirical_distribution(factors),
               fmt::format("{} quantiles of {} samples of (t - the copy's own cost) of crosscheck's events_single "
                           "long runs of single local copies at {}, each over its record's median",
                           DISTRIBUTION_POINTS, factors.size(), to_string(records.front().record->bytes)),
               records);
}

}  // namespace

void jitter(Fit& fit) {
  latency(fit);
  bandwidth(fit);
  host(fit);
}

}  // namespace snsim::validation::fits
