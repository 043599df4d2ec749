// PGAS ops end to end: each TEST_CASE that runs a simulation is its own process (one simulation per process).
// Expected times come from the model's own formulas (models/pgas.hpp), which calibration uses too, and, where it
// matters, from the formula written out by hand.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <cmath>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::literals;
using models::PgasRoute;
using models::Scope;

using namespace snsim::workloads::testing;

namespace {
// The hgx preset: two hops of 177 ns between GPUs, 18 x 25 GB/s per direction.
constexpr PgasRoute HGX{Seconds{0.354e-6}, Seconds{0.354e-6}, BytesPerSecond{450e9}};
}  // namespace

TEST_CASE("pgas: a lone put followed by quiet takes the model's formula") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 0, ops: [{put: {to: 1, bytes: 64KiB}}, {quiet: {}}]}]\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const double elapsed = (record(r, 0, "quiet").end - record(r, 0, "put").start).count();
  CHECK(relative_error(elapsed, m.put_quiet_time(Scope::thread, 64_KiB, 1, 1, HGX).count()) <= 1e-9);
  // By hand: wire latency, remote write, 64 KiB on the wire at one thread's store rate, the ack back, the quiet.
  const auto& t = m.params(Scope::thread);
  const double wire = std::ceil(65536 / t.efficiency);
  const double by_hand =
      0.354e-6 + m.write_latency.count() + wire / (t.put_bandwidth.count() / t.efficiency) + 0.354e-6 + m.quiet.count();
  CHECK(relative_error(elapsed, by_hand) <= 1e-9);
  // The put itself is non-blocking: the PE only paid the issue.
  CHECK(relative_error((record(r, 0, "put").end - record(r, 0, "put").start).count(), t.issue.count()) <= 1e-9);
}

TEST_CASE("pgas: a lone get takes the model's formula") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 1, ops: [{get: {from: 0, bytes: 64KiB, scope: block}}]}]\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const auto& get = record(r, 1, "get");
  CHECK(relative_error((get.end - get.start).count(), m.get_time(Scope::block, 64_KiB, HGX).count()) <= 1e-9);
  const auto& b = m.params(Scope::block);
  const double by_hand =
      0.708e-6 + m.read_latency.count() + std::ceil(65536 / b.efficiency) / (b.get_bandwidth.count() / b.efficiency);
  CHECK(relative_error((get.end - get.start).count(), by_hand) <= 1e-9);
}

TEST_CASE("pgas: a put's signal is seen only after its data arrived, even when a copy slows the data") {
  // GPU 0 puts 256 MiB with a signal to GPU 2 while GPU 1 copies 256 MiB to GPU 2: both start after 0.354 us and
  // share GPU 2's links half and half (same wire bytes), so the data arrives when the copy ends, at
  // 0.354 us + 2 x 512 MiB / 450 GB/s; the signal follows the ack's trip back, its own trip, and its cost.
  const auto s = load(
      "topology: {type: hgx, gpus: 3}\n"
      "models:\n"
      "  pgas: {write_latency: 0us, signal: 0.5us, block: {issue: 1ns, put_bandwidth: 10TBps, efficiency: 0.5}}\n"
      "  copy: {ce: {efficiency: 1, setup: 0us}, packet_header: 256B}\n"  // 2x payload on the wire, like the put

      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 0, ops: [{put: {to: 2, bytes: 256MiB, scope: block, signal: 7}}]}\n"
      "      - {ranks: 1, ops: [{copy: {to: 2, bytes: 256MiB}}]}\n"
      "      - {ranks: 2, ops: [{signal_wait: {signal: 7, value: 1}}]}\n");
  const Report r = s.run();
  const double arrival = 0.354e-6 + 2 * (512.0 * (1 << 20)) / 450e9;
  const double copy_end = record(r, 1, "copy").end.count();
  const double seen = record(r, 2, "signal_wait").end.count();
  CHECK(relative_error(copy_end, arrival) <= 1e-9);
  CHECK(seen >= copy_end);
  CHECK(relative_error(seen, arrival + 0.354e-6 + 0.354e-6 + 0.5e-6) <= 1e-9);
  // Alone, the data would have arrived in half the time.
  const auto& m = *s.models().pgas;
  CHECK(m.put_signal_time(Scope::block, 256_MiB, HGX).count() < seen - 1e-3);
}

