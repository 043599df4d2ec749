// Physics of the engine as configured: each TEST_CASE runs in its own process (one simulation per process).
#include "sim/simulation.hpp"

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "scenario/test_support.hpp"

using namespace snsim;
using snsim::workloads::testing::relative_error;
using namespace snsim::literals;

namespace {
/// n GPUs on one switch; every GPU has a `bandwidth` channel each way with `latency` per hop, and HBM far faster.
Fabric star(int n, BytesPerSecond bandwidth, Seconds latency, BytesPerSecond hbm = 4800_GBps) {
  Fabric f;
  const auto sw = f.add_device({"nvswitch0", DeviceKind::nvswitch, 0, {}});
  for (int i = 0; i < n; ++i) {
    const auto g =
        f.add_device({fmt::format("gpu{}", i), DeviceKind::gpu, i, GpuSpec{"test", FlopsPerSecond{1e15}, hbm, 1_GiB}});
    f.add_duplex(g, sw, {ChannelKind::nvlink, 1, bandwidth, latency});
  }
  return f;
}
}  // namespace

TEST_CASE("simulation: a lone transfer takes latency + size/bandwidth") {
  const Fabric f = star(2, 100_GBps, Seconds{0.5e-6});
  Simulation sim(f);
  const auto a = f.gpus()[0], b = f.gpus()[1];
  CHECK(sim.route(a, b).latency.count() == doctest::Approx(1e-6));
  Seconds end;
  sim.spawn("sender", a, [&] {
    sim.transfer(a, b, 1_GiB, 1_GiB, Seconds{2e-6});
    end = Simulation::now();
  });
  sim.run();
  const double expected = 1e-6 + 2e-6 + static_cast<double>((1_GiB).count()) / 100e9;
  CHECK(relative_error(end.count(), expected) <= 1e-9);
}

TEST_CASE("simulation: two flows into one GPU share its link equally") {
  const Fabric f = star(3, 100_GBps, Seconds{0});
  Simulation sim(f);
  const auto g0 = f.gpus()[0], g1 = f.gpus()[1], g2 = f.gpus()[2];
  Seconds end0, end1;
  sim.spawn("a", g0, [&] {
    sim.transfer(g0, g2, 1_GiB, 1_GiB);
    end0 = Simulation::now();
  });
  sim.spawn("b", g1, [&] {
    sim.transfer(g1, g2, 1_GiB, 1_GiB);
    end1 = Simulation::now();
  });
  sim.run();
  const double expected = 2.0 * static_cast<double>((1_GiB).count()) / 100e9;  // each gets half the down link
  CHECK(relative_error(end0.count(), expected) <= 1e-9);
  CHECK(relative_error(end1.count(), expected) <= 1e-9);
}

TEST_CASE("simulation: max-min gives the unconstrained flow the leftover bandwidth") {
  // gpu0->gpu2 and gpu1->gpu2 share gpu2's down link; gpu1's up link also carries gpu1->gpu3.
  // Max-min: every flow is limited by a shared link at 50 GB/s, so all three run at 50 GB/s... unless one flow
  // is alone on its links: gpu0->gpu3 would get its full 100 GB/s. Here: three flows, gpu2.down shared by two,
  // gpu1.up shared by two, gpu3.down carries one -> each of the three gets 50 GB/s.
  const Fabric f = star(4, 100_GBps, Seconds{0});
  Simulation sim(f);
  const auto g = f.gpus();
  std::array<Seconds, 3> end{};
  sim.spawn("a", g[0], [&] {
    sim.transfer(g[0], g[2], 1_GiB, 1_GiB);
    end[0] = Simulation::now();
  });
  sim.spawn("b", g[1], [&] {
    sim.transfer(g[1], g[2], 1_GiB, 1_GiB);
    end[1] = Simulation::now();
  });
  sim.spawn("c", g[1], [&] {
    sim.transfer(g[1], g[3], Bytes{(1_GiB).count() / 2}, Bytes{(1_GiB).count() / 2});
    end[2] = Simulation::now();
  });
  sim.run();
  const double gib = static_cast<double>((1_GiB).count());
  // Phase 1: all three at 50 GB/s until c finishes (0.5 GiB at 50 GB/s); then b has gpu1.up alone but still
  // shares gpu2.down with a: both stay at 50 GB/s and finish together at 1 GiB / 50 GB/s.
  CHECK(relative_error(end[2].count(), 0.5 * gib / 50e9) <= 1e-9);
  CHECK(relative_error(end[0].count(), gib / 50e9) <= 1e-9);
  CHECK(relative_error(end[1].count(), gib / 50e9) <= 1e-9);
}

