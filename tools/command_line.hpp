// The `snsim` command line, and the one way its subcommands are declared: a name and a one-line summary, options
// bound to state the command's action owns, and the action, which runs when that command is the one given.
//
// Every error takes one path, run(): an InputError prints its one line ("file:line:col: key: message") and exits
// 2; a SimulatedFailure prints its line and exits 4; anything else prints "snsim COMMAND: internal error: what" and
// exits 3. Standard output is flushed first, so that the error comes after whatever the command printed. An action
// returns its exit code (ExitCode; docs/hardening.md#exit-codes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace snsim::tools {

/// What `snsim` exits with, for scripts: the one list of codes.
enum ExitCode : int {
  EXIT_OK = 0,
  EXIT_CHECK_FAILED = 1,    // a check the command made failed: validate's bounds, a report against a reference
  EXIT_BAD_INPUT = 2,       // scenario, trace, plan, option: refused with one line saying why
  EXIT_INTERNAL_ERROR = 3,  // snsim's bug (an invariant broken, an exception it did not expect)
  EXIT_SYSTEM_FAILURE = 4,  // the simulated system failed (a lost GPU stopped the job): the report is a result
};

/// Whether a command shows its progress on stderr (sim/progress.hpp): asked for (--progress), or stderr is a
/// terminal and the command is not quiet.
bool show_progress(bool asked, bool quiet = false);

class CommandLine {
 public:
  using Action = std::function<int()>;

  explicit CommandLine(const std::string& description);
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  /// Declares `snsim [PARENT] NAME`: the caller adds its options to the returned App. `parent` is a group from
  /// add_group() or another command (`sweep merge` under `sweep`), whose own action then runs when NAME is not given.
  CLI::App& add(const std::string& name, const std::string& summary, Action action, CLI::App* parent = nullptr);

  /// Declares a group of commands (`snsim traces`): it runs nothing itself, and one of its commands must be given.
  CLI::App& add_group(const std::string& name, const std::string& summary);

  /// Parses the arguments and runs the command given, through the one error path; returns the exit code.
  int run(int argc, char** argv);

 private:
  struct Command {
    CLI::App* app;
    std::string name;  // "traces show", for messages
    Action action;
  };
  CLI::App app_;
  std::vector<Command> commands_;  // a command after its parent
};

}  // namespace snsim::tools
