#include "tools/sweep_command.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scenario/scenario.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "sim/random.hpp"
#include "sim/report.hpp"
#include "tools/command_io.hpp"
#include "tools/python.hpp"

namespace snsim::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// A grid larger than this is a mistake in the plan (and its keys would not fit in memory).
constexpr std::size_t MAX_POINTS = 1'000'000;
/// The scenario's seed when it sets none (workloads/scenario.cpp).
constexpr std::uint64_t DEFAULT_SEED = 1;
/// The metrics, in the order the table shows them; others follow by name.
const std::vector<std::string> METRIC_ORDER{"gpus", "makespan_s", "step_time_s", "samples_per_s", "mfu_pct", "wall_s"};

/// A scalar as YAML flow text: plain when that reads back the same, else double-quoted.
std::string flow_scalar(const std::string& text) {
  const bool plain = !text.empty() && text.front() != ' ' && text.back() != ' ' && text.front() != '-' &&
                     std::ranges::all_of(text, [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || std::strchr(" ._/+-", c) != nullptr;
                     });
  if (plain || (text.size() > 1 && text.front() == '-' && std::isdigit(static_cast<unsigned char>(text[1])) &&
                text.find(' ') == std::string::npos))
    return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

/// A node as YAML flow text ({a: 1, b: [x, y]}), for `key.path=value` assignments of maps and sequences.
std::string flow_yaml(const ConfigNode& node) {
  if (node.is_map()) {
    std::vector<std::string> items;
    for (const auto& key : node.keys()) items.push_back(flow_scalar(key) + ": " + flow_yaml(node.child(key)));
    return fmt::format("{{{}}}", fmt::join(items, ", "));
  }
  if (node.is_sequence()) {
    std::vector<std::string> items;
    for (const auto& e : node.elements()) items.push_back(flow_yaml(e));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  if (node.is_scalar()) return flow_scalar(node.scalar());
  return "null";
}

/// A scenario as canonical JSON: maps sorted by key, scalars as written.
json canonical(const ConfigNode& node) {
  if (node.is_map()) {
    json o = json::object();
    for (const auto& key : node.keys()) o[key] = canonical(node.child(key));
    return o;
  }
  if (node.is_sequence()) {
    json a = json::array();
    for (const auto& e : node.elements()) a.push_back(canonical(e));
    return a;
  }
  if (node.is_scalar()) return node.scalar();
  return nullptr;
}

/// The `key.path: value` entries of a `set` map, as assignments that name where their value is written.
std::vector<AxisValue::Assignment> assignments(const ConfigNode& set) {
  if (!set.is_map()) set.fail("expected a map of key.path: value");
  std::vector<AxisValue::Assignment> out;
  for (const auto& key : set.keys()) {
    const ConfigNode value = set.child(key);
    out.push_back({key + "=" + flow_yaml(value), value.location().to_string()});
  }
  if (out.empty()) set.fail("sets nothing: give at least one key.path: value");
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string format_number(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && std::abs(v) < 1e12) return fmt::format("{}", v);
  return fmt::format("{:.4g}", v);
}

/// "3/12, ETA 1:05".
std::string eta(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

/// One run (a point and a trial) of this invocation.
struct Run {
  std::size_t point, trial;
  std::uint64_t seed;
  std::string key;
};

/// What a run measured, from its report: makespan, GPUs, the topology, and for training its step time, MFU and
/// samples per second (the "training summary" table).
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
  for (const auto& table : report.tables) {
    if (!table.title.starts_with("training summary")) continue;
    for (const auto& row : table.rows) {
      if (row.size() < 2 || !row[1].is_number()) continue;
      const std::string name = row[0];
      if (name == "step_mean_ms") m["step_time_s"] = row[1].get<double>() / 1e3;
      if (name == "mfu_pct" || name == "samples_per_s") m[name] = row[1];
    }
  }
  return m;
}

/// Appends one line with a single write() and makes it durable, so that a kill leaves at most this line torn.
void append_line(int fd, const std::string& path, const std::string& line) {
  const std::string text = line + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    throw std::runtime_error(
        fmt::format("{}: cannot append a result: {}", path, n < 0 ? std::strerror(errno) : "short write"));
  if (::fsync(fd) != 0) throw std::runtime_error(fmt::format("{}: fsync: {}", path, std::strerror(errno)));
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

std::string results_path(const std::string& input) {
  return fs::is_directory(input) ? (fs::path(input) / "results.jsonl").string() : input;
}

}  // namespace

// ---- the plan ----------------------------------------------------------------------------------------------------

SweepPlan SweepPlan::load(const std::string& path) {
  auto doc = ConfigDocument::load_file(path);
  const ConfigNode root = doc->root();
  SweepPlan plan;
  plan.file = path;
  plan.name = root.optional<std::string>("name", fs::path(path).stem().string());
  const auto base = root.required<std::string>("base");
  plan.base = (fs::path(path).parent_path() / base).lexically_normal().string();
  if (!fs::exists(plan.base))
    root.fail_key("base", fmt::format("no scenario at '{}' (the path is relative to the plan)", plan.base));
  if (auto set = root.maybe_child("set")) plan.sets = assignments(*set);

  const auto trials = root.optional<int>("trials", 1);
  check_between(root, "trials", trials, 1, 10000);
  plan.trials = static_cast<std::size_t>(trials);

  const ConfigNode axes = root.child("axes");
  if (!axes.is_sequence()) axes.fail("expected a list of axes: [{name: ..., key: ..., values: [...]}, ...]");
  std::set<std::string> names;
  for (const ConfigNode& a : axes.elements()) {
    if (!a.is_map()) a.fail("expected an axis: {name: ..., key: key.path, values: [...]} ");
    Axis axis;
    axis.name = a.required<std::string>("name");
    if (axis.name.empty() || axis.name.find_first_of(" =") != std::string::npos)
      a.fail_key("name", fmt::format("'{}' is not a name (no spaces or '=')", axis.name));
    if (!names.insert(axis.name).second) a.fail_key("name", fmt::format("axis '{}' is named twice", axis.name));
    const auto key = a.maybe<std::string>("key");
    const ConfigNode values = a.child("values");
    if (!values.is_sequence() || values.elements().empty()) values.fail("expected a non-empty list of values");
    std::set<std::string> labels;
    for (const ConfigNode& v : values.elements()) {
      AxisValue value;
      if (v.is_map()) {
        value.label = v.required<std::string>("label");
        value.sets = assignments(v.child("set"));
      } else {
        if (!key)
          v.fail(
              fmt::format("a plain value needs the axis's `key` (the key.path it sets); or give {{label: ..., set: "
                          "{{key.path: value, ...}}}}"));
        value.label = flow_yaml(v);
        value.sets.push_back({*key + "=" + flow_yaml(v), v.location().to_string()});
      }
      if (!labels.insert(value.label).second)
        v.fail(fmt::format("the label '{}' is used twice on axis '{}'", value.label, axis.name));
      axis.values.push_back(std::move(value));
    }
    plan.axes.push_back(std::move(axis));
  }
  if (plan.axes.empty()) axes.fail("expected at least one axis");

  std::size_t grid = 1;
  for (const auto& axis : plan.axes) {
    if (grid > MAX_POINTS / axis.values.size()) {
      grid = MAX_POINTS + 1;
      break;
    }
    grid *= axis.values.size();
  }
  auto point_of = [&plan](std::size_t index) {
    std::vector<std::size_t> p(plan.axes.size());
    for (std::size_t a = plan.axes.size(); a-- > 0;) {
      p[a] = index % plan.axes[a].values.size();
      index /= plan.axes[a].values.size();
    }
    return p;
  };
  plan.design = root.optional<std::string>("design", "grid");
  if (plan.design == "grid") {
    for (const char* key : {"samples", "sample_seed"})
      if (root.has(key)) root.fail_key(key, "only with design: random");
    if (grid > MAX_POINTS)
      root.fail_key("axes", fmt::format("the grid has more than {} points; use design: random", MAX_POINTS));
    for (std::size_t i = 0; i < grid; ++i) plan.points.push_back(point_of(i));
  } else if (plan.design == "random") {
    const auto samples = root.required<int>("samples");
    check_between(root, "samples", samples, 1, static_cast<int>(std::min<std::size_t>(grid, MAX_POINTS)));
    const auto seed = root.optional<std::uint64_t>("sample_seed", 1);
    // Distinct points, one value per axis drawn from the plan's own stream, listed in grid order: the sample
    // depends on nothing but the plan, however large the grid.
    RandomStream rng(seed, "sweep.random");
    std::set<std::vector<std::size_t>> chosen;
    while (chosen.size() < static_cast<std::size_t>(samples)) {
      std::vector<std::size_t> p;
      for (const auto& axis : plan.axes) p.push_back(rng.below(axis.values.size()));
      chosen.insert(std::move(p));
    }
    plan.points.assign(chosen.begin(), chosen.end());
  } else {
    root.fail_key("design", fmt::format("expected grid or random, found '{}'", plan.design));
  }

  if (auto g = root.maybe_child("goal")) {
    Goal goal;
    goal.metric = g->required<std::string>("metric");
    goal.at_least = g->maybe<double>("at_least");
    goal.at_most = g->maybe<double>("at_most");
    if (goal.at_least.has_value() == goal.at_most.has_value())
      g->fail("give one of at_least or at_most (the bound on the metric)");
    goal.minimize = g->optional<std::string>("minimize", "gpus");
    plan.goal = goal;
  }
  const ConfigNode report = root.section("report");
  plan.x = report.optional<std::string>("x", "gpus");
  plan.y = report.optional<std::string>("y", "");
  plan.series = report.optional<std::string>("series", "topology");
  doc->reject_unknown_keys();

  // Every override must name a place in the scenario: checked on the first point here, the rest as they load.
  if (!plan.points.empty()) plan.scenario(0, 0);
  return plan;
}

std::shared_ptr<ConfigDocument> SweepPlan::scenario(std::size_t p, std::size_t t) const {
  auto doc = ConfigDocument::load_file(base);
  for (const auto& s : sets) doc->set(s.text, s.origin);
  for (std::size_t a = 0; a < axes.size(); ++a)
    for (const auto& s : axes[a].values[points.at(p)[a]].sets) doc->set(s.text, s.origin);
  // The trial's seed: the scenario's own (after the overrides) + t. Read without recording, so that the run reports
  // only the seed it ran with.
  std::uint64_t seed = DEFAULT_SEED;
  if (const auto s = doc->root().maybe_child("seed")) {
    const std::string text = s->is_scalar() ? s->scalar() : "";
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
      seed = s->as<std::uint64_t>();  // the scenario's own error for a bad seed
  }
  doc->set(fmt::format("seed={}", seed + t), fmt::format("{}: trial {}'s seed", file, t));
  return doc;
}

std::string SweepPlan::label(std::size_t p) const {
  std::vector<std::string> parts;
  for (std::size_t a = 0; a < axes.size(); ++a)
    parts.push_back(axes[a].name + "=" + axes[a].values[points.at(p)[a]].label);
  return fmt::format("{}", fmt::join(parts, " "));
}

json SweepPlan::meta() const {
  json axes_json = json::array();
  for (const auto& a : axes) {
    json labels = json::array();
    for (const auto& v : a.values) labels.push_back(v.label);
    axes_json.push_back({{"name", a.name}, {"labels", labels}});
  }
  json m{{"plan", name},     {"file", file},      {"base", base}, {"design", design}, {"points", points.size()},
         {"trials", trials}, {"axes", axes_json}, {"x", x},       {"series", series}, {"y", y}};
  if (goal) {
    m["goal"] = {{"metric", goal->metric}, {"minimize", goal->minimize}};
    if (goal->at_least) m["goal"]["at_least"] = *goal->at_least;
    if (goal->at_most) m["goal"]["at_most"] = *goal->at_most;
  }
  return m;
}

std::string run_key(ConfigDocument& scenario) {
  return fmt::format("{:016x}", stable_hash(canonical(scenario.root()).dump()));
}

// ---- results files -----------------------------------------------------------------------------------------------

std::vector<ResultLine> read_results(const std::string& path, std::size_t* valid_bytes) {
  const std::string text = read_text(path);
  std::vector<ResultLine> lines;
  std::size_t start = 0, good = 0;
  int number = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::size_t next = end == std::string::npos ? text.size() : end + 1;
    ++number;
    const bool last = next >= text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      start = next;
      if (!last) good = next;
      continue;
    }
    std::string problem;
    json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded())
      problem = "not JSON";
    else if (!value.is_object() || !value.contains("key") || !value["key"].is_string() || !value.contains("point") ||
             !value["point"].is_number_unsigned() || !value.contains("trial") || !value["trial"].is_number_unsigned() ||
             !value.contains("outcome") || !value.contains("metrics") || !value["metrics"].is_object())
      problem = "not a sweep result (an object with key, point, trial, outcome and metrics)";
    if (!problem.empty()) {
      if (last) {
        std::cerr << fmt::format(
            "{}:{}: warning: dropped a torn last line ({}: a write cut short, as by kill -9); "
            "its run will run again\n",
            path, number, problem);
        break;
      }
      throw_input_error({path, number, 0}, "", fmt::format("corrupted line: {}", problem));
    }
    lines.push_back({std::move(value), fmt::format("{}:{}", path, number)});
    start = next;
    good = next;
  }
  if (valid_bytes) *valid_bytes = good;
  return lines;
}