TEST_CASE("simulation: links count every byte that crossed them") {
  const Fabric f = star(2, 100_GBps, Seconds{0});
  Simulation sim(f);
  const auto a = f.gpus()[0], b = f.gpus()[1];
  sim.spawn("sender", a, [&] { sim.transfer(a, b, Bytes{1200}, Bytes{1000}); });
  sim.run();
  REQUIRE(sim.links().size() == 6);  // both directions of both hops, and each GPU's HBM
  for (const auto& l : sim.links()) {
    const bool on_route = l.name != "gpu1->nvswitch0" && l.name != "nvswitch0->gpu0";  // HBM at both ends too
    CHECK(l.wire_bytes == Bytes{on_route ? 1200u : 0u});
    CHECK(l.payload_bytes == Bytes{on_route ? 1000u : 0u});
  }
}

TEST_CASE("simulation: links say what they are, whatever the devices are called") {
  // A custom fabric (topology type file) may call a GPU "g0" and a switch "gpu_tray": the kind comes from the
  // devices, not from their names.
  Fabric f;
  const auto sw = f.add_device({"gpu_tray", DeviceKind::nvswitch, 0, {}});
  for (const char* name : {"g0", "accel1"}) {
    const auto g = f.add_device({name, DeviceKind::gpu, static_cast<int>(f.gpus().size()),
                                 GpuSpec{"test", FlopsPerSecond{1e15}, 4800_GBps, 1_GiB}});
    f.add_duplex(g, sw, {ChannelKind::nvlink, 1, 100_GBps, Seconds{0}});
  }
  Simulation sim(f);
  std::map<std::string, LinkKind> kinds;
  for (const auto& l : sim.links()) kinds[l.name] = l.kind;
  CHECK(kinds == std::map<std::string, LinkKind>{{"hbm:g0", LinkKind::hbm},
                                                 {"hbm:accel1", LinkKind::hbm},
                                                 {"g0->gpu_tray", LinkKind::gpu_egress},
                                                 {"accel1->gpu_tray", LinkKind::gpu_egress},
                                                 {"gpu_tray->g0", LinkKind::fabric},
                                                 {"gpu_tray->accel1", LinkKind::fabric}});
  CHECK(to_string(LinkKind::gpu_egress) == "gpu_egress");
}

TEST_CASE("simulation: kernels and a local copy on one GPU share its HBM, and SM holders take their share") {
  const Fabric f = star(3, 100_GBps, Seconds{0});  // 4.8 TB/s HBM, 1e15 flop/s hosts
  Simulation sim(f, {}, 0.25);
  const auto g = f.gpus();
  const double hbm = 4800e9;
  std::array<Seconds, 6> end{};
  auto at_end = [&](std::size_t i) { end[i] = Simulation::now(); };
  // gpu0: a memory-bound kernel and a local copy of the same HBM traffic: each gets half, both take 2 ms.
  sim.spawn("kernel0", g[0], [&] {
    sim.kernel(g[0], Seconds{0}, Seconds{1e-3}, Bytes{1});
    at_end(0);
  });
  sim.spawn("local0", g[0], [&] {
    sim.transfer(g[0], g[0], Bytes{static_cast<std::uint64_t>(hbm * 1e-3)}, Bytes{1});
    at_end(1);
  });
  // gpu1: FLOPs and HBM bytes do not compete: 1 ms each, together.
  sim.spawn("math1", g[1], [&] {
    sim.kernel(g[1], Seconds{1e-3}, Seconds{0}, Bytes{0});
    at_end(2);
  });
  sim.spawn("memory1", g[1], [&] {
    sim.kernel(g[1], Seconds{0}, Seconds{1e-3}, Bytes{1});
    at_end(3);
  });
  // gpu2: a collective kernel holding 25 % of the SMs for 0.5 ms leaves a compute kernel 75 % meanwhile.
  sim.spawn("holder2", g[2], [&] {
    sim.hold_sms(g[2]);
    simgrid::s4u::this_actor::sleep_for(0.5e-3);
    sim.release_sms(g[2]);
    at_end(4);
  });
  sim.spawn("math2", g[2], [&] {
    sim.kernel(g[2], Seconds{1e-3}, Seconds{0}, Bytes{0});
    at_end(5);
  });
  sim.run();
  CHECK(relative_error(end[0].count(), 2e-3) <= 1e-9);
  CHECK(relative_error(end[1].count(), 2e-3) <= 1e-9);
  CHECK(relative_error(end[2].count(), 1e-3) <= 1e-9);
  CHECK(relative_error(end[3].count(), 1e-3) <= 1e-9);
  // 0.5 ms at 75 % (0.375 ms of work), then the remaining 0.625 ms at full speed.
  CHECK(relative_error(end[4].count(), 0.5e-3) <= 1e-9);
  CHECK(relative_error(end[5].count(), 0.5e-3 + 0.625e-3) <= 1e-9);
}

