// The `snsim` command line, and the one way its subcommands are declared: a name and a one-line summary, options
// bound to state the command's action owns, and the action, which runs when that command is the one given.
//
// Every error takes one path, run(): an InputError prints its one line ("file:line:col: key: message") and exits
// 2; anything else prints "snsim COMMAND: internal error: what" and exits 3. Standard output is flushed first, so
// that the error comes after whatever the command printed. An action returns its exit code: 0 ok, 1 a check failed
// (validate), 2 bad input it reported itself, 3 a run that failed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace snsim::tools {

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
