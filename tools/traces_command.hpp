// `snsim traces`: look at captured or imported traces (validation/traces/README.md).
//
//   snsim traces show FILE...                      header and a per-family summary of each trace
//   snsim traces plot FILE [--out DIR] [--format]  bandwidth-against-size curves and latency distributions
//   snsim traces import FILE --out OUT.jsonl       any known format, written as an snsim trace
//
// Every FILE may be in any format import_any recognises. Exit codes (tools/command_line.hpp): 0 ok, 2 bad input (one
// line "file:line: field: message" on stderr), 3 internal error or a missing plotting tool.
#pragma once

#include <string>

#include "validation/trace.hpp"

namespace snsim::tools {

class CommandLine;

/// Declares `snsim traces` and its commands.
void add_traces_command(CommandLine& cli);

/// The text `snsim traces show` prints for one trace: header, completeness, notes, and one line per family with
/// its record and test counts, size range, and representative numbers (peak bandwidth, lowest latency).
std::string trace_summary(const validation::Trace& trace);

}  // namespace snsim::tools
