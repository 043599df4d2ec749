// `snsim sweep`: run a scenario over a design of points, one process per run, resumably (studies/sweep.hpp; the
// plan's format is in studies/sweep_plan.hpp).
//
//   snsim sweep PLAN.yaml [--out DIR] [--jobs J] [--shard i/N] [--dry-run]
//   snsim sweep merge RESULTS... -o OUT
//
// Exit codes: 0 done, 2 bad input (plan, scenario, results file, conflicting results), 3 a run failed.
#pragma once

namespace snsim::tools {

class CommandLine;

/// Declares `snsim sweep` and `snsim sweep merge`.
void add_sweep_command(CommandLine& cli);

}  // namespace snsim::tools
