// `snsim compare SCENARIO`: the scenario's training workload as BSP and as PGAS, side by side (studies/compare.hpp).
//
//   snsim compare workloads/examples/training_dense_hgx.yaml [--out DIR] [--seed N] [--params P] [--set k=v]...
//
// Exit codes: 0 both schedules completed, 2 bad input (no training workload among them), 3 one did not complete.
#pragma once

namespace snsim::tools {

class CommandLine;

/// Declares `snsim compare`.
void add_compare_command(CommandLine& cli);

}  // namespace snsim::tools
