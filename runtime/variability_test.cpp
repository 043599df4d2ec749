// Jitter, per-GPU variation, slow GPUs and GPU resource sharing, end to end. One simulation per process: a test that
// compares runs runs each in a child process (fork), the way `snsim sweep` will.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <set>
#include <string>

#include "runtime/runner.hpp"
#include "scenario/scenario.hpp"
#include "sim/random.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

namespace {
double duration(const OpRecord& o) {
  return (o.end - o.start).count();
}
const OpRecord& op_of(const Report& r, int rank, int index = 0) {
  int seen = 0;
  for (const auto& o : r.ops)
    if (o.rank == rank && seen++ == index) return o;
  throw std::logic_error("no such op");
}

/// Every op record, with times in hexadecimal floating point: equal text means bit-identical times.
std::string records_text(const Report& r) {
  std::string out;
  for (const auto& o : r.ops) out += fmt::format("{} {} {:a} {:a}\n", o.rank, o.label, o.start.count(), o.end.count());
  return out;
}

/// Runs the scenario in a child process and returns records_text() of its report.
std::string run_in_child(const std::string& yaml) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    const std::string text = records_text(load(yaml).run());
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) _exit(1);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return text;
}

const std::string JITTERY =
    "topology: {type: hgx, gpus: 4}\n"
    "models:\n"
    "  jitter:\n"
    "    latency:   {dist: empirical, samples: [0.97, 1.0, 1.12]}\n"
    "    bandwidth: {dist: lognormal, sigma: 0.05}\n"
    "    compute:   {dist: normal, sigma: 0.02}\n"
    "  variation:\n"
    "    clock: {dist: normal, sigma: 0.005}\n"
    "    hbm:   {dist: normal, sigma: 0.02}\n"
    "  slow: [{gpu: 3, compute: 1.05, hbm: 1.02}]\n"
    "workloads: [{type: program, ops: [{repeat: 3, ops: [\n"
    "  {compute: {flops: 100TFLOP, bytes: 1GiB}}, {copy: {to: next, bytes: 64MiB, engine: sm}},\n"
    "  {copy: {to: prev, bytes: 16MiB}}, {collective: {op: all_reduce, bytes: 32MiB}}]}]}]\n";
}  // namespace

TEST_CASE("variability: the same seed gives bit-identical op records, another seed different ones") {
  const std::string a = run_in_child("seed: 7\n" + JITTERY);
  const std::string b = run_in_child("seed: 7\n" + JITTERY);
  const std::string c = run_in_child("seed: 8\n" + JITTERY);
  const std::string nominal =
      run_in_child("seed: 7\ntopology: {type: hgx, gpus: 4}\n" + JITTERY.substr(JITTERY.find("workloads:")));
  CHECK(a.size() > 100);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != nominal);
}

TEST_CASE("variability: with every distribution `none` a lone copy still takes latency + size / bandwidth exactly") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models:\n"
      "  copy: {ce: {efficiency: 0.5, setup: 2us}}\n"
      "  jitter: {latency: {dist: none}, bandwidth: {dist: none}, compute: {dist: none}}\n"
      "  variation: {clock: {dist: none}, hbm: {dist: none}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  CHECK(relative_error(duration(r.ops[0]), 2e-6 + 0.354e-6 + 1073741824.0 / (450e9 * 0.5)) <= 1e-12);
}

TEST_CASE("variability: a constant bandwidth factor 0.5 doubles a lone copy's data time, not its latency") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models:\n"
      "  copy: {ce: {efficiency: 0.5, setup: 2us}}\n"
      "  jitter: {bandwidth: {dist: constant, value: 0.5}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{copy: {to: 1, bytes: 1GiB, engine: ce}}]}]\n");
  const Report r = s.run();
  REQUIRE(r.ops.size() == 1);
  CHECK(relative_error(duration(r.ops[0]), 2e-6 + 0.354e-6 + 2 * 1073741824.0 / (450e9 * 0.5)) <= 1e-12);
}

