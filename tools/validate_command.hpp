// `snsim validate` and `snsim calibrate`: the simulator against real measurements (validation/).
//
//   snsim calibrate TRACES... -o params.yaml             fit model parameters on calibration records
//   snsim validate TRACES... [--params P] [--out DIR]     simulate every record's twin, compare, check bounds
//
// TRACES are files in any format import_any recognises, or folders (their *.jsonl files). Exit codes: 0 ok,
// 1 a family crossed its accuracy bound, 2 bad input, 3 internal error.
#pragma once

#include <string>
#include <vector>

#include "validation/trace.hpp"

namespace snsim::tools {

class CommandLine;

/// Reads every trace named: files as given, folders as their *.jsonl files in name order.
std::vector<validation::Trace> read_traces(const std::vector<std::string>& paths);

/// Declares `snsim validate` and `snsim calibrate`.
void add_validation_commands(CommandLine& cli);

}  // namespace snsim::tools