TEST_CASE("pgas: a put_signal ping-pong round trip is twice the one-way time") {
  // The probe's put_signal_pingpong: GPU 0 puts and waits; GPU 1 waits and puts back; 5 round trips.
  const auto s = load(
      "topology: {type: hgx, gpus: 2, nvlink_latency: 177ns}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - repeat: 5\n"
      "        ops:\n"
      "          - ranks: 0\n"
      "            ops: [{put: {to: 1, bytes: 8B, signal: 1}}, {signal_wait: {signal: 1, value: 1, consume: true}}]\n"
      "          - ranks: 1\n"
      "            ops: [{signal_wait: {signal: 1, value: 1, consume: true}}, {put: {to: 0, bytes: 8B, signal: "
      "1}}]\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const PgasRoute route{Seconds{354e-9}, Seconds{354e-9}, BytesPerSecond{450e9}};
  const double one_way = m.put_signal_time(Scope::thread, 8_B, route).count();
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    const double round_trip = (record(r, 0, "put", i + 1).start - record(r, 0, "put", i).start).count();
    CHECK(relative_error(round_trip, 2 * one_way) <= 1e-9);
  }
  // GPU 1 sees each signal one way after GPU 0's put.
  CHECK(relative_error(record(r, 1, "signal_wait").end.count(), one_way) <= 1e-9);
  // With the route of our H200s the defaults give the measured 3.92 us round trip
  // [nvshmem/put_signal_pingpong/round_trip/0-1/8/thread, 3.924 us].
  CHECK(relative_error(2 * one_way, 3.924e-6) <= 0.01);
}

TEST_CASE("pgas: the put rate grows with the number of issuers until the link saturates") {
  // The probe's put_rate_blocks: 64 MiB by 1, 2, 4, ... 128 blocks, then quiet, each in its own phase.
  std::string yaml = "topology: {type: hgx, gpus: 2}\nworkloads:\n";
  const std::vector<int> blocks{1, 2, 4, 8, 16, 32, 64, 128};
  for (int b : blocks)
    yaml += fmt::format(
        "  - {{type: program, ranks: 0, ops: [{{put: {{to: 1, bytes: {}KiB, scope: block, issuers: {}}}}}, {{quiet: "
        "{{}}}}]}}\n",
        65536 / b, b);
  const auto s = load(yaml);
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const auto& block = m.params(Scope::block);
  std::vector<double> rates;
  for (std::size_t phase = 0; phase < blocks.size(); ++phase) {
    const int b = blocks[phase];
    CAPTURE(b);
    const int p = static_cast<int>(phase);
    const double elapsed = (record(r, 0, "quiet", 0, p).end - record(r, 0, "put", 0, p).start).count();
    const Bytes slice{(64ull << 20) / static_cast<unsigned>(b)};
    CHECK(relative_error(elapsed, m.put_quiet_time(Scope::block, slice, b, 1, HGX).count()) <= 1e-9);
    // The rate while the data flows: without the fixed costs (both wire trips, the remote write, the quiet).
    const double fixed = 0.708e-6 + m.write_latency.count() + m.quiet.count();
    rates.push_back(64.0 * (1 << 20) / (elapsed - fixed));
  }
  for (std::size_t i = 1; i < rates.size(); ++i) CHECK(rates[i] >= rates[i - 1]);
  // 1 block: one block's store rate; 2 and 32 blocks: 2 and 32 times that; 64 and 128 blocks: the link's payload
  // rate (32 x 10.55 GB/s = 338 GB/s is below 450 GB/s x 0.82 = 369 GB/s; 64 x 10.55 is above).
  CHECK(relative_error(rates[0], block.put_bandwidth.count()) <= 1e-6);
  CHECK(relative_error(rates[1], 2 * block.put_bandwidth.count()) <= 1e-6);
  CHECK(relative_error(rates[5], 32 * block.put_bandwidth.count()) <= 1e-6);
  CHECK(relative_error(rates[6], 450e9 * block.efficiency) <= 1e-6);
  CHECK(relative_error(rates[7], 450e9 * block.efficiency) <= 1e-6);
}

