// End-to-end tests of the `snsim` command line (docs/design.md#command-line-contract): exit codes, the one-line
// "file:line:col: key: message" input errors (every user-visible message is pinned here, byte for byte), the
// --out files, determinism, and that every example scenario runs.
//
// Each test runs the built binary (SNSIM_BINARY) in a fresh temporary directory, so scenario files can be named
// relative to it and the messages do not depend on where the temporary directory is.
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/files.hpp"
#include "tools/test_support.hpp"

namespace fs = std::filesystem;
using namespace snsim::testing;

namespace {

/// Runs `snsim run s.yaml` on a scenario text (plus extra arguments).
Result run_scenario(const TempDir& dir, const std::string& yaml, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"run", dir.write("s.yaml", yaml)};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_snsim(dir, args);
}

/// A small, valid scenario; `topology` and `ops` are spliced in so each error test changes one thing.
const std::string HGX8 = "{type: hgx, gpu: h200, gpus: 8}";

std::string cli_scenario(const std::string& topology = HGX8,
                         const std::string& ops = "[{copy: {to: next, bytes: 1MiB}}]") {
  return "name: cli\nseed: 7\ntopology: " + topology + "\nworkloads:\n  - type: program\n    ops: " + ops + "\n";
}

}  // namespace

// ---- bad input: exit code 2 and one line naming file:line:col and key ------------------------------------------

TEST_CASE("cli: malformed YAML") {
  TempDir dir;
  check_input_error(run_scenario(dir, "name: cli\ntopology: {type: hgx, gpus: 8\nworkloads: []\n"),
                    "s.yaml:3:10: invalid YAML: end of map flow not found");
}

TEST_CASE("cli: an unknown key, with a suggestion") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, gpus: 8, nvlink_bandwith: 25GBps}")),
                    "s.yaml:3:32: topology.nvlink_bandwith: unknown key (did you mean 'nvlink_bandwidth'?); known "
                    "keys: gpu, gpus, nvlink_bandwidth, nvlink_latency, nvme_bandwidth, nvme_drives, nvme_latency, "
                    "pcie_bandwidth, pcie_latency, type");
}

TEST_CASE("cli: an unknown top-level key") {
  TempDir dir;
  check_input_error(
      run_scenario(dir, cli_scenario() + "sead: 3\n"),
      "s.yaml:7:1: sead: unknown key (did you mean 'seed'?); known keys: failures, fold, models, name, output, seed, "
      "topology, workloads");
}

TEST_CASE("cli: a missing unit") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{copy: {to: next, bytes: 12}}]")),
                    "s.yaml:6:36: workloads[0].ops[0].copy.bytes: cannot parse '12' as a size: missing unit (try "
                    "'12B' or '12MiB')");
}

TEST_CASE("cli: a wrong unit") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{copy: {to: next, bytes: 12ms}}]")),
                    "s.yaml:6:36: workloads[0].ops[0].copy.bytes: cannot parse '12ms' as a size: unknown unit 'ms' "
                    "(expected B, KiB, MiB, GiB, TiB, PiB, EiB, kB, MB, GB, TB or bits: b, Gb)");
}

TEST_CASE("cli: a size where a bandwidth belongs") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, nvlink_bandwidth: 25GiB}")),
                    "s.yaml:3:41: topology.nvlink_bandwidth: cannot parse '25GiB' as a bandwidth: unknown unit 'GiB' "
                    "(expected bytes per second like GBps, GB/s, GiBps, or bits per second like Gbps)");
}

TEST_CASE("cli: zero bandwidth") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, nvlink_bandwidth: 0GBps}")),
                    "s.yaml:3:41: topology.nvlink_bandwidth: must be > 0, got 0 B/s");
}

TEST_CASE("cli: negative bandwidth") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, nvlink_bandwidth: -5GBps}")),
                    "s.yaml:3:41: topology.nvlink_bandwidth: cannot parse '-5GBps' as a bandwidth: cannot be negative");
}

TEST_CASE("cli: more GPUs than the topology allows") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, gpus: 9}")),
                    "s.yaml:3:29: topology.gpus: must be between 2 and 8, got 9");
}

TEST_CASE("cli: a copy to a GPU that does not exist") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, gpus: 4}", "[{copy: {to: 4, bytes: 1MiB}}]")),
                    "s.yaml:6:23: workloads[0].ops[0].copy.to: GPU 4 does not exist (the topology has 4 GPUs: 0-3)");
}

TEST_CASE("cli: a 1 EiB message") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{collective: {op: all_reduce, bytes: 1EiB}}]")),
                    "s.yaml:6:48: workloads[0].ops[0].collective.bytes: 1 EiB does not fit in one GPU's memory "
                    "(140.401 GiB)");
}

TEST_CASE("cli: an empty program") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[]")), "s.yaml:6:10: workloads[0].ops: the program is empty");
}

TEST_CASE("cli: no workload") {
  TempDir dir;
  check_input_error(run_scenario(dir, "topology: {type: hgx}\nworkloads: []\n"),
                    "s.yaml:2:12: workloads: no workload to run");
}

