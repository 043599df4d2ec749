// The bad-input battery (docs/hardening.md#bad-input): every class of bad or extreme input found so far, each as a
// user would give it to the built `snsim`, with the exit code it must end in and a fragment of its one-line message.
// A crash, an abort, an internal error, a hang (each case runs under `timeout`) or a silent answer fails its row.
// New classes get a row here; a row is never removed.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tools/test_support.hpp"

namespace fs = std::filesystem;
using namespace snsim::testing;

namespace {

/// A small valid scenario with `topology` and `ops` spliced in, so that each row changes one thing.
std::string bad_scenario(std::string topology = "", std::string ops = "", const std::string& name = "bad") {
  if (topology.empty()) topology = "{type: hgx, gpu: h200, gpus: 2}";
  if (ops.empty()) ops = "[{copy: {to: next, bytes: 1MiB}}]";
  return "name: " + name + "\nseed: 7\ntopology: " + topology + "\nworkloads:\n  - type: program\n    ops: " + ops +
         "\n";
}

/// A record nested `depth` arrays deep, after a valid header: the trace reader must refuse it, not recurse into it.
std::string deep_trace(std::size_t depth) {
  const std::string sample = read_file(fs::path(SNSIM_SOURCE_DIR) / "validation/importers/samples/snsim_trace.jsonl");
  const std::string header = sample.substr(0, sample.find('\n') + 1);
  return header + "{\"id\": \"x\", \"family\": " + std::string(depth, '[') + std::string(depth, ']') + "}\n";
}

/// The sample trace with a `platform` object in its header.
std::string platform_trace(const std::string& platform) {
  const std::string sample = read_file(fs::path(SNSIM_SOURCE_DIR) / "validation/importers/samples/snsim_trace.jsonl");
  const std::size_t end = sample.find('\n');
  return sample.substr(0, end - 1) + ", \"platform\": " + platform + "}" + sample.substr(end);
}

/// 22 levels of aliases of aliases: 4 million ops from 26 lines, which must be refused before they are expanded.
std::string alias_bomb() {
  std::string text = "name: bomb\ntopology: {type: hgx, gpus: 2}\nx0: &x0 {compute: {time: 1us}}\n";
  for (int level = 1; level <= 22; ++level)
    text += fmt::format("x{0}: &x{0} {{repeat: 1, ops: [*x{1}, *x{1}]}}\n", level, level - 1);
  return text + "workloads: [{type: program, ops: [*x22]}]\n";
}

struct Row {
  std::string what;                                // the class, as the hardening table names it
  std::vector<std::string> args;                   // snsim's arguments; files are relative to the row's folder
  int code;                                        // the exit code it must end in
  std::string fragment;                            // a part of stderr it must print
  std::function<void(const TempDir&)> setup = {};  // writes the row's files
  bool one_line = true;  // false for the command-line parser's own errors (CLI11 adds "Run with --help ...")
};

std::function<void(const TempDir&)> file(const std::string& name, const std::string& text) {
  return [=](const TempDir& dir) { dir.write(name, text); };
}

const std::string NVB_HEAD = "nvbandwidth Version: v0.8\nCUDA Runtime Version: 12080\nDriver Version: 570.1\n\n";

std::vector<Row> rows() {
  return {
      // ---- crashes --------------------------------------------------------------------------------------------
      {"a scenario name that is not UTF-8, with --out",
       {"run", "s.yaml", "--out", "out"},
       2,
       "s.yaml:1:10: not UTF-8 text: byte 0xE9",
       file("s.yaml", bad_scenario({}, {}, "caf\xE9"))},
      {"a --set value that is not UTF-8",
       {"run", "s.yaml", "--set", "name=caf\xE9", "--out", "out"},
       2,
       "not UTF-8 text: byte 0xE9",
       file("s.yaml", bad_scenario())},
      {"a trace record nested 100,000 deep: traces show",
       {"traces", "show", "t.jsonl"},
       2,
       "t.jsonl:2: nested deeper than 512 levels",
       file("t.jsonl", deep_trace(100'000))},
      {"a trace record nested 100,000 deep: validate",
       {"validate", "t.jsonl"},
       2,
       "t.jsonl:2: nested deeper than 512 levels",
       file("t.jsonl", deep_trace(100'000))},
      {"a JSON importer file nested 100,000 deep",
       {"traces", "show", "n.json"},
       2,
       "nested deeper than 512 levels",
       file("n.json", "{\"nvbandwidth\": " + std::string(100'000, '[') + "}")},
      {"a trace header's platform count beyond an int (99999999999 ranks)",
       {"validate", "t.jsonl"},
       2,
       "t.jsonl:1: platform.ranks: expected a count from 0 to 2147483647, found 99999999999",
       file("t.jsonl", platform_trace("{\"ranks\": 99999999999}"))},
      {"a scenario nested 2,000 deep (past YAML's parser limit)",
       {"run", "s.yaml"},
       2,
       "s.yaml:2:4012: invalid YAML: nested deeper than 500 levels",
       file("s.yaml", "name: x\nworkloads: " + std::string(2'000, '[') + std::string(2'000, ']') + "\n")},
      {"a latency beyond any machine (1e308s)",
       {"run", "s.yaml"},
       2,
       "topology.nvlink_latency: cannot parse '1e308s' as a time: is more than 1e+09 s (31.7 years)",
       file("s.yaml", bad_scenario("{type: hgx, gpus: 2, nvlink_latency: 1e308s}"))},
      {"a latency that overflows in its unit (1e306h)",
       {"run", "s.yaml"},
       2,
       "as a time: is more than 1e+09 s",
       file("s.yaml", bad_scenario("{type: hgx, gpus: 2, nvlink_latency: 1e306h}"))},
      {"a negative latency",
       {"run", "s.yaml"},
       2,
       "topology.nvlink_latency: cannot parse '-1us' as a time: cannot be negative",
       file("s.yaml", bad_scenario("{type: hgx, gpus: 2, nvlink_latency: -1us}"))},
      {"a bandwidth that overflows to infinity (1e308GBps)",
       {"run", "s.yaml"},
       2,
       "cannot parse '1e308GBps' as a bandwidth: is more than 1e+18 B/s",
       file("s.yaml", bad_scenario("{type: hgx, gpus: 2, nvlink_bandwidth: 1e308GBps}"))},
      {"a bandwidth below 1 B/s",
       {"run", "s.yaml"},
       2,
       "as a bandwidth: is less than 1 B/s (and not 0)",
       file("s.yaml", bad_scenario("{type: hgx, gpus: 2, nvlink_bandwidth: 1e-300GBps}"))},
      {"a kernel time beyond any machine",
       {"run", "s.yaml"},
       2,
       "as a time: is more than 1e+09 s",
       file("s.yaml", bad_scenario({}, "[{compute: {time: 1e300s}}]"))},
      {"a SimGrid option whose value SimGrid aborts on",
       {"run", "s.yaml", "--engine=--cfg=contexts/factory:x"},
       2,
       "--engine: contexts/factory: ",
       file("s.yaml", bad_scenario())},
      {"study --trials -1",
       {"study", "slow-node", "s.yaml", "--trials", "-1"},
       2,
       "--trials -1: must be between 1 and 10000, got -1",
       file("s.yaml", bad_scenario())},
      {"study --trials 1e9",
       {"study", "slow-node", "s.yaml", "--trials", "1e9"},
       2,
       "--trials",
       file("s.yaml", bad_scenario()),
       false},
      {"study --trials 1000000000",
       {"study", "slow-node", "s.yaml", "--trials", "1000000000"},
       2,
       "--trials 1000000000: must be between 1 and 10000, got 1000000000",
       file("s.yaml", bad_scenario())},
      {"a slow GPU's factor near a double's limit (models.slow)",
       {"run", "s.yaml"},
       2,
       "s.yaml:8:28: models.slow[0].compute: must be between 0.001 and 1000, got 1e+308",
       file("s.yaml", bad_scenario() + "models:\n  slow: [{gpu: 0, compute: 1e308}]\n")},
      {"study --slow 3:1e308",
       {"study", "slow-node", "s.yaml", "--slow", "1:1e308"},
       2,
       "--slow 1:1e308: the compute-time factor must be between 0.001 and 1000, got 1e+308",
       file("s.yaml", bad_scenario())},
      // ---- hangs and memory -----------------------------------------------------------------------------------
      {"a FIFO with no writer as the scenario",
       {"run", "fifo.yaml"},
       2,
       "fifo.yaml: not a regular file (a FIFO or pipe); expected a regular file",
       [](const TempDir& dir) { REQUIRE(::mkfifo((dir.path() / "fifo.yaml").c_str(), 0600) == 0); }},
      {"a FIFO with no writer as a trace",
       {"traces", "show", "fifo.jsonl"},
       2,
       "fifo.jsonl: not a regular file (a FIFO or pipe); expected a regular file",
       [](const TempDir& dir) { REQUIRE(::mkfifo((dir.path() / "fifo.jsonl").c_str(), 0600) == 0); }},
      {"a directory as the scenario", {"run", "."}, 2, ".: not a regular file (a directory); expected a regular file"},
      {"a device as the scenario", {"run", "/dev/zero"}, 2, "/dev/zero: not a regular file (a device)"},
      {"a device as a trace", {"traces", "show", "/dev/zero"}, 2, "/dev/zero: not a regular file (a device)"},
      {"a device as an importer file",
       {"traces", "import", "/dev/zero", "--out", "t.jsonl"},
       2,
       "/dev/zero: not a regular file (a device)"},
      {"a scenario larger than the input cap",
       {"run", "big.yaml"},
       2,
       "big.yaml: the file is larger than 1 GiB, the most snsim reads from one file",
       [](const TempDir& dir) { fs::resize_file(dir.path() / dir.write("big.yaml", ""), (1ull << 30) + 1); }},
      {"a 26-line YAML alias bomb in ops",
       {"run", "bomb.yaml"},
       2,
       "nodes once the aliases in here are expanded",
       file("bomb.yaml", alias_bomb())},
      {"a superpod of 1,024 NVL72 nodes",
       {"run", "s.yaml"},
       2,
       "topology.nodes: 1024 nvl72 nodes are 73728 GPUs, more than the ",
       file("s.yaml", bad_scenario("{type: superpod, node: nvl72, nodes: 1024}", "[{compute: {time: 1us}}]"))},
      {"a 1 TiB managed buffer touched in 4 KiB pages, above the memory limit",
       {"run", "s.yaml", "--max-memory", "4GiB"},
       2,
       "268,435,456 managed pages",
       file("s.yaml", bad_scenario("{type: hgx, gpu: h200, gpus: 8}",
                                   "[{managed: {name: b, bytes: 1TiB}}, {touch: {buffer: b}}]"))},
      {"100,000 puts in flight on each of 8 GPUs (a helper actor each)",
       {"run", "s.yaml", "--max-memory", "8GiB"},
       2,
       "800,000 helper actors at once",
       file("s.yaml", bad_scenario("{type: hgx, gpu: h200, gpus: 8}",
                                   "[{repeat: 100000, ops: [{put: {to: next, bytes: "
                                   "8B}}]}]"))},
      // ---- silent wrong answers -------------------------------------------------------------------------------
      {"an NVL72 of H200s",
       {"run", "s.yaml"},
       2,
       "topology.gpu: an nvl72 is built of gb200 or b200 GPUs, not h200",
       file("s.yaml", bad_scenario("{type: nvl72, gpu: h200, gpus: 4}"))},
      {"an HGX of GB200s",
       {"run", "s.yaml"},
       2,
       "topology.gpu: an HGX baseboard is built of h100 or h200 GPUs, not gb200",
       file("s.yaml", bad_scenario("{type: hgx, gpu: gb200, gpus: 4}"))},
      {"a superpod of HGX nodes with GB200s",
       {"run", "s.yaml"},
       2,
       "topology.gpu: a superpod of hgx nodes is built of h100 or h200 GPUs, not gb200",
       file("s.yaml", bad_scenario("{type: superpod, node: hgx, gpu: gb200, nodes: 2}"))},
      {"an unknown key inside barrier: {}",
       {"run", "s.yaml"},
       2,
       "workloads[0].ops[0].barrier.ranks: unknown key; 'workloads[0].ops[0].barrier' takes no keys",
       file("s.yaml", bad_scenario({}, "[{barrier: {ranks: 1}}]"))},
      {"an unknown key inside quiet: {}",
       {"run", "s.yaml"},
       2,
       "quiet.pe: unknown key; ",
       file("s.yaml", bad_scenario({}, "[{quiet: {pe: 1}}]"))},
      {"an unknown sweep goal metric",
       {"sweep", "plan.yaml", "--dry-run"},
       2,
       "goal.metric: unknown metric 'throughput'; known: gpus, makespan_s, step_time_s, samples_per_s, mfu_pct, "
       "peak_hbm_gib, fits, wall_s",
       [](const TempDir& dir) {
         dir.write("s.yaml", bad_scenario());
         dir.write("plan.yaml",
                   "name: p\nbase: s.yaml\naxes:\n  - {name: gpus, key: topology.gpus, values: [2]}\n"
                   "goal: {metric: throughput, at_least: 1}\n");
       }},
      {"an nvbandwidth device index beyond int",
       {"traces", "import", "n.txt", "--out", "t.jsonl"},
       2,
       "device: must be at most 2147483647, found 99999999999",
       file("n.txt", NVB_HEAD + "Process 0 (node0): device 99999999999: NVIDIA H200 (00000000:18:00)\n")},
      {"a p2pBandwidthLatencyTest peer index beyond int",
       {"traces", "import", "p.txt", "--out", "t.jsonl"},
       2,
       "device: must be at most 2147483647, found 99999999999",
       file("p.txt",
            "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nDevice: 0, NVIDIA H200, pciBusID: 18, "
            "pciDeviceID: 0, pciDomainID:0\nDevice=99999999999 CAN Access Peer Device=1\n")},
      // ---- the earlier hardening (issue 9) ---------------------------------------------------------------------
      {"malformed YAML",
       {"run", "s.yaml"},
       2,
       "s.yaml:3:10: invalid YAML: end of map flow not found",
       file("s.yaml", "name: x\ntopology: {type: hgx, gpus: 8\nworkloads: []\n")},
      {"YAML nested 100,000 deep",
       {"run", "s.yaml"},
       2,
       "s.yaml:",
       file("s.yaml", "name: " + std::string(100'000, '[') + "\n")},
      {"an unknown key",
       {"run", "s.yaml"},
       2,
       "topology.gpu_count: unknown key",
       file("s.yaml", bad_scenario("{type: hgx, gpu_count: 8}"))},
      {"a size beyond 16 EiB",
       {"run", "s.yaml"},
       2,
       "cannot parse '1e30B' as a size: more than 16 EiB",
       file("s.yaml", bad_scenario({}, "[{copy: {to: next, bytes: 1e30B}}]"))},
      {"a repeat count that is not an integer",
       {"run", "s.yaml"},
       2,
       "repeat: expected an integer, found '1e30'",
       file("s.yaml", bad_scenario({}, "[{repeat: 1e30, ops: [{compute: {time: 1us}}]}]"))},
      {"nested repeats beyond 2^64 ops",
       {"run", "s.yaml"},
       2,
       "would run more than 2^64 ops",
       file("s.yaml", bad_scenario({},
                                   "[{repeat: 1000000, ops: [{repeat: 1000000, ops: [{repeat: 1000000, ops: "
                                   "[{repeat: 1000000, ops: [{compute: {time: 1us}}]}]}]}]}]"))},
      {"a scenario above the memory limit",
       {"run", "s.yaml", "--max-memory", "1MiB"},
       2,
       "memory: the run needs about",
       file("s.yaml", bad_scenario())},
      {"a deadlock",
       {"run", "s.yaml"},
       2,
       "deadlock: rank 0: op 0, signal_wait",
       file("s.yaml", bad_scenario({}, "[{signal_wait: {signal: 1, value: 1}}]"))},
      {"a trace number beyond a double",
       {"traces", "show", "t.jsonl"},
       2,
       "malformed JSON",
       file("t.jsonl", deep_trace(1).substr(0, deep_trace(1).find('\n') + 1) +
                           "{\"id\": \"x\", \"family\": \"copy\", \"median\": 1e999}\n")},
      {"text that is not UTF-8 in an importer file",
       {"traces", "import", "n.txt", "--out", "t.jsonl"},
       2,
       "not UTF-8 text: byte 0xE9",
       file("n.txt", NVB_HEAD + "caf\xE9\n")},
      {"an option snsim does not know", {"run", "--bogus"}, 2, "--bogus", {}, false},
      // ---- exit codes -----------------------------------------------------------------------------------------
      {"a lost GPU: a simulated failure of the system, exit 4",
       {"run", "s.yaml", "--quiet"},
       4,
       "",
       file("s.yaml", bad_scenario({}, "[{copy: {to: next, bytes: 1GiB}}]") + "failures: [{at: 1us, gpu_lost: 1}]\n")},
  };
}

}  // namespace

TEST_CASE("bad input: every class ends in its exit code and its one line, never a crash, a hang or a silent answer") {
  for (const Row& row : rows()) {
    SUBCASE(row.what.c_str()) {
      TempDir dir;
      if (row.setup) row.setup(dir);
      // A hang is a failure too: each row gets 20 s (timeout exits 124, which no row expects).
      std::vector<std::string> args{"20", SNSIM_BINARY};
      args.insert(args.end(), row.args.begin(), row.args.end());
      const Result r = run_program(dir, "timeout", args);
      CAPTURE(r.err);
      CHECK(r.code == row.code);
      CHECK(r.err.find(row.fragment) != std::string::npos);
      CHECK(r.err.find("internal error") == std::string::npos);
      if (row.code == 2 && row.one_line) CHECK(std::ranges::count(r.err, '\n') == 1);
    }
  }
}
