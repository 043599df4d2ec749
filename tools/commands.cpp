#include "tools/commands.hpp"

#include "models/params.hpp"
#include "sim/config.hpp"
#include "sim/files.hpp"
#include "studies/inputs.hpp"
#include "tools/command_line.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/models.hpp"
#include "runtime/waits.hpp"
#include "scenario/limits.hpp"
#include "scenario/scenario.hpp"
#include "topologies/gpus.hpp"
#include "topologies/register.hpp"

namespace snsim::tools {
namespace {

using studies::apply_overrides;

/// The scenario file, or the embedded default when none is given.
std::shared_ptr<ConfigDocument> load_document(const std::string& scenario) {
  return scenario.empty() ? ConfigDocument::load_string(DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME)
                          : ConfigDocument::load_file(scenario);
}

/// One plugin of a registry as the reference lists it.
struct PluginDoc {
  std::string name;
  std::string summary;
  std::vector<ParamDoc> params;
};

/// One kind of plugin: "topologies", selected by `topology.type`, its keys under `topology.`.
struct PluginGroup {
  std::string title;     // "topologies"
  std::string selector;  // "topology.type"
  std::vector<PluginDoc> plugins;
  std::function<std::string(const std::string& plugin, const std::string& key)> key_path;  // the full key
};

template <class R>
std::vector<PluginDoc> plugins_of(const R& registry) {
  std::vector<PluginDoc> out;
  for (const auto& e : registry.entries()) out.push_back({e.name, e.summary, e.params});
  return out;
}

/// Every plugin kind a scenario selects from, with its documented parameters (the registries' own docs).
std::vector<PluginGroup> plugin_groups() {
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  Registry<models::Model> models("model");
  models::register_models(models);
  workloads::WorkloadRegistry workloads("workload");
  workloads::register_workloads(workloads);
  return {
      {"topologies", "topology.type", plugins_of(topologies),
       [](const std::string&, const std::string& key) { return fmt::format("topology.{}", key); }},
      {"models", "models.<name>", plugins_of(models),
       [](const std::string& plugin, const std::string& key) {
         // models.slow is a list: its keys are those of one element.
         return fmt::format("models.{}{}.{}", plugin, plugin == "slow" ? "[]" : "", key);
       }},
      {"workloads", "workloads[].type", plugins_of(workloads),
       [](const std::string&, const std::string& key) { return fmt::format("workloads[].{}", key); }},
  };
}

/// The summary with its source and accepted range, as `snsim info` prints it:
/// "rate of a lone CE copy / line rate [meas nccl#1264] (0.01 to 1)".
std::string summary_with_source(const ParamDoc& p) {
  std::string out = p.summary;
  if (!p.source.empty()) out += fmt::format(" [{}]", p.source);
  if (!p.range.empty()) out += fmt::format(" ({})", p.range);
  return out;
}

struct ParamsPresetDoc {
  std::string name, file, source;
};
std::vector<ParamsPresetDoc> params_preset_docs() {
  std::vector<ParamsPresetDoc> out;
  for (const auto& preset : models::params_presets()) {
    // Where the numbers come from: our traces (validated) or published numbers (not).
    auto document = ConfigDocument::load_string(preset.text, preset.file);
    const auto source = document->root().section("calibration").optional<std::string>("source", "");
    out.push_back({preset.name, preset.file, source});
  }
  return out;
}

constexpr const char* UNITS_LINE =
    "sizes 4B 64KiB 1GiB (binary) or 1GB (decimal); bandwidth 450GBps 450GB/s 3600Gbps (per direction); time 700ns "
    "1.5us 2ms; work 2.2TFLOP";

void print_text() {
  bool first = true;
  for (const auto& group : plugin_groups()) {
    fmt::print("{}{} ({}):\n", first ? "" : "\n", group.title, group.selector);
    first = false;
    for (const auto& e : group.plugins) {
      fmt::print("  {:<18} {}\n", e.name, e.summary);
      for (const auto& p : e.params)
        fmt::print("      {:<22} {:<32} default {:<10} {}\n", p.name, p.unit,
                   p.default_value.empty() ? "(required)" : p.default_value, summary_with_source(p));
    }
  }
  fmt::print("\nparameter sets (models.params, --params):\n");
  for (const auto& preset : params_preset_docs())
    fmt::print("  {:<6} {}: {}\n", preset.name, preset.file, preset.source);
  fmt::print("\nunits: {}\n", UNITS_LINE);
}

/// Text for a Markdown table cell: pipes escaped, nothing that breaks the row.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}
std::string code(std::string_view text) {
  return text.empty() ? "" : fmt::format("`{}`", cell(text));
}

void print_markdown() {
  fmt::print(
      "# Scenario reference\n\n"
      "<!-- Generated by `snsim info --markdown` from the parameter declarations in the code; do not edit. A test\n"
      "     (tools/registry_test.cpp) fails when this file is stale: regenerate it with\n"
      "     build/tools/snsim info --markdown > docs/reference/parameters.md -->\n\n"
      "Every key a scenario can set under `topology:`, `models:` and `workloads:`: its unit, its default, the values "
      "it accepts beyond its unit (a key outside them is an error naming the file, line and column), what it does and "
      "where its default comes from. Unknown keys are errors too. `snsim info` prints the same tables as text.\n\n"
      "Sources: *meas* a measurement (ours on H200 unless named), *src* a value in a public source tree, *model* a "
      "constant of another tool's cost model (NCCL's tuning model), *maint.* a maintainer's statement, *spec* a "
      "datasheet, *est.* an estimate; *unverified* marks a default nobody has measured.\n\n"
      "Units: {}.\n",
      UNITS_LINE);
  for (const auto& group : plugin_groups()) {
    fmt::print("\n## {} (`{}`)\n", group.title, group.selector);
    for (const auto& e : group.plugins) {
      fmt::print("\n### {}\n\n{}\n", e.name, e.summary);
      if (e.params.empty()) continue;
      fmt::print("\n| key | unit | default | accepts | description | source of the default |\n");
      fmt::print("| --- | --- | --- | --- | --- | --- |\n");
      for (const auto& p : e.params)
        fmt::print("| {} | {} | {} | {} | {} | {} |\n", code(group.key_path(e.name, p.name)), cell(p.unit),
                   p.default_value.empty() ? "required" : code(p.default_value), cell(p.range), cell(p.summary),
                   cell(p.source));
    }
  }
  fmt::print(
      "\n## parameter sets (`models.params`, `--params`)\n\n"
      "A parameter set fills in every `models:` value the scenario does not set itself.\n\n"
      "| name | file | source |\n| --- | --- | --- |\n");
  for (const auto& preset : params_preset_docs())
    fmt::print("| `{}` | {} | {} |\n", preset.name, preset.file, cell(preset.source));
  fmt::print(
      "\n## GPU presets (`gpu:`)\n\n"
      "What a topology's `gpu:` sets: datasheet peaks, memory and L2 (0 = not modelled), from topologies/gpus.cpp.\n\n"
      "| gpu | dense BF16 | HBM bandwidth | memory | L2 | other dense peaks |\n| --- | --- | --- | --- | --- | --- "
      "|\n");
  for (const auto& gpu : topologies::gpu_presets()) {
    std::vector<std::string> peaks;
    for (const auto& [dtype, rate] : gpu.dense_peak) peaks.push_back(fmt::format("{} {}", to_string(dtype), rate));
    fmt::print("| `{}` | {} | {} | {} | {} | {} |\n", gpu.model, gpu.dense_bf16, gpu.hbm_bandwidth, gpu.memory, gpu.l2,
               fmt::join(peaks, ", "));
  }
}

}  // namespace

int run_command(const RunOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto doc = load_document(options.scenario);
  auto sets = options.sets;
  if (options.full) sets.emplace_back("fold=false");
  if (options.allow_oversubscribe) {
    const auto workloads = doc->root().maybe_child("workloads");
    const auto items = workloads && workloads->is_sequence() ? workloads->elements() : std::vector<ConfigNode>{};
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].is_map() && items[i].has("type") && items[i].child("type").is_scalar() &&
          items[i].child("type").scalar() == "training")
        sets.push_back(fmt::format("workloads[{}].memory.allow_oversubscribe=true", i));
    if (sets.size() == options.sets.size() + (options.full ? 1 : 0))
      throw_input_error({"--allow-oversubscribe", 0, 0}, "",
                        "the scenario has no training workload: only a training plan's memory is checked");
  }
  apply_overrides(*doc, sets, options.seed, options.params);
  return run_document(doc, options, started);
}

