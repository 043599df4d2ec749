// NCCL 2.30.7's tuning model against docs/nccl.md sections 5.4 and 10, which evaluate it by hand: NCCL's own
// predictions (a consistency reference, never a measurement).
#include "models/nccl_tuning.hpp"

#include <doctest/doctest.h>

using namespace snsim;
using namespace snsim::models;
using namespace snsim::models::nccl;

namespace {

System hgx(int nodes) {
  return derive(Machine{.arch = Arch::hopper, .nodes = nodes, .gpus_per_node = 8});
}
System nvl72() {
  return derive(Machine{.arch = Arch::blackwell, .nodes = 1, .gpus_per_node = 72, .nics = 72});
}
double us(const System& s, Algo a, Protocol p, double bytes, Func f = Func::all_reduce) {
  return time_us(s, f, a, p, bytes);
}
constexpr double KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

}  // namespace

TEST_CASE("nccl tuning: graph search results of docs/nccl.md 5.4") {
  const auto one = hgx(1);
  CHECK(one.ring.channels == 12);
  CHECK(one.ring.bw_intra == doctest::Approx(30));
  CHECK(one.nvls.channels == 8);
  CHECK(one.nvls.bw_intra == doctest::Approx(40));
  CHECK(one.nvls.bw_inter == doctest::Approx(60));
  CHECK(one.compute_channels == 24);
  CHECK(one.nvls_channels == 16);
  for (int nodes : {2, 8, 64}) {
    const auto many = hgx(nodes);
    CHECK(many.ring.channels == 8);
    CHECK(many.ring.bw_inter == doctest::Approx(48));
    CHECK_FALSE(many.tree.balanced_tree);
    CHECK(many.nvls.bw_inter == doctest::Approx(48));
    CHECK(many.compute_channels == 16);
  }
  const auto rack = nvl72();
  CHECK(rack.ring.channels == 16);
  CHECK(rack.ring.bw_intra == doctest::Approx(45));
  CHECK(rack.nvls.channels == 32);
  CHECK(rack.nvls.bw_intra == doctest::Approx(20));
  CHECK(rack.nvls.bw_inter == doctest::Approx(40));
  CHECK(rack.compute_channels == 32);
  CHECK(rack.nvls_channels == 24);
}

TEST_CASE("nccl tuning: the all-reduce latency and bandwidth table of docs/nccl.md 10") {
  struct Row {
    Algo a;
    Protocol p;
    double lat[3], bw[3];  // 8, 16, 64 GPUs; bandwidth 0 = not available
  };
  const Row rows[] = {
      {Algo::ring, Protocol::ll, {15.0, 40.0, 156.4}, {80.57, 20.80, 10.36}},
      {Algo::ring, Protocol::ll128, {40.6, 75.2, 282.8}, {189.26, 156.59, 149.13}},
      {Algo::ring, Protocol::simple, {56.0, 131.6, 585.2}, {205.71, 204.80, 195.05}},
      {Algo::tree, Protocol::ll, {15.2, 25.2, 45.2}, {43.58, 16.57, 8.67}},
      {Algo::tree, Protocol::ll128, {31.5, 48.5, 82.5}, {128.80, 124.78, 98.60}},
      {Algo::tree, Protocol::simple, {64.4, 92.4, 148.4}, {165.60, 140.76, 122.40}},
      {Algo::nvls, Protocol::simple, {25.0, 0, 0}, {272.00, 0, 0}},
      {Algo::nvls_tree, Protocol::simple, {0, 66.8, 150.4}, {0, 246.19, 184.89}},
  };
  const System systems[] = {hgx(1), hgx(2), hgx(8)};
  for (const auto& r : rows)
    for (int i = 0; i < 3; ++i) {
      CAPTURE(to_string(r.a));
      CAPTURE(to_string(r.p));
      CAPTURE(i);
      const auto e = entry(systems[i], Func::all_reduce, r.a, r.p);
      CHECK(e.bandwidth == doctest::Approx(r.bw[i]).epsilon(0.001));
      if (r.bw[i] > 0) CHECK(e.latency_us == doctest::Approx(r.lat[i]).epsilon(0.001));
    }
}

TEST_CASE("nccl tuning: predicted times from 8 B to 4 GiB and the pick on 8 GPUs (docs/nccl.md 10)") {
  const auto s = hgx(1);
  CHECK(us(s, Algo::tree, Protocol::ll, 1 * MiB) == doctest::Approx(63.3).epsilon(0.002));
  CHECK(us(s, Algo::tree, Protocol::simple, 64 * MiB) == doctest::Approx(571.0).epsilon(0.002));
  CHECK(us(s, Algo::ring, Protocol::simple, 4 * GiB) == doctest::Approx(20934.3).epsilon(0.001));
  CHECK(us(s, Algo::nvls, Protocol::simple, 4 * GiB) == doctest::Approx(15815.3).epsilon(0.001));
  auto pick = [&](double bytes) { return choose(s, Func::all_reduce, bytes).value(); };
  CHECK(pick(8).algo == Algo::ring);
  CHECK(pick(8).protocol == Protocol::ll);
  CHECK(pick(8).channels == 1);
  CHECK(pick(512 * KiB).channels == 16);
  CHECK(pick(1 * MiB).channels == 24);
  CHECK(pick(2 * MiB).algo == Algo::nvls);
  CHECK(pick(2 * MiB).time_us == doctest::Approx(32.7).epsilon(0.005));
  CHECK(pick(4 * GiB).algo == Algo::nvls);
  CHECK(pick(4 * GiB).channels == 16);
  // All-gather: rings only (NVLS's 208 GB/s loses to the ring's 411 without registration).
  CHECK(choose(s, Func::all_gather, 4 * GiB)->algo == Algo::ring);
  CHECK(choose(s, Func::all_gather, 4 * GiB)->time_us == doctest::Approx(10471.4).epsilon(0.001));
  CHECK(choose(s, Func::all_gather, 8 * MiB)->protocol == Protocol::ll128);
  CHECK(entry(s, Func::all_gather, Algo::nvls, Protocol::simple).bandwidth == doctest::Approx(208.25).epsilon(0.001));
}

