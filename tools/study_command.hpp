// `snsim study slow-node`: how much a job loses to one slow GPU, and who waits on whom (studies/slow_node.hpp says
// how the study runs).
//
//   snsim study slow-node SCENARIO [--trials N] [--seed S] [--jobs J] [--slow GPU:FACTOR[,GPU:FACTOR]]...
//                                  [--steps N] [--set key.path=value]... [--out DIR]
//
// Exit codes: 0 done, 2 bad input (scenario, --slow, --trials ...), 3 a trial failed or did not complete.
#pragma once

namespace snsim::tools {

class CommandLine;

/// Declares `snsim study` and its `slow-node` study.
void add_study_command(CommandLine& cli);

}  // namespace snsim::tools
