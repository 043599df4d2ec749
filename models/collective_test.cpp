#include "models/collective.hpp"

#include <doctest/doctest.h>

#include "models/models.hpp"
#include "models/test_support.hpp"

using namespace snsim;
using namespace snsim::models;
using namespace snsim::literals;

using namespace snsim::models::testing;

namespace {

// An 8-GPU HGX seen from one rank: 18 NVLink4 links (450 GB/s), SM copies at 82.4 %, NVSwitch3 reducing at 0.85.
const CollectivePlatform HGX{450_GBps, 0.824, Seconds{0.354e-6}, 18, 0.85};
const CollectivePlatform NO_NVLS{450_GBps, 0.824, Seconds{0.354e-6}, 18, 0};

CollectiveRequest all_reduce(Bytes size, int ranks = 8) {
  return {CollectiveKind::all_reduce, size, ranks, {}, {}, {}, Launch::stream};
}
CollectiveRequest forced(Bytes size, Algorithm a, Protocol p, int ranks = 8) {
  return {CollectiveKind::all_reduce, size, ranks, a, p, {}, Launch::stream};
}
}  // namespace

TEST_CASE("collective: ring all_reduce is 2(n-1) steps of S/n") {
  const auto m = load();
  const auto s = m.collective->shape(CollectiveKind::all_reduce, 1_GiB, 8, Algorithm::ring);
  CHECK(s.steps == 14);
  CHECK(s.step_bytes == Bytes{(1_GiB).count() / 8});
  CHECK(s.serial_bytes == Bytes{14 * (1_GiB).count() / 8});
}

TEST_CASE("collective: each algorithm moves what it must per rank") {
  const auto m = load();
  const std::uint64_t S = (64_MiB).count(), n = 8;
  auto shape = [&](CollectiveKind k, Algorithm a) { return m.collective->shape(k, Bytes{S}, 8, a); };
  // one-shot reads every peer's whole buffer; two-shot exchanges S/n with every peer twice.
  CHECK(shape(CollectiveKind::all_reduce, Algorithm::one_shot).serial_bytes == Bytes{(n - 1) * S});
  CHECK(shape(CollectiveKind::all_reduce, Algorithm::one_shot).peers == 7);
  CHECK(shape(CollectiveKind::all_reduce, Algorithm::two_shot).serial_bytes == Bytes{2 * (n - 1) * S / n});
  CHECK(shape(CollectiveKind::all_reduce, Algorithm::two_shot).steps == 2);
  // NVLS: S + S/n into the switch and out of it, in one step.
  const auto nvls = shape(CollectiveKind::all_reduce, Algorithm::nvls);
  CHECK(nvls.steps == 1);
  CHECK(nvls.step_bytes == Bytes{S + S / n});
  // Tree: a chain with 2(n-1) latency hops; a middle rank's links carry 2S.
  const auto tree = shape(CollectiveKind::all_reduce, Algorithm::tree);
  CHECK(tree.latency_steps == 14);
  CHECK(tree.chunks == 128);
  CHECK(tree.serial_bytes.count() >= 2 * S);
  CHECK(shape(CollectiveKind::all_gather, Algorithm::ring).serial_bytes == Bytes{(n - 1) * S / n});
  CHECK(shape(CollectiveKind::all_to_all, Algorithm::direct).serial_bytes == Bytes{(n - 1) * S / n});
  CHECK_THROWS_WITH_AS(shape(CollectiveKind::all_gather, Algorithm::one_shot), "one_shot cannot run all_gather",
                       std::logic_error);
  CHECK_THROWS_WITH_AS(shape(CollectiveKind::all_to_all, Algorithm::tree), "tree cannot run all_to_all",
                       std::logic_error);
}