std::vector<json> merge_results(const std::vector<ResultLine>& lines, std::size_t* duplicates) {
  std::map<std::string, const ResultLine*> by_key;
  std::size_t dropped = 0;
  auto without_wall = [](json v) {
    v.erase("wall_s");
    return v;
  };
  for (const auto& line : lines) {
    const std::string key = line.value["key"];
    const auto [it, inserted] = by_key.emplace(key, &line);
    if (inserted) continue;
    if (without_wall(it->second->value) == without_wall(line.value)) {
      ++dropped;
      continue;
    }
    throw_input_error({line.where, 0, 0}, "",
                      fmt::format("result {} (point {}, trial {}) conflicts with {}: the same scenario and seed gave "
                                  "different results",
                                  key, line.value["point"].dump(), line.value["trial"].dump(), it->second->where));
  }
  std::vector<json> out;
  for (const auto& [key, line] : by_key) out.push_back(line->value);
  std::ranges::sort(out, [](const json& a, const json& b) {
    return std::tuple{a["point"].get<std::size_t>(), a["trial"].get<std::size_t>(), a["key"].get<std::string>()} <
           std::tuple{b["point"].get<std::size_t>(), b["trial"].get<std::size_t>(), b["key"].get<std::string>()};
  });
  if (duplicates) *duplicates = dropped;
  return out;
}