TEST_CASE("variability: a latency factor stretches every fixed cost of a ring all-reduce") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models:\n"
      "  collective: {Simple: {base_latency: 5us, step_latency: 1us}, stream_launch: 0us}\n"
      "  copy: {sm: {efficiency: 0.5}}\n"
      "  jitter: {latency: {dist: constant, value: 3}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n");
  const Report r = s.run();
  const double n = 4, S = 256.0 * (1 << 20), B = 450e9 * 0.5, alpha = 1e-6 + 0.354e-6;
  CHECK(relative_error(duration(op_of(r, 0)), 3 * 5e-6 + 2 * (n - 1) * (3 * alpha + S / (n * B))) <= 1e-9);
}

TEST_CASE("variability: bandwidth jitter conserves bytes: links count what the programs moved") {
  const auto s = load(
      "seed: 3\n"
      "topology: {type: hgx, gpus: 8}\n"
      "models: {jitter: {bandwidth: {dist: lognormal, sigma: 0.3}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: 64MiB}},\n"
      "                                  {copy: {to: next, bytes: 8MiB}}]}]\n");
  const Report r = s.run();
  const std::uint64_t per_peer = (64ull << 20) / 8, copied = 8ull << 20;
  // What the Simple protocol's SM copies and the CE copies put on the wire for those payloads (no jitter in it).
  const auto& copy = *s.models().copy;
  const auto wire_a2a = static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(per_peer) / (copy.efficiency(models::CopyEngine::sm) *
                                                 s.models().collective->params(models::Protocol::simple).efficiency)));
  const std::uint64_t wire_copy = copy.wire_bytes(Bytes{copied}, models::CopyEngine::ce).count();
  int into_gpus = 0;
  for (const auto& l : r.links)
    if (l.name.starts_with("nvswitch")) {
      CHECK(l.payload_bytes.count() == 7 * per_peer + copied);
      CHECK(l.wire_bytes.count() == 7 * wire_a2a + wire_copy);
      ++into_gpus;
    }
  CHECK(into_gpus == 8);
}

TEST_CASE("variability: a slow GPU's kernels take 1.05x on the FLOP side and 1.02x on the HBM side") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {slow: [{gpu: 1, compute: 1.05, hbm: 1.02}]}\n"
      "workloads: [{type: program, ops: [{compute: {flops: 500TFLOP, bytes: 1MiB}},\n"
      "                                  {compute: {flops: 1TFLOP, bytes: 16GiB}}, {compute: {time: 1ms}}]}]\n");
  const Report r = s.run();
  const auto& m = *s.models().compute;
  const auto& gpu = *s.fabric().device(s.fabric().gpus()[0]).gpu;
  const double launch = m.launch.count();
  const double math = m.math_time(gpu, Flops{500e12}).count(), memory = m.memory_time(gpu, Bytes{16ull << 30}).count();
  CHECK(relative_error(duration(op_of(r, 0, 0)), launch + math) <= 1e-12);
  CHECK(relative_error(duration(op_of(r, 1, 0)), launch + 1.05 * math) <= 1e-12);
  CHECK(relative_error(duration(op_of(r, 0, 1)), launch + memory) <= 1e-9);
  CHECK(relative_error(duration(op_of(r, 1, 1)), launch + 1.02 * memory) <= 1e-9);
  CHECK(relative_error(duration(op_of(r, 0, 2)), 1e-3) <= 1e-12);
  CHECK(relative_error(duration(op_of(r, 1, 2)), 1.05e-3) <= 1e-12);  // a fixed time is SM time
}

