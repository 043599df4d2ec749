#include "tools/sweep_command.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "scenario/scenario.hpp"
#include "sim/error.hpp"
#include "sim/progress.hpp"
#include "studies/sweep.hpp"
#include "tools/command_line.hpp"

namespace snsim::tools {
namespace {

int sweep(const studies::SweepOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const studies::SweepSetup s = studies::prepare_sweep(o);
  std::cout << fmt::format(
      "# sweep {}: {} points x {} trials ({} design){}; {} runs here, {} already in {}, {} to "
      "run, {} at a time\n",
      s.plan.name, s.plan.points.size(), s.plan.trials, s.plan.design,
      s.shards > 1 ? fmt::format(", shard {}/{}", s.shard, s.shards) : "", s.in_shard, s.already, s.results,
      s.todo.size(), s.jobs);
  if (o.dry_run) {
    std::cout << fmt::format("# {:>5} {:>5} {:>20} {:<16} {:<7} {}\n", "point", "trial", "seed", "key", "status",
                             "labels");
    for (const auto& run : s.runs)
      std::cout << fmt::format("  {:>5} {:>5} {:>20} {:<16} {:<7} {}\n", run.point, run.trial, run.seed, run.key,
                               s.status(run), s.plan.label(run.point));
    return 0;
  }

  // On a terminal one line counts the runs; in a log, a line per run.
  const auto loop_start = std::chrono::steady_clock::now();
  ProgressLine line;
  const auto outcome = studies::execute_sweep(s, [&](const studies::SweepRun& run, const std::string& failure,
                                                     const studies::SweepOutcome& so_far) {
    if (!failure.empty()) line.message(fmt::format("sweep: point {} seed {} failed: {}", run.point, run.seed, failure));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    const double left =
        elapsed / static_cast<double>(so_far.finished) * static_cast<double>(s.todo.size() - so_far.finished);
    const std::string progress = fmt::format(
        "sweep: {}/{} runs done{}, ETA {}", s.already + so_far.finished, s.in_shard,
        so_far.failures.empty() ? "" : fmt::format(", {} failed", so_far.failures.size()), format_eta(left));
    line.show(line.terminal() ? progress : progress + fmt::format(" ({} seed {})", s.plan.label(run.point), run.seed));
  });
  line.close();  // ends the terminal's line before the summary
  if (!outcome.plot_problem.empty()) std::cout << fmt::format("no plot: {}\n", outcome.plot_problem);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::size_t failed = outcome.failures.size();
  std::cout << fmt::format("# {} runs in {:.2f} s wall ({} run now, {} failed); wrote {}, {}/sweep.md\n",
                           s.already + outcome.finished - failed, wall, outcome.finished - failed, failed, s.results,
                           s.dir);
  for (const auto& f : outcome.failures) std::cerr << "sweep: failed: " << f << '\n';
  return failed == 0 ? 0 : 3;
}

int merge(const std::vector<std::string>& inputs, const std::string& out) {
  const auto m = studies::merge_sweep(inputs, out);
  std::cout << fmt::format("# merged {} lines from {} files: {} results ({} exact duplicates dropped)\n", m.lines,
                           inputs.size(), m.results, m.duplicates);
  if (m.plan_runs) {
    if (m.missing.empty())
      std::cout << fmt::format("# complete: all {} runs of the plan, each once\n", *m.plan_runs);
    else
      std::cout << fmt::format("# incomplete: {} of the plan's {} runs are missing (first: {})\n", m.missing.size(),
                               *m.plan_runs, m.missing.front());
  }
  if (!m.plot_problem.empty()) std::cout << fmt::format("no plot: {}\n", m.plot_problem);
  std::cout << fmt::format("# wrote {}/results.jsonl, {}/sweep.md\n", out, out);
  return 0;
}

}  // namespace

void add_sweep_command(CommandLine& cli) {
  auto o = std::make_shared<studies::SweepOptions>();
  auto& cmd =
      cli.add("sweep", "run a scenario over a grid or random design of points, one process per run, resumably", [o] {
        if (o->plan.empty()) throw InputError("snsim sweep: give a plan (snsim sweep PLAN.yaml) or `merge`");
        return sweep(*o);
      });
  cmd.add_option("plan", o->plan, "sweep plan YAML (base scenario, axes, design)");
  cmd.add_option("--out", o->out, "results folder (default sweep-<plan name>): results.jsonl, sweep.md, sweep.png");
  cmd.add_option("--jobs", o->jobs, "runs at a time (default: the CPUs available)");
  cmd.add_option("--shard", o->shard, "i/N: run only the points whose index % N == i (from 0)");
  cmd.add_flag("--dry-run", o->dry_run, "check the plan and every scenario, list the runs, run nothing");

  struct MergeOptions {
    std::vector<std::string> inputs;
    std::string out;
  };
  auto m = std::make_shared<MergeOptions>();
  auto& merge_cmd = cli.add(
      "merge", "join the results of shards (drops duplicates, errors on conflicts)",
      [m] { return merge(m->inputs, m->out); }, &cmd);
  merge_cmd.add_option("results", m->inputs, "results.jsonl files, or folders holding one")->required();
  merge_cmd.add_option("-o,--out", m->out, "the merged folder: results.jsonl, sweep.json, sweep.md, sweep.png")
      ->required();
}

}  // namespace snsim::tools
