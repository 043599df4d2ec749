// `snsim compare SCENARIO`: the scenario's training workload as BSP and as PGAS, side by side (issue 7).
//
//   snsim compare workloads/examples/training_dense_hgx.yaml [--out DIR] [--seed N] [--params P] [--set k=v]...
//
// Each schedule runs in its own forked simulation (sim/isolated.hpp) with the same seed; the table gives step time
// (mean and last), MFU, per-GPU compute, communication and idle time, bytes moved by op kind and over the GPUs'
// links, and the PGAS / BSP ratio. A scenario without a `training` workload is an input error (exit 2).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace snsim::tools {

struct CompareOptions {
  std::string scenario;
  std::string out;                    // writes compare.json, bsp/report.json and pgas/report.json here
  std::optional<std::string> seed;    // overrides the scenario's seed
  std::optional<std::string> params;  // a parameter set (preset or file)
  std::vector<std::string> sets;      // --set key.path=value
};

/// Adds `compare` to `app`, filling `options` when it is parsed.
CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

/// Runs both schedules and prints the comparison; 0 when both completed, 3 when one did not.
int compare_command(const CompareOptions& options);

}  // namespace snsim::tools
