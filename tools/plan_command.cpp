#include "tools/plan_command.hpp"

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "studies/plan.hpp"
#include "tools/command_line.hpp"

namespace snsim::tools {
namespace {

int plan(const studies::PlanOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const studies::PlanOutcome out = studies::run_plan(o);
  std::cout << out.markdown;
  if (!out.plot_problem.empty()) std::cout << fmt::format("\nno plot: {}\n", out.plot_problem);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (out.per_count.empty())
    std::cout << fmt::format("\n# {:.1f} s wall; wrote {}/plan.md, plan.json, sweep.md{}\n", wall, out.dir,
                             out.plot_problem.empty() ? ", sweep.png" : "");
  else
    std::cout << fmt::format("\n# {:.1f} s wall; wrote {}/plan.md, plan.json and a folder gpus-N per GPU count\n", wall,
                             out.dir);
  for (const auto& f : out.failures) std::cerr << "plan: simulation failed: " << f << '\n';
  return out.failures.empty() ? 0 : 3;
}

}  // namespace

void add_plan_command(CommandLine& cli) {
  auto o = std::make_shared<studies::PlanOptions>();
  auto& cmd = cli.add("plan",
                      "enumerate a training job's parallel plans, drop those that do not fit in HBM, simulate the "
                      "best and rank them by step time",
                      [o] { return plan(*o); });
  cmd.add_option("--model", o->model, "a model preset (llama3.1-70b), or a map: '{preset: llama3.1-8b, layers: 8}'");
  cmd.add_option("--topology", o->topology,
                 "a topology file (or a scenario with one), or a map: '{type: superpod, gpu: h100, nodes: 8}'");
  cmd.add_option("--scenario", o->scenario, "a scenario file: its topology, models and training model");
  cmd.add_option("--gpus", o->gpus,
                 "GPUs of the job (the topology's), or several counts (64,128,256): one plan each on the topology "
                 "resized")
      ->delimiter(',');
  cmd.add_option("--global-batch", o->global_batch, "sequences per step");
  cmd.add_option("--seq", o->sequence, "tokens per sequence (default: the model's)");
  cmd.add_option("--framework-overhead", o->framework_overhead,
                 "HBM per GPU the framework takes (CUDA context, workspaces, fragmentation), such as 4GiB; default 0");
  cmd.add_option("--budget", o->budget, "plans to simulate at most, the best by a fast estimate (default 16)");
  cmd.add_option("--jobs", o->jobs, "simulations at a time (default: the CPUs available)");
  cmd.add_option("--shard", o->shard, "i/N: simulate only the points whose index % N == i (from 0)");
  cmd.add_option("--out", o->out, "results folder (default plan-<model>): plan.md, plan.json, the sweep's files");
  cmd.add_option("--show", o->show, "plans the printed table shows (default 5)");
}

}  // namespace snsim::tools
