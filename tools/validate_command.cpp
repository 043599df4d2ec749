#include "tools/validate_command.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/files.hpp"
#include "studies/inputs.hpp"
#include "studies/python.hpp"
#include "tools/command_line.hpp"
#include "validation/calibrate.hpp"
#include "validation/importers/import.hpp"
#include "validation/twins.hpp"
#include "validation/validate.hpp"

namespace snsim::tools {

extern const char* const DEFAULT_BOUNDS;  // validation/bounds.yaml, compiled in

namespace {

namespace fs = std::filesystem;
using validation::FamilySummary;

std::string percent(double fraction) {
  return fmt::format("{:.1f} %", 100 * fraction);
}

std::string bound_text(const FamilySummary& f) {
  if (!f.has_bound) return "-";
  std::string text;
  if (f.bound.median) text += "median " + percent(*f.bound.median);
  if (f.bound.max) text += (text.empty() ? "" : ", ") + std::string("max ") + percent(*f.bound.max);
  return text;
}

/// --platform and --set, shared by validate and calibrate.
struct PlatformOptions {
  std::string scenario;
  std::vector<std::string> sets;
  validation::PlatformChoice choice() const {
    validation::PlatformChoice c;
    if (!scenario.empty()) c.scenario_file = scenario;
    c.sets = sets;
    return c;
  }
};

void add_platform_options(CLI::App& command, PlatformOptions& o) {
  command.add_option("--platform", o.scenario,
                     "a scenario file whose topology: is the platform (instead of the one read from the traces)");
  command
      .add_option("--set", o.sets,
                  "complete or override the platform read from the traces: gpu=PRESET, nodes=N, "
                  "gpus_per_node=M, topology.KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
}

std::string error_text(const FamilySummary& f, double value) {
  return f.validation_count + f.calibration_count == 0 ? "-" : percent(value);
}

struct ValidateOptions {
  std::vector<std::string> traces;
  PlatformOptions platform;
  std::string params;
  std::string bounds;
  std::string out;
  int samples = 5;
  bool verbose = false;
  bool progress = false;
};

int run_validate(const ValidateOptions& o) {
  const auto traces = read_traces(o.traces);
  auto bounds = o.bounds.empty() ? validation::load_bounds(DEFAULT_BOUNDS, "validation/bounds.yaml")
                                 : validation::load_bounds(read_file(o.bounds), o.bounds);
  bounds.judge_imported = !o.bounds.empty();
  validation::TwinOptions options;
  options.platform = o.platform.choice();
  if (!o.params.empty()) options.params = o.params;
  options.max_samples = o.samples;
  if (show_progress(o.progress)) options.progress = "snsim validate";
  auto result = validation::validate(traces, bounds, options);
  for (const auto& t : traces)
    if (!validation::imported_source(t).empty())
      std::cout << fmt::format("{}: simulated on {}\n", t.source,
                               validation::platform_of(t, options.platform).description);
  // A family whose capture failed part way is validated on the records it has, and marked incomplete.
  for (const auto& trace : traces)
    for (const auto& failure : trace.failures) {
      std::cerr << fmt::format("warning: {}:{}: family {} failed during the capture, its records are incomplete: {}\n",
                               trace.source, failure.line, failure.family, failure.error);
      for (auto& f : result.families)
        if (f.family == failure.family)
          f.note += fmt::format("{}INCOMPLETE: the capture failed ({}:{})", f.note.empty() ? "" : "; ", trace.source,
                                failure.line);
    }

  if (o.verbose) {
    std::cout << fmt::format("{:<34} {:<12} {:<9} {:>10} {:>14} {:>14} {:>8}\n", "record", "use", "statistic", "size",
                             "measured", "predicted", "error");
    for (const auto& c : result.comparisons)
      std::cout << fmt::format("{:<34} {:<12} {:<9} {:>10} {:>14.6g} {:>14.6g} {:>+7.1f}%\n",
                               fmt::format("{}/{}", c.test, c.variant), to_string(c.use), c.statistic,
                               to_string(c.bytes), c.measured, c.predicted, 100 * c.error);
    std::cout << '\n';
  }
  std::cout << fmt::format("{:<22} {:>10} {:>11} {:>7}  {:>13} {:>10}  {:<22} {}\n", "family", "validation",
                           "calibration", "skipped", "median |err|", "max |err|", "bound", "result");
  for (const auto& f : result.families) {
    const std::string verdict =
        !f.has_bound ? (f.imported ? "not judged (no --bounds)" : "not checked") : (f.pass ? "PASS" : "FAIL");
    std::cout << fmt::format("{:<22} {:>10} {:>11} {:>7}  {:>13} {:>10}  {:<22} {}\n",
                             f.imported ? f.family + " (imported)" : f.family, f.validation_count, f.calibration_count,
                             f.skipped, error_text(f, f.median_abs_error), error_text(f, f.max_abs_error),
                             bound_text(f), verdict);
    if (f.known_misses > 0)
      std::cout << fmt::format(
          "    {} known misses left out of the check (validation/bounds.yaml): max |err| with "
          "them {}\n",
          f.known_misses, percent(f.max_abs_error_all));
    if (f.imported)
      for (const auto& [reason, n] : f.skipped_reasons) std::cout << fmt::format("    no twin ({}): {}\n", n, reason);
    else if (!f.note.empty())
      std::cout << fmt::format("    {}\n", f.note);
  }
  // Per timing method where the traces used more than one way to time (snsim-crosscheck's files): a model term
  // that means one thing under every method has the same error under each.
  const bool several_methods = std::ranges::any_of(
      result.methods, [&](const validation::MethodSummary& m) { return m.method != result.methods.front().method; });
  if (several_methods) {
    std::cout << fmt::format("\n{:<22} {:<24} {:>10}  {:>13} {:>10}\n", "family", "timing method", "validation",
                             "median |err|", "max |err|");
    for (const auto& m : result.methods)
      std::cout << fmt::format("{:<22} {:<24} {:>10}  {:>13} {:>10}\n", m.family, m.method, m.validation_count,
                               percent(m.median_abs_error), percent(m.max_abs_error));
  }
  if (!result.tests.empty()) {
    std::cout << fmt::format("\n{:<18} {:<40} {:>8} {:>8}  {:>13} {:>10}\n", "tool", "test", "records", "no twin",
                             "median |err|", "max |err|");
    for (const auto& t : result.tests) {
      const bool any = t.records > 0;
      std::cout << fmt::format("{:<18} {:<40} {:>8} {:>8}  {:>13} {:>10}\n", t.source, t.test, t.records, t.skipped,
                               any ? percent(t.median_abs_error) : "-", any ? percent(t.max_abs_error) : "-");
      for (const auto& w : t.worst) std::cout << fmt::format("    worst: {}\n", w);
    }
  }
  if (!o.out.empty()) {
    studies::OutputDir out(o.out);  // one run at a time into one folder, what an earlier one listed removed first
    out.write("validation.json", result.to_json().dump(1) + "\n");
    out.write("validation.csv", result.to_csv());
    std::cout << fmt::format("wrote {}/validation.json and validation.csv\n", o.out);
    // Plots are for looking, not part of pass/fail: without matplotlib, one line says so.
    const std::string plots = (fs::path(o.out) / "plots").string();
    const auto drawn = studies::run_plot_script(
        "plot_validation.py", {(fs::path(o.out) / "validation.json").string(), "--out", plots, "--quiet"});
    if (drawn.status == 0)
      std::cout << fmt::format("wrote plots into {}\n", plots);
    else
      std::cout << fmt::format("no plots: {}\n", drawn.status
                                                     ? fmt::format("plot_validation.py exited with {}", *drawn.status)
                                                     : drawn.problem);
  }
  const bool judged = std::ranges::any_of(result.families, [](const FamilySummary& f) { return f.has_bound; });
  const bool imported = std::ranges::any_of(result.families, [](const FamilySummary& f) { return f.imported; });
  if (imported && !judged)
    std::cout << "compared only: other tools' output is judged against bounds with --bounds FILE\n";
  else
    std::cout << (result.pass ? "validation passed\n" : "validation FAILED: a family crossed its bound\n");
  return result.pass ? 0 : 1;
}

struct CalibrateOptions {
  std::vector<std::string> traces;
  PlatformOptions platform;
  std::string out;
};

int run_calibrate(const CalibrateOptions& o, const std::string& command) {
  const auto traces = read_traces(o.traces);
  const auto calibration = validation::calibrate(traces, o.platform.choice());
  const std::string yaml = calibration.to_yaml(command);
  // The file must read back as a parameter file: a fit that writes something the models refuse is a bug here.
  validation::check_params(yaml, o.out);
  write_file(o.out, yaml);
  for (const auto& p : calibration.parameters)
    std::cout << fmt::format("{:<28} {:<18} ({} records)\n", p.key,
                             p.value.size() > 18 ? p.value.substr(0, 15) + "..." : p.value, p.records.size());
  for (const auto& n : calibration.notes) std::cout << "note: " << n << '\n';
  std::cout << fmt::format("wrote {}: {} parameters from {} traces\n", o.out, calibration.parameters.size(),
                           traces.size());
  return 0;
}

}  // namespace

std::vector<validation::Trace> read_traces(const std::vector<std::string>& paths) {
  std::vector<validation::Trace> traces;
  for (const auto& path : paths) {
    if (!fs::is_directory(path)) {
      traces.push_back(validation::import_any(path));
      continue;
    }
    // A folder: every file in a format snsim reads (a user's logs, .txt, .log, .json, as well as .jsonl traces);
    // others (a README) are named on stderr and left out.
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::ranges::sort(files);
    const std::size_t before = traces.size();
    for (const auto& f : files) {
      if (f.extension() != ".jsonl" && !validation::sniff_format(read_file(f.string()))) {
        std::cerr << fmt::format("note: {}: not a format snsim reads ({}), left out\n", f.string(),
                                 validation::known_format_names());
        continue;
      }
      traces.push_back(validation::import_any(f));
    }
    if (traces.size() == before) throw_input_error({path, 0, 0}, "", "the folder holds no trace or tool output");
  }
  return traces;
}

void add_validation_commands(CommandLine& cli) {
  auto v = std::make_shared<ValidateOptions>();
  auto& validate =
      cli.add("validate", "simulate the twin of every trace record; print measured, predicted and error per family",
              [v] { return run_validate(*v); });
  validate.add_option("traces", v->traces, "traces or tool output (nccl-tests, nvbandwidth, ...), files or folders")
      ->required();
  add_platform_options(validate, v->platform);
  validate.add_option("--params", v->params, "calibrated parameters (a file from `snsim calibrate`, or h200)");
  validate.add_option("--bounds", v->bounds,
                      "per-family error bounds (default: validation/bounds.yaml, which judges only snsim-probe "
                      "traces; given, it judges imported tool output too)");
  validate.add_option("--out", v->out, "write validation.json and validation.csv here");
  validate.add_option("--samples", v->samples, "simulated samples per record (jitter records: all)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  validate.add_flag("--verbose,-v", v->verbose, "print every comparison");
  validate.add_flag("--progress", v->progress,
                    "a progress line on stderr per simulation, also when stderr is not a terminal");

  auto c = std::make_shared<CalibrateOptions>();
  auto& calibrate =
      cli.add("calibrate", "fit model parameters on the calibration records of traces; write a parameter file", [c] {
        std::string command = "snsim calibrate";
        for (const auto& t : c->traces) command += " " + t;
        return run_calibrate(*c, command);
      });
  calibrate.add_option("traces", c->traces, "traces or tool output (nccl-tests, nvbandwidth, ...), files or folders")
      ->required();
  add_platform_options(calibrate, c->platform);
  calibrate.add_option("-o,--out", c->out, "the parameter file to write (YAML)")->required();
}

}  // namespace snsim::tools