TEST_CASE("simulation: SNSIM_ENGINE_ARGS passes SimGrid options, and explicit engine args win") {
  // The asan preset relies on this to run every simulation on thread contexts (docs/hardening.md).
  ::setenv("SNSIM_ENGINE_ARGS", " --cfg=contexts/factory:thread\t--cfg=contexts/stack-size:1024 ", 1);
  const Fabric f = star(2, 100_GBps, Seconds{0});
  Simulation sim(f, {"--cfg=contexts/stack-size:2048"});
  ::unsetenv("SNSIM_ENGINE_ARGS");
  CHECK(simgrid::config::get_value<std::string>("contexts/factory") == "thread");
  CHECK(simgrid::config::get_value<int>("contexts/stack-size") == 2048);
  Seconds end;
  sim.spawn("sender", f.gpus()[0], [&] {
    sim.transfer(f.gpus()[0], f.gpus()[1], 1_GiB, 1_GiB);
    end = Simulation::now();
  });
  sim.run();
  CHECK(end.count() == doctest::Approx(static_cast<double>((1_GiB).count()) / 100e9));
}

TEST_CASE("simulation: a pooled job runs on its endpoint, its starter joins it, and its actor serves the next job") {
  const Fabric f = star(2, 100_GBps, Seconds{0});
  Simulation sim(f);
  const auto a = f.gpus()[0], b = f.gpus()[1];
  Seconds joined_first, joined_second;
  DeviceId ran_on = a;
  std::size_t actors_first = 0, actors_second = 0;
  sim.spawn("starter", a, [&] {
    sim.start_pooled(b,
                     [&] {
                       ran_on = sim.current_device();
                       simgrid::s4u::this_actor::sleep_for(2);
                     })
        .join();
    joined_first = Simulation::now();
    actors_first = simgrid::s4u::Engine::get_instance()->get_actor_count();
    sim.start_pooled(b, [&] { simgrid::s4u::this_actor::sleep_for(3); }).join();
    joined_second = Simulation::now();
    actors_second = simgrid::s4u::Engine::get_instance()->get_actor_count();
  });
  sim.run();
  CHECK(ran_on == b);
  CHECK(joined_first.count() == doctest::Approx(2));
  CHECK(joined_second.count() == doctest::Approx(5));
  CHECK(actors_first == 2);  // the starter and the pooled actor, idle
  CHECK(actors_second == actors_first);
}

TEST_CASE("simulation: the run lasts until the last of spawn_pooled's jobs has ended, as with spawn") {
  const Fabric f = star(2, 100_GBps, Seconds{0});
  Simulation sim(f);
  const auto a = f.gpus()[0], b = f.gpus()[1];
  Seconds job_end;
  sim.spawn("starter", a, [&] {
    sim.spawn_pooled(b, [&] {
      simgrid::s4u::this_actor::sleep_for(7);
      job_end = Simulation::now();
    });
    sim.spawn_pooled(b, [&] { simgrid::s4u::this_actor::sleep_for(4); });
    simgrid::s4u::this_actor::sleep_for(1);  // the starter ends long before its jobs
  });
  CHECK(sim.run().count() == doctest::Approx(7));
  CHECK(job_end.count() == doctest::Approx(7));
}