TEST_CASE("collective: the time model is NCCL's latency plus bytes over the channels' rate") {
  const auto m = load();
  // NCCL's model: 8-GPU ring LL all-reduce latency = 6.6 + 14 x 0.6 = 15.0 us (docs/hardware.md#nccl-model), plus wire
  // and launch.
  const auto ll = m.collective->make_plan(all_reduce(Bytes{8}), Algorithm::ring, Protocol::ll, NO_NVLS);
  const double wire = 14 * 0.354e-6 + 8.0 / 141e9;
  CHECK(m.collective->predict(ll, NO_NVLS).count() == doctest::Approx(4.8e-6 + 15.0e-6 + wire));
  // NVLS: a flat 25 us plus the wire, at the switch's reduction rate.
  const auto nvls = m.collective->make_plan(all_reduce(1_GiB), Algorithm::nvls, Protocol::simple, HGX);
  const double S = 1073741824.0;
  CHECK(m.collective->predict(nvls, HGX).count() ==
        doctest::Approx(4.8e-6 + 25e-6 + 0.354e-6 + (S + S / 8) / (450e9 * 0.824 * 0.85)));
  // Half the channels, half the rate; more channels than links add nothing.
  auto request = all_reduce(1_GiB);
  request.channels = 9;
  const auto half = m.collective->make_plan(request, Algorithm::ring, Protocol::simple, HGX);
  CHECK(m.collective->rate(half, HGX).count() == doctest::Approx(450e9 * 0.824 / 2));
  request.channels = 64;
  const auto many = m.collective->make_plan(request, Algorithm::ring, Protocol::simple, HGX);
  CHECK(m.collective->rate(many, HGX).count() == doctest::Approx(450e9 * 0.824));
  // A CUDA graph launch saves what our H200 traces show (4.8 us from a stream, 0.52 us from a graph).
  request.launch = Launch::graph;
  const auto graph = m.collective->make_plan(request, Algorithm::ring, Protocol::simple, HGX);
  CHECK((m.collective->predict(many, HGX) - m.collective->predict(graph, HGX)).count() == doctest::Approx(4.28e-6));
}

TEST_CASE("collective: below its ramp a ring runs one channel per channel_bytes, and its time stays flat") {
  const auto m = load("models: {collective: {Simple: {channel_bytes: 32KiB}, LL: {channel_bytes: 4KiB}}}");
  const auto& c = *m.collective;
  // t = launch + base + 2(n-1) (step + hop) + 2(n-1)/n S / (rate x channels / links), channels = floor(S / 32 KiB)
  // clamped to 1..18 (NCCL's rule, src/enqueue.cc).
  auto expected = [&](std::uint64_t s, int channels) {
    return 3.68e-6 + 8.4e-6 + 14 * (3.4e-6 + 0.354e-6) +
           14.0 / 8 * static_cast<double>(s) / (450e9 * 0.824 * channels / 18);
  };
  auto plan = [&](std::uint64_t s) {
    return c.make_plan(forced(Bytes{s}, Algorithm::ring, Protocol::simple), Algorithm::ring, Protocol::simple, NO_NVLS);
  };
  for (const auto& entry : std::vector<std::pair<std::uint64_t, int>>{{8, 1},
                                                                      {16 * 1024, 1},
                                                                      {48 * 1024, 1},
                                                                      {64 * 1024, 2},
                                                                      {96 * 1024, 3},
                                                                      {512 * 1024, 16},
                                                                      {576 * 1024, 18},
                                                                      {1 << 20, 18},
                                                                      {1ull << 30, 18}}) {
    const auto& s = entry.first;
    const auto& channels = entry.second;
    CAPTURE(s);
    CHECK(plan(s).channels == channels);
    CHECK(c.predict(plan(s), NO_NVLS).count() == doctest::Approx(expected(s, channels)).epsilon(1e-12));
  }
  // On the ramp every channel carries the same bytes: the time does not move from 2 to 16 channels.
  CHECK(c.predict(plan(64 * 1024), NO_NVLS).count() == doctest::Approx(c.predict(plan(512 * 1024), NO_NVLS).count()));
  // A ring's LL threshold grows with the ranks (NCCL's tuning.cc): 4 KiB x 8 ranks per channel.
  CHECK(c.make_plan(forced(Bytes{64 * 1024}, Algorithm::ring, Protocol::ll), Algorithm::ring, Protocol::ll, NO_NVLS)
            .channels == 2);
  CHECK(c.make_plan(forced(Bytes{64 * 1024}, Algorithm::tree, Protocol::ll), Algorithm::tree, Protocol::ll, NO_NVLS)
            .channels == 16);
  // NVLS runs every channel at any size; a forced count wins over the ramp.
  CHECK(c.make_plan(forced(Bytes{8}, Algorithm::nvls, Protocol::simple), Algorithm::nvls, Protocol::simple, HGX)
            .channels == 18);
  auto request = forced(Bytes{8}, Algorithm::ring, Protocol::simple);
  request.channels = 6;
  CHECK(c.make_plan(request, Algorithm::ring, Protocol::simple, NO_NVLS).channels == 6);
}

