#include "models/jitter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 5> JITTER_KIND_NAMES{"none", "constant", "normal", "lognormal", "empirical"};

/// Φ⁻¹(p): Acklam's rational approximation (relative error 1.15e-9), refined by one Halley step on erfc to full
/// double precision. Exact at p = 0.5, so a normal's median is its mean.
double inverse_normal_cdf(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                          1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
                          -1.328068155288572e+01};
  constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                          -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double low = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  double x = 0;
  if (p < low) {
    x = tail(std::sqrt(-2 * std::log(p)));
  } else if (p <= 1 - low) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    x = -tail(std::sqrt(-2 * std::log(1 - p)));
  }
  const double e = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

/// "must be >= 0, got -1" on `key` of `node`.
void check_non_negative(const ConfigNode& node, std::string_view key, double value) {
  if (!(value >= 0)) node.fail_key(key, fmt::format("must be >= 0, got {}", value));
}

}  // namespace

std::string_view to_string(Distribution::Kind kind) {
  return JITTER_KIND_NAMES[static_cast<std::size_t>(kind)];
}

Distribution Distribution::parse(const ConfigNode& node) {
  const ConfigNode name = node.child("dist");
  const std::string text = name.as<std::string>();
  Distribution d;
  if (text == "none") return d;
  if (text == "constant") {
    d = constant(node.required<double>("value"));
    check_positive(node, "value", d.center_);
  } else if (text == "normal") {
    const double mean = node.optional<double>("mean", 1.0);
    check_positive(node, "mean", mean);
    const double sigma = node.required<double>("sigma");
    check_non_negative(node, "sigma", sigma);
    // Redrawing non-positive factors truncates the normal; keep that to the far tail (Φ(-3) = 0.13 %).
    if (sigma > mean / 3)
      node.fail_key("sigma", fmt::format("must be <= mean / 3 ({}) so that factors stay > 0 (use lognormal for a "
                                         "wider spread), got {}",
                                         mean / 3, sigma));
    d = normal(mean, sigma);
  } else if (text == "lognormal") {
    const double sigma = node.required<double>("sigma");
    check_non_negative(node, "sigma", sigma);
    const double median = node.optional<double>("median", 1.0);
    check_positive(node, "median", median);
    d = lognormal(sigma, median);
  } else if (text == "empirical") {
    const ConfigNode list = node.child("samples");
    std::vector<double> samples;
    for (const auto& s : list.elements()) {
      const double v = s.as<double>();
      if (!(v > 0)) s.fail(fmt::format("must be > 0, got {}", v));
      samples.push_back(v);
    }
    if (samples.empty()) list.fail("needs at least one sample");
    d = empirical(std::move(samples));
  } else {
    std::vector<std::string_view> known(JITTER_KIND_NAMES.begin(), JITTER_KIND_NAMES.end());
    std::ranges::sort(known);
    name.fail(fmt::format("unknown distribution '{}'; known: {}", text, fmt::join(known, ", ")));
  }
  return d;
}

Distribution Distribution::constant(double value) {
  Distribution d;
  d.kind_ = Kind::constant;
  d.center_ = value;
  return d;
}

Distribution Distribution::normal(double mean, double sigma) {
  Distribution d;
  d.kind_ = Kind::normal;
  d.center_ = mean;
  d.sigma_ = sigma;
  return d;
}

Distribution Distribution::lognormal(double sigma, double median) {
  Distribution d;
  d.kind_ = Kind::lognormal;
  d.center_ = median;
  d.sigma_ = sigma;
  return d;
}

Distribution Distribution::empirical(std::vector<double> samples) {
  Distribution d;
  d.kind_ = Kind::empirical;
  std::ranges::sort(samples);
  d.samples_ = std::move(samples);
  return d;
}

double Distribution::draw(RandomStream& rng) const {
  switch (kind_) {
    case Kind::none:
      return 1;
    case Kind::constant:
      return center_;
    case Kind::normal: {
      double x = 0;
      do x = center_ + sigma_ * rng.normal();
      while (x <= 0);
      return x;
    }
    case Kind::lognormal:
      return center_ * std::exp(sigma_ * rng.normal());
    case Kind::empirical:
      return samples_[rng.below(samples_.size())];
  }
  return 1;
}