int run_document(const std::shared_ptr<ConfigDocument>& doc, const RunOptions& options,
                 std::chrono::steady_clock::time_point started) {
  auto scenario = workloads::Scenario::load(doc);
  const std::string_view command = options.command;
  // Refused up front rather than killed part way: the estimate against --max-memory (scenario/limits.hpp).
  auto programs = scenario.take_programs();
  auto folding = scenario.folding(programs);
  const bool timeline = !options.out.empty() && (scenario.timeline() || options.timeline);
  const auto files = options.out.empty() ? workloads::RunFiles::none
                     : timeline          ? workloads::RunFiles::reports_and_timeline
                                         : workloads::RunFiles::reports;
  const auto estimate = workloads::estimate_memory(scenario.fabric(), programs, &folding.folding, files);
  // More actors than the memory maps allow with a guard page under each stack: without them, unless asked for.
  std::vector<std::string> engine = options.engine;
  const bool unguarded = estimate.actors > max_actors() && !guard_pages_asked(engine);
  if (unguarded) engine.emplace_back(UNGUARDED_STACKS);
  workloads::check_memory(estimate, workloads::memory_limit(options.max_memory),
                          options.scenario.empty() ? DEFAULT_SCENARIO_NAME : options.scenario,
                          max_actors(std::nullopt, guard_pages_asked(engine).value_or(1) > 0));
  if (unguarded)  // said once the run is sure to start
    fmt::print(stderr,
               "{}: note: {} actors at once are more than the {} that vm.max_map_count allows with a guard page under "
               "each stack: their stacks run without guard pages ({})\n",
               command, grouped(estimate.actors), grouped(max_actors()), UNGUARDED_STACKS);
  std::optional<studies::OutputDir> out;
  if (!options.out.empty()) out.emplace(options.out);
  if (timeline) {
    // Said before the run, which may take long, so that a user can stop it and choose GPUs instead.
    std::uint64_t ops = 0;
    for (std::size_t r = 0; r < programs.size(); ++r)
      if (folding.folding.simulated(static_cast<int>(r)) &&
          (scenario.timeline_gpus().empty() || std::ranges::count(scenario.timeline_gpus(), static_cast<int>(r)) > 0))
        ops += workloads::expanded_size(programs[r].ops);  // a folded rank has no records
    if (const auto warning = workloads::timeline_warning(ops); !warning.empty())
      fmt::print(stderr, "{}: warning: {}\n", command, warning);
  }
  // Before the run, which may take long: what the results will not show by themselves.
  for (const auto& note : scenario.notes()) fmt::print(stderr, "{}: note: {}\n", command, note);
  const auto& fabric = scenario.fabric();
  const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
  if (!options.quiet)
    fmt::print("# snsim {}: {} x {} ({} devices, {} channels), seed {}\n", scenario.name(), fabric.gpus().size(),
               gpu.model, fabric.device_count(), fabric.channel_count(), scenario.seed());

  const Report report = scenario.run(std::move(programs), std::move(folding), engine,
                                     show_progress(options.progress, options.quiet) ? command : std::string_view{});

  if (!options.quiet) {
    for (const auto& t : report.tables) fmt::print("{}\n", format_table(t));
    if (std::ranges::any_of(report.waits, [](const RankWaits& w) { return w.waiting > Seconds{0}; }))
      fmt::print("{}\n", format_table(workloads::waits_table(report.waits)));
    fmt::print("# simulated time: {}   ops: {}   outcome: {}\n", report.simulated_time, report.ops.size(),
               report.outcome);
  }
  if (out) {
    out->write("report.json", report.to_json().dump(1) + "\n");
    out->write("report.csv", report.ops_csv());
    if (timeline) out->write("timeline.json", report.timeline(scenario.timeline_gpus()).dump() + "\n");
  }
  // Measured last, so that the run record includes the cost of writing the report.
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const RunRecord run = RunRecord::measure(wall);
  if (out) out->write("run.json", run.to_json().dump(1) + "\n");
  if (!options.quiet)
    fmt::print("# wall time: {:.3f} s   peak memory: {:.1f} MiB (estimated {}){}\n", run.wall_time_s,
               run.peak_memory_mib, estimate.total, out ? fmt::format("   wrote {}", out->path().string()) : "");
  // A broken invariant is our bug (exit 3); a deadlock is the scenario's (its programs wait for something that
  // never comes: exit 2, like other bad input, the message naming what each stuck rank waits for); a lost GPU is
  // the what-if's end (exit 4: the simulated system failed, and the report says how).
  for (const auto& violation : report.invariants.violations)
    fmt::print(stderr, "internal error: invariant violated: {}\n", violation);
  if (!report.invariants.violations.empty()) return EXIT_INTERNAL_ERROR;
  if (report.outcome.starts_with("deadlock:")) {
    std::cout.flush();
    fmt::print(stderr, "{}\n", report.outcome);
    return EXIT_BAD_INPUT;
  }
  return report.outcome == "completed" ? EXIT_OK : EXIT_SYSTEM_FAILURE;
}

