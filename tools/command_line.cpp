#include "tools/command_line.hpp"

#include <cstdio>
#include <exception>
#include <iostream>

#include "sim/error.hpp"
#include "sim/progress.hpp"

namespace snsim::tools {
namespace {

/// The full name of a declared command: "sweep merge" for merge under sweep.
std::string full_name(const CLI::App& app) {
  const CLI::App* parent = app.get_parent();
  if (!parent || !parent->get_parent()) return app.get_name();
  return full_name(*parent) + " " + app.get_name();
}

/// Every `--set` of `app` and its commands takes one value per occurrence, so that options and the scenario go in
/// any order: `snsim run --set k=v s.yaml` must not read s.yaml as a second --set (`--slow A B` keeps taking both).
void one_value_per_option(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->check_lname("set")) option->allow_extra_args(false);
  for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) one_value_per_option(*sub);
}

}  // namespace

bool show_progress(bool asked, bool quiet) {
  return asked || (!quiet && stderr_is_terminal());
}

CommandLine::CommandLine(const std::string& description) : app_{description} {
  app_.require_subcommand(1);
}

CLI::App& CommandLine::add(const std::string& name, const std::string& summary, Action action, CLI::App* parent) {
  CLI::App* app = (parent ? *parent : app_).add_subcommand(name, summary);
  commands_.push_back({app, full_name(*app), std::move(action)});
  return *app;
}

CLI::App& CommandLine::add_group(const std::string& name, const std::string& summary) {
  CLI::App* group = app_.add_subcommand(name, summary);
  group->require_subcommand(1);
  return *group;
}

int CommandLine::run(int argc, char** argv) {
  one_value_per_option(app_);
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_.exit(e) == 0 ? EXIT_OK : EXIT_BAD_INPUT;
  }
  // The command given is the last one parsed: a command comes after its parent, and siblings exclude each other.
  const Command* chosen = nullptr;
  for (const auto& command : commands_)
    if (command.app->parsed()) chosen = &command;
  if (!chosen) return 0;
  try {
    return chosen->action();
  } catch (const InputError& e) {
    std::cout.flush();
    std::cerr << e.what() << '\n';
    return EXIT_BAD_INPUT;
  } catch (const SimulatedFailure& e) {
    std::cout.flush();
    std::cerr << "snsim " << chosen->name << ": " << e.what() << '\n';
    return EXIT_SYSTEM_FAILURE;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "snsim " << chosen->name << ": internal error: " << e.what() << '\n';
    return EXIT_INTERNAL_ERROR;
  }
}

}  // namespace snsim::tools