TEST_CASE("cli: an unknown topology type") {
  TempDir dir;
  check_input_error(
      run_scenario(dir, cli_scenario("{type: torus, gpus: 8}")),
      "s.yaml:3:18: topology.type: unknown topology 'torus'; known: file, hgx, nvidia_smi, nvl36x2, nvl576, nvl72, "
      "pcie, superpod");
}

TEST_CASE("cli: an unknown workload type") {
  TempDir dir;
  check_input_error(run_scenario(dir, "topology: {type: hgx}\nworkloads:\n  - type: inference\n"),
                    "s.yaml:3:11: workloads[0].type: unknown workload 'inference'; known: collective_sweep, "
                    "p2p_sweep, program, trace, training");
}

TEST_CASE("cli: an unknown collective") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{collective: {op: all_reduse, bytes: 1MiB}}]")),
                    "s.yaml:6:29: workloads[0].ops[0].collective.op: unknown collective 'all_reduse'; known: "
                    "all_gather, all_reduce, all_to_all, broadcast, reduce_scatter");
}

TEST_CASE("cli: an unknown collective in a sweep") {
  TempDir dir;
  check_input_error(
      run_scenario(dir, "topology: {type: hgx}\nworkloads:\n  - {type: collective_sweep, ops: [all_reduce, gather]}\n"),
      "s.yaml:3:48: workloads[0].ops[1]: unknown collective 'gather'; known: all_gather, all_reduce, all_to_all, "
      "broadcast, reduce_scatter");
}

TEST_CASE("cli: a missing scenario file") {
  TempDir dir;
  check_input_error(run_snsim(dir, {"run", "no-such-file.yaml"}), "no-such-file.yaml: cannot open the file");
}

TEST_CASE("cli: a --set without '='") {
  TempDir dir;
  check_input_error(run_snsim(dir, {"run", "--set", "topology.gpus"}),
                    "--set: expected key.path=value, found 'topology.gpus'");
}

TEST_CASE("cli: a --set value out of range names the --set option") {
  TempDir dir;
  check_input_error(run_snsim(dir, {"run", "--set", "topology.gpus=9"}),
                    "--set topology.gpus=9: topology.gpus: must be between 2 and 8, got 9");
}

TEST_CASE("cli: a --set on a scenario file names the --set option, not the file") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(), {"--set", "topology.nvlink_bandwidth=0GBps"}),
                    "--set topology.nvlink_bandwidth=0GBps: topology.nvlink_bandwidth: must be > 0, got 0 B/s");
}

TEST_CASE("cli: an unknown command-line option") {
  TempDir dir;
  const Result r = run_snsim(dir, {"run", "--bogus"});
  CHECK(r.code == 2);
  CHECK(r.err == "The following argument was not expected: --bogus\nRun with --help for more information.\n");
  CHECK(r.out.empty());
}

TEST_CASE("cli: --seed that is not a number") {
  TempDir dir;
  const Result r = run_snsim(dir, {"run", "--seed", "abc"});
  CHECK(r.code == 2);
  CHECK(r.err == "--seed abc: seed: expected a non-negative integer, found 'abc'\n");
  CHECK(r.out.empty());
  const Result negative = run_snsim(dir, {"run", "--seed", "-1"});
  CHECK(negative.code == 2);
  CHECK(negative.err == "--seed -1: seed: expected a non-negative integer, found '-1'\n");
  const Result huge = run_snsim(dir, {"run", "--seed", "99999999999999999999999"});
  CHECK(huge.code == 2);
  CHECK(huge.err == "--seed 99999999999999999999999: seed: 99999999999999999999999 is out of range\n");
}

TEST_CASE("cli: a collective on ranks without rank 0 and a broadcast root outside the group") {
  TempDir dir;
  const std::string yaml =
      "topology: {type: hgx, gpus: 4}\nworkloads:\n  - type: program\n    ranks: [1, 2]\n    ops: [{collective: "
      "{op: all_reduce, bytes: 1MiB}}]\n";
  CHECK(run_scenario(dir, yaml, {"--quiet"}).code == 0);
  const std::string bad =
      "topology: {type: hgx, gpus: 4}\nworkloads:\n  - type: program\n    ranks: [1, 2]\n    ops: [{collective: "
      "{op: broadcast, bytes: 1MiB, root: 0}}]\n";
  check_input_error(run_scenario(dir, bad),
                    "s.yaml:5:59: workloads[0].ops[0].collective.root: rank 0 is not one of the ranks 1, 2");
}

TEST_CASE("cli: absurd sizes and counts are refused with their limits") {
  TempDir dir;
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{copy: {to: next, bytes: 1e30B}}]")),
                    "s.yaml:6:36: workloads[0].ops[0].copy.bytes: cannot parse '1e30B' as a size: more than 16 EiB");
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{copy: {to: next, bytes: -1MiB}}]")),
                    "s.yaml:6:36: workloads[0].ops[0].copy.bytes: cannot parse '-1MiB' as a size: a size cannot be "
                    "negative");
  check_input_error(run_scenario(dir, cli_scenario("{type: hgx, gpus: 0}")),
                    "s.yaml:3:29: topology.gpus: must be between 2 and 8, got 0");
  check_input_error(run_scenario(dir, cli_scenario("{type: superpod, nodes: 0}")),
                    "s.yaml:3:35: topology.nodes: must be between 1 and 2048, got 0");
  check_input_error(run_scenario(dir, cli_scenario(HGX8, "[{repeat: 1e30, ops: [{compute: {time: 1us}}]}]")),
                    "s.yaml:6:20: workloads[0].ops[0].repeat: expected an integer, found '1e30'");
}