TEST_CASE("variability: clock variation is drawn once per GPU from its own stream") {
  const std::string yaml =
      "seed: 11\n"
      "topology: {type: hgx, gpus: 4}\n"
      "models: {compute: {power_duty: 1}, variation: {clock: {dist: normal, sigma: 0.05}}}\n"  // no power cap
      "workloads: [{type: program, ops: [{repeat: 2, ops: [{compute: {flops: 100TFLOP, bytes: 1KiB}}]}]}]\n";
  const auto s = load(yaml);
  const Report r = s.run();
  const auto& m = *s.models().compute;
  const auto& gpu = *s.fabric().device(s.fabric().gpus()[0]).gpu;
  std::set<double> distinct;
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    // The factor GPU `rank` draws: the first normal of its stream "variation.clock.gpu<rank>".
    RandomStream rng(11, fmt::format("variation.clock.gpu{}", rank));
    const double factor = 1 + 0.05 * rng.normal();
    const double expected = m.launch.count() + m.math_time(gpu, Flops{100e12}, factor).count();
    CHECK(relative_error(duration(op_of(r, rank, 0)), expected) <= 1e-12);
    CHECK(relative_error(duration(op_of(r, rank, 1)), expected) <= 1e-12);  // drawn once per run, not per kernel
    distinct.insert(duration(op_of(r, rank, 0)));
  }
  CHECK(distinct.size() == 4);
}

TEST_CASE("variability: a slow entry naming a GPU the topology lacks is an input error") {
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx, gpus: 8}\n"
                            "models: {slow: [{gpu: 3}, {gpu: 9, compute: 1.05}]}\n"
                            "workloads: [{type: program, ops: [{barrier: {}}]}]\n"),
                       "t.yaml:2:33: models.slow[1].gpu: GPU 9 does not exist (the topology has 8 GPUs: 0-7)",
                       InputError);
}

TEST_CASE("variability: an HBM-bound kernel slows while a peer copy writes into its GPU's HBM") {
  // Rank 0 copies into GPU 1 while GPUs 1 and 2 run the same HBM-bound kernel: GPU 1's HBM link carries the copy's
  // wire rate (the copy engine's cap, ~397 GB/s) too, so its kernel gets the rest of 4.8 TB/s (max-min) where GPU
  // 2's gets all 4.8. Programs are built by
  // hand: a scenario's workloads run one after another.
  const auto s = load("topology: {type: hgx, gpus: 3}\nworkloads: [{type: program, ops: [{barrier: {}}]}]\n");
  std::vector<Program> programs(3);
  programs[0].ops.push_back(Op{CopyOp{1, Bytes{2ull << 30}, models::CopyEngine::ce}});
  for (int rank : {1, 2})
    programs[static_cast<std::size_t>(rank)].ops.push_back(Op{ComputeOp{Flops{1e12}, Bytes{8ull << 30}, {}}});
  Simulation simulation(s.fabric());
  Runner runner(simulation, s.models(), programs);
  runner.launch();
  simulation.run();
  const auto records = runner.take_records();
  REQUIRE(records.size() == 3);
  const auto& m = *s.models().compute;
  const auto& gpu = *s.fabric().device(s.fabric().gpus()[1]).gpu;
  const double memory = m.memory_time(gpu, Bytes{8ull << 30}).count();  // alone, at 4.8 TB/s x 0.9
  const auto& copy = *s.models().copy;
  const double hbm = gpu.hbm_bandwidth.count();
  const double nvlink = copy.wire_rate_cap(BytesPerSecond{450e9}, models::CopyEngine::ce).count();
  const double copy_end =
      copy.ce.setup.count() + 0.354e-6 +
      static_cast<double>(copy.wire_bytes(Bytes{2ull << 30}, models::CopyEngine::ce).count()) / nvlink;
  CHECK(relative_error(duration(records[0]), copy_end) <= 1e-9);  // the copy is NVLink-bound: HBM costs it nothing
  CHECK(relative_error(duration(records[1]), m.launch.count() + memory * hbm / (hbm - nvlink)) <= 1e-6);
  CHECK(relative_error(duration(records[2]), m.launch.count() + memory) <= 1e-9);
  CHECK(duration(records[1]) > duration(records[2]) * 1.09);
}
