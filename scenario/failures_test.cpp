// Failure what-ifs: each TEST_CASE runs in its own process (one simulation per process).
#include "scenario/failures.hpp"

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

#include "scenario/test_support.hpp"
#include "sim/error.hpp"

using namespace snsim;
using namespace snsim::literals;
using snsim::workloads::testing::GIB;

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

/// n GPUs with one 25 GB/s lane to each of `chips` switch chips, in trays of 2 chips (as NVL72's, at NVLink4 rate).
Fabric trays_fabric(int n, int chips) {
  Fabric f;
  std::vector<DeviceId> switches;
  for (int p = 0; p < chips; ++p)
    switches.push_back(f.add_device({fmt::format("nvswitch{}", p), DeviceKind::nvswitch, p, {}, 0, 0, p / 2}));
  for (int i = 0; i < n; ++i) {
    const auto g = f.add_device(
        {fmt::format("gpu{}", i), DeviceKind::gpu, i, GpuSpec{"test", FlopsPerSecond{1e15}, 48000_GBps, 1_GiB}});
    for (auto s : switches) f.add_duplex(g, s, {ChannelKind::nvlink, 1, 25_GBps, Seconds{0}});
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

/// The message of the InputError that parsing `yaml`'s failures throws.
std::string error(const Fabric& f, const std::string& yaml) {
  try {
    parse(f, yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// When a 1 GiB transfer from gpu0 to gpu1, capped at half its route's bottleneck (a share that follows the route),
/// ends under `yaml`'s failures. `pull`: issued by gpu1's actor (the bytes still flow from gpu0).
double capped_copy_time(const Fabric& f, const std::string& yaml, bool pull = false, Seconds fixed_cost = Seconds{0}) {
  Simulation sim(f);
  FailureLog log;
  schedule_failures(sim, parse(f, yaml), log);
  Seconds end;
  const DeviceId from = f.gpus()[0], to = f.gpus()[1];
  sim.spawn("copier", pull ? to : from, [&] {
    sim.transfer(from, to, 1_GiB, 1_GiB, fixed_cost, sim.route(from, to).bottleneck * 0.5, true);
    end = Simulation::now();
  });
  sim.run();
  return end.count();
}
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

TEST_CASE("failures: a GPU that lost a lane and a plane keeps the lanes left on the live planes") {
  // Plane 2 takes 4 of each GPU's 18 lanes; gpu1 then loses 1 of the 14 left: 13 lanes carry its traffic.
  const Fabric f = planes_fabric(2, {5, 4, 4, 5});
  const double t = copy_time(f, "failures: [{at: 0s, plane: 2}, {at: 0s, link: {gpu: 1, lanes: 1}}]");
  CHECK(t == doctest::Approx(GIB / (13 * 25e9)).epsilon(1e-9));
}

TEST_CASE("failures: a switch tray down takes both of its chips' lanes from every GPU") {
  const Fabric f = trays_fabric(2, 18);
  const double t = copy_time(f, "failures: [{at: 0s, tray: 4}]");
  CHECK(t == doctest::Approx(GIB / (16 * 25e9)).epsilon(1e-9));
}

TEST_CASE("failures: a capped transfer keeps its share of the line when a link loses lanes mid-way") {
  // Capped at half of 450 GB/s; at 1 ms gpu1 loses 9 of its 18 lanes: the line is 225 GB/s and the cap 112.5 GB/s.
  // A cap that kept its start value (225 GB/s) would end at 1 ms + rest / 225 GB/s.
  const Fabric f = planes_fabric(2, {18});
  const double t = capped_copy_time(f, "failures: [{at: 1ms, link: {gpu: 1, lanes: 9}}]");
  CHECK(t == doctest::Approx(1e-3 + (GIB - 225e9 * 1e-3) / 112.5e9).epsilon(1e-9));
}

TEST_CASE("failures: a pulled capped transfer keeps its share of the line when a link loses lanes mid-way") {
  const Fabric f = planes_fabric(2, {18});
  const double t = capped_copy_time(f, "failures: [{at: 1ms, link: {gpu: 0, lanes: 9}}]", true);
  CHECK(t == doctest::Approx(1e-3 + (GIB - 225e9 * 1e-3) / 112.5e9).epsilon(1e-9));
}

TEST_CASE("failures: a capped transfer whose fixed cost spans a failure moves all its bytes at the new cap") {
  // The cap was taken at the transfer's call, the lanes went at 1 ms, the bytes start after the 2 ms fixed cost.
  const Fabric f = planes_fabric(2, {18});
  const double t = capped_copy_time(f, "failures: [{at: 1ms, link: {gpu: 1, lanes: 9}}]", false, Seconds{2e-3});
  CHECK(t == doctest::Approx(2e-3 + GIB / 112.5e9).epsilon(1e-9));
}

TEST_CASE("failures: a slowed GPU calls the hook at its time, with its factors") {
  const Fabric f = planes_fabric(2, {18});
  Simulation sim(f);
  FailureLog log;
  std::vector<std::tuple<double, int, double, double>> calls;
  schedule_failures(sim, parse(f, "failures: [{at: 2ms, slowed: {gpu: 1, compute: 1.2}}]"), log,
                    {.slow_gpu = [&](int rank, double compute, double hbm) {
                      calls.emplace_back(Simulation::now().count(), rank, compute, hbm);
                    }});
  sim.spawn("worker", f.gpus()[0], [] { simgrid::s4u::this_actor::sleep_for(5e-3); });
  sim.run();
  REQUIRE(calls.size() == 1);
  CHECK(std::get<0>(calls[0]) == doctest::Approx(2e-3));
  CHECK(std::get<1>(calls[0]) == 1);
  CHECK(std::get<2>(calls[0]) == 1.2);
  CHECK(std::get<3>(calls[0]) == 1.0);
  REQUIRE(log.applied.size() == 1);
  CHECK(log.applied[0].what == "gpu1 kernels: compute time x 1.2, HBM time x 1");
  CHECK(log.applied[0].links.empty());
}

TEST_CASE("failures: input errors name the place, the key, what was found and what was expected") {
  const Fabric f = planes_fabric(2, {5, 4, 4, 5});
  CHECK(error(f, "failures: [{at: 0s, link: {gpu: 7, lanes: 1}}]") ==
        "s.yaml:1:33: failures[0].link.gpu: GPU 7 does not exist (the topology has 2 GPUs: 0-1)");
  CHECK(error(f, "failures: [{at: 0s, link: {gpu: 1, lanes: 0}}]") ==
        "s.yaml:1:43: failures[0].link.lanes: must be >= 1, got 0");
  CHECK(error(f, "failures: [{at: 0s, link: {gpu: 1, lanes: 10}}, {at: 1s, link: {gpu: 1, lanes: 8}}]") ==
        "s.yaml:1:80: failures[1].link.lanes: GPU 1 would have no NVLink lane left (18 of its 18 lanes lead to "
        "switch chips that are up, 18 lost); at least one must remain (a GPU cut off is gpu_lost)");
  CHECK(error(f, "failures: [{at: -1ms, gpu_lost: 1}]") ==
        "s.yaml:1:17: failures[0].at: cannot parse '-1ms' as a time: cannot be negative");
  CHECK(error(f, "failures: [{at: 0s}]") ==
        "s.yaml:1:12: failures[0]: needs exactly one of link, plane, tray, degraded, slowed, gpu_lost; found none");
  CHECK(error(f, "failures: [{at: 0s, plane: 1, gpu_lost: 0}]") ==
        "s.yaml:1:12: failures[0]: needs exactly one of link, plane, tray, degraded, slowed, gpu_lost; found plane "
        "and gpu_lost");
  CHECK(error(f, "failures: [{at: 0s, plane: 4}]") ==
        "s.yaml:1:28: failures[0].plane: NVSwitch plane 4 does not exist (the topology has 4: 0-3)");
  CHECK(error(f, "failures: [{at: 0s, plane: 1}, {at: 1s, plane: 1}]") ==
        "s.yaml:1:48: failures[1].plane: plane 1 is already down");
  CHECK(error(f, "failures: [{at: 0s, plane: 0}, {at: 0s, plane: 1}, {at: 0s, plane: 2}, {at: 0s, plane: 3}]") ==
        "s.yaml:1:88: failures[3].plane: GPU 0 would have no NVLink lane left (0 of its 18 lanes lead to switch "
        "chips that are up, 0 lost); at least one must remain (a GPU cut off is gpu_lost)");
  CHECK(error(f, "failures: [{at: 0s, tray: 0}]") ==
        "s.yaml:1:27: failures[0].tray: tray 0 on a topology without switch trays (nvl72 and nvl36x2 have them); "
        "one switch chip down is plane: N");
  CHECK(error(f, "failures: [{at: 0s, degraded: {gpu: 1, factor: 0}}]") ==
        "s.yaml:1:48: failures[0].degraded.factor: must be in (0, 1], got 0");
  CHECK(error(f, "failures: [{at: 0s, degraded: {gpu: 1, factor: 1.5}}]") ==
        "s.yaml:1:48: failures[0].degraded.factor: must be in (0, 1], got 1.5");
  CHECK(error(f, "failures: [{at: 0s, slowed: {gpu: 1}}]") ==
        "s.yaml:1:29: failures[0].slowed: needs compute or hbm (time factors, as in models.slow); found neither");
  CHECK(error(f, "failures: [{at: 0s, slowed: {gpu: 1, hbm: 0}}]") ==
        "s.yaml:1:43: failures[0].slowed.hbm: must be > 0, got 0");
  CHECK(error(f, "failures: [{at: 0s, slowed: {gpu: 2, compute: 1.1}}]") ==
        "s.yaml:1:35: failures[0].slowed.gpu: GPU 2 does not exist (the topology has 2 GPUs: 0-1)");
  CHECK(error(f, "failures: [{at: 0s, gpu_lost: -1}]") ==
        "s.yaml:1:31: failures[0].gpu_lost: GPU -1 does not exist (the topology has 2 GPUs: 0-1)");
  CHECK(error(f, "failures: {at: 0s, gpu_lost: 1}") == "s.yaml:1:11: failures: expected a list, found a map");
}

TEST_CASE("failures: tray errors name the trays the topology has") {
  const Fabric f = trays_fabric(2, 18);
  CHECK(error(f, "failures: [{at: 0s, tray: 9}]") ==
        "s.yaml:1:27: failures[0].tray: switch tray 9 does not exist (the topology has 9 trays: 0-8)");
  CHECK(error(f, "failures: [{at: 0s, plane: 6}, {at: 0s, plane: 7}, {at: 1s, tray: 3}]") ==
        "s.yaml:1:67: failures[2].tray: switch tray 3 is already down");
}

TEST_CASE("failures: a slowed failure without a hook to slow the GPU is a programming error") {
  const Fabric f = planes_fabric(2, {18});
  Simulation sim(f);
  FailureLog log;
  CHECK_THROWS_AS(schedule_failures(sim, parse(f, "failures: [{at: 1ms, slowed: {gpu: 1, hbm: 2}}]"), log),
                  std::logic_error);
}
