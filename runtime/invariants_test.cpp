// The invariants every run checks about itself (sim/invariants.hpp, Runner::check), on every kind of workload:
// bytes conserved, links within their capacity, time going forward, every op that started ended; and what a
// deadlock leaves behind (the ops that never ended and what they wait for). One simulation per TEST_CASE.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <filesystem>

#include "runtime/runner.hpp"
#include "sim/invariants.hpp"
#include "topologies/register.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {
/// Checks what a completed run must satisfy, and that the checks looked at something.
void check_held(const Report& r, bool saturates = true) {
  const Invariants& inv = r.invariants;
  CAPTURE(inv.to_json().dump());
  CHECK(r.outcome == "completed");
  CHECK(inv.violations.empty());
  CHECK(inv.transfers_finished > 0);
  CHECK(inv.transfers_failed == 0);
  CHECK(inv.bytes_sent > 0);
  CHECK(inv.bytes_received == doctest::Approx(inv.bytes_sent).epsilon(1e-12));
  CHECK(inv.link_samples > 0);
  CHECK(inv.max_link_load <= 1 + InvariantMonitor::LOAD_TOLERANCE);
  if (saturates) CHECK(inv.max_link_load > 0.5);  // something ran near a link's capacity: the samples saw it
  CHECK(inv.ops_started > 0);
  CHECK(inv.ops_ended == inv.ops_started);
  CHECK(inv.unended.empty());
  CHECK(inv.to_json()["held"] == true);
}

Scenario example_scenario(const std::string& file) {
  const auto path = std::filesystem::path(SNSIM_SOURCE_DIR) / "workloads" / file;
  return Scenario::load(ConfigDocument::load_file(path.string()));
}
}  // namespace

TEST_CASE("invariants: copies, concurrent and capped by their engines, with rate jitter") {
  const auto s = load(
      "seed: 3\n"
      "topology: {type: hgx, gpus: 4}\n"
      "models: {jitter: {bandwidth: {dist: lognormal, sigma: 0.1}}}\n"
      "workloads:\n"
      "  - type: program\n"
      "    ops:\n"
      "      - repeat: 5\n"
      "        ops: [{copy: {to: next, bytes: 64MiB}}, {copy: {to: prev, bytes: 16MiB, engine: sm}},\n"
      "              {streams: [[{copy: {to: xor:2, bytes: 8MiB}}], [{copy: {to: host, bytes: 8MiB}}]]}]\n");
  check_held(s.run());
}

TEST_CASE("invariants: collectives of every pattern") {
  const auto s = load(
      "topology: {type: hgx, gpus: 8}\n"
      "workloads:\n"
      "  - {type: collective_sweep, ops: [all_reduce, all_gather, all_to_all, broadcast], sizes: {from: 1KiB, to: "
      "64MiB, factor: 16}}\n");
  check_held(s.run());
}

TEST_CASE("invariants: PGAS puts, signals, gets and barriers") {
  check_held(example_scenario("examples/pgas_vs_nccl_allreduce.yaml").run());
}

TEST_CASE("invariants: unified memory faults, migrations and prefetches") {
  check_held(example_scenario("examples/uvm_first_touch.yaml").run());
}

TEST_CASE("invariants: a BSP training step") {
  check_held(example_scenario("examples/training_dense_hgx.yaml").run());
}

TEST_CASE("invariants: a lost GPU leaves its ops unended, and the report says why") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ops: [{copy: {to: next, bytes: 1GiB}}]}]\n"
      "failures: [{at: 100us, gpu_lost: 1}]\n");
  const Report r = s.run();
  CHECK(r.outcome == "failed: GPU 1 lost at 100 us");
  CHECK(r.invariants.violations.empty());
  CHECK(r.invariants.ops_started == 2);
  CHECK(r.invariants.ops_ended == 0);
  REQUIRE(r.invariants.unended.size() == 2);
  CHECK(r.invariants.unended[0].describe() == "rank 0: op 0, copy 'copy 1 GiB to gpu1 ce', did not end");
}

TEST_CASE("invariants: an event_wait never recorded is named with its count") {
  // Events come only from generators (training steps): a program built here, run by the Runner directly.
  const auto s = load("topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: [{compute: {time: 1us}}]}]\n");
  std::vector<Program> programs(2);
  programs[0].ops = {Op{EventRecordOp{5}}, Op{EventWaitOp{5, 2}}};
  programs[1].ops = {Op{ComputeOp{Flops{0}, Bytes{0}, Seconds{1e-6}}}};
  Simulation simulation(s.fabric());
  InvariantMonitor monitor;
  Runner runner(simulation, s.models(), programs);
  runner.launch();
  simulation.run();
  CHECK(runner.unfinished() == std::vector<int>{0});
  Invariants inv = monitor.finish(false);
  runner.check(inv);
  CHECK(inv.violations.empty());
  CHECK(inv.ops_started == 3);
  CHECK(inv.ops_ended == 2);
  REQUIRE(inv.unended.size() == 1);
  CHECK(inv.unended[0].describe() ==
        "rank 0: op 1, event_wait 'event_wait 5 x2', waits for event 5 to be recorded 2 times (recorded 1)");
}