TEST_CASE("collective: the channel ramp never runs more channels than links") {
  const auto m = load();
  const auto& c = *m.collective;
  for (int links : {1, 4, 18})
    for (std::uint64_t s = 1; s <= (1ull << 40); s *= 3)
      for (auto a : {Algorithm::ring, Algorithm::tree})
        for (auto p : protocols_for(a)) {
          const CollectivePlatform platform{450_GBps, 0.824, Seconds{0.354e-6}, links, 0};
          const auto plan = c.make_plan(forced(Bytes{s}, a, p), a, p, platform);
          CAPTURE(s);
          CAPTURE(links);
          CHECK(plan.channels >= 1);
          CHECK(plan.channels <= links);
          CHECK(plan.rate_scale <= 1.0);
        }
  CHECK(ramp_channels(1_GiB, Bytes{0}, 18) == 18);  // 0 B per channel: the ramp is off
  CHECK(ramp_channels(Bytes{1}, 1_GiB, 0) == 1);
}

TEST_CASE("collective: protocol and algorithm switch where the model's times cross") {
  const auto m = load();
  const auto& c = *m.collective;
  // Walk the sizes; at each one the chosen plan must be the fastest candidate. Without NVLS the protocol goes
  // LL -> LL128 -> Simple as the size grows (NCCL's latency/bandwidth trade); with it, large sizes go to nvls.
  auto walk = [&](const CollectivePlatform& platform) {
    std::vector<std::pair<Algorithm, Protocol>> order;
    for (std::uint64_t s = 8; s <= (1_GiB).count(); s *= 2) {
      const auto best = c.plan(all_reduce(Bytes{s}), platform);
      for (auto a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls})
        for (auto p : protocols_for(a)) {
          if (a == Algorithm::nvls && platform.switch_reduction == 0) continue;
          CAPTURE(s);
          CHECK(c.predict(best, platform) <= c.predict(c.make_plan(all_reduce(Bytes{s}), a, p, platform), platform));
        }
      if (order.empty() || order.back() != std::pair{best.algorithm, best.protocol})
        order.emplace_back(best.algorithm, best.protocol);
    }
    return order;
  };
  using P = std::pair<Algorithm, Protocol>;
  CHECK(walk(NO_NVLS) == std::vector<P>{{Algorithm::ring, Protocol::ll},
                                        {Algorithm::ring, Protocol::ll128},
                                        {Algorithm::ring, Protocol::simple}});
  const auto with_nvls = walk(HGX);
  CHECK(with_nvls.front() == P{Algorithm::ring, Protocol::ll});
  CHECK(with_nvls.back() == P{Algorithm::nvls, Protocol::simple});
  // Where LL and NVLS cross, the chosen plan flips exactly there: find the crossing and check both sides.
  auto time = [&](Algorithm a, Protocol p, std::uint64_t s) {
    return c.predict(c.make_plan(all_reduce(Bytes{s}), a, p, HGX), HGX).count();
  };
  std::uint64_t lo = 8, hi = (1_GiB).count();  // ring LL faster at lo, nvls faster at hi
  while (hi - lo > 1) {
    const auto mid = (lo + hi) / 2;
    (time(Algorithm::ring, Protocol::ll, mid) < time(Algorithm::nvls, Protocol::simple, mid) ? lo : hi) = mid;
  }
  CHECK(c.plan(all_reduce(Bytes{hi}), HGX).algorithm == Algorithm::nvls);
  CHECK(c.plan(all_reduce(Bytes{lo / 2}), HGX).algorithm == Algorithm::ring);
  // Without NVLS (NCCL_NVLS_ENABLE=0, or a fabric whose switches cannot reduce) large sizes go to ring Simple.
  CHECK(c.plan(all_reduce(1_GiB), NO_NVLS).algorithm == Algorithm::ring);
  CHECK(c.plan(all_reduce(1_GiB), NO_NVLS).protocol == Protocol::simple);
  const auto off = load("models: {collective: {nvls: false}}");
  CHECK(off.collective->plan(all_reduce(1_GiB), HGX).algorithm == Algorithm::ring);
  // one_shot and two_shot need symmetric memory: chosen only when forced.
  const auto one = c.plan(forced(Bytes{8}, Algorithm::one_shot, Protocol::simple), HGX);
  CHECK(one.algorithm == Algorithm::one_shot);
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