double Distribution::quantile(double q) const {
  switch (kind_) {
    case Kind::none:
      return 1;
    case Kind::constant:
      return center_;
    case Kind::normal:
      return center_ + sigma_ * inverse_normal_cdf(q);
    case Kind::lognormal:
      return center_ * std::exp(sigma_ * inverse_normal_cdf(q));
    case Kind::empirical: {
      // Hyndman and Fan's type 7 (numpy's default): linear between the order statistics.
      const double h = (static_cast<double>(samples_.size()) - 1) * std::clamp(q, 0.0, 1.0);
      const auto lo = static_cast<std::size_t>(std::floor(h));
      const auto hi = std::min(lo + 1, samples_.size() - 1);
      return samples_[lo] + (h - static_cast<double>(lo)) * (samples_[hi] - samples_[lo]);
    }
  }
  return 1;
}

// ---- slow GPUs ---------------------------------------------------------------------------------------------------

const ParamTable<SlowGpu>& slow_gpu_params() {
  static const ParamTable<SlowGpu> table = [] {
    ParamTable<SlowGpu> params;
    params.add({.key = "gpu", .unit = "GPU index", .doc = "the GPU slowed", .required = true},
               [](SlowGpu& s) { return &s.gpu; });
    params.add({.key = "compute",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(MIN_SLOW_FACTOR, MAX_SLOW_FACTOR),
                .doc = "multiplies the FLOP part of its kernels' time"},
               [](SlowGpu& s) { return &s.compute; });
    params.add({.key = "hbm",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(MIN_SLOW_FACTOR, MAX_SLOW_FACTOR),
                .doc = "multiplies the HBM part of its kernels' and local copies' time"},
               [](SlowGpu& s) { return &s.hbm; });
    return params;
  }();
  return table;
}

std::unique_ptr<Model> make_slow(const ConfigNode& node) {
  auto m = std::make_unique<SlowModel>();
  if (!node.is_sequence()) {
    if (node.is_map() || node.is_scalar()) node.fail("expected a list such as [{gpu: 3, compute: 1.05, hbm: 1.02}]");
    return m;  // absent
  }
  for (const auto& item : node.elements()) {
    SlowGpu s;
    slow_gpu_params().read(item, s);
    const ConfigNode gpu = item.child("gpu");
    for (std::size_t i = 0; i < m->gpus.size(); ++i)
      if (m->gpus[i].gpu == s.gpu)
        gpu.fail(fmt::format("GPU {} is already listed in {}", s.gpu, m->gpu_keys_[i].path()));
    m->gpus.push_back(s);
    m->gpu_keys_.push_back(gpu);
  }
  return m;
}

void SlowModel::check(int gpu_count) const {
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (gpus[i].gpu < 0 || gpus[i].gpu >= gpu_count)
      gpu_keys_[i].fail(
          fmt::format("GPU {} does not exist (the topology has {} GPUs: 0-{})", gpus[i].gpu, gpu_count, gpu_count - 1));
}

const SlowGpu* SlowModel::find(int gpu) const {
  auto it = std::ranges::find(gpus, gpu, &SlowGpu::gpu);
  return it == gpus.end() ? nullptr : &*it;
}

// ---- registry ----------------------------------------------------------------------------------------------------

std::string param_text(const Distribution& d) {
  return std::string(to_string(d.kind()));
}

namespace {
// What a distribution key accepts, in the entries' summaries.
const std::string DIST_FORMS =
    "{dist: none | constant (value) | normal (sigma, mean 1) | lognormal (sigma, median 1) | empirical (samples)}";

/// A factor drawn from a distribution; by default nothing varies.
Param<Distribution> factor(std::string key, std::string doc) {
  return {.key = std::move(key),
          .unit = "distribution",
          .doc = std::move(doc),
          .unset = "none",
          .parse = &Distribution::parse};
}
}  // namespace

