#include "tools/command_line.hpp"

#include <cstdio>
#include <exception>
#include <iostream>

#include "sim/error.hpp"

namespace snsim::tools {
namespace {

/// The full name of a declared command: "sweep merge" for merge under sweep.
std::string full_name(const CLI::App& app) {
  const CLI::App* parent = app.get_parent();
  if (!parent || !parent->get_parent()) return app.get_name();
  return full_name(*parent) + " " + app.get_name();
}

}  // namespace

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
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_.exit(e) == 0 ? 0 : 2;
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
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "snsim " << chosen->name << ": internal error: " << e.what() << '\n';
    return 3;
  }
}

}  // namespace snsim::tools
