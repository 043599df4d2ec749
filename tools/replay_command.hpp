// `snsim replay TRACE... [--platform SCENARIO]`: a captured job (PyTorch profiler or Chakra traces, one per rank)
// replayed on a platform, as a scenario whose only workload is the `trace` one (docs/replay.md).
#pragma once

namespace snsim::tools {

class CommandLine;

/// Declares `snsim replay`.
void add_replay_command(CommandLine& cli);

}  // namespace snsim::tools