TEST_CASE("pgas: two PEs putting to each other at once slow each other's issuers, not the line") {
  // The probe's put_rate_bidir: both PEs put 64 MiB with 8 blocks (issuer-bound), then with 128 blocks (line-bound),
  // each in its own phase; then PE 0 alone with 8 blocks.
  std::string yaml = "topology: {type: hgx, gpus: 2}\nworkloads:\n";
  for (int b : {8, 128})
    yaml += fmt::format(
        "  - {{type: program, ranks: all, ops: [{{put: {{to: next, bytes: {}KiB, scope: block, issuers: {}}}}}, "
        "{{quiet: {{}}}}]}}\n",
        65536 / b, b);
  yaml += "  - {type: program, ranks: 0, ops: [{put: {to: 1, bytes: 8MiB, scope: block, issuers: 8}}, {quiet: {}}]}\n";
  const auto s = load(yaml);
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const auto& block = m.params(Scope::block);
  const double fixed = 0.708e-6 + m.write_latency.count() + m.quiet.count();
  auto rate = [&](int rank, int phase) {
    return 64.0 * (1 << 20) /
           ((record(r, rank, "quiet", 0, phase).end - record(r, rank, "put", 0, phase).start).count() - fixed);
  };
  // Issuer-bound: each direction at 8 blocks x put_bandwidth x duplex_put_share, whichever PE's actor ran first.
  for (int pe : {0, 1}) {
    CAPTURE(pe);
    CHECK(relative_error(rate(pe, 0), 8 * block.put_bandwidth.count() * m.duplex_put_share) <= 1e-6);
    // Line-bound: the split-duplex link gives each direction the one-way payload rate.
    CHECK(relative_error(rate(pe, 1), 450e9 * block.efficiency) <= 1e-6);
  }
  // Alone, the same issuers reach their full rate.
  CHECK(relative_error(rate(0, 2), 8 * block.put_bandwidth.count()) <= 1e-6);
  CHECK(m.duplex_put_share < 1);
}

TEST_CASE("pgas: a fence keeps a later put to a PE from becoming visible before earlier ones") {
  // GPU 0 and GPU 2 each put 1 MiB (one thread: slow) and then 8 B with a signal to GPU 1; only GPU 0 fences in
  // between. GPU 2's signal comes as soon as its small put arrives; GPU 0's waits for its large put.
  const auto s = load(
      "topology: {type: hgx, gpus: 3}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - ranks: 0\n"
      "        ops: [{put: {to: 1, bytes: 1MiB}}, {fence: {}}, {put: {to: 1, bytes: 8B, signal: 1}}]\n"
      "      - ranks: 2\n"
      "        ops: [{put: {to: 1, bytes: 1MiB}}, {put: {to: 1, bytes: 8B, signal: 2}}]\n"
      "      - ranks: 1\n"
      "        ops: [{signal_wait: {signal: 2, value: 1}}, {signal_wait: {signal: 1, value: 1}}]\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const double unfenced = record(r, 1, "signal_wait", 0).end.count();
  const double fenced = record(r, 1, "signal_wait", 1).end.count();
  CHECK(relative_error(unfenced, (record(r, 2, "put", 1).start + m.put_signal_time(Scope::thread, 8_B, HGX)).count()) <=
        1e-9);
  const Seconds large = m.put_arrival_time(Scope::thread, 1_MiB, 1, 1, HGX);
  CHECK(relative_error(fenced, (large + HGX.latency_back + HGX.latency + m.signal).count()) <= 1e-9);
  CHECK(fenced > unfenced + 1e-3);
  CHECK(relative_error((record(r, 0, "fence").end - record(r, 0, "fence").start).count(), m.fence.count()) <= 1e-9);
}

TEST_CASE("pgas: a signal_wait nobody satisfies ends the run as a deadlock naming the rank") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 0-2, ops: [{put: {to: 3, bytes: 1KiB, signal: 2}}]}\n"
      "      - {ranks: 3, ops: [{signal_wait: {signal: 2, value: 4}}]}\n");
  const Report r = s.run();
  CHECK(r.outcome ==
        "deadlock: rank 3: op 0, signal_wait 'signal_wait 2 >= 4', waits for signal 2 to be >= 4 (it is 3)");
  CHECK(r.ops.size() == 3);  // the three puts; the wait never ended
}

