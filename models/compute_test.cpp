#include "models/compute.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "models/models.hpp"
#include "models/test_support.hpp"

using namespace snsim;
using namespace snsim::models;
using namespace snsim::models::testing;

TEST_CASE("compute: clocks stay at boost while the tensor duty stays at or below power_duty") {
  const auto m = load("models: {compute: {power_duty: 0.75, power_exponent: 2.5, power_window: 10ms}}\n");
  const auto& c = *m.compute;
  TensorDuty duty;
  CHECK(c.clock_factor(duty, Seconds{0}) == 1.0);
  // Busy 75 % of every 4 ms for a long time: the average settles at 0.75 and the clock stays at boost.
  for (int i = 0; i < 1000; ++i) {
    const double t0 = i * 4e-3;
    c.account(duty, Seconds{t0}, Seconds{t0 + 3e-3}, 1.0);
  }
  CHECK(duty.value == doctest::Approx(0.75).epsilon(0.02));
  CHECK(c.clock_factor(duty, Seconds{4e-3 * 1000}) == 1.0);
}

TEST_CASE("compute: always busy, the clock drops to (power_duty / 1)^(1 / exponent)") {
  const auto m = load("models: {compute: {power_duty: 0.75, power_exponent: 2.5, power_window: 10ms}}\n");
  const auto& c = *m.compute;
  TensorDuty duty;
  for (int i = 0; i < 200; ++i) c.account(duty, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 1.0);
  CHECK(duty.value == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(c.clock_factor(duty, Seconds{0.2}) == doctest::Approx(std::pow(0.75, 1 / 2.5)).epsilon(1e-6));
  // Idle afterwards, the average decays over the window: after 5 windows the clock is back at boost.
  CHECK(c.clock_factor(duty, Seconds{0.2 + 0.05}) == 1.0);
  // A memory-bound kernel keeps the tensor cores busy only for its math share.
  TensorDuty half;
  for (int i = 0; i < 200; ++i) c.account(half, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 0.5);
  CHECK(half.value == doctest::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("compute: power and queue-gap keys are checked") {
  CHECK(error("models: {compute: {power_duty: 1.5}}\n") ==
        "t.yaml:1:32: models.compute.power_duty: must be between 0.05 and 1, got 1.5");
  CHECK(error("models: {compute: {power_window: 0s}}\n") ==
        "t.yaml:1:34: models.compute.power_window: must be > 0, got 0 s");
  const auto m = load("models: {compute: {launch: 5us, queue_gap: 1.5us}}\n");
  CHECK(m.compute->fixed_cost(false).count() == doctest::Approx(5e-6));
  CHECK(m.compute->fixed_cost(true).count() == doctest::Approx(1.5e-6));
  CHECK(load("models: {}\n").compute->power_duty == 1.0);  // off unless a parameter set turns it on
}
