// The `snsim` command line. Exit codes (design.md): 0 ok, 1 a check failed, 2 bad input, 3 internal error.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "sim/error.hpp"
#include "tools/traces_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"snsim: a discrete-event simulator of GPU supernodes"};
  app.require_subcommand(0, 1);
  int exit_code = 0;  // set by the subcommand that runs
  snsim::tools::add_traces_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
