// Parameter sets (models/params.hpp) under a scenario's own values.
#include "models/params.hpp"

#include <doctest/doctest.h>

#include "models/jitter.hpp"
#include "models/models.hpp"
#include "sim/error.hpp"

using namespace snsim;
using namespace snsim::models;

namespace {

/// The models of `yaml` after its parameter set is overlaid, as a scenario loads them; unknown keys are errors.
Models load_with_params(const std::string& yaml) {
  auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  apply_params(*doc);
  auto m = Models::load(doc->root().section("models"));
  doc->reject_unknown_keys();
  return m;
}

}  // namespace

TEST_CASE("params: a distribution the scenario sets replaces the parameter set's whole") {
  // h200's latency jitter is empirical (`samples:`); merged key by key with the scenario's constant it used to be
  // refused: "validation/params/h200.yaml:61:41: models.jitter.latency.samples: unknown key; known keys: dist, value".
  const auto m = load_with_params(
      "models:\n"
      "  params: h200\n"
      "  jitter: {latency: {dist: constant, value: 1}}\n"
      "  variation: {clock: {dist: constant, value: 1}}\n");
  CHECK(m.jitter->latency.kind() == Distribution::Kind::constant);
  CHECK(m.jitter->latency.quantile(0) == 1);
  CHECK(m.jitter->latency.quantile(1) == 1);
  CHECK(m.variation->clock.kind() == Distribution::Kind::constant);
  // What the scenario leaves out still comes from the set.
  CHECK(m.jitter->bandwidth.kind() == Distribution::Kind::lognormal);
}

TEST_CASE("params: a scenario's own mixed distribution is still refused, at its place in the scenario") {
  CHECK_THROWS_WITH_AS(load_with_params("models:\n"
                                        "  params: h200\n"
                                        "  jitter: {latency: {dist: constant, value: 1, samples: [1]}}\n"),
                       "t.yaml:3:48: models.jitter.latency.samples: unknown key; known keys: dist, value", InputError);
}

TEST_CASE("params: a hand-written parameter file needs only models:, and its unknown keys are still errors") {
  auto scenario = ConfigDocument::load_string("models: {}\n", "t.yaml");
  auto params = ConfigDocument::load_string("models:\n  copy: {ce: {efficiency: 0.8}}\n", "p.yaml");
  overlay_params(*scenario, *params);
  const auto m = Models::load(scenario->root().section("models"));
  scenario->reject_unknown_keys();
  CHECK(m.copy->ce.efficiency == doctest::Approx(0.8));

  auto misspelt = ConfigDocument::load_string("models: {}\n", "t.yaml");
  auto bad = ConfigDocument::load_string("models: {}\ncalibraton: {source: me}\n", "p.yaml");
  CHECK_THROWS_WITH_AS(
      overlay_params(*misspelt, *bad),
      "p.yaml:2:1: calibraton: unknown key (did you mean 'calibration'?); known keys: calibration, models", InputError);
}
