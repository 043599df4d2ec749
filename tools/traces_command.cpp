#include "tools/traces_command.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/error.hpp"
#include "sim/files.hpp"
#include "studies/inputs.hpp"
#include "studies/python.hpp"
#include "tools/command_line.hpp"
#include "validation/importers/import.hpp"
#include "validation/validate.hpp"

namespace snsim::tools {

namespace {

namespace fs = std::filesystem;
using validation::Family;
using validation::MeasureUnit;
using validation::Trace;
using validation::TraceRecord;

std::string or_unknown(const std::string& text) {
  return text.empty() ? "unknown" : text;
}

std::string extra_string(const validation::Json& extra, const char* key) {
  const auto it = extra.find(key);
  return it != extra.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// "8 x NVIDIA H200" per distinct GPU name, in index order.
std::string gpu_list(const std::vector<validation::TraceGpu>& gpus) {
  if (gpus.empty()) return "unknown";
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& gpu : gpus) {
    if (!counts.empty() && counts.back().first == gpu.name)
      ++counts.back().second;
    else
      counts.emplace_back(gpu.name, 1);
  }
  std::vector<std::string> parts;
  for (const auto& [name, count] : counts) parts.push_back(fmt::format("{} x {}", count, name));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string record_label(const TraceRecord& r) {
  return r.variant.empty() ? r.test : r.test + "/" + r.variant;
}

/// The representative numbers of one family: the highest data rate (validation::record_rate), the highest bus
/// bandwidth where records carry one (collectives), and the lowest median time.
std::string representative(const std::vector<const TraceRecord*>& records) {
  const TraceRecord* fastest = nullptr;
  BytesPerSecond fastest_rate{0};
  const TraceRecord* best_bus = nullptr;
  double best_busbw = 0;
  const TraceRecord* quickest = nullptr;
  for (const TraceRecord* r : records) {
    if (const auto rate = validation::record_rate(*r); rate && (!fastest || *rate > fastest_rate)) {
      fastest = r;
      fastest_rate = *rate;
    }
    if (const auto it = r->extra.find("busbw"); it != r->extra.end() && it->is_number()) {
      if (!best_bus || it->get<double>() > best_busbw) {
        best_bus = r;
        best_busbw = it->get<double>();
      }
    }
    if (r->unit == MeasureUnit::seconds && (!quickest || r->median < quickest->median)) quickest = r;
  }
  std::vector<std::string> parts;
  if (fastest)
    parts.push_back(
        fmt::format("peak {} ({}, {})", to_string(fastest_rate), record_label(*fastest), to_string(fastest->bytes)));
  if (best_bus)
    parts.push_back(
        fmt::format("peak busbw {} ({})", to_string(BytesPerSecond{best_busbw}), to_string(best_bus->bytes)));
  if (quickest)
    parts.push_back(fmt::format("lowest {} ({}, {})", quickest->format_value(quickest->median), record_label(*quickest),
                                to_string(quickest->bytes)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

int show(const std::vector<std::string>& files) {
  int exit_code = 0;
  bool first = true;
  for (const std::string& file : files) {
    try {
      const Trace trace = validation::import_any(file);
      if (!first) std::cout << '\n';
      first = false;
      std::cout << trace_summary(trace);
      // A family that failed part way is a warning: its records up to the failure are valid and shown above.
      for (const auto& f : trace.failures)
        std::cerr << fmt::format("warning: {}:{}: family {} failed during the capture: {}\n", trace.source, f.line,
                                 f.family, f.error);
    } catch (const InputError& e) {
      std::cerr << e.what() << '\n';
      exit_code = 2;
    }
  }
  return exit_code;
}

int plot(const std::string& file, const std::string& out_dir, const std::string& image_format) {
  const std::string text = read_file(file);
  const Trace trace = validation::import_text(text, file);  // validates before anything is drawn
  studies::make_output_dir(out_dir);
  // The script reads snsim traces only: other formats are converted first, and the conversion is kept.
  std::string jsonl = file;
  if (validation::sniff_format(text) != validation::TraceFormat::snsim_trace) {
    jsonl = (fs::path(out_dir) / (fs::path(file).stem().string() + ".jsonl")).string();
    validation::write_trace_file(trace, jsonl);
    std::cout << fmt::format("wrote {} (converted to an snsim trace)\n", jsonl) << std::flush;
  }
  const studies::ScriptRun run =
      studies::run_plot_script("plot_trace.py", {jsonl, "--out", out_dir, "--format", image_format});
  if (!run.status) {
    std::cerr << fmt::format("snsim traces plot: {}\n", run.problem);
    return 3;
  }
  return *run.status == 0 ? 0 : (*run.status == 2 ? 2 : 3);
}

int import_to_snsim(const std::string& file, const std::string& out_file, const validation::ImportOptions& options) {
  const Trace trace = validation::import_any(file, options);
  validation::write_trace_file(trace, out_file);
  for (const std::string& note : trace.notes) std::cerr << "note: " << note << '\n';
  std::cout << fmt::format("wrote {}: {} records{}\n", out_file, trace.records.size(),
                           trace.complete ? "" : " (incomplete)");
  return 0;
}

}  // namespace

std::string trace_summary(const Trace& trace) {
  const auto& h = trace.header;
  std::vector<std::string> failed;
  for (const auto& f : trace.failures) failed.push_back(f.family);
  const std::string state = trace.complete           ? "complete"
                            : trace.failures.empty() ? "INCOMPLETE (capture cut short?)"
                                                     : fmt::format("INCOMPLETE ({} failed)", fmt::join(failed, ", "));
  std::string out = fmt::format("{}: {}, {} records\n", trace.source, state, trace.records.size());
  const std::string source = extra_string(h.extra, "source");
  const std::string source_version = extra_string(h.extra, "source_version");
  const std::string made_by = source.empty() ? fmt::format("snsim-probe {}", or_unknown(h.probe))
                                             : fmt::format("{} {}", source, or_unknown(source_version));
  out += fmt::format("  from     {}\n", made_by);
  out += fmt::format("  host     {}   started {}\n", or_unknown(h.host), or_unknown(h.started));
  out += fmt::format("  gpus     {}\n", gpu_list(h.gpus));
  out += fmt::format("  driver   {}   cuda {}   nccl {}   nvshmem {}\n", or_unknown(h.driver), or_unknown(h.cuda),
                     or_unknown(h.nccl), or_unknown(h.nvshmem));
  if (!source.empty()) {
    // What `snsim validate` would simulate it on, or what the file leaves for the user to say.
    try {
      out += fmt::format("  platform {}\n", validation::platform_of(trace).description);
    } catch (const InputError& e) {
      out += fmt::format("  platform not known from the file: {}\n", e.what());
    }
  }
  for (const std::string& note : trace.notes) out += fmt::format("  note: {}\n", note);
  if (trace.records.empty()) return out;

  out += fmt::format("  {:<11} {:>7} {:>5}  {:<21} {}\n", "family", "records", "tests", "sizes", "representative");
  for (Family family : validation::all_families()) {
    std::vector<const TraceRecord*> records;
    std::set<std::string> tests;
    for (const TraceRecord& r : trace.records) {
      if (r.family != family) continue;
      records.push_back(&r);
      tests.insert(r.test);
    }
    if (records.empty()) continue;
    const auto [smallest, largest] = std::minmax_element(
        records.begin(), records.end(), [](const TraceRecord* a, const TraceRecord* b) { return a->bytes < b->bytes; });
    const std::string sizes =
        (*smallest)->bytes == (*largest)->bytes
            ? to_string((*smallest)->bytes)
            : fmt::format("{} .. {}", to_string((*smallest)->bytes), to_string((*largest)->bytes));
    out += fmt::format("  {:<11} {:>7} {:>5}  {:<21} {}\n", to_string(family), records.size(), tests.size(), sizes,
                       representative(records));
  }
  return out;
}

void add_traces_command(CommandLine& cli) {
  CLI::App& traces = cli.add_group("traces", "Look at captured or imported measurement traces");

  auto files = std::make_shared<std::vector<std::string>>();
  auto& show_cmd = cli.add(
      "show", "Summarise traces: header, completeness, records per family", [files] { return show(*files); }, &traces);
  show_cmd.add_option("files", *files, "trace files (snsim JSONL or any importable format)")->required();

  struct PlotOptions {
    std::string file;
    std::string out = "trace-plots";
    std::string format = "png";
  };
  auto p = std::make_shared<PlotOptions>();
  auto& plot_cmd = cli.add(
      "plot", "Draw bandwidth-against-size curves and latency distributions",
      [p] { return plot(p->file, p->out, p->format); }, &traces);
  plot_cmd.add_option("file", p->file, "trace file (snsim JSONL or any importable format)")->required();
  plot_cmd.add_option("--out", p->out, "folder for the images")->capture_default_str();
  plot_cmd.add_option("--format", p->format, "image format")
      ->capture_default_str()
      ->check(CLI::IsMember({"png", "svg"}));

  struct ImportCommand {
    std::string file;
    std::string out;
    validation::ImportOptions options;
  };
  auto i = std::make_shared<ImportCommand>();
  auto& import_cmd = cli.add(
      "import", "Convert nccl-tests, nvbandwidth, p2pBandwidthLatencyTest or perftest output",
      [i] { return import_to_snsim(i->file, i->out, i->options); }, &traces);
  import_cmd.add_option("file", i->file, "output of a benchmark tool")->required();
  import_cmd.add_option("--out", i->out, "the snsim trace to write (.jsonl)")->required();
  import_cmd.add_option("--op", i->options.collective,
                        "the nccl-tests collective (all_reduce, all_gather, ...) of a log that does not name it");
}

}  // namespace snsim::tools
