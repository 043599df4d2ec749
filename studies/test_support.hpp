// Helpers of the studies' tests and of the command-line tests above them: a temporary folder, and a small sweep
// plan whose 12 runs take milliseconds. Header-only; included by test files only.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>

#include "sim/files.hpp"

namespace snsim::testing {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/snsim-test-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }

  /// Writes `text` to `name` inside the directory; returns the name (relative to the directory).
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream out(path_ / name, std::ios::binary);
    out << text;
    REQUIRE(out.good());
    return name;
  }

 private:
  fs::path path_;
};

/// Tests read files as snsim does (an InputError when one cannot be read).
using snsim::read_file;

/// A small BSP loop on 2-4 H200s: a run takes milliseconds.
/// A BSP step on 8 H200s, three times: a fixed 10 ms of compute, then a 256 MiB all-reduce. Nothing varies, so
/// every trial is the same and the bounds its tests check are exact.
inline const std::string BSP_STEP =
    "name: bsp\n"
    "seed: 5\n"
    "topology: {type: hgx, gpu: h200, gpus: 8}\n"
    "models:\n"
    "  variation: {clock: {dist: constant, value: 1}, hbm: {dist: constant, value: 1}}\n"
    "  jitter: {latency: {dist: constant, value: 1}, bandwidth: {dist: constant, value: 1}}\n"
    "workloads:\n"
    "  - type: program\n"
    "    ops: [{repeat: 3, ops: [{compute: {time: 10ms}}, {collective: {op: all_reduce, bytes: 256MiB}}]}]\n";

inline const std::string SWEEP_BASE =
    "name: tiny\n"
    "seed: 3\n"
    "topology: {type: hgx, gpu: h200, gpus: 2}\n"
    "workloads:\n"
    "  - type: program\n"
    "    ops: [{repeat: 2, ops: [{compute: {time: 1ms}}, {collective: {op: all_reduce, bytes: 1MiB}}]}]\n";

/// 3 x 2 points over SWEEP_BASE, 2 trials each: SWEEP_RUNS runs.
inline const std::string SWEEP_PLAN =
    "name: tiny\n"
    "base: base.yaml\n"
    "trials: 2\n"
    "axes:\n"
    "  - name: gpus\n"
    "    key: topology.gpus\n"
    "    values: [2, 4, 8]\n"
    "  - name: loop\n"
    "    values:\n"
    "      - label: short\n"
    "        set:\n"
    "          workloads[0].ops[0].repeat: 1\n"
    "      - label: long\n"
    "        set:\n"
    "          workloads[0].ops[0].repeat: 3\n"
    "          workloads[0].ops[0].ops[1].collective: {op: all_reduce, bytes: 4MiB}\n"
    "goal: {metric: makespan_s, at_most: 0.003, minimize: gpus}\n"
    "report: {x: gpus, y: makespan_s}\n";

inline constexpr std::size_t SWEEP_RUNS = 12;

/// Writes base.yaml (SWEEP_BASE) and plan.yaml (`plan`) into `dir`; returns the plan's path.
inline std::string write_sweep_plan(const TempDir& dir, const std::string& plan = SWEEP_PLAN) {
  dir.write("base.yaml", SWEEP_BASE);
  dir.write("plan.yaml", plan);
  return (dir.path() / "plan.yaml").string();
}

}  // namespace snsim::testing
