// `snsim plan`: which parallel plan to train a model with on a fabric (studies/plan.hpp).
//
//   snsim plan --model PRESET --topology FILE|MAP [--gpus N] --global-batch B [--seq S] [--budget N] [--jobs J]
//              [--shard i/N] [--out DIR] [--show K]
//   snsim plan --scenario FILE [...]        (its topology, models and training workload's model)
//
// Exit codes: 0 done, 2 bad input (a flag, the model, the topology; no plan that fits), 3 a simulation failed.
#pragma once

namespace snsim::tools {

class CommandLine;

/// Declares `snsim plan`.
void add_plan_command(CommandLine& cli);

}  // namespace snsim::tools