const ParamTable<JitterModel>& jitter_params() {
  static const ParamTable<JitterModel> table = [] {
    ParamTable<JitterModel> params;
    params.add(factor("latency",
                      "factor on each transfer's fixed costs (route latency, engine setup, launch, protocol step "
                      "latency)"),
               [](JitterModel& m) { return &m.latency; });
    params.add(factor("bandwidth", "factor on each transfer's achievable rate"),
               [](JitterModel& m) { return &m.bandwidth; });
    params.add(factor("compute", "factor on each kernel's duration"), [](JitterModel& m) { return &m.compute; });
    params.add(factor("host", "factor on each host runtime call's CPU time (launch, synchronise)"),
               [](JitterModel& m) { return &m.host; });
    return params;
  }();
  return table;
}

const ParamTable<VariationModel>& variation_params() {
  static const ParamTable<VariationModel> table = [] {
    ParamTable<VariationModel> params;
    params.add(factor("clock", "factor on the GPU's FLOP rate"), [](VariationModel& m) { return &m.clock; });
    params.add(factor("hbm", "factor on the GPU's HBM bandwidth"), [](VariationModel& m) { return &m.hbm; });
    return params;
  }();
  return table;
}

Registry<Model>::Entry jitter_model_entry() {
  return model_entry("jitter",
                     "factors drawn per transfer and per kernel from seeded per-GPU streams; forms: " + DIST_FORMS,
                     jitter_params());
}

Registry<Model>::Entry variation_model_entry() {
  return model_entry("variation",
                     "per-GPU factors drawn once per run from seeded per-GPU streams; forms: " + DIST_FORMS,
                     variation_params());
}

Registry<Model>::Entry slow_model_entry() {
  return {"slow", "explicit slow GPUs, a list: [{gpu: 3, compute: 1.05, hbm: 1.02}]; factors < 1 make a GPU faster",
          slow_gpu_params().docs(), make_slow};
}

// ---- run-time state ----------------------------------------------------------------------------------------------

double Variability::Streams::draw(DeviceId device) {
  if (dist.is_none()) return 1;
  return dist.draw(*by_device.at(device));
}

Variability::Variability(const JitterModel& jitter, const VariationModel& variation, const SlowModel& slow,
                         const Fabric& fabric, std::uint64_t seed) {
  const std::size_t n = fabric.device_count();
  auto streams = [&](Streams& s, const Distribution& dist, const std::string& component) {
    s.dist = dist;
    s.by_device.resize(n);
    if (dist.is_none()) return;
    for (std::size_t v = 0; v < n; ++v) {
      const Device& d = fabric.device(v);
      if (d.kind == DeviceKind::gpu || d.kind == DeviceKind::host)
        s.by_device[v].emplace(seed, fmt::format("{}.{}", component, d.name));
    }
  };
  streams(latency_, jitter.latency, "jitter.latency");
  streams(bandwidth_, jitter.bandwidth, "jitter.bandwidth");
  streams(compute_, jitter.compute, "jitter.compute");
  streams(host_, jitter.host, "jitter.host");

  flop_rate_.assign(n, 1.0);
  hbm_rate_.assign(n, 1.0);
  for (auto gpu : fabric.gpus()) {
    const Device& d = fabric.device(gpu);
    // One stream per GPU and quantity, drawn once: the same GPU gets the same factors whatever else changes.
    if (!variation.clock.is_none()) {
      RandomStream rng(seed, fmt::format("variation.clock.{}", d.name));
      flop_rate_[gpu] *= variation.clock.draw(rng);
    }
    if (!variation.hbm.is_none()) {
      RandomStream rng(seed, fmt::format("variation.hbm.{}", d.name));
      hbm_rate_[gpu] *= variation.hbm.draw(rng);
    }
    if (const SlowGpu* s = slow.find(d.index)) {  // a time factor: the rate divides by it
      flop_rate_[gpu] /= s->compute;
      hbm_rate_[gpu] /= s->hbm;
    }
  }
}

void Variability::slow(DeviceId gpu, double compute, double hbm) {
  flop_rate_.at(gpu) /= compute;  // time factors, as in the constructor
  hbm_rate_.at(gpu) /= hbm;
}

double Variability::latency_factor(DeviceId issuer) {
  return latency_.draw(issuer);
}
double Variability::bandwidth_factor(DeviceId issuer) {
  return bandwidth_.draw(issuer);
}
double Variability::compute_factor(DeviceId gpu) {
  return compute_.draw(gpu);
}
double Variability::host_factor(DeviceId gpu) {
  return host_.draw(gpu);
}

}  // namespace snsim::models