TEST_CASE("pgas: shmem_barrier waits for the last PE, then ceil(log2 n) rounds") {
  const auto s = load(
      "topology: {type: hgx, gpus: 5}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 3, ops: [{compute: {time: 10us}}]}\n"
      "      - shmem_barrier: {scope: block}\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const double expected = 10e-6 + 3 * (0.354e-6 + m.params(Scope::block).barrier_round.count());
  for (int rank = 0; rank < 5; ++rank) {
    CAPTURE(rank);
    CHECK(relative_error(record(r, rank, "shmem_barrier").end.count(), expected) <= 1e-9);
  }
  CHECK(relative_error(m.barrier_time(Scope::block, 5, Seconds{0.354e-6}).count(), expected - 10e-6) <= 1e-9);
}

TEST_CASE("pgas: SM loads from a peer pay the wire's round trip per dependent load") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ranks: 0\n"
      "    ops:\n"
      "      - load: {from: 1, bytes: 4MiB, count: 1000}\n"
      "      - load: {from: self, bytes: 4MiB, count: 1000}\n"
      "      - load: {from: self, bytes: 1GiB, count: 1000}\n"
      "      - load: {from: 1, bytes: 1GiB, pattern: stream}\n"
      "      - load: {from: self, bytes: 1GiB, pattern: stream, count: 2}\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  auto duration = [&](int i) { return (record(r, 0, "load", i).end - record(r, 0, "load", i).start).count(); };
  CHECK(relative_error(duration(0) - duration(1), 1000 * 0.708e-6) <= 1e-9);
  CHECK(relative_error(duration(1), 1000 * m.load_l2_latency.count()) <= 1e-9);
  CHECK(relative_error(duration(2), 1000 * m.load_hbm_latency.count()) <= 1e-9);
  CHECK(relative_error(duration(3), m.peer_stream_time(1_GiB, 1_GiB, HGX).count()) <= 1e-9);
  CHECK(relative_error(duration(3),
                       m.load_hbm_latency.count() + 0.708e-6 + 1073741824.0 / (450e9 * m.load_efficiency)) <= 1e-6);
  CHECK(relative_error(duration(4), m.local_stream_time(2_GiB, 1_GiB, BytesPerSecond{4.8e12}).count()) <= 1e-9);
}

TEST_CASE("pgas: puts, gets and peer loads put their bytes on the links they cross, once") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - {ranks: 0, ops: [{put: {to: 1, bytes: 1MiB, scope: warp, issuers: 2, count: 3}}, {quiet: {}}]}\n"
      "      - {ranks: 2, ops: [{get: {from: 3, bytes: 2MiB}}]}\n"
      "      - {ranks: 3, ops: [{load: {from: 0, bytes: 4MiB, pattern: stream}}, {load: {from: 1, bytes: 4MiB}}]}\n");
  const Report r = s.run();
  const auto& m = *s.models().pgas;
  const std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> expected{
      // link: payload, wire
      {"gpu0->nvswitch[0-3]",
       {(6ull + 4) << 20, 2 * m.wire_bytes(3_MiB, Scope::warp).count() + m.load_wire_bytes(4_MiB).count()}},
      {"nvswitch[0-3]->gpu1", {6ull << 20, 2 * m.wire_bytes(3_MiB, Scope::warp).count()}},
      {"gpu3->nvswitch[0-3]", {2ull << 20, m.wire_bytes(2_MiB, Scope::thread).count()}},
      {"nvswitch[0-3]->gpu2", {2ull << 20, m.wire_bytes(2_MiB, Scope::thread).count()}},
      {"nvswitch[0-3]->gpu3", {4ull << 20, m.load_wire_bytes(4_MiB).count()}},
  };
  for (const auto& l : r.links) {
    CAPTURE(l.name);
    if (l.name.starts_with("hbm:")) continue;  // every transfer crosses both ends' HBM: variability_test checks it
    const auto it = expected.find(l.name);
    CHECK(l.payload_bytes.count() == (it == expected.end() ? 0 : it->second.first));
    CHECK(l.wire_bytes.count() == (it == expected.end() ? 0 : it->second.second));
  }
  CHECK(record(r, 0, "put").bytes == 6_MiB);
  CHECK(record(r, 2, "get").bytes == 2_MiB);
  CHECK(record(r, 3, "load", 0).bytes == 4_MiB);
  CHECK(record(r, 3, "load", 1).bytes == 0_B);  // a chase is latency-bound: no traffic is modelled
}

