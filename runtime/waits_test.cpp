// Who waited on whom (runtime/waits.hpp): the attribution rules on hand-made logs, then end to end, one
// simulation per test case.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include "runtime/waits.hpp"
#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {
Seconds ms(double t) {
  return Seconds{t * 1e-3};
}

/// busy + waiting never exceeds the span, and the waits by blamed rank add up to at least the waiting time.
void check_conservation(const Report& r) {
  for (const auto& w : r.waits) {
    CAPTURE(w.rank);
    CHECK(w.busy >= Seconds{0});
    CHECK((w.busy + w.waiting).count() <= w.span.count() * (1 + 1e-12));
    Seconds blamed{0};
    for (const auto& [on, time] : w.on) blamed += time;
    CHECK(blamed.count() >= w.waiting.count() * (1 - 1e-12));
  }
}
}  // namespace

TEST_CASE("waits: every member of a sync waits for the last to arrive, at most until it left") {
  WaitLog log;
  int group = 0;  // only its address matters
  // First sync: ranks 0, 1, 2 arrive at 0, 1 and 2 ms; all leave at 3 ms.
  log.arrive(0, Sync::barrier, &group, 3, ms(0), ms(3));
  log.arrive(2, Sync::barrier, &group, 3, ms(2), ms(3));
  log.arrive(1, Sync::barrier, &group, 3, ms(1), ms(3));
  // Second: 1 and 2 arrive last together (the lower rank is blamed); 0 left at 4.5 ms, before they came.
  log.arrive(0, Sync::barrier, &group, 3, ms(4), ms(4.5));
  log.arrive(1, Sync::barrier, &group, 3, ms(5), ms(6));
  log.arrive(2, Sync::barrier, &group, 3, ms(5), ms(6));
  // Third: only two of three members ever came (a deadlock): no waits.
  log.arrive(0, Sync::barrier, &group, 3, ms(7), ms(8));
  log.arrive(1, Sync::barrier, &group, 3, ms(7.5), ms(8));
  log.add({1, 0, ms(9), Seconds{0}});  // nothing waited: dropped
  const std::vector<Wait> expected{
      {0, 2, ms(0), ms(2)},
      {0, 1, ms(4), ms(4.5) - ms(4)},
      {1, 2, ms(1), ms(2) - ms(1)},
  };
  CHECK(log.waits() == expected);
}

TEST_CASE("waits: the table counts overlapping waits once and waits between ops into the span") {
  std::vector<OpRecord> ops{{0, 0, -1, "compute", "", Bytes{0}, ms(0), ms(10)},
                            {0, 0, -1, "collective", "", Bytes{0}, ms(10), ms(14)},
                            {1, 0, -1, "compute", "", Bytes{0}, ms(0), ms(12)}};
  // Rank 0: waits 10-12 on rank 1 in the collective, 11-13 on rank 1 again (a concurrent stream), 14-16 between
  // ops (a phase barrier) on rank 1.
  const std::vector<Wait> waits{{0, 1, ms(10), ms(2)}, {0, 1, ms(11), ms(2)}, {0, 1, ms(14), ms(2)}};
  const auto table = wait_table(ops, waits, 2);
  REQUIRE(table.size() == 2);
  CHECK(table[0].span == ms(16));
  CHECK(table[0].waiting.count() == doctest::Approx(5e-3));
  CHECK(table[0].busy.count() == doctest::Approx(11e-3));          // 16 ms covered, less 5 waiting
  CHECK(table[0].waiting_on(1).count() == doctest::Approx(6e-3));  // the sum: overlaps count twice here
  CHECK(table[0].most_waited_on() == 1);
  CHECK(table[1].span == ms(12));
  CHECK(table[1].busy == ms(12));
  CHECK(table[1].waiting == Seconds{0});
  CHECK(table[1].most_waited_on() == std::nullopt);
}