TEST_CASE("nccl tuning: predicted times and the pick on 16 and 64 GPUs (docs/nccl.md 10)") {
  const auto two = hgx(2), eight = hgx(8);
  CHECK(us(two, Algo::ring, Protocol::simple, 1 * MiB) == doctest::Approx(189.4).epsilon(0.002));
  CHECK(us(two, Algo::nvls_tree, Protocol::simple, 4 * GiB) == doctest::Approx(17512.8).epsilon(0.001));
  CHECK(us(eight, Algo::ring, Protocol::simple, 4 * GiB) == doctest::Approx(22839.4).epsilon(0.001));
  CHECK(us(eight, Algo::tree, Protocol::ll128, 1 * MiB) == doctest::Approx(100.2).epsilon(0.002));
  auto pick = [](const System& s, double bytes) { return choose(s, Func::all_reduce, bytes).value(); };
  CHECK(pick(two, 8).algo == Algo::tree);
  CHECK(pick(two, 8).protocol == Protocol::ll);
  CHECK(pick(two, 1 * MiB).protocol == Protocol::ll128);
  CHECK(pick(two, 64 * MiB).algo == Algo::nvls_tree);
  CHECK(pick(two, 4 * GiB).algo == Algo::nvls_tree);
  CHECK(pick(eight, 8).algo == Algo::tree);
  CHECK(pick(eight, 8 * MiB).algo == Algo::tree);
  CHECK(pick(eight, 64 * MiB).algo == Algo::nvls_tree);
  CHECK(pick(eight, 4 * GiB).algo == Algo::ring);  // a near-tie with NVLSTree (2.3 %)
  CHECK(pick(eight, 8 * GiB).time_us == doctest::Approx(44859.5).epsilon(0.001));
  // All-gather across nodes: rings.
  CHECK(choose(eight, Func::all_gather, 64 * MiB)->protocol == Protocol::ll128);
  CHECK(choose(eight, Func::all_gather, 4 * GiB)->time_us == doctest::Approx(11306.9).epsilon(0.001));
}

TEST_CASE("nccl tuning: 512 ranks (64 nodes) follow the same formulas") {
  const auto s = hgx(64);
  // log2(64) = 6 in the tree latencies, nInter = 2 x 63 = 126 ring steps on the network, llMaxBw 20.4.
  CHECK(entry(s, Func::all_reduce, Algo::tree, Protocol::ll).latency_us ==
        doctest::Approx(6.8 + 2 * (7 * 0.6 + 6 * 5.0)));
  CHECK(entry(s, Func::all_reduce, Algo::nvls_tree, Protocol::simple).latency_us == doctest::Approx(25 + 12 * 20.9));
  CHECK(entry(s, Func::all_reduce, Algo::ring, Protocol::simple).latency_us ==
        doctest::Approx(8.4 + (1022 - 126) * 3.4 + 126 * 14.0));
  CHECK(entry(s, Func::all_reduce, Algo::ring, Protocol::simple).bandwidth == doctest::Approx(384.0 * 512 / 1022));
  CHECK(entry(s, Func::all_reduce, Algo::ring, Protocol::ll).bandwidth == doctest::Approx(20.4 * 512 / 1022));
  CHECK(choose(s, Func::all_reduce, 8)->algo == Algo::tree);
  CHECK(choose(s, Func::all_reduce, 16 * GiB)->algo == Algo::nvls_tree);  // 94.5 ms against the ring's 96.0
}

TEST_CASE("nccl tuning: NVL72 sketch and forcing") {
  const auto rack = nvl72();
  CHECK(entry(rack, Func::all_reduce, Algo::ring, Protocol::ll).latency_us == doctest::Approx(91.8));
  CHECK(entry(rack, Func::all_reduce, Algo::ring, Protocol::simple).bandwidth ==
        doctest::Approx(365.07).epsilon(0.001));
  CHECK(entry(rack, Func::all_reduce, Algo::nvls, Protocol::simple).bandwidth == doctest::Approx(465.3).epsilon(0.001));
  for (double bytes : {8.0, 1 * MiB, 64 * MiB, 4 * GiB})
    CHECK(choose(rack, Func::all_reduce, bytes)->algo == Algo::nvls);
  // NCCL_ALGO=ring, NCCL_PROTO=LL128: only that pair remains; nothing left: no choice.
  Allowed ring_ll128;
  ring_ll128.algos.fill(false);
  ring_ll128.algos[static_cast<std::size_t>(Algo::ring)] = true;
  ring_ll128.protos = {false, true, false};
  CHECK(choose(rack, Func::all_reduce, 4 * GiB, ring_ll128)->algo == Algo::ring);
  CHECK(choose(rack, Func::all_reduce, 4 * GiB, ring_ll128)->protocol == Protocol::ll128);
  Allowed tree_only;
  tree_only.algos.fill(false);
  tree_only.algos[static_cast<std::size_t>(Algo::tree)] = true;
  CHECK_FALSE(choose(rack, Func::all_gather, 1 * MiB, tree_only));
  CHECK(algo("nvlstree") == Algo::nvls_tree);
  CHECK_FALSE(algo("bogus"));
}
