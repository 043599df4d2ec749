// Failure what-ifs: each TEST_CASE runs in its own process (one simulation per process).
#include "sim/failures.hpp"

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

#include "sim/error.hpp"

using namespace snsim;
using namespace snsim::literals;

namespace {
/// n GPUs on `planes` switch chips, `lanes` NVLinks of 25 GB/s from every GPU to each chip.
Fabric planes_fabric(int n, const std::vector<int>& lanes) {
  Fabric f;
  std::vector<DeviceId> switches;
  for (std::size_t p = 0; p < lanes.size(); ++p)
    switches.push_back(f.add_device({fmt::format("nvswitch{}", p), DeviceKind::nvswitch, static_cast<int>(p), {}}));
  for (int i = 0; i < n; ++i) {
    const auto g = f.add_device(
        {fmt::format("gpu{}", i), DeviceKind::gpu, i, GpuSpec{"test", FlopsPerSecond{1e15}, 48000_GBps, 1_GiB}});
    for (std::size_t p = 0; p < lanes.size(); ++p)
      f.add_duplex(g, switches[p], {ChannelKind::nvlink, lanes[p], 25_GBps, Seconds{0}});
  }
  return f;
}

std::vector<Failure> parse(const Fabric& f, const std::string& yaml) {
  auto doc = ConfigDocument::load_string(yaml, "s.yaml");
  return parse_failures(doc->root().maybe_child("failures"), f);
}

/// The time a 1 GiB copy from gpu0 to gpu1 takes under `yaml`'s failures.
double copy_time(const Fabric& f, const std::string& yaml) {
  Simulation sim(f);
  FailureLog log;
  schedule_failures(sim, parse(f, yaml), log);
  Seconds end;
  sim.spawn("sender", f.gpus()[0], [&] {
    sim.transfer(f.gpus()[0], f.gpus()[1], 1_GiB, 1_GiB);
    end = Simulation::now();
  });
  sim.run();
  return end.count();
}
const double GIB = static_cast<double>((1_GiB).count());
}  // namespace

TEST_CASE("failures: a GPU that lost 1 of 18 links receives at 17/18 of its bandwidth") {
  const Fabric f = planes_fabric(2, {5, 4, 4, 5});
  const double t = copy_time(f, "failures: [{at: 0s, link: {gpu: 1, lanes: 1}}]");
  CHECK(t == doctest::Approx(GIB / (450e9 * 17 / 18)).epsilon(1e-9));
}

TEST_CASE("failures: a plane down leaves the other planes' lanes") {
  const Fabric f = planes_fabric(2, {5, 4, 4, 5});
  const double t = copy_time(f, "failures: [{at: 0s, plane: 2}]");
  CHECK(t == doctest::Approx(GIB / (14 * 25e9)).epsilon(1e-9));
}

TEST_CASE("failures: the bytes before the failure time move at the full rate") {
  const Fabric f = planes_fabric(2, {18});
  const double full = GIB / 450e9;
  const double at = full / 4;  // a quarter of the bytes at full rate, the rest at half of it
  const double t = copy_time(f, fmt::format("failures: [{{at: {}us, degraded: {{gpu: 0, factor: 0.5}}}}]", at * 1e6));
  CHECK(t == doctest::Approx(at + 3 * full / 4 / 0.5).epsilon(1e-9));
}

TEST_CASE("failures: a lost GPU stops the run with its outcome") {
  const Fabric f = planes_fabric(2, {18});
  Simulation sim(f);
  FailureLog log;
  schedule_failures(sim, parse(f, "failures: [{at: 1ms, gpu_lost: 1}]"), log);
  bool finished = false;
  sim.spawn("sender", f.gpus()[0], [&] {
    sim.transfer(f.gpus()[0], f.gpus()[1], 1_GiB, 1_GiB);
    finished = true;
  });
  const Seconds end = sim.run();
  CHECK_FALSE(finished);
  CHECK(end.count() == doctest::Approx(1e-3));
  REQUIRE(log.outcome);
  CHECK(*log.outcome == "failed: GPU 1 lost at 1 ms");
}

TEST_CASE("failures: input errors name the place") {
  const Fabric f = planes_fabric(2, {5, 4, 4, 5});
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, link: {gpu: 7, lanes: 1}}]"), doctest::Contains("s.yaml:1:"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, link: {gpu: 7, lanes: 1}}]"),
                       doctest::Contains("GPU 7 does not exist"), InputError);
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, link: {gpu: 1, lanes: 18}}]"),
                       doctest::Contains("would lose 18 of its 18 NVLink lanes"), InputError);
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, plane: 4}]"), doctest::Contains("plane 4 does not exist"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, degraded: {gpu: 1, factor: 0}}]"),
                       doctest::Contains("factor: must be in (0, 1]"), InputError);
  CHECK_THROWS_WITH_AS(parse(f, "failures: [{at: 0s, degraded: {gpu: 1, factor: 1.5}}]"),
                       doctest::Contains("factor: must be in (0, 1]"), InputError);
}
