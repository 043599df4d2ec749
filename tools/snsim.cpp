// The `snsim` command line: every subcommand declared the same way (tools/command_line.hpp), in the order `snsim
// --help` lists them. Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 internal error or a failed run.
#if __has_include(<malloc.h>)
#include <malloc.h>  // mallopt (glibc)
#endif

#include "tools/command_line.hpp"
#include "tools/commands.hpp"
#include "tools/compare_command.hpp"
#include "tools/plan_command.hpp"
#include "tools/replay_command.hpp"
#include "tools/study_command.hpp"
#include "tools/sweep_command.hpp"
#include "tools/traces_command.hpp"
#include "tools/validate_command.hpp"

int main(int argc, char** argv) {
  using namespace snsim::tools;
#if defined(M_MMAP_THRESHOLD)
  // A large run grows and frees vectors of millions of ops and records. glibc gives blocks above a threshold (128
  // KiB, rising as such blocks are freed) their own mappings and returns them when freed, so every regrowth faults
  // fresh pages in: a sixth of GPT-3 175B's step on 128 GPUs (docs/performance.md). Up to 32 MiB (glibc's most)
  // they now come from the heap, which keeps and reuses what is freed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
  CommandLine cli{"snsim: a discrete-event simulator of GPU supernodes (NVLink, NVSwitch) on SimGrid"};
  add_run_command(cli);
  add_info_command(cli);
  add_topo_command(cli);
  add_compare_command(cli);
  add_replay_command(cli);
  add_traces_command(cli);
  add_validation_commands(cli);
  add_study_command(cli);
  add_sweep_command(cli);
  add_plan_command(cli);
  return cli.run(argc, argv);
}
