#include "models/collective.hpp"

#include <doctest/doctest.h>

#include "models/models.hpp"

using namespace snsim;
using namespace snsim::models;
using namespace snsim::literals;

namespace {
Models defaults() {
  auto doc = ConfigDocument::load_string("{}", "t.yaml");
  return Models::load(doc->root().section("models"));
}
}  // namespace

TEST_CASE("collective: ring all_reduce is 2(n-1) steps of S/n") {
  const auto m = defaults();
  const auto plan =
      m.collective->plan(CollectiveKind::all_reduce, 1_GiB, 8, 370_GBps, Seconds{0.7e-6}, Protocol::simple);
  CHECK(plan.steps == 14);
  CHECK(plan.step_bytes == Bytes{(1_GiB).count() / 8});
}

TEST_CASE("collective: the protocol is chosen by size like NCCL") {
  const auto m = defaults();
  const auto small = m.collective->plan(CollectiveKind::all_reduce, Bytes{8}, 8, 370_GBps, Seconds{0.7e-6}, {});
  const auto large = m.collective->plan(CollectiveKind::all_reduce, 1_GiB, 8, 370_GBps, Seconds{0.7e-6}, {});
  CHECK(small.protocol == Protocol::ll);
  CHECK(large.protocol == Protocol::simple);
  // NCCL's model: 8-GPU ring LL all-reduce latency = 6.6 + 14 x 0.6 = 15.0 us (hardware.md §2.4), plus wire.
  CHECK(m.collective->predict(small, 370_GBps, Seconds{0}).count() == doctest::Approx(15.0e-6).epsilon(0.01));
}

TEST_CASE("collective: bus bandwidth factors follow nccl-tests") {
  CHECK(bus_bandwidth_factor(CollectiveKind::all_reduce, 8) == doctest::Approx(1.75));
  CHECK(bus_bandwidth_factor(CollectiveKind::all_gather, 8) == doctest::Approx(0.875));
  CHECK(bus_bandwidth_factor(CollectiveKind::all_to_all, 4) == doctest::Approx(0.75));
  CHECK(bus_bandwidth_factor(CollectiveKind::broadcast, 8) == doctest::Approx(1.0));
}

TEST_CASE("collective: model parameters are checked") {
  auto doc = ConfigDocument::load_string("models:\n  collective:\n    LL:\n      efficiency: 1.5\n", "t.yaml");
  CHECK_THROWS_WITH_AS(Models::load(doc->root().section("models")),
                       "t.yaml:4:19: models.collective.LL.efficiency: must be between 0.01 and 1, got 1.5", InputError);
}