// ---- the report --------------------------------------------------------------------------------------------------

std::string write_sweep_report(const std::string& dir, const json& meta, const std::vector<json>& results) {
  // One row per point: the mean of each metric over its trials.
  struct Row {
    json labels;
    std::size_t trials = 0;
    std::string outcome = "completed";
    std::map<std::string, double> sums;
    std::map<std::string, std::string> text;  // non-numeric metrics (the topology)
  };
  std::map<std::size_t, Row> rows;
  std::set<std::string> metric_names;
  for (const auto& r : results) {
    Row& row = rows[r["point"].get<std::size_t>()];
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

  auto mean = [](const Row& row, const std::string& m) -> std::optional<double> {
    const auto it = row.sums.find(m);
    if (it == row.sums.end()) return std::nullopt;
    return it->second / static_cast<double>(row.trials);
  };
  std::string md = fmt::format("# Sweep: {}\n\n", meta.value("plan", std::string("(unnamed)")));
  if (meta.contains("base"))
    md += fmt::format("Base scenario `{}`, design {}, {} points x {} trials; {} points in these results.\n\n",
                      meta["base"].get<std::string>(), meta["design"].get<std::string>(), meta["points"].dump(),
                      meta["trials"].dump(), rows.size());
  std::vector<std::string> header{"point"};
  header.insert(header.end(), axes.begin(), axes.end());
  for (const char* extra : {"topology", "trials", "outcome"}) header.emplace_back(extra);
  header.insert(header.end(), metrics.begin(), metrics.end());
  md += fmt::format("| {} |\n|", fmt::join(header, " | "));
  for (std::size_t i = 0; i < header.size(); ++i) md += i < 1 + axes.size() + 3 ? "---|" : "---:|";
  md += "\n";
  for (const auto& [p, row] : rows) {
    std::vector<std::string> cells{std::to_string(p)};
    for (const auto& a : axes) cells.push_back(row.labels.contains(a) ? row.labels[a].get<std::string>() : "-");
    cells.push_back(row.text.contains("topology") ? row.text.at("topology") : "-");
    cells.push_back(std::to_string(row.trials));
    cells.push_back(row.outcome);
    for (const auto& m : metrics) {
      const auto v = mean(row, m);
      cells.push_back(v ? format_number(*v) : "-");
    }
    md += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  md +=
      "\nMetrics are means over a point's trials: `makespan_s` is the simulated time of the whole run; for a "
      "training workload `step_time_s` is the mean step, `samples_per_s` the global batch per step time and "
      "`mfu_pct` the model FLOPs per step / (step time x GPUs x peak); `wall_s` is what simulating it took.\n";

  if (meta.contains("goal")) {
    const json& goal = meta["goal"];
    const std::string metric = goal["metric"], minimize = goal["minimize"];
    const bool at_least = goal.contains("at_least");
    const double bound = at_least ? goal["at_least"].get<double>() : goal["at_most"].get<double>();
    std::optional<std::size_t> best;
    for (const auto& [p, row] : rows) {
      const auto v = mean(row, metric), cost = mean(row, minimize);
      if (row.outcome != "completed" || !v || !cost || (at_least ? *v < bound : *v > bound)) continue;
      if (!best) {
        best = p;
        continue;
      }
      const Row& b = rows.at(*best);
      const double bc = *mean(b, minimize), bv = *mean(b, metric);
      if (*cost < bc || (*cost == bc && (at_least ? *v > bv : *v < bv))) best = p;
    }
    md += fmt::format("\n## Answer\n\nGoal: `{}` {} {} with the least `{}`. ", metric,
                      at_least ? ">=" : "<=", format_number(bound), minimize);
    if (best) {
      const Row& b = rows.at(*best);
      std::vector<std::string> labels;
      for (const auto& [name, label] : b.labels.items()) labels.push_back(name + "=" + label.get<std::string>());
      md += fmt::format("**Point {} ({})**: {} {}, {} {}.\n", *best, fmt::join(labels, ", "), minimize,
                        format_number(*mean(b, minimize)), metric, format_number(*mean(b, metric)));
    } else {
      md += "No completed point meets it.\n";
    }
  }

  // The plot: drawn by tools/plot/plot_sweep.py when a python3 with matplotlib is there (CI requires it).
  const fs::path png = fs::path(dir) / "sweep.png";
  const ScriptRun drawn = run_python_script(
      SNSIM_SWEEP_PLOT_SCRIPT, {(fs::path(dir) / "results.jsonl").string(), "--meta",
                                (fs::path(dir) / "sweep.json").string(), "--out", png.string(), "--quiet"});
  if (drawn.status == 0) {
    md += "\n![the sweep](sweep.png)\n";
  } else {
    const std::string why = drawn.status ? fmt::format("plot_sweep.py exited with {}", *drawn.status) : drawn.problem;
    if (std::getenv("SNSIM_REQUIRE_PLOTS")) throw std::runtime_error("no plot (SNSIM_REQUIRE_PLOTS is set): " + why);
    std::cout << fmt::format("no plot: {}\n", why);
  }
  write_file(fs::path(dir) / "sweep.md", md);
  return md;
}

// ---- the commands ------------------------------------------------------------------------------------------------

int run_sweep(const SweepOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const SweepPlan plan = SweepPlan::load(o.plan);
  const auto [shard, shards] = parse_shard(o.shard);
  if (o.jobs && *o.jobs < 1) throw_input_error({"--jobs 0", 0, 0}, "", "must be >= 1, got 0");
  const std::size_t jobs = o.jobs.value_or(usable_cpus());
  const std::string dir = o.out.empty() ? "sweep-" + plan.name : o.out;
  make_output_dir(dir);
  const std::string results = (fs::path(dir) / "results.jsonl").string();

  // Every run of the plan and its key; two points resolving to the same scenario would share one result.
  std::vector<Run> all;
  std::map<std::string, std::size_t> key_owner;
  json keys = json::array();
  for (std::size_t p = 0; p < plan.points.size(); ++p)
    for (std::size_t t = 0; t < plan.trials; ++t) {
      auto doc = plan.scenario(p, t);
      const std::string key = run_key(*doc);
      const auto seed = std::stoull(canonical(doc->root())["seed"].get<std::string>());
      if (const auto [it, fresh] = key_owner.emplace(key, p); !fresh)
        throw_input_error({plan.file, 0, 0}, "axes",
                          fmt::format("points {} ({}) and {} ({}) are the same scenario: an axis value changes nothing",
                                      it->second, plan.label(it->second), p, plan.label(p)));
      all.push_back({p, t, seed, key});
      keys.push_back(key);
    }

  // Resume: what is already in the results file is not run again.
  std::size_t valid = 0;
  const auto existing = read_results(results, &valid);
  std::size_t duplicates = 0;
  std::set<std::string> done;
  for (const auto& r : merge_results(existing, &duplicates)) done.insert(r["key"].get<std::string>());
  std::vector<Run> todo;
  std::size_t in_shard = 0, already = 0;
  for (const auto& run : all) {
    if (run.point % shards != shard) continue;
    ++in_shard;
    if (done.contains(run.key))
      ++already;
    else
      todo.push_back(run);
  }

  // Every scenario to run is checked here, before anything forks (design.md: fail before the run).
  std::set<std::size_t> checked;
  for (const auto& run : o.dry_run ? all : todo)
    if (checked.insert(run.point).second) workloads::Scenario::load(plan.scenario(run.point, 0));

  json meta = plan.meta();
  meta["keys"] = keys;
  meta["shard"] = fmt::format("{}/{}", shard, shards);
  write_file(fs::path(dir) / "sweep.json", meta.dump(1) + "\n");

  std::cout << fmt::format(
      "# sweep {}: {} points x {} trials ({} design){}; {} runs here, {} already in {}, {} to "
      "run, {} at a time\n",
      plan.name, plan.points.size(), plan.trials, plan.design,
      shards > 1 ? fmt::format(", shard {}/{}", shard, shards) : "", in_shard, already, results, todo.size(), jobs);
  if (o.dry_run) {
    std::cout << fmt::format("# {:>5} {:>5} {:>20} {:<16} {:<7} {}\n", "point", "trial", "seed", "key", "status",
                             "labels");
    for (const auto& run : all)
      std::cout << fmt::format("  {:>5} {:>5} {:>20} {:<16} {:<7} {}\n", run.point, run.trial, run.seed, run.key,
                               run.point % shards != shard ? "other"
                               : done.contains(run.key)    ? "done"
                                                           : "to run",
                               plan.label(run.point));
    return 0;
  }

  // The file is ours while we run: a second sweep on the same folder would run the same points twice.
  const int fd = ::open(results.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_input_error({results, 0, 0}, "", fmt::format("cannot open for appending: {}", std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw_input_error({results, 0, 0}, "", "another sweep is writing this file (use another --out)");
  }
  if (valid < fs::file_size(results) && ::ftruncate(fd, static_cast<off_t>(valid)) != 0)
    throw std::runtime_error(fmt::format("{}: cannot cut the torn line off: {}", results, std::strerror(errno)));

  const bool tty = ::isatty(2) != 0;
  const auto loop_start = std::chrono::steady_clock::now();
  std::size_t finished = 0;
  std::vector<std::string> failures;
  run_isolated_stream(
      todo.size(), jobs,
      [&](std::size_t i) {
        const Run& run = todo[i];
        const auto begin = std::chrono::steady_clock::now();
        const auto doc = plan.scenario(run.point, run.trial);
        const auto scenario = workloads::Scenario::load(doc);
        const Report report = scenario.run();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        return json{{"outcome", report.outcome}, {"metrics", metrics_of(report, scenario)}, {"wall_s", wall}}.dump();
      },
      [&](std::size_t i, std::string text, std::exception_ptr failure) {
        const Run& run = todo[i];
        ++finished;
        if (failure) {
          std::string why;
          try {
            std::rethrow_exception(failure);
          } catch (const std::exception& e) {
            why = e.what();
          }
          failures.push_back(fmt::format("point {} ({}) seed {}: {}", run.point, plan.label(run.point), run.seed, why));
          std::cerr << fmt::format("{}sweep: point {} seed {} failed: {}\n", tty ? "\n" : "", run.point, run.seed, why);
        } else {
          json out = json::parse(text);
          json labels = json::object();
          for (std::size_t a = 0; a < plan.axes.size(); ++a)
            labels[plan.axes[a].name] = plan.axes[a].values[plan.points[run.point][a]].label;
          const json line{
              {"key", run.key},   {"point", run.point},        {"trial", run.trial},        {"seed", run.seed},
              {"labels", labels}, {"outcome", out["outcome"]}, {"metrics", out["metrics"]}, {"wall_s", out["wall_s"]}};
          append_line(fd, results, line.dump());
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
        const double left = elapsed / static_cast<double>(finished) * static_cast<double>(todo.size() - finished);
        const std::string progress =
            fmt::format("sweep: {}/{} runs done{}, ETA {}", already + finished, in_shard,
                        failures.empty() ? "" : fmt::format(", {} failed", failures.size()), eta(left));
        if (tty)
          std::cerr << "\r" << progress << (finished == todo.size() ? "\n" : "") << std::flush;
        else
          std::cerr << progress << fmt::format(" ({} seed {})\n", plan.label(run.point), run.seed);
        return true;
      });
  ::close(fd);

  // The report is this plan's: lines of an earlier version of the plan stay in the file but not in the table.
  std::vector<json> mine;
  for (auto& r : merge_results(read_results(results)))
    if (key_owner.contains(r["key"].get<std::string>())) mine.push_back(std::move(r));
  write_sweep_report(dir, meta, mine);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << fmt::format("# {} runs in {:.2f} s wall ({} run now, {} failed); wrote {}, {}/sweep.md\n",
                           already + finished - failures.size(), wall, finished - failures.size(), failures.size(),
                           results, dir);
  for (const auto& f : failures) std::cerr << "sweep: failed: " << f << '\n';
  return failures.empty() ? 0 : 3;
}

int merge_sweep(const std::vector<std::string>& inputs, const std::string& out) {
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
    json m = json::parse(read_text(sweep_json.string()), nullptr, false);
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
  std::size_t duplicates = 0;
  const auto merged = merge_results(lines, &duplicates);
  make_output_dir(out);
  std::string text;
  for (const auto& r : merged) text += r.dump() + "\n";
  write_file(fs::path(out) / "results.jsonl", text);
  json m = meta.value_or(json::object());
  write_file(fs::path(out) / "sweep.json", m.dump(1) + "\n");
  std::cout << fmt::format("# merged {} lines from {} files: {} results ({} exact duplicates dropped)\n", lines.size(),
                           inputs.size(), merged.size(), duplicates);
  if (m.contains("keys")) {
    std::set<std::string> have;
    for (const auto& r : merged) have.insert(r["key"].get<std::string>());
    std::vector<std::string> missing;
    for (const auto& k : m["keys"])
      if (!have.contains(k.get<std::string>())) missing.push_back(k.get<std::string>());
    if (missing.empty())
      std::cout << fmt::format("# complete: all {} runs of the plan, each once\n", m["keys"].size());
    else
      std::cout << fmt::format("# incomplete: {} of the plan's {} runs are missing (first: {})\n", missing.size(),
                               m["keys"].size(), missing.front());
  }
  write_sweep_report(out, m, merged);
  std::cout << fmt::format("# wrote {}/results.jsonl, {}/sweep.md\n", out, out);
  return 0;
}

void add_sweep_command(CLI::App& app, int& exit_code) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run a scenario over a grid or random design of points, one process per run, resumably");
  auto o = std::make_shared<SweepOptions>();
  sweep->add_option("plan", o->plan, "sweep plan YAML (base scenario, axes, design)");
  sweep->add_option("--out", o->out, "results folder (default sweep-<plan name>): results.jsonl, sweep.md, sweep.png");
  sweep->add_option("--jobs", o->jobs, "runs at a time (default: the CPUs available)");
  sweep->add_option("--shard", o->shard, "i/N: run only the points whose index % N == i (from 0)");
  sweep->add_flag("--dry-run", o->dry_run, "check the plan and every scenario, list the runs, run nothing");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto merged = std::make_shared<std::string>();
  CLI::App* merge =
      sweep->add_subcommand("merge", "join the results of shards (drops duplicates, errors on conflicts)");
  merge->add_option("results", *inputs, "results.jsonl files, or folders holding one")->required();
  merge->add_option("-o,--out", *merged, "the merged folder: results.jsonl, sweep.json, sweep.md, sweep.png")
      ->required();
  sweep->callback([o, inputs, merged, merge, &exit_code] {
    exit_code = guarded("sweep", [&] {
      if (*merge) return merge_sweep(*inputs, *merged);
      if (o->plan.empty()) throw InputError("snsim sweep: give a plan (snsim sweep PLAN.yaml) or `merge`");
      return run_sweep(*o);
    });
  });
}

}  // namespace snsim::tools