TEST_CASE("waits: in a BSP step with GPU 3 slowed, the other ranks wait on rank 3 for the compute difference") {
  const auto s = load(
      "topology: {type: hgx, gpu: h200, gpus: 8}\n"
      "models: {slow: [{gpu: 3, compute: 1.05}]}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops: [{repeat: 3, ops: [{compute: {time: 10ms}}, {collective: {op: all_reduce, bytes: 64MiB}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  REQUIRE(r.waits.size() == 8);
  const double difference = 3 * 0.5e-3;  // 3 steps of 10 ms x 5 %
  for (const auto& w : r.waits) {
    CAPTURE(w.rank);
    if (w.rank == 3) {
      CHECK(w.waiting == Seconds{0});
      CHECK(w.most_waited_on() == std::nullopt);
      continue;
    }
    CHECK(relative_error(w.waiting.count(), difference) <= 1e-6);
    CHECK(w.most_waited_on() == 3);
    CHECK(w.waiting_on(3) == w.waiting);
    // Busy: its own compute and the collectives' work after rank 3 arrived.
    double in_ops = 0;
    for (const auto& o : r.ops)
      if (o.rank == w.rank) in_ops += (o.end - o.start).count();
    CHECK(relative_error(w.busy.count(), in_ops - difference) <= 1e-9);
  }
  check_conservation(r);
  // In report.json, as data.
  const auto json = r.to_json();
  REQUIRE(json["waits"].size() == 8);
  CHECK(json["waits"][0]["most_waited_on"] == 3);
  CHECK(json["waits"][3]["most_waited_on"].is_null());
  const RankWaits back = rank_waits_from_json(json["waits"][5]);
  CHECK(back.waiting == r.waits[5].waiting);
  CHECK(back.on == r.waits[5].on);
}

TEST_CASE("waits: a signal_wait waits on the PE whose put made the signal hold") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 0, ops: [{compute: {time: 1ms}}, {put: {to: 3, bytes: 1KiB, signal: 1}}]}\n"
      "      - {ranks: 1, ops: [{compute: {time: 2ms}}, {put: {to: 3, bytes: 1KiB, signal: 1}}]}\n"
      "      - {ranks: 3, ops: [{signal_wait: {signal: 1, value: 2}}]}\n");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const auto& wait = record(r, 3, "signal_wait");
  const auto& w = r.waits[3];
  CHECK(w.waiting == wait.end - wait.start);
  CHECK(w.waiting > ms(2));  // rank 1's compute, then its put's trip
  CHECK(w.waiting_on(1) == w.waiting);
  CHECK(w.waiting_on(0) == Seconds{0});  // its put came first: not what the wait waited for
  CHECK(r.waits[0].waiting == Seconds{0});
  check_conservation(r);
}

TEST_CASE("waits: a get waits on the PE it reads from") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 1, ops: [{get: {from: 0, bytes: 64KiB, scope: block}}]}]\n");
  const Report r = s.run();
  const auto& get = record(r, 1, "get");
  CHECK(r.waits[1].waiting_on(0) == get.end - get.start);
  CHECK(r.waits[1].waiting == get.end - get.start);
  CHECK(r.waits[1].busy == Seconds{0});
}

TEST_CASE("waits: shmem_barrier and the barrier between workloads wait on the last rank to arrive") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 2, ops: [{compute: {time: 10us}}]}\n"
      "      - shmem_barrier: {scope: block}\n"
      "  - type: program\n"
      "    ops: [{ranks: 1, ops: [{compute: {time: 30us}}]}]\n"
      "  - type: program\n"
      "    ops: [{copy: {to: next, bytes: 1MiB}}]\n");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  for (int rank : {0, 1, 3}) {
    CAPTURE(rank);
    CHECK(relative_error(r.waits[static_cast<std::size_t>(rank)].waiting_on(2).count(), 10e-6) <= 1e-9);
  }
  for (int rank : {0, 2, 3}) {  // the free barrier before the copies: everyone waits for rank 1's 30 us
    CAPTURE(rank);
    CHECK(relative_error(r.waits[static_cast<std::size_t>(rank)].waiting_on(1).count(), 30e-6) <= 1e-9);
  }
  CHECK(r.waits[2].most_waited_on() == 1);
  CHECK(r.waits[1].most_waited_on() == 2);
  check_conservation(r);
}

TEST_CASE("waits: busy plus waiting stays within each rank's span with concurrent streams and phases") {
  const auto s = load(
      "topology: {type: hgx, gpu: h200, gpus: 8}\n"
      "models:\n"
      "  slow: [{gpu: 5, compute: 1.2}]\n"
      "  jitter: {latency: {dist: lognormal, sigma: 0.1}, bandwidth: {dist: lognormal, sigma: 0.05}}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - repeat: 3\n"
      "        ops:\n"
      "          - streams:\n"
      "              - [{compute: {flops: 200GFLOP, bytes: 64MiB}}, {collective: {op: all_reduce, bytes: 16MiB}}]\n"
      "              - [{copy: {to: next, bytes: 8MiB, engine: sm}}, {barrier: {}}]\n"
      "  - type: collective_sweep\n"
      "    ops: all_gather\n"
      "    sizes: {from: 1MiB, to: 4MiB}\n");
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  check_conservation(r);
  double waiting = 0;
  for (const auto& w : r.waits) waiting += w.waiting.count();
  CHECK(waiting > 0);
  CHECK(r.waits[0].most_waited_on() == 5);
}