// ---- memory: a scenario estimated above the limit is refused up front (scenario/limits.hpp) -----------------------

TEST_CASE("cli: a 10,000-GPU superpod is refused under a 1 GiB limit, with the estimate and the limit") {
  TempDir dir;
  check_input_error(
      run_scenario(dir, cli_scenario("{type: superpod, node: nvl72, nodes: 139}", "[{compute: {time: 1us}}]"),
                   {"--max-memory", "1GiB"}),
      "s.yaml: memory: the run needs about 1.33061 GiB (10,008 endpoints and 423,360 channels 1.29021 "
      "GiB, 10,008 ops 5.37539 MiB), more than the limit of 1 GiB (--max-memory)");
}

TEST_CASE("cli: a million ops on each of 72 GPUs are refused, under --max-memory and SNSIM_MAX_MEMORY alike") {
  TempDir dir;
  const std::string yaml =
      "topology: {type: nvl72}\nworkloads: [{type: program, ops: [{repeat: 1000000, ops: [{compute: {time: "
      "1us}}]}]}]\n";
  const std::string message =
      "s.yaml: memory: the run needs about 37.8106 GiB (73 endpoints and 2,736 channels 8.86328 MiB, 5,256 routes "
      "1.2832 MiB, 72,000,000 ops 37.7655 GiB), more than the limit of 16 GiB";
  check_input_error(run_scenario(dir, yaml, {"--max-memory", "16GiB"}), message + " (--max-memory)");
  setenv("SNSIM_MAX_MEMORY", "16GiB", 1);  // inherited by the snsim process
  check_input_error(run_scenario(dir, yaml), message + " (SNSIM_MAX_MEMORY)");
  check_input_error(run_scenario(dir, yaml, {"--max-memory", "16"}),
                    "--max-memory 16: cannot parse '16' as a size: missing unit (try '16B' or '16MiB')");
}

TEST_CASE("cli: nested repeats beyond 2^64 ops are refused, not wrapped") {
  TempDir dir;
  const std::string yaml =
      "topology: {type: hgx, gpus: 2}\nworkloads:\n  - type: program\n    ops:\n      - repeat: 536870912\n        "
      "ops:\n          - repeat: 536870912\n            ops:\n              - repeat: 536870912\n                ops: "
      "[{compute: {time: 1us}}]\n";
  check_input_error(run_scenario(dir, yaml),
                    "s.yaml:3:3: workloads: rank 0 would run more than 2^64 ops; the limit is 1000000 per rank");
}

TEST_CASE("cli: no command") {
  TempDir dir;
  const Result r = run_snsim(dir, {});
  CHECK(r.code == 2);
  CHECK(r.err == "A subcommand is required\nRun with --help for more information.\n");
}