TEST_CASE("pgas: op mistakes are pinned errors") {
  auto error = [](const std::string& ops, const std::string& ranks = "all") {
    try {
      load("topology: {type: hgx, gpus: 4}\nworkloads: [{type: program, ranks: " + ranks + ", ops: " + ops + "}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("[{put: {to: next, bytes: 8B, scope: grid}}]") ==
        "t.yaml:2:82: workloads[0].ops[0].put.scope: expected thread, warp or block, found 'grid'");
  CHECK(error("[{put: {to: next, bytes: 8B, signals: 1}}]") ==
        "t.yaml:2:75: workloads[0].ops[0].put.signals: unknown key (did you mean 'signal'?); known keys: bytes, "
        "count, issuers, scope, signal, to");
  CHECK(error("[{put: {to: 9, bytes: 8B}}]") ==
        "t.yaml:2:58: workloads[0].ops[0].put.to: GPU 9 does not exist (the topology has 4 GPUs: 0-3)");
  CHECK(error("[{put: {to: 0, bytes: 8B}}]") ==
        "t.yaml:2:58: workloads[0].ops[0].put.to: GPU 0 would address itself; expected another GPU");
  CHECK(error("[{get: {from: host, bytes: 8B}}]") ==
        "t.yaml:2:60: workloads[0].ops[0].get.from: the host is not a PE; expected a GPU index, next, prev or xor:K");
  CHECK(error("[{put: {to: next, bytes: 8B, issuers: 0}}]") ==
        "t.yaml:2:84: workloads[0].ops[0].put.issuers: must be between 1 and 65536, got 0");
  CHECK(error("[{signal_wait: {signal: 1, value: 1, cmp: gte}}]") ==
        "t.yaml:2:88: workloads[0].ops[0].signal_wait.cmp: expected eq, ne, gt, ge, lt or le, found 'gte'");
  CHECK(error("[{signal_wait: {signal: 1, value: 1, cmp: eq, consume: true}}]") ==
        "t.yaml:2:101: workloads[0].ops[0].signal_wait.consume: needs cmp: ge (it subtracts value once the signal "
        "has reached it)");
  CHECK(error("[{ranks: 3, ops: [{quiet: {}}]}]", "0-1") ==
        "t.yaml:2:55: workloads[0].ops[0].ranks: rank 3 is not one of the program's ranks 0, 1");
  CHECK(error("[{load: {from: self, bytes: 4MiB, pattern: random}}]") ==
        "t.yaml:2:89: workloads[0].ops[0].load.pattern: expected chase or stream, found 'random'");
  CHECK(error("[{quiet: 3}]") == "t.yaml:2:55: workloads[0].ops[0].quiet: expected {} (no parameters)");
}

namespace {
Scenario load_example(const std::string& name) {
  return Scenario::load(ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/" + name));
}

}  // namespace

TEST_CASE("pgas: the one-shot one-sided all-reduce example beats NCCL on small buffers, not on large ones") {
  const Report r = load_example("pgas_vs_nccl_allreduce.yaml").run();
  CHECK(r.outcome == "completed");
  CHECK(span(r, 0) < span(r, 1));  // 256 KiB: one wire latency against 14 ring steps
  CHECK(span(r, 2) > span(r, 3));  // 64 MiB: 7 x S out of every GPU against 1.75 x S
}

TEST_CASE("pgas: in the slow-GPU BSP example every all-reduce waits for GPU 3") {
  const Report r = load_example("bsp_step_slow_gpu.yaml").run();
  REQUIRE(r.outcome == "completed");
  for (int step = 0; step < 10; ++step) {
    CAPTURE(step);
    const double end = record(r, 3, "collective", step).end.count();
    for (int rank = 0; rank < 8; ++rank)
      CHECK(relative_error(record(r, rank, "collective", step).end.count(), end) <= 1e-9);
    // The others reach the all-reduce 0.5 ms earlier and wait there.
    const auto& fast = record(r, 0, "collective", step);
    const auto& slow = record(r, 3, "collective", step);
    CHECK(relative_error(((fast.end - fast.start) - (slow.end - slow.start)).count(), 0.5e-3) <= 1e-6);
  }
}
