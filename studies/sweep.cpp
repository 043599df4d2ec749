#include "studies/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/error.hpp"
#include "sim/files.hpp"
#include "sim/isolated.hpp"
#include "studies/inputs.hpp"
#include "studies/python.hpp"
#include "studies/results.hpp"
#include "workloads/training/training.hpp"

namespace snsim::studies {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The metrics, in the order the table shows them; others follow by name.
const std::vector<std::string>& METRIC_ORDER = SWEEP_METRICS;

std::string format_number(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && std::abs(v) < 1e12) return fmt::format("{}", v);
  return fmt::format("{:.4g}", v);
}

/// Parses --shard i/N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  if (text.empty()) return {0, 1};
  const auto slash = text.find('/');
  std::size_t i = 0, n = 0;
  bool ok = slash != std::string::npos;
  if (ok) {
    const auto [e1, c1] = std::from_chars(text.data(), text.data() + slash, i);
    const auto [e2, c2] = std::from_chars(text.data() + slash + 1, text.data() + text.size(), n);
    ok = c1 == std::errc{} && c2 == std::errc{} && e1 == text.data() + slash && e2 == text.data() + text.size() &&
         slash > 0 && n >= 1 && i < n;
  }
  if (!ok) throw_input_error({"--shard " + text, 0, 0}, "", "expected i/N with 0 <= i < N, such as 0/3");
  return {i, n};
}

}  // namespace

json metrics_of(const Report& report, const workloads::Scenario& scenario) {
  json m;
  m["makespan_s"] = report.simulated_time.count();
  m["gpus"] = scenario.fabric().gpus().size();
  std::string topology = "?";
  if (const auto t = report.config.find("topology"); t != report.config.end() && t->is_object()) {
    if (t->contains("type"))
      topology = (*t)["type"].is_string() ? (*t)["type"].get<std::string>() : (*t)["type"].dump();
    if (t->contains("node") && (*t)["node"].is_string()) topology += "/" + (*t)["node"].get<std::string>();
  }
  m["topology"] = topology;
  // Every training workload's summary, the last one's figures winning.
  for (const auto& table : report.tables) {
    if (table.title != workloads::training::SUMMARY_TABLE) continue;
    for (const auto& row : table.rows) {
      if (row.size() < 2 || !row[1].is_number()) continue;
      const std::string name = row[0];
      if (name == "step_mean_ms") m["step_time_s"] = row[1].get<double>() / 1e3;
      if (name == "mfu_pct" || name == "samples_per_s" || name == "peak_hbm_gib" || name == "fits" ||
          name == "comm_only_ms_per_gpu")
        m[name] = row[1];
    }
  }
  return m;
}

// ---- the report --------------------------------------------------------------------------------------------------

namespace {

/// One point of the report: its trials' metrics, summed, so that the table shows their means.
struct PointRow {
  json labels;
  std::size_t trials = 0;
  std::string outcome = "completed";  // the first other outcome of a trial, if any
  std::map<std::string, double> sums;
  std::map<std::string, std::string> text;  // non-numeric metrics (the topology)

