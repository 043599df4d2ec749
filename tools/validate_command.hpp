// `snsim validate` and `snsim calibrate`: the simulator against real measurements (design.md, "Validation").
//
//   snsim calibrate TRACES... -o params.yaml             fit model parameters on calibration records
//   snsim validate TRACES... [--params P] [--out DIR]     simulate every record's twin, compare, check bounds
//
// TRACES are files in any format import_any recognises, or folders (their *.jsonl files). Exit codes: 0 ok,
// 1 a family crossed its accuracy bound, 2 bad input, 3 internal error.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "validation/trace.hpp"

namespace snsim::tools {

/// Reads every trace named: files as given, folders as their *.jsonl files in name order.
std::vector<validation::Trace> read_traces(const std::vector<std::string>& paths);

/// Adds `validate` and `calibrate` to `app`; the command that runs stores its exit code in `exit_code`.
void add_validation_commands(CLI::App& app, int& exit_code);

}  // namespace snsim::tools