int info_command(bool markdown) {
  if (markdown)
    print_markdown();
  else
    print_text();
  return 0;
}

struct TopoOptions {
  std::string scenario;
  std::vector<std::string> sets;
  bool summary = false;            // counts by kind instead of every device and channel
  std::vector<std::string> route;  // two device names; default gpu0 -> gpu1
};

void print_route(const Fabric& f, DeviceId from, DeviceId to) {
  const auto r = f.route(from, to);
  if (!r) {
    fmt::print("# route {} -> {}: not connected\n", f.device(from).name, f.device(to).name);
    return;
  }
  const RouteCost cost = f.cost(*r);
  fmt::print("# route {} -> {}: {} hops, latency {}, bottleneck {}\n", f.device(from).name, f.device(to).name,
             r->hops.size(), cost.latency, cost.bottleneck);
  for (const auto& hop : r->hops) {
    BytesPerSecond bw{0};
    for (auto c : hop.channels) bw = bw + f.channel(c).bandwidth();
    fmt::print("  {:<40} {} channels, {}\n", Simulation::hop_name(f, hop), hop.channels.size(), bw);
  }
}

int topo_command(const TopoOptions& o) {
  auto doc = load_document(o.scenario);
  apply_overrides(*doc, o.sets, std::nullopt);
  const auto scenario = workloads::Scenario::load(doc);
  const Fabric& f = scenario.fabric();
  // Checked before anything is printed, so that a misspelt name ends in one line.
  std::vector<DeviceId> ends;
  for (const auto& name : o.route) {
    const auto id = f.find(name);
    if (!id)
      throw_input_error({"--route", 0, 0}, "",
                        fmt::format("no device '{}' in this fabric (names as `snsim topo` lists them: gpu0, nvswitch0, "
                                    "host, ...)",
                                    name));
    ends.push_back(*id);
  }
  fmt::print("# {}: {} devices, {} channels (one per direction)\n", scenario.name(), f.device_count(),
             f.channel_count());
  if (o.summary) {
    std::map<std::string, int> devices;
    std::map<std::string, std::pair<int, BytesPerSecond>> channels;
    for (auto v : f.devices()) ++devices[std::string(to_string(f.device(v).kind))];
    for (auto e : f.channels()) {
      auto& [count, bandwidth] = channels[std::string(to_string(f.channel(e).kind))];
      ++count;
      bandwidth = bandwidth + f.channel(e).bandwidth();
    }
    fmt::print("# devices by kind\n");
    for (const auto& [kind, count] : devices) fmt::print("  {:<12} {}\n", kind, count);
    fmt::print("# channels by kind (one per direction; bandwidth summed)\n");
    for (const auto& [kind, c] : channels) fmt::print("  {:<12} {:>8}  {}\n", kind, c.first, c.second);
  } else {
    fmt::print("# devices\n");
    for (auto v : f.devices()) {
      const Device& d = f.device(v);
      std::string what{to_string(d.kind)};
      if (d.gpu)
        what = fmt::format("gpu {}: {} dense bf16, HBM {} ({})", d.gpu->model, d.gpu->dense_bf16, d.gpu->hbm_bandwidth,
                           d.gpu->memory);
      fmt::print("  {:<12} {:<60} out {}\n", d.name, what, f.egress_bandwidth(v));
    }
    fmt::print("# channels (bandwidth per direction)\n");
    for (auto e : f.channels()) {
      const Channel& c = f.channel(e);
      fmt::print("  {:>12} -> {:<12} {:<7} {:>2} x {:<10} = {:<12} latency {}\n", f.device(f.source(e)).name,
                 f.device(f.target(e)).name, to_string(c.kind), c.lanes, c.lane_bandwidth, c.bandwidth(), c.latency);
    }
  }
  if (ends.size() == 2)
    print_route(f, ends[0], ends[1]);
  else if (f.gpus().size() >= 2)
    print_route(f, f.gpus()[0], f.gpus()[1]);
  // One search per GPU (up to 512 of them, evenly spread), so that 4,096-GPU fabrics print in seconds.
  const auto hops = f.gpu_hop_counts();
  fmt::print(
      "# GPU-to-GPU hop count: min {}, max {}{}\n", hops.min, hops.max,
      hops.sources < f.gpus().size() ? fmt::format(" (routes from {} of {} GPUs)", hops.sources, f.gpus().size()) : "");
  fmt::print("# bisection bandwidth (first half of the GPUs to the second, one direction): {}\n",
             f.bisection_bandwidth());
  return 0;
}

