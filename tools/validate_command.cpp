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

struct ValidateOptions {
  std::vector<std::string> traces;
  std::string params;
  std::string bounds;
  std::string out;
  int samples = 5;
  bool verbose = false;
};

int run_validate(const ValidateOptions& o) {
  const auto traces = read_traces(o.traces);
  const auto bounds = o.bounds.empty() ? validation::load_bounds(DEFAULT_BOUNDS, "validation/bounds.yaml")
                                       : validation::load_bounds(read_file(o.bounds), o.bounds);
  validation::TwinOptions options;
  if (!o.params.empty()) options.params = o.params;
  options.max_samples = o.samples;
  auto result = validation::validate(traces, bounds, options);
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
  std::cout << fmt::format("{:<11} {:>10} {:>11} {:>7}  {:>13} {:>10}  {:<22} {}\n", "family", "validation",
                           "calibration", "skipped", "median |err|", "max |err|", "bound", "result");
  for (const auto& f : result.families) {
    const std::string verdict = !f.has_bound ? "not checked" : (f.pass ? "PASS" : "FAIL");
    std::cout << fmt::format("{:<11} {:>10} {:>11} {:>7}  {:>13} {:>10}  {:<22} {}\n", f.family, f.validation_count,
                             f.calibration_count, f.skipped, percent(f.median_abs_error), percent(f.max_abs_error),
                             bound_text(f), verdict);
    if (f.known_misses > 0)
      std::cout << fmt::format(
          "    {} known misses left out of the check (validation/bounds.yaml): max |err| with "
          "them {}\n",
          f.known_misses, percent(f.max_abs_error_all));
    if (!f.note.empty()) std::cout << fmt::format("    {}\n", f.note);
  }
  if (!o.out.empty()) {
    studies::make_output_dir(o.out);
    write_file(fs::path(o.out) / "validation.json", result.to_json().dump(1) + "\n");
    write_file(fs::path(o.out) / "validation.csv", result.to_csv());
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
  std::cout << (result.pass ? "validation passed\n" : "validation FAILED: a family crossed its bound\n");
  return result.pass ? 0 : 1;
}

struct CalibrateOptions {
  std::vector<std::string> traces;
  std::string out;
};

int run_calibrate(const CalibrateOptions& o, const std::string& command) {
  const auto traces = read_traces(o.traces);
  const auto calibration = validation::calibrate(traces);
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
    if (fs::is_directory(path)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".jsonl") files.push_back(entry.path());
      std::ranges::sort(files);
      if (files.empty()) throw_input_error({path, 0, 0}, "", "the folder holds no .jsonl trace");
      for (const auto& f : files) traces.push_back(validation::import_any(f));
    } else {
      traces.push_back(validation::import_any(path));
    }
  }
  return traces;
}

void add_validation_commands(CommandLine& cli) {
  auto v = std::make_shared<ValidateOptions>();
  auto& validate =
      cli.add("validate", "simulate the twin of every trace record; print measured, predicted and error per family",
              [v] { return run_validate(*v); });
  validate.add_option("traces", v->traces, "trace files or folders of .jsonl traces")->required();
  validate.add_option("--params", v->params, "calibrated parameters (a file from `snsim calibrate`, or h200)");
  validate.add_option("--bounds", v->bounds, "per-family error bounds (default: validation/bounds.yaml)");
  validate.add_option("--out", v->out, "write validation.json and validation.csv here");
  validate.add_option("--samples", v->samples, "simulated samples per record (jitter records: all)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  validate.add_flag("--verbose,-v", v->verbose, "print every comparison");

  auto c = std::make_shared<CalibrateOptions>();
  auto& calibrate =
      cli.add("calibrate", "fit model parameters on the calibration records of traces; write a parameter file", [c] {
        std::string command = "snsim calibrate";
        for (const auto& t : c->traces) command += " " + t;
        return run_calibrate(*c, command);
      });
  calibrate.add_option("traces", c->traces, "trace files or folders of .jsonl traces")->required();
  calibrate.add_option("-o,--out", c->out, "the parameter file to write (YAML)")->required();
}

}  // namespace snsim::tools
