// `snsim traces`: look at captured or imported traces (validation/traces/README.md).
//
//   snsim traces show FILE...                      header and a per-family summary of each trace
//   snsim traces plot FILE [--out DIR] [--format]  bandwidth-against-size curves and latency distributions
//   snsim traces import FILE --out OUT.jsonl       any known format, written as an snsim trace
//
// Every FILE may be in any format import_any recognises. Exit codes follow design.md: 0 ok, 2 bad input (one line
// "file:line: field: message" on stderr), 3 internal error or a missing plotting tool.
#pragma once

#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

#include "validation/trace.hpp"

namespace snsim::tools {

/// Adds the `traces` subcommand to `app`. When one of its commands runs (inside app.parse), it handles its own
/// errors and stores the exit code in `exit_code`, which must outlive the parse.
void add_traces_command(CLI::App& app, int& exit_code);

/// The text `snsim traces show` prints for one trace: header, completeness, notes, and one line per family with
/// its record and test counts, size range, and representative numbers (peak bandwidth, lowest latency).
std::string trace_summary(const validation::Trace& trace);

}  // namespace snsim::tools