void add_run_command(CommandLine& cli) {
  auto run = std::make_shared<RunOptions>();
  auto& cmd = cli.add("run", "simulate a scenario (the embedded 8xH200 default when none is given)",
                      [run] { return run_command(*run); });
  cmd.add_option("scenario", run->scenario, "scenario YAML file");
  auto* out = cmd.add_option("--out", run->out, "write report.json, report.csv, run.json (and timeline.json) here");
  cmd.add_option("--seed", run->seed, "override the scenario's seed");
  cmd.add_option("--params", run->params,
                 "calibrated parameters: a file from `snsim calibrate`, or a preset (h200, h100, gb200)");
  cmd.add_option("--set", run->sets, "override one value: key.path=value (YAML scalar), repeatable");
  cmd.add_option("--engine", run->engine, "pass an option to SimGrid, e.g. --engine=--log=snsim_runner.thres:debug");
  cmd.add_option("--max-memory", run->max_memory,
                 "refuse a scenario whose estimated memory is above this size, e.g. 8GiB (default: "
                 "SNSIM_MAX_MEMORY, else 3/4 of the machine's memory)");
  cmd.add_flag("--quiet", run->quiet, "print nothing; write only the --out files");
  cmd.add_flag("--allow-oversubscribe", run->allow_oversubscribe,
               "simulate a training plan that does not fit in HBM (every training workload's "
               "memory.allow_oversubscribe); the report still says it does not fit (fits: 0)");
  cmd.add_flag("--full", run->full,
               "simulate every rank's program, folding no replicas (fold: false; docs/folding.md)");
  cmd.add_flag("--progress", run->progress,
               "a progress line on stderr (simulated time, ops done, ETA), also when stderr is not a terminal");
  cmd.add_flag("--timeline", run->timeline,
               "also write timeline.json (Perfetto / Chrome trace) into --out, as `output: {timeline: true}` does")
      ->needs(out);
}

void add_info_command(CommandLine& cli) {
  auto markdown = std::make_shared<bool>(false);
  auto& cmd = cli.add("info", "list every topology, model and workload with parameters and defaults",
                      [markdown] { return info_command(*markdown); });
  cmd.add_flag("--markdown", *markdown, "print the scenario reference as Markdown (docs/reference/parameters.md)");
}

void add_topo_command(CommandLine& cli) {
  auto topo = std::make_shared<TopoOptions>();
  auto& cmd = cli.add("topo", "print a scenario's fabric: devices, channels, routes, bisection",
                      [topo] { return topo_command(*topo); });
  cmd.add_option("scenario", topo->scenario, "scenario YAML file (default: the embedded default)");
  cmd.add_option("--set", topo->sets, "override one value: key.path=value");
  cmd.add_flag("--summary", topo->summary, "devices and channels counted by kind instead of listed (large fabrics)");
  cmd.add_option("--route", topo->route, "the route between two devices, e.g. --route gpu0 gpu9 (default gpu0 gpu1)")
      ->expected(2);
}

}  // namespace snsim::tools
