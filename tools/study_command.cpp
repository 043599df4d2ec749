#include "tools/study_command.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/progress.hpp"
#include "sim/report.hpp"
#include "studies/inputs.hpp"
#include "studies/slow_node.hpp"
#include "tools/command_line.hpp"

namespace snsim::tools {
namespace {

int slow_node(const studies::SlowNodeOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const studies::SlowNodePlan plan = studies::plan_slow_node(o);
  std::filesystem::path out;
  std::optional<studies::OutputDir> held;  // one study at a time into one folder
  if (!o.out.empty()) out = held.emplace(o.out).path();

  const std::size_t n = plan.trials, count = plan.points.size() * n;
  std::cout << fmt::format("# slow-node study of {}: {} points x {} trials (seeds {}-{}), {} at a time\n", plan.name,
                           plan.points.size(), n, plan.seed, plan.seed + n - 1, plan.jobs);
  for (const auto& v : plan.variables)
    std::cout << fmt::format("#   {:<24} {} ({})\n", v.key.substr(7), v.what, v.source);
  std::cout << fmt::format("#   step time: {}\n", plan.steps.why);
  std::cout.flush();

  // On a terminal one line counts the trials; in a log, a line per point done.
  ProgressLine line;
  std::vector<std::size_t> done_per_point(plan.points.size(), 0);
  std::size_t done = 0;
  auto progress = [&](std::size_t task) {
    ++done;
    const std::size_t p = task / n;
    const bool point_done = ++done_per_point[p] == n;
    if (line.terminal())
      line.show(fmt::format("study slow-node: {}/{} trials done", done, count));
    else if (point_done)
      line.show(fmt::format("study slow-node: {} done ({}/{} trials)", plan.points[p].label(), done, count));
  };
  const auto results = studies::run_slow_node(o, plan, progress);
  line.close();  // ends the terminal's line before the tables

  const Table steps = studies::steps_table(plan, results);
  const Table waits = studies::waits_by_point(plan, results);
  std::cout << format_table(steps) << '\n' << format_table(waits);
  bool plotted = false;
  if (!out.empty()) {
    const auto files = studies::write_slow_node_files(out, o, plan, results, steps, waits);
    plotted = files.plotted;
    if (!plotted) std::cout << fmt::format("# no plot: {}\n", files.plot_problem);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << fmt::format(
      "# {} trials in {:.2f} s wall{}\n", count, wall,
      out.empty() ? ""
                  : fmt::format("; wrote {}/study.json, study.csv, study.md{}", o.out, plotted ? ", study.png" : ""));
  return 0;
}

}  // namespace

void add_study_command(CommandLine& cli) {
  CLI::App& study = cli.add_group("study", "studies that run a scenario many times (one process per trial)");
  auto o = std::make_shared<studies::SlowNodeOptions>();
  auto trials = std::make_shared<long long>(static_cast<long long>(o->trials));
  auto jobs = std::make_shared<std::optional<long long>>();
  auto& cmd = cli.add(
      "slow-node",
      "Monte Carlo over GPU clock, HBM and link variation with slowed GPUs: step time, efficiency "
      "lost, who waited on whom",
      [o, trials, jobs] {
        // Read signed, so that -1 is not 2^64 - 1 by the time it is checked.
        const auto check = [](long long value, std::size_t most, const char* option) {
          if (value < 1 || static_cast<unsigned long long>(value) > most)
            throw_input_error({fmt::format("{} {}", option, value), 0, 0}, "",
                              fmt::format("must be between 1 and {}, got {}", most, value));
          return static_cast<std::size_t>(value);
        };
        o->trials = check(*trials, studies::MAX_TRIALS, "--trials");
        if (*jobs) o->jobs = check(**jobs, studies::MAX_JOBS, "--jobs");
        return slow_node(*o);
      },
      &study);
  cmd.add_option("scenario", o->scenario, "scenario YAML file")->required();
  cmd.add_option("--trials", *trials, "trials per point (1 to 10,000)")->capture_default_str();
  cmd.add_option("--seed", o->seed, "the first trial's seed (trial i: seed + i); default the scenario's");
  cmd.add_option("--jobs", *jobs, "trials at a time (default: the CPUs available)");
  cmd.add_option("--slow", o->slow,
                 "a sweep point GPU:FACTOR[:HBM_FACTOR][,...] (compute time x FACTOR, or N% longer; HBM time x "
                 "HBM_FACTOR), repeatable; "
                 "default GPU:1.02 GPU:1.05 GPU:1.10 GPU:1.20 on the scenario's slow GPU, else 0");
  cmd.add_option("--steps", o->steps, "steps per run: the step time is the makespan / steps");
  cmd.add_option("--set", o->sets, "override one scenario value: key.path=value, repeatable");
  cmd.add_option("--out", o->out, "write study.json, study.csv and study.md here");
}

}  // namespace snsim::tools
