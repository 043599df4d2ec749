// The `snsim` command line. Exit codes (design.md): 0 ok, 1 a check failed, 2 bad input, 3 internal error.
#include <iostream>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "sim/error.hpp"
#include "tools/commands.hpp"
#include "tools/compare_command.hpp"
#include "tools/study_command.hpp"
#include "tools/sweep_command.hpp"
#include "tools/traces_command.hpp"
#include "tools/validate_command.hpp"

int main(int argc, char** argv) {
  using namespace snsim::tools;
  CLI::App app{"snsim: a discrete-event simulator of GPU supernodes (NVLink, NVSwitch) on SimGrid"};
  app.require_subcommand(1);

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "simulate a scenario (the embedded 8xH200 default when none is given)");
  run_cmd->add_option("scenario", run.scenario, "scenario YAML file");
  auto* run_out =
      run_cmd->add_option("--out", run.out, "write report.json, report.csv, run.json (and timeline.json) here");
  run_cmd->add_option("--seed", run.seed, "override the scenario's seed");
  run_cmd->add_option("--params", run.params,
                      "calibrated parameters: a file from `snsim calibrate`, or a preset (h200, h100, gb200)");
  run_cmd->add_option("--set", run.sets, "override one value: key.path=value (YAML scalar), repeatable");
  run_cmd->add_option("--engine", run.engine,
                      "pass an option to SimGrid, e.g. --engine=--log=snsim_runner.thres:debug");
  run_cmd->add_option("--max-memory", run.max_memory,
                      "refuse a scenario whose estimated memory is above this size, e.g. 8GiB (default: "
                      "SNSIM_MAX_MEMORY, else 3/4 of the machine's memory)");
  run_cmd->add_flag("--quiet", run.quiet, "print nothing; write only the --out files");
  run_cmd
      ->add_flag("--timeline", run.timeline,
                 "also write timeline.json (Perfetto / Chrome trace) into --out, as `output: {timeline: true}` does")
      ->needs(run_out);

  auto* info_cmd = app.add_subcommand("info", "list every topology, model and workload with parameters and defaults");
  bool info_markdown = false;
  info_cmd->add_flag("--markdown", info_markdown,
                     "print the scenario reference as Markdown (docs/reference/parameters.md)");

  std::string topo_scenario;
  std::vector<std::string> topo_sets;
  auto* topo_cmd = app.add_subcommand("topo", "print a scenario's fabric: devices, channels, routes, bisection");
  topo_cmd->add_option("scenario", topo_scenario, "scenario YAML file (default: the embedded default)");
  topo_cmd->add_option("--set", topo_sets, "override one value: key.path=value");

  CompareOptions compare;
  auto* compare_cmd = add_compare_command(app, compare);

  int traces_exit_code = 0;  // set by `snsim traces ...` while parsing
  add_traces_command(app, traces_exit_code);
  int validation_exit_code = 0;  // set by `snsim validate` / `snsim calibrate` while parsing
  add_validation_commands(app, validation_exit_code);
  int study_exit_code = 0;  // set by `snsim study ...` while parsing
  add_study_command(app, study_exit_code);
  int sweep_exit_code = 0;  // set by `snsim sweep ...` while parsing
  add_sweep_command(app, sweep_exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*run_cmd) return run_command(run);
    if (*info_cmd) return info_command(info_markdown);
    if (*topo_cmd) return topo_command(topo_scenario, topo_sets);
    if (*compare_cmd) return compare_command(compare);
    if (app.got_subcommand("traces")) return traces_exit_code;
    if (app.got_subcommand("validate") || app.got_subcommand("calibrate")) return validation_exit_code;
    if (app.got_subcommand("study")) return study_exit_code;
    if (app.got_subcommand("sweep")) return sweep_exit_code;
  } catch (const snsim::InputError& e) {
    std::cout.flush();
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    fmt::print(stderr, "internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
