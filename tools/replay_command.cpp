#include "tools/replay_command.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/config.hpp"
#include "studies/inputs.hpp"
#include "tools/command_line.hpp"
#include "tools/commands.hpp"
#include "workloads/replay/replay.hpp"

namespace snsim::tools {
namespace {

struct ReplayCommandOptions {
  std::vector<std::string> traces;
  std::string platform;  // a scenario file; empty: the captured platform
  std::string cost = "recorded";
  std::optional<int> ranks;
  std::optional<std::string> source_gpu;
  std::vector<std::string> shapes;  // per rank, a profile of the same steps with shapes
  RunOptions run;
};

/// The platform the traces were captured on, as far as snsim has one: an HGX of their GPU with at least 2 GPUs
/// (the smallest HGX; a one-GPU capture leaves GPU 1 idle), with that GPU's parameter preset.
std::string captured_platform(const std::vector<std::string>& traces) {
  const auto read = workloads::replay::read_traces(traces);
  const std::string gpu = read.front().gpu.find("H100") != std::string::npos ? "h100" : "h200";
  const int gpus = std::max<int>(2, static_cast<int>(read.size()));
  if (gpus > 8)
    throw_input_error({"snsim replay", 0, 0}, "--platform",
                      fmt::format("{} ranks: give a platform scenario (an 8-GPU HGX is the largest default)", gpus));
  return fmt::format(
      "name: replay\nseed: 1\ntopology: {{type: hgx, gpu: {}, gpus: {}}}\nmodels: {{params: {}}}\n"
      "workloads: []\n",
      gpu, gpus, gpu);
}

int replay_command(ReplayCommandOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  auto doc = o.platform.empty() ? ConfigDocument::load_string(captured_platform(o.traces), "<captured platform>")
                                : ConfigDocument::load_file(o.platform);
  nlohmann::json workload{{"type", "trace"}, {"paths", o.traces}, {"cost", o.cost}};
  if (o.ranks) workload["ranks"] = *o.ranks;
  if (o.source_gpu) workload["source_gpu"] = *o.source_gpu;
  if (!o.shapes.empty()) workload["shapes"] = o.shapes;
  // JSON is YAML's flow syntax: the workload replaces the platform's own.
  doc->set(fmt::format("workloads=[{}]", workload.dump()), "snsim replay");
  studies::apply_overrides(*doc, o.run.sets, o.run.seed, o.run.params);
  o.run.scenario = o.platform.empty() ? "<captured platform>" : o.platform;
  o.run.command = "snsim replay";
  return run_document(doc, o.run, started);
}

}  // namespace

void add_replay_command(CommandLine& cli) {
  auto o = std::make_shared<ReplayCommandOptions>();
  auto& cmd = cli.add("replay",
                      "replay a captured job (PyTorch profiler / Kineto or Chakra traces, one per rank) on a platform",
                      [o] { return replay_command(*o); });
  cmd.add_option("traces", o->traces, "one trace per rank: Kineto .json / .json.gz, or Chakra .et")->required();
  cmd.add_option("--platform", o->platform,
                 "a scenario whose topology, models and failures to replay on (its workloads are replaced); "
                 "default: an HGX of the traces' GPU");
  cmd.add_option("--cost", o->cost, "kernel cost: recorded (scaled to the target GPU) or derived (from shapes)");
  cmd.add_option("--ranks", o->ranks, "ranks to replay: a multiple of the traces' (data-parallel replicas)");
  cmd.add_option("--source-gpu", o->source_gpu, "the GPU preset the traces ran on, when their header lacks it");
  cmd.add_option("--shapes", o->shapes,
                 "per trace, a profile of the same steps with shapes (record_shapes): --cost derived takes the "
                 "kernels' shapes from it, the host's timing from the traces");
  auto* out = cmd.add_option("--out", o->run.out, "write report.json, report.csv, run.json (and timeline.json) here");
  cmd.add_option("--seed", o->run.seed, "override the platform's seed");
  cmd.add_option("--params", o->run.params, "calibrated parameters: a file or a preset (h200, h100, gb200)");
  cmd.add_option("--set", o->run.sets, "override one value of the platform: key.path=value, repeatable");
  cmd.add_flag("--quiet", o->run.quiet, "print nothing; write only the --out files");
  cmd.add_flag("--progress", o->run.progress, "a progress line on stderr, also when stderr is not a terminal");
  cmd.add_flag("--timeline", o->run.timeline, "also write timeline.json into --out")->needs(out);
}

}  // namespace snsim::tools
