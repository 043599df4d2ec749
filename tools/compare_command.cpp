#include "tools/compare_command.hpp"

#include <memory>
#include <optional>

#include <fmt/format.h>

#include "sim/report.hpp"
#include "studies/compare.hpp"
#include "studies/inputs.hpp"
#include "tools/command_line.hpp"

namespace snsim::tools {
namespace {

int compare(studies::CompareOptions o, bool progress) {
  o.progress = show_progress(progress);
  // Checked first, so that bad input fails before anything forks.
  studies::Comparison c = studies::prepare_comparison(o);
  std::optional<studies::OutputDir> held;  // one comparison at a time into one folder
  if (!o.out.empty()) held.emplace(o.out);
  for (const auto& note : c.notes) fmt::print(stderr, "snsim compare: note: {}\n", note);
  fmt::print("# snsim compare {}: {} x {}, seed {}: the training workload as BSP and as PGAS\n", c.scenario, c.gpus,
             c.gpu_model, c.seed);
  studies::run_comparison(o, c);
  fmt::print("{}\n", format_table(c.side_by_side));
  fmt::print("{}\n", format_table(c.split));
  fmt::print("# outcome: bsp {}, pgas {}\n", c.outcome_bsp, c.outcome_pgas);
  if (!o.out.empty()) {
    const auto files = studies::write_comparison(o.out, c);
    if (!files.plotted) fmt::print("# no plot: {}\n", files.plot_problem);
    fmt::print("# wrote {}/compare.json, compare.md{}, bsp/report.json, pgas/report.json\n", o.out,
               files.plotted ? ", compare.png" : "");
  }
  return c.completed() ? EXIT_OK : EXIT_SYSTEM_FAILURE;  // a side that did not complete: the simulated job failed
}

}  // namespace

void add_compare_command(CommandLine& cli) {
  auto o = std::make_shared<studies::CompareOptions>();
  auto progress = std::make_shared<bool>(false);
  auto& cmd = cli.add("compare", "run a scenario's training workload as BSP and as PGAS, side by side",
                      [o, progress] { return compare(*o, *progress); });
  cmd.add_option("scenario", o->scenario, "scenario YAML file with a `training` workload")->required();
  cmd.add_option("--out", o->out,
                 "write compare.json, compare.md, compare.png (with matplotlib), bsp/report.json and pgas/report.json "
                 "here");
  cmd.add_option("--seed", o->seed, "override the scenario's seed");
  cmd.add_option("--params", o->params, "calibrated parameters: a file or a preset (h200, h100, gb200)");
  cmd.add_option("--set", o->sets, "override one value: key.path=value (YAML scalar), repeatable");
  cmd.add_flag("--progress", *progress, "a progress line on stderr per side, also when stderr is not a terminal");
}

}  // namespace snsim::tools
