// The `snsim` command line. Exit codes (design.md): 0 ok, 1 a check failed, 2 bad input, 3 internal error.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "sim/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"snsim: a discrete-event simulator of GPU supernodes"};
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
