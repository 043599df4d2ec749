#include "models/jitter.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "models/models.hpp"
#include "models/test_support.hpp"

using namespace snsim;
using namespace snsim::models;
using namespace snsim::models::testing;

TEST_CASE("jitter: by default nothing varies") {
  const auto m = load("{}");
  CHECK(m.jitter->latency.is_none());
  CHECK(m.jitter->bandwidth.is_none());
  CHECK(m.jitter->compute.is_none());
  CHECK(m.variation->clock.is_none());
  CHECK(m.variation->hbm.is_none());
  CHECK(m.slow->gpus.empty());
}

TEST_CASE("jitter: the issue's YAML parses as written") {
  const auto m = load(
      "models:\n"
      "  jitter:\n"
      "    latency:   {dist: empirical, samples: [0.97, 1.0, 1.12]}\n"
      "    bandwidth: {dist: lognormal, sigma: 0.004}\n"
      "    compute:   {dist: normal, sigma: 0.002}\n"
      "  variation:\n"
      "    clock: {dist: normal, sigma: 0.005}\n"
      "    hbm:   {dist: normal, sigma: 0.02}\n"
      "  slow: [{gpu: 3, compute: 1.05, hbm: 1.02}]\n");
  CHECK(m.jitter->latency.kind() == Distribution::Kind::empirical);
  CHECK(m.jitter->bandwidth.kind() == Distribution::Kind::lognormal);
  CHECK(m.jitter->compute.kind() == Distribution::Kind::normal);
  CHECK(m.variation->clock.quantile(0.5) == 1.0);
  REQUIRE(m.slow->gpus.size() == 1);
  CHECK(m.slow->find(3)->compute == 1.05);
  CHECK(m.slow->find(3)->hbm == 1.02);
  CHECK(m.slow->find(2) == nullptr);
}

TEST_CASE("jitter: medians and quantiles") {
  CHECK(Distribution().median() == 1.0);
  CHECK(Distribution::constant(0.5).quantile(0.9) == 0.5);
  const double phi1 = 0.5 * std::erfc(-1 / std::sqrt(2.0));  // Φ(1)
  const auto normal = Distribution::normal(1.0, 0.01);
  CHECK(normal.median() == 1.0);
  CHECK(normal.quantile(phi1) == doctest::Approx(1.01).epsilon(1e-12));
  CHECK(normal.quantile(1 - phi1) == doctest::Approx(0.99).epsilon(1e-12));
  CHECK(normal.quantile(0.001) == doctest::Approx(1 - 0.01 * 3.090232306167813).epsilon(1e-12));  // the far tail
  const auto lognormal = Distribution::lognormal(0.1, 2.0);
  CHECK(lognormal.median() == 2.0);
  CHECK(lognormal.quantile(phi1) == doctest::Approx(2.0 * std::exp(0.1)).epsilon(1e-12));
  const auto empirical = Distribution::empirical({1.12, 0.97, 1.0});
  CHECK(empirical.median() == 1.0);
  CHECK(empirical.quantile(0) == 0.97);
  CHECK(empirical.quantile(1) == 1.12);
  CHECK(empirical.quantile(0.25) == doctest::Approx(0.985));
}

TEST_CASE("jitter: draws follow their distribution and are reproducible") {
  RandomStream a(5, "t"), b(5, "t");
  const auto empirical = Distribution::empirical({0.97, 1.0, 1.12});
  std::set<double> seen;
  for (int i = 0; i < 300; ++i) {
    const double x = empirical.draw(a);
    CHECK(x == empirical.draw(b));
    seen.insert(x);
  }
  CHECK(seen == std::set<double>{0.97, 1.0, 1.12});  // only the samples, and all of them

  const auto lognormal = Distribution::lognormal(0.2);
  const auto normal = Distribution::normal(2.0, 0.5);
  const int n = 100000;
  double log_sum = 0, sum = 0, sum2 = 0, smallest = 1e300;
  for (int i = 0; i < n; ++i) {
    log_sum += std::log(lognormal.draw(a));
    const double x = normal.draw(a);
    sum += x;
    sum2 += x * x;
    smallest = std::min(smallest, x);
  }
  CHECK(log_sum / n == doctest::Approx(0).scale(1).epsilon(0.005));  // median 1: the log has mean 0
  CHECK(sum / n == doctest::Approx(2.0).epsilon(0.005));
  CHECK(std::sqrt(sum2 / n - (sum / n) * (sum / n)) == doctest::Approx(0.5).epsilon(0.02));
  CHECK(smallest > 0);

  RandomStream untouched(5, "u"), reference(5, "u");
  CHECK(Distribution().draw(untouched) == 1.0);  // `none` draws nothing
  CHECK(untouched.bits() == reference.bits());
}

TEST_CASE("jitter: bad distributions are pinned errors") {
  CHECK(error("models: {jitter: {latency: {dist: gauss}}}") ==
        "t.yaml:1:35: models.jitter.latency.dist: unknown distribution 'gauss'; known: constant, empirical, "
        "lognormal, none, normal");
  CHECK(error("models: {jitter: {bandwidth: {dist: lognormal, sigma: -0.1}}}") ==
        "t.yaml:1:55: models.jitter.bandwidth.sigma: must be >= 0, got -0.1");
  CHECK(error("models: {jitter: {latency: {dist: empirical, samples: []}}}") ==
        "t.yaml:1:55: models.jitter.latency.samples: needs at least one sample");
  CHECK(error("models: {jitter: {latency: {dist: empirical, samples: [1.0, 0]}}}") ==
        "t.yaml:1:61: models.jitter.latency.samples[1]: must be > 0, got 0");
  CHECK(error("models: {variation: {clock: {dist: normal, sigma: 0.5}}}") ==
        "t.yaml:1:51: models.variation.clock.sigma: must be <= mean / 3 (0.3333333333333333) so that factors stay > "
        "0 (use lognormal for a wider spread), got 0.5");
  CHECK(error("models: {jitter: {compute: {dist: constant, value: 0}}}") ==
        "t.yaml:1:52: models.jitter.compute.value: must be > 0, got 0");
  CHECK(
      error("models: {jitter: {compute: {dist: lognormal, sigma: 0.1, mean: 2}}}") ==
      "t.yaml:1:58: models.jitter.compute.mean: unknown key (did you mean 'median'?); known keys: dist, median, sigma");
  CHECK(error("models: {jitter: {latency: {sigma: 0.1}}}") ==
        "t.yaml:1:28: models.jitter.latency.dist: required key is missing");
}

TEST_CASE("jitter: bad slow entries are pinned errors") {
  CHECK(error("models: {slow: [{gpu: 1, compute: 0}]}") ==
        "t.yaml:1:35: models.slow[0].compute: must be between 0.001 and 1000, got 0");
  CHECK(error("models: {slow: [{gpu: 1}, {gpu: 1, hbm: 2}]}") ==
        "t.yaml:1:33: models.slow[1].gpu: GPU 1 is already listed in models.slow[0].gpu");
  CHECK(error("models: {slow: {gpu: 1}}") ==
        "t.yaml:1:16: models.slow: expected a list such as [{gpu: 3, compute: 1.05, hbm: 1.02}]");
}