  std::optional<double> mean(const std::string& metric) const {
    const auto it = sums.find(metric);
    if (it == sums.end()) return std::nullopt;
    return it->second / static_cast<double>(trials);
  }
};
using PointRows = std::map<std::size_t, PointRow>;

/// The results by point; `metric_names` receives every numeric metric's name.
PointRows point_rows(const std::vector<json>& results, std::set<std::string>& metric_names) {
  PointRows rows;
  for (const auto& r : results) {
    PointRow& row = rows[r["point"].get<std::size_t>()];
    row.labels = r.value("labels", json::object());
    ++row.trials;
    if (r["outcome"] != "completed" && row.outcome == "completed") row.outcome = r["outcome"].get<std::string>();
    json metrics = r["metrics"];
    if (r.contains("wall_s")) metrics["wall_s"] = r["wall_s"];
    for (const auto& [name, v] : metrics.items()) {
      if (v.is_number()) {
        row.sums[name] += v.get<double>();
        metric_names.insert(name);
      } else if (v.is_string()) {
        row.text[name] = v.get<std::string>();
      }
    }
  }
  return rows;
}

/// The table of sweep.md: a row per point, its axes' labels, then the means of `metrics`.
std::string results_table(const PointRows& rows, const std::vector<std::string>& axes,
                          const std::vector<std::string>& metrics) {
  std::vector<std::string> header{"point"};
  header.insert(header.end(), axes.begin(), axes.end());
  for (const char* extra : {"topology", "trials", "outcome"}) header.emplace_back(extra);
  header.insert(header.end(), metrics.begin(), metrics.end());
  std::string md = fmt::format("| {} |\n|", fmt::join(header, " | "));
  for (std::size_t i = 0; i < header.size(); ++i) md += i < 1 + axes.size() + 3 ? "---|" : "---:|";
  md += "\n";
  for (const auto& [p, row] : rows) {
    std::vector<std::string> cells{std::to_string(p)};
    for (const auto& a : axes) cells.push_back(row.labels.contains(a) ? row.labels[a].get<std::string>() : "-");
    cells.push_back(row.text.contains("topology") ? row.text.at("topology") : "-");
    cells.push_back(std::to_string(row.trials));
    cells.push_back(row.outcome);
    for (const auto& m : metrics) {
      const auto v = row.mean(m);
      cells.push_back(v ? format_number(*v) : "-");
    }
    md += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  return md;
}

/// The answer to the plan's goal: among completed points within the bound, the one with the least cost (ties: the
/// better metric, then the lower point).
std::string goal_answer(const json& goal, const PointRows& rows) {
  const std::string metric = goal["metric"], minimize = goal["minimize"];
  const bool at_least = goal.contains("at_least");
  const double bound = at_least ? goal["at_least"].get<double>() : goal["at_most"].get<double>();
  std::optional<std::size_t> best;
  for (const auto& [p, row] : rows) {
    const auto v = row.mean(metric), cost = row.mean(minimize);
    if (row.outcome != "completed" || !v || !cost || (at_least ? *v < bound : *v > bound)) continue;
    if (!best) {
      best = p;
      continue;
    }
    const PointRow& b = rows.at(*best);
    const double bc = *b.mean(minimize), bv = *b.mean(metric);
    if (*cost < bc || (*cost == bc && (at_least ? *v > bv : *v < bv))) best = p;
  }
  std::string md = fmt::format("\n## Answer\n\nGoal: `{}` {} {} with the least `{}`. ", metric,
                               at_least ? ">=" : "<=", format_number(bound), minimize);
  for (const auto& name : {metric, minimize})
    if (std::ranges::none_of(rows, [&](const auto& entry) { return entry.second.mean(name).has_value(); }))
      return md + fmt::format(
                      "No answer: no run reports `{}` (step_time_s, samples_per_s and mfu_pct come from "
                      "training workloads).\n",
                      name);
  if (!best) return md + "No completed point meets it.\n";
  const PointRow& b = rows.at(*best);
  std::vector<std::string> labels;
  for (const auto& [name, label] : b.labels.items()) labels.push_back(name + "=" + label.get<std::string>());
  return md + fmt::format("**Point {} ({})**: {} {}, {} {}.\n", *best, fmt::join(labels, ", "), minimize,
                          format_number(*b.mean(minimize)), metric, format_number(*b.mean(metric)));
}

/// What the runs assumed that their inputs do not show (Report::notes), each note once with the points it came
/// from: a bucket sweep whose points are identical says why. Empty when no run has a note.
std::string notes_section(const std::vector<json>& results) {
  std::vector<std::pair<std::string, std::set<int>>> notes;  // in order of first appearance
  for (const auto& r : results)
    for (const auto& note : r.value("notes", json::array())) {
      auto it = std::ranges::find(notes, note.get<std::string>(), &std::pair<std::string, std::set<int>>::first);
      if (it == notes.end()) it = notes.insert(notes.end(), {note.get<std::string>(), {}});
      it->second.insert(r["point"].get<int>());
    }
  if (notes.empty()) return "";
  std::string md = "\n## Notes\n\nWhat the runs assumed that their inputs do not show:\n\n";
  for (const auto& [note, points] : notes)
    md += fmt::format("- point{} {}: {}\n", points.size() > 1 ? "s" : "", fmt::join(points, ", "), note);
  return md;
}

}  // namespace

SweepReport write_sweep_report(const std::string& dir, const json& meta, const std::vector<json>& results) {
  std::set<std::string> metric_names;
  const PointRows rows = point_rows(results, metric_names);
  std::vector<std::string> axes;
  for (const auto& a : meta.value("axes", json::array())) axes.push_back(a["name"]);
  if (axes.empty())
    for (const auto& [p, row] : rows)
      for (const auto& [name, label] : row.labels.items())
        if (std::ranges::find(axes, name) == axes.end()) axes.push_back(name);
  // A metric named like an axis (gpus) is that axis's column.
  std::vector<std::string> metrics;
  for (const auto& m : METRIC_ORDER)
    if (metric_names.contains(m) && std::ranges::find(axes, m) == axes.end()) metrics.push_back(m);
  for (const auto& m : metric_names)
    if (std::ranges::find(metrics, m) == metrics.end() && std::ranges::find(axes, m) == axes.end())
      metrics.push_back(m);

  std::string md = fmt::format("# Sweep: {}\n\n", meta.value("plan", std::string("(unnamed)")));
  if (meta.contains("base"))
    md += fmt::format("Base scenario `{}`, design {}, {} points x {} trials; {} points in these results.\n\n",
                      meta["base"].get<std::string>(), meta["design"].get<std::string>(), meta["points"].dump(),
                      meta["trials"].dump(), rows.size());
  md += results_table(rows, axes, metrics);
  md +=
      "\nMetrics are means over a point's trials: `makespan_s` is the simulated time of the whole run; for a "
      "training workload `step_time_s` is the mean step, `samples_per_s` the global batch per step time and "
      "`mfu_pct` the model FLOPs per step / (step time x GPUs x peak), `peak_hbm_gib` the largest HBM footprint "
      "per GPU, `fits` 1 when it is within the GPU's HBM and `comm_only_ms_per_gpu` the time a GPU communicates "
      "without computing; `wall_s` is what simulating it took.\n";
  if (meta.contains("goal")) md += goal_answer(meta["goal"], rows);
  md += notes_section(results);

  // The plot: drawn by plot_sweep.py (tools/plot/) when a python3 with matplotlib is there (CI requires it).
  const fs::path png = fs::path(dir) / "sweep.png";
  const ScriptRun drawn =
      run_plot_script("plot_sweep.py", {(fs::path(dir) / "results.jsonl").string(), "--meta",
                                        (fs::path(dir) / "sweep.json").string(), "--out", png.string(), "--quiet"});
  std::string why;
  if (drawn.status == 0) {
    md += "\n![the sweep](sweep.png)\n";
  } else {
    why = drawn.status ? fmt::format("plot_sweep.py exited with {}", *drawn.status) : drawn.problem;
    if (std::getenv("SNSIM_REQUIRE_PLOTS")) throw std::runtime_error("no plot (SNSIM_REQUIRE_PLOTS is set): " + why);
  }
  write_file(fs::path(dir) / "sweep.md", md);
  return {md, why};
}

// ---- running ------------------------------------------------------------------------------------------------------

std::string SweepSetup::status(const SweepRun& run) const {
  if (run.point % shards != shard) return "other";
  return done.contains(run.key) ? "done" : "to run";
}

SweepSetup prepare_sweep(const SweepOptions& o) {
  SweepSetup s;
  s.plan = SweepPlan::load(o.plan);
  std::tie(s.shard, s.shards) = parse_shard(o.shard);
  if (o.jobs && *o.jobs < 1) throw_input_error({"--jobs 0", 0, 0}, "", "must be >= 1, got 0");
  s.jobs = o.jobs.value_or(usable_cpus());
  s.dir = o.out.empty() ? "sweep-" + s.plan.name : o.out;
  make_output_dir(s.dir);
  s.results = (fs::path(s.dir) / "results.jsonl").string();
  s.runs = s.plan.runs();

  // Resume: what is already in the results file is not run again.
  const auto existing = read_results(s.results, &s.valid_bytes);
  for (const auto& r : merge_results(existing)) s.done.insert(r["key"].get<std::string>());
  for (const auto& run : s.runs) {
    if (run.point % s.shards != s.shard) continue;
    ++s.in_shard;
    if (s.done.contains(run.key))
      ++s.already;
    else
      s.todo.push_back(run);
  }

  // Every scenario to run is checked here, before anything forks (fail before the run).
  std::set<std::size_t> checked;
  for (const auto& run : o.dry_run ? s.runs : s.todo)
    if (checked.insert(run.point).second) workloads::Scenario::load(s.plan.scenario(run.point, 0));

  s.meta = s.plan.meta();
  json keys = json::array();
  for (const auto& run : s.runs) keys.push_back(run.key);
  s.meta["keys"] = keys;
  s.meta["shard"] = fmt::format("{}/{}", s.shard, s.shards);
  write_file(fs::path(s.dir) / "sweep.json", s.meta.dump(1) + "\n");
  return s;
}

SweepOutcome execute_sweep(
    const SweepSetup& s,
    const std::function<void(const SweepRun& run, const std::string& failure, const SweepOutcome& so_far)>& ended) {
  SweepOutcome outcome;
  {
    ResultsLog log(s.results, s.valid_bytes);
    run_isolated_stream(
        s.todo.size(), s.jobs,
        [&](std::size_t i) {
          const SweepRun& run = s.todo[i];
          const auto begin = std::chrono::steady_clock::now();
          const auto doc = s.plan.scenario(run.point, run.trial);
          const auto scenario = workloads::Scenario::load(doc);
          const Report report = scenario.run();
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
          return json{{"outcome", report.outcome},
                      {"notes", report.notes},
                      {"metrics", metrics_of(report, scenario)},
                      {"wall_s", wall}}
              .dump();
        },
        [&](std::size_t i, std::string text, std::exception_ptr failure) {
          const SweepRun& run = s.todo[i];
          ++outcome.finished;
          std::string why;
          if (failure) {
            try {
              std::rethrow_exception(failure);
            } catch (const std::exception& e) {
              why = e.what();
            }
            outcome.failures.push_back(
                fmt::format("point {} ({}) seed {}: {}", run.point, s.plan.label(run.point), run.seed, why));
          } else {
            json out = json::parse(text);
            json line{{"key", run.key},
                      {"point", run.point},
                      {"trial", run.trial},
                      {"seed", run.seed},
                      {"labels", s.plan.labels(run.point)},
                      {"outcome", out["outcome"]},
                      {"metrics", out["metrics"]},
                      {"wall_s", out["wall_s"]}};
            if (!out["notes"].empty()) line["notes"] = out["notes"];  // what the run assumed (Report::notes)
            log.append(line);
          }
          ended(run, why, outcome);
          return true;
        });
  }

  // The report is this plan's: lines of an earlier version of the plan stay in the file but not in the table.
  std::set<std::string> keys;
  for (const auto& run : s.runs) keys.insert(run.key);
  std::vector<json> mine;
  for (auto& r : merge_results(read_results(s.results)))
    if (keys.contains(r["key"].get<std::string>())) mine.push_back(std::move(r));
  outcome.plot_problem = write_sweep_report(s.dir, s.meta, mine).plot_problem;
  return outcome;
}

// ---- merging ------------------------------------------------------------------------------------------------------

MergeSummary merge_sweep(const std::vector<std::string>& inputs, const std::string& out) {
  MergeSummary summary;
  std::vector<ResultLine> lines;
  std::optional<json> meta;
  std::string meta_from;
  for (const auto& input : inputs) {
    const std::string path = results_path(input);
    if (!fs::exists(path)) throw_input_error({path, 0, 0}, "", "no such results file");
    auto read = read_results(path);
    lines.insert(lines.end(), std::make_move_iterator(read.begin()), std::make_move_iterator(read.end()));
    const fs::path sweep_json = fs::path(path).parent_path() / "sweep.json";
    if (!fs::exists(sweep_json)) continue;
    json m = json::parse(read_file(sweep_json), nullptr, false);
    if (m.is_discarded() || !m.is_object())
      throw_input_error({sweep_json.string(), 0, 0}, "", "not a sweep.json written by snsim sweep");
    m.erase("shard");
    if (!meta) {
      meta = m;
      meta_from = sweep_json.string();
    } else if (m.value("keys", json()) != meta->value("keys", json())) {
      throw_input_error({sweep_json.string(), 0, 0}, "",
                        fmt::format("another plan than {}'s: results of different sweeps do not merge", meta_from));
    }
  }
  const auto merged = merge_results(lines, &summary.duplicates);
  summary.lines = lines.size();
  summary.results = merged.size();
  make_output_dir(out);
  std::string text;
  for (const auto& r : merged) text += r.dump() + "\n";
  write_file(fs::path(out) / "results.jsonl", text);
  json m = meta.value_or(json::object());
  write_file(fs::path(out) / "sweep.json", m.dump(1) + "\n");
  if (m.contains("keys")) {
    std::set<std::string> have;
    for (const auto& r : merged) have.insert(r["key"].get<std::string>());
    summary.plan_runs = m["keys"].size();
    for (const auto& k : m["keys"])
      if (!have.contains(k.get<std::string>())) summary.missing.push_back(k.get<std::string>());
  }
  summary.plot_problem = write_sweep_report(out, m, merged).plot_problem;
  return summary;
}

}  // namespace snsim::studies