TEST_CASE("cli: --help exits 0") {
  TempDir dir;
  const Result r = run_snsim(dir, {"run", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("--set") != std::string::npos);
  CHECK(r.out.find("--seed") != std::string::npos);
}

// ---- runs --------------------------------------------------------------------------------------------------------

TEST_CASE("cli: run without a scenario runs the embedded default") {
  TempDir dir;
  const Result r = run_snsim(dir, {"run"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("# snsim hgx-h200-default: 8 x h200") != std::string::npos);
  CHECK(r.out.find("all_reduce on 8 ranks") != std::string::npos);
  CHECK(r.out.find("busbw") != std::string::npos);
  CHECK(r.out.find("outcome: completed") != std::string::npos);
}

TEST_CASE("cli: run --out writes report.json, report.csv and run.json") {
  TempDir dir;
  const Result r = run_scenario(dir, cli_scenario(), {"--out", "out", "--quiet"});
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());  // --quiet
  CHECK(r.err.empty());
  const auto report = nlohmann::json::parse(read_file(dir.path() / "out/report.json"));
  CHECK(report["scenario"] == "cli");
  CHECK(report["seed"] == 7);
  CHECK(report["outcome"] == "completed");
  CHECK(report["simulated_time_s"].get<double>() > 0);
  CHECK(report["ops"].size() == 8);  // one copy per GPU
  const std::string csv = read_file(dir.path() / "out/report.csv");
  CHECK(csv.starts_with("rank,phase,kind,label,bytes,start_s,end_s,duration_s\n"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 8);
  const auto run = nlohmann::json::parse(read_file(dir.path() / "out/run.json"));
  CHECK(run["wall_time_s"].get<double>() > 0);
  CHECK(run["peak_memory_MiB"].get<double>() > 0);
  CHECK(run.contains("snsim_version"));
  CHECK(run.contains("simgrid_version"));
  CHECK_FALSE(fs::exists(dir.path() / "out/timeline.json"));  // not asked for
}

TEST_CASE("cli: output.timeline writes timeline.json") {
  TempDir dir;
  const Result r = run_scenario(dir, cli_scenario() + "output: {timeline: true}\n", {"--out", "out", "--quiet"});
  REQUIRE(r.code == 0);
  const auto timeline = nlohmann::json::parse(read_file(dir.path() / "out/timeline.json"));
  // Per GPU: process name and order, thread name and order, one copy, its rate counter rising and falling.
  CHECK(timeline["traceEvents"].size() == 8 * (4 + 1 + 2));
}

TEST_CASE("cli: --out holds one run's files: what an earlier run wrote goes, what snsim did not write stays") {
  TempDir dir;
  REQUIRE(run_scenario(dir, cli_scenario() + "output: {timeline: true}\n", {"--out", "out", "--quiet"}).code == 0);
  REQUIRE(fs::exists(dir.path() / "out/timeline.json"));
  dir.write("out/notes.txt", "mine\n");  // the user's own file
  dir.write("out/report.json.orig", "{}\n");
  REQUIRE(run_scenario(dir, cli_scenario(), {"--out", "out", "--quiet"}).code == 0);
  CHECK_FALSE(fs::exists(dir.path() / "out/timeline.json"));  // stale: this run writes none
  CHECK(fs::exists(dir.path() / "out/report.json"));
  CHECK(fs::exists(dir.path() / "out/run.json"));
  CHECK(read_file(dir.path() / "out/notes.txt") == "mine\n");
  CHECK(fs::exists(dir.path() / "out/report.json.orig"));
  CHECK(read_file(dir.path() / "out/.snsim-files") == "report.json\nreport.csv\nrun.json\n");
  // A list naming a path outside the folder, or a folder, removes nothing there.
  dir.write("out/.snsim-files", "../outside.txt\nsub\n" + dir.path().string() + "/abs.txt\n");
  dir.write("outside.txt", "x");
  dir.write("abs.txt", "x");
  fs::create_directory(dir.path() / "out/sub");
  REQUIRE(run_scenario(dir, cli_scenario(), {"--out", "out", "--quiet"}).code == 0);
  CHECK(fs::exists(dir.path() / "outside.txt"));
  CHECK(fs::exists(dir.path() / "abs.txt"));
  CHECK(fs::is_directory(dir.path() / "out/sub"));
}

TEST_CASE("cli: options and the scenario go in any order, a repeatable option taking one value each time") {
  TempDir dir;
  dir.write("s.yaml", cli_scenario());
  const Result r =
      run_snsim(dir, {"run", "--set", "name=first", "--set", "seed=3", "s.yaml", "--out", "out", "--quiet"});
  REQUIRE(r.code == 0);
  const auto report = nlohmann::json::parse(read_file(dir.path() / "out/report.json"));
  CHECK(report["scenario"] == "first");
  CHECK(report["seed"] == 3);
}

TEST_CASE("cli: a second run into an --out folder another run holds is refused, and the holder's files stay") {
  TempDir dir;
  REQUIRE(run_scenario(dir, cli_scenario(), {"--out", "out", "--quiet"}).code == 0);
  const std::string before = read_file(dir.path() / "out/report.json");
  {
    snsim::AppendFile holder(dir.path() / "out/.snsim.lock");  // as a run still writing holds it
    REQUIRE(holder.try_lock());
    const Result r = run_scenario(dir, cli_scenario(HGX8, "[{compute: {time: 1us}}]"), {"--out", "out", "--quiet"});
    CHECK(r.code == 2);
    CHECK(r.err ==
          "out: --out: another snsim run is writing into this folder (it holds out/.snsim.lock); wait for it to end, "
          "or give another folder\n");
    CHECK(read_file(dir.path() / "out/report.json") == before);
  }
  CHECK(run_scenario(dir, cli_scenario(), {"--out", "out", "--quiet"}).code == 0);  // the lock went with its holder
}

TEST_CASE("cli: the same scenario and seed give a byte-identical report.json, --seed changes the seed") {
  TempDir dir;
  const std::string yaml =
      cli_scenario(HGX8, "[{copy: {to: next, bytes: 1MiB}}, {collective: {op: all_reduce, bytes: 4MiB}}]");
  REQUIRE(run_scenario(dir, yaml, {"--out", "a", "--quiet"}).code == 0);
  REQUIRE(run_scenario(dir, yaml, {"--out", "b", "--quiet"}).code == 0);
  REQUIRE(run_scenario(dir, yaml, {"--out", "c", "--quiet", "--seed", "12345"}).code == 0);
  const std::string a = read_file(dir.path() / "a/report.json");
  const std::string b = read_file(dir.path() / "b/report.json");
  const std::string c = read_file(dir.path() / "c/report.json");
  CHECK(a.size() > 1000);
  CHECK(a == b);
  CHECK(nlohmann::json::parse(a)["seed"] == 7);
  CHECK(nlohmann::json::parse(c)["seed"] == 12345);
  CHECK(a != c);
}

TEST_CASE("cli: --set overrides a scenario value") {
  TempDir dir;
  const Result r = run_scenario(dir, cli_scenario(), {"--set", "topology.gpus=4", "--set", "name=renamed"});
  CHECK(r.code == 0);
  CHECK(r.out.starts_with("# snsim renamed: 4 x h200"));
}

TEST_CASE("cli: --allow-oversubscribe simulates a training plan that does not fit, still saying so") {
  TempDir dir;
  // Llama 3.1 70B's 8 layers on data parallelism alone: every GPU holds the whole cut model's weights, gradients and
  // optimizer state, over an H100's HBM.
  const std::string yaml =
      "topology: {type: hgx, gpu: h100, gpus: 8}\nworkloads:\n  - type: training\n    steps: 1\n"
      "    model: {preset: llama3.1-70b, layers: 8, sequence: 1024}\n    parallel: {dp: 8}\n";
  const Result refused = run_scenario(dir, yaml, {"--out", "a"});
  CHECK(refused.out.find("outcome: does not fit") != std::string::npos);
  const Result r = run_scenario(dir, yaml, {"--out", "b", "--allow-oversubscribe"});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  const auto report = nlohmann::json::parse(read_file(dir.path() / "b/report.json"));
  CHECK(report["outcome"] == "completed");
  // The training summary's `fits` row: 0.
  const auto fits = r.out.find(" fits ");
  REQUIRE(fits != std::string::npos);
  CHECK(r.out.substr(fits, r.out.find('\n', fits) - fits).ends_with(" 0"));
  const Result none = run_scenario(dir, cli_scenario(), {"--allow-oversubscribe"});
  CHECK(none.code == 2);
  CHECK(none.err.find("--allow-oversubscribe: the scenario has no training workload") != std::string::npos);
}

TEST_CASE("cli: --params applies a parameter set, and a missing one is an input error") {
  TempDir dir;
  const std::string yaml = cli_scenario(HGX8, "[{copy: {to: next, bytes: 1GiB}}]");
  REQUIRE(run_scenario(dir, yaml, {"--out", "a", "--quiet"}).code == 0);
  REQUIRE(run_scenario(dir, yaml, {"--out", "b", "--quiet", "--params", "h200"}).code == 0);
  const auto a = nlohmann::json::parse(read_file(dir.path() / "a/report.json"));
  const auto b = nlohmann::json::parse(read_file(dir.path() / "b/report.json"));
  CHECK(b["config"]["models"]["params"] == "h200");
  CHECK(a["simulated_time_s"] != b["simulated_time_s"]);  // the calibrated copy engine is not the default one
  const Result r = run_scenario(dir, yaml, {"--params", "no-such.yaml"});
  CHECK(r.code == 2);
  CHECK(
      r.err.starts_with("--params no-such.yaml: models.params: no parameter file 'no-such.yaml' (and not a preset: "));
}

TEST_CASE("cli: info lists the topologies, workloads and models") {
  TempDir dir;
  const Result r = run_snsim(dir, {"info"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  // Each name starts an entry line, indented by two spaces.
  for (const char* name :
       {"hgx", "pcie", "p2p_sweep", "collective_sweep", "program", "copy", "compute", "collective"}) {
    CAPTURE(name);
    CHECK(r.out.find(std::string("\n  ") + name + " ") != std::string::npos);
  }
  CHECK(r.out.find("nvlink_bandwidth") != std::string::npos);
}

TEST_CASE("cli: topo prints the hgx fabric and its bisection bandwidth") {
  TempDir dir;
  const Result r = run_snsim(dir, {"topo"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("# bisection bandwidth (first half of the GPUs to the second, one direction): 1.8 TB/s\n") !=
        std::string::npos);
  CHECK(r.out.find("# GPU-to-GPU hop count: min 2, max 2\n") != std::string::npos);
}

TEST_CASE("cli: topo --set follows the override") {
  TempDir dir;
  const Result r = run_snsim(dir, {"topo", "--set", "topology.gpus=4"});
  CHECK(r.code == 0);
  CHECK(r.out.find("one direction): 900 GB/s\n") != std::string::npos);
}

TEST_CASE("cli: topo --summary counts devices and channels by kind, --route prints any pair's route") {
  TempDir dir;
  const Result r = run_snsim(dir, {"topo", "--summary"});
  CHECK(r.code == 0);
  // 8 GPUs, 4 NVSwitch planes and the host; 8 x 4 NVLink pairs and 8 PCIe pairs, one channel per direction.
  CHECK(r.out.find("  gpu          8\n") != std::string::npos);
  CHECK(r.out.find("  nvswitch     4\n") != std::string::npos);
  CHECK(r.out.find("  nvlink             64  7.2 TB/s\n") != std::string::npos);
  CHECK(r.out.find("gpu0 -> nvswitch0") == std::string::npos);  // no channel list

  // Across nodes of a rail-optimised superpod: GPU 0's NIC on rail 0, GPU 9's on rail 1, so through the spines.
  const std::string pod = dir.write("pod.yaml",
                                    "name: pod\ntopology: {type: superpod, gpu: h100, nodes: 4}\nworkloads:\n"
                                    "  - type: program\n    ops: [{compute: {flops: 1TFLOP}}]\n");
  const Result route = run_snsim(dir, {"topo", pod, "--summary", "--route", "gpu0", "gpu9"});
  CHECK(route.code == 0);
  CHECK(route.out.find("# route gpu0 -> gpu9: 6 hops") != std::string::npos);
  CHECK(route.out.find("  nic0->leaf0 ") != std::string::npos);

  const Result bad = run_snsim(dir, {"topo", "--route", "gpu0", "gpu99"});
  CHECK(bad.code == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err ==
        "--route: no device 'gpu99' in this fabric (names as `snsim topo` lists them: gpu0, nvswitch0, host, ...)\n");
}

namespace {
/// Runs every example scenario whose file name `wanted` picks: each exits as its first line says, with its report.
/// Three test cases, so that each stays well inside CTest's timeout (the training examples write 2-130 MB each).
void run_examples(const std::function<bool(const std::string&)>& wanted) {
  const fs::path examples = fs::path(SNSIM_SOURCE_DIR) / "workloads" / "examples";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(examples))
    if (entry.path().extension() == ".yaml" && wanted(entry.path().filename().string())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 3);
  for (const auto& file : files) {
    const std::string name = file.filename().string();
    SUBCASE(name.c_str()) {
      TempDir dir;
      // An example that ends otherwise (a lost GPU) says so on its first line; such a run exits with code 4.
      const std::string first_line = read_file(file).substr(0, read_file(file).find('\n'));
      const std::string marker = "# expected outcome: ";
      const std::string outcome = first_line.starts_with(marker) ? first_line.substr(marker.size()) : "completed";
      const Result r = run_snsim(dir, {"run", file.string(), "--out", "out"});
      CAPTURE(r.err);
      CHECK(r.code == (outcome == "completed" ? 0 : 4));
      CHECK(r.err.empty());
      CHECK(r.out.find("outcome: " + outcome) != std::string::npos);
      const auto report = nlohmann::json::parse(read_file(dir.path() / "out/report.json"));
      CHECK(report["outcome"] == outcome);
      CHECK(report["simulated_time_s"].get<double>() > 0);
    }
  }
}
}  // namespace

TEST_CASE("cli: every training example on a superpod runs") {
  run_examples([](const std::string& name) {
    return name.starts_with("training_") && (name.find("_superpod") != std::string::npos);
  });
}

TEST_CASE("cli: every other training example runs") {
  run_examples([](const std::string& name) {
    return name.starts_with("training_") && !(name.find("_superpod") != std::string::npos);
  });
}

TEST_CASE("cli: every example that is not a training step runs") {
  run_examples([](const std::string& name) { return !name.starts_with("training_"); });
}

// ---- deadlocks: exit code 2, one line naming, per stuck rank, the op and what it waits for ------------------------

namespace {
/// A program on `gpus` GPUs of an HGX, from its op list.
std::string program(int gpus, const std::string& ops) {
  return "topology: {type: hgx, gpus: " + std::to_string(gpus) + "}\nworkloads:\n  - type: program\n    ops:\n" + ops;
}

/// A deadlock: exit code 2, `message` alone on stderr, and the same outcome in report.json.
void check_deadlock(const TempDir& dir, const std::string& yaml, const std::string& message) {
  const Result r = run_scenario(dir, yaml, {"--quiet", "--out", "out"});
  CHECK(r.code == 2);
  CHECK(r.err == message + "\n");
  CHECK(r.out.empty());
  const auto report = nlohmann::json::parse(read_file(dir.path() / "out/report.json"));
  CHECK(report["outcome"] == message);
  CHECK(report["invariants"]["held"] == true);  // a deadlock breaks no invariant: its unended ops are explained
  CHECK_FALSE(report["invariants"]["unended"].empty());
}

// Rank 1 waits for a signal nobody sends: what the other rank is stuck in shows who is missing.
const std::string RANK1_STUCK = "      - {ranks: 1, ops: [{signal_wait: {signal: 1, value: 1}}]}\n";
const std::string RANK1_WAITS =
    "rank 1: op 0, signal_wait 'signal_wait 1 >= 1', waits for signal 1 to be >= 1 (it is 0)";
}  // namespace

TEST_CASE("cli: a deadlock on a signal_wait names the signal, its target and its value") {
  TempDir dir;
  check_deadlock(dir,
                 program(4,
                         "      - {ranks: 0-2, ops: [{put: {to: 3, bytes: 1KiB, signal: 2}}]}\n"
                         "      - {ranks: 3, ops: [{signal_wait: {signal: 2, value: 4}}]}\n"),
                 "deadlock: rank 3: op 0, signal_wait 'signal_wait 2 >= 4', waits for signal 2 to be >= 4 (it is 3)");
}

TEST_CASE("cli: a deadlock in a collective names who arrived and who is missing") {
  TempDir dir;
  check_deadlock(dir, program(2, RANK1_STUCK + "      - {collective: {op: all_reduce, bytes: 1MiB}}\n"),
                 "deadlock: rank 0: op 0, collective 'all_reduce 1 MiB', waits for rank 1 to arrive at collective no. "
                 "1 of ranks 0-1 (arrived: 0); " +
                     RANK1_WAITS);
}

TEST_CASE("cli: a deadlock at a barrier names the missing rank") {
  TempDir dir;
  check_deadlock(dir, program(2, RANK1_STUCK + "      - {barrier: {}}\n"),
                 "deadlock: rank 0: op 0, barrier 'barrier', waits for rank 1 to arrive at barrier no. 1 of ranks 0-1 "
                 "(arrived: 0); " +
                     RANK1_WAITS);
}

TEST_CASE("cli: a deadlock at a shmem_barrier names the missing rank") {
  TempDir dir;
  check_deadlock(dir, program(2, RANK1_STUCK + "      - {shmem_barrier: {}}\n"),
                 "deadlock: rank 0: op 0, shmem_barrier 'shmem_barrier thread', waits for rank 1 to arrive at "
                 "shmem_barrier no. 1 of ranks 0-1 (arrived: 0); " +
                     RANK1_WAITS);
}

TEST_CASE("cli: a deadlock at the free barrier between workloads names the missing rank") {
  TempDir dir;
  check_deadlock(dir,
                 "topology: {type: hgx, gpus: 2}\nworkloads:\n"
                 "  - {type: program, ranks: 1, ops: [{signal_wait: {signal: 1, value: 1}}]}\n"
                 "  - {type: program, ops: [{compute: {time: 1us}}]}\n",
                 "deadlock: rank 0: the free barrier before workload 1, waits for rank 1 to arrive at the barrier of "
                 "ranks 0-1 (arrived: 0); " +
                     RANK1_WAITS);
}

TEST_CASE("cli: a deadlock of many ranks names the first 8 stuck ops and counts the rest") {
  TempDir dir;
  const Result r = run_scenario(
      dir, "topology: {type: nvl72}\nworkloads: [{type: program, ops: [{signal_wait: {signal: 1, value: 1}}]}]\n",
      {"--quiet"});
  CHECK(r.code == 2);
  std::string expected = "deadlock: ";
  for (int rank = 0; rank < 8; ++rank)
    expected += "rank " + std::to_string(rank) +
                ": op 0, signal_wait 'signal_wait 1 >= 1', waits for signal 1 to be >= 1 (it is 0); ";
  CHECK(r.err == expected + "and 64 more (report.json: invariants.unended)\n");
  // A lost GPU is not a deadlock: the simulated job failed (exit code 4, a result).
  const Result lost = run_scenario(dir, cli_scenario() + "failures: [{at: 1us, gpu_lost: 2}]\n", {"--quiet"});
  CHECK(lost.code == 4);
  CHECK(lost.err.empty());
}

// ---- determinism: the same seed gives the same report.json, byte for byte, also from processes run at once -------

TEST_CASE("cli: a jittered scenario gives byte-identical reports from 4 processes at once, another seed differs") {
  TempDir dir;
  dir.write("s.yaml",
            "seed: 11\ntopology: {type: hgx, gpus: 8}\n"
            "models:\n"
            "  jitter: {latency: {dist: lognormal, sigma: 0.1}, bandwidth: {dist: lognormal, sigma: 0.05},\n"
            "           compute: {dist: normal, sigma: 0.01}}\n"
            "  variation: {clock: {dist: normal, sigma: 0.005}, hbm: {dist: normal, sigma: 0.01}}\n"
            "workloads:\n  - type: program\n    ops:\n      - repeat: 3\n        ops:\n"
            "          - compute: {flops: 1TFLOP, bytes: 1GiB}\n"
            "          - copy: {to: next, bytes: 16MiB}\n"
            "          - collective: {op: all_reduce, bytes: 8MiB}\n"
            "          - put: {to: next, bytes: 1MiB, signal: 1}\n"
            "          - signal_wait: {signal: 1, value: 1, consume: true}\n");
  // Four processes at once (forked by the shell), then one more alone and one with another seed.
  std::string command = "cd " + quote(dir.path().string()) + " && (";
  for (int i = 0; i < 4; ++i)
    command += quote(SNSIM_BINARY) + " run s.yaml --quiet --out p" + std::to_string(i) + " & ";
  command += "wait) && " + quote(SNSIM_BINARY) + " run s.yaml --quiet --out alone && " + quote(SNSIM_BINARY) +
             " run s.yaml --quiet --out other --seed 12";
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string alone = read_file(dir.path() / "alone/report.json");
  REQUIRE(alone.size() > 1000);
  for (const char* out : {"p0", "p1", "p2", "p3"}) {
    CAPTURE(out);
    CHECK(read_file(dir.path() / out / "report.json") == alone);
  }
  const auto a = nlohmann::json::parse(alone);
  const auto b = nlohmann::json::parse(read_file(dir.path() / "other/report.json"));
  CHECK(a["invariants"]["held"] == true);
  CHECK(a["simulated_time_s"] != b["simulated_time_s"]);
  CHECK(a["ops"] != b["ops"]);
  CHECK(a["config"]["models"] == b["config"]["models"]);  // only the seed changed
}

TEST_CASE("cli: validate and calibrate refuse bad input with one line and exit code 2") {
  TempDir dir;
  fs::create_directory(dir.path() / "empty");
  check_input_error(run_snsim(dir, {"validate", "empty"}), "empty: the folder holds no trace or tool output");
  check_input_error(run_snsim(dir, {"calibrate", "none.jsonl", "-o", "p.yaml"}), "none.jsonl: cannot open the file");
  const std::string trace = (fs::path(SNSIM_SOURCE_DIR) / "validation/traces/h200/h200x1-launch.jsonl").string();
  check_input_error(
      run_snsim(dir, {"validate", trace, "--bounds", dir.write("b.yaml", "copy: {median: 0.05}\nbogus: 1\n")}),
      "b.yaml:2:8: bogus: not a trace family, family/test or known_misses; known families: collective, compute, "
      "copy, jitter, latency, launch, nvshmem, step, uvm");
  check_input_error(run_snsim(dir, {"validate", trace, "--params", "nowhere.yaml"}),
                    "--params: models.params: no parameter file 'nowhere.yaml' (and not a preset: h200, h100, gb200)");
}

namespace {
struct BucketRun {
  std::string err;
  nlohmann::json report;
};
}  // namespace

TEST_CASE("cli: a parallel.bucket that changes nothing is said on stderr and in report.json's notes, not otherwise") {
  TempDir dir;
  // Layers of 6 MiB of gradient per GPU (12 h^2 bf16 parameters), the embedding and the logits 49 MiB each.
  auto training = [](const std::string& bucket) {
    return "name: bucket\ntopology: {type: hgx, gpu: h200, gpus: 2}\nworkloads:\n  - type: training\n    steps: 1\n"
           "    model: {layers: 4, hidden: 512, heads: 8, sequence: 256}\n    parallel: {dp: 2, bucket: " +
           bucket + "}\n";
  };
  auto run = [&](const std::string& bucket) {
    const std::string out = "out-" + bucket;
    const Result r = run_snsim(dir, {"run", dir.write("b" + bucket + ".yaml", training(bucket)), "--out", out});
    REQUIRE(r.code == 0);
    return BucketRun{r.err, nlohmann::json::parse(read_file(dir.path() / out / "report.json"))};
  };
  const auto small = run("1MiB");
  const std::string said = "parallel.bucket 1 MiB is at most one layer's gradient on a GPU (the smallest is ";
  CHECK(small.err.starts_with("snsim run: note: " + said));
  CHECK(std::ranges::count(small.err, '\n') == 1);
  REQUIRE(small.report["notes"].size() == 1);
  CHECK(small.err == "snsim run: note: " + small.report["notes"][0].get<std::string>() + "\n");
  CHECK(small.report["notes"][0].get<std::string>().ends_with(
      "): every bucket is one layer, so a smaller bucket changes nothing"));
  // What the note says holds: another bucket below a layer runs the same ops at the same times.
  const auto smaller = run("512KiB");
  CHECK(smaller.report["ops"] == small.report["ops"]);
  CHECK(smaller.report["notes"][0].get<std::string>().starts_with("parallel.bucket 512 KiB is at most one layer's"));

  // Three layers to a bucket: the bucket matters, and nothing is said.
  const auto merged = run("16MiB");
  CHECK(merged.err.empty());
  CHECK(merged.report["notes"] == nlohmann::json::array());
  CHECK(merged.report["ops"] != small.report["ops"]);

  // A bucket above the whole gradient: one bucket, said too.
  const auto whole = run("1GiB");
  REQUIRE(whole.report["notes"].size() == 1);
  CHECK(whole.report["notes"][0].get<std::string>().starts_with(
      "parallel.bucket 1 GiB holds a pipeline stage's whole gradient on a GPU ("));
  CHECK(whole.err == "snsim run: note: " + whole.report["notes"][0].get<std::string>() + "\n");

  // The default bucket (25 MiB) below layers of 96 MiB: said only when the scenario gives it.
  auto wide = [&](const std::string& parallel) {
    const auto file =
        dir.write("wide.yaml",
                  "name: wide\ntopology: {type: hgx, gpu: h200, gpus: 2}\nworkloads:\n  - type: training\n"
                  "    steps: 1\n    model: {layers: 2, hidden: 2048, heads: 16, sequence: 128}\n    parallel: " +
                      parallel + "\n");
    return run_snsim(dir, {"run", file, "--quiet"});
  };
  const Result by_default = wide("{dp: 2}");
  CHECK(by_default.code == 0);
  CHECK(by_default.err.empty());
  const Result given = wide("{dp: 2, bucket: 25MiB}");
  CHECK(given.code == 0);
  CHECK(given.err.starts_with("snsim run: note: parallel.bucket 25 MiB is at most one layer's gradient on a GPU"));
  // Without data parallelism no gradient is reduced: a bucket given changes nothing.
  CHECK(wide("{tp: 2, bucket: 4MiB}").err ==
        "snsim run: note: parallel.bucket 4 MiB changes nothing: no gradient is reduced across GPUs (dp 1)\n");
}
