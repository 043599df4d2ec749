#include "studies/sweep_plan.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/random.hpp"

namespace snsim::studies {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// A grid larger than this is a mistake in the plan (and its keys would not fit in memory).
constexpr std::size_t MAX_POINTS = 1'000'000;
/// The scenario's seed when it sets none (scenario/scenario.cpp).
constexpr std::uint64_t DEFAULT_SEED = 1;

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

}  // namespace

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

namespace {

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

/// One axis of `axes:`; `names` holds the names of the axes before it.
Axis read_axis(const ConfigNode& a, std::set<std::string>& names) {
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
  return axis;
}

/// The points of a design over `axes` (grid: all of them, the first axis slowest; random: `samples` distinct ones).
std::vector<std::vector<std::size_t>> design_points(const ConfigNode& root, const std::string& design,
                                                    const std::vector<Axis>& axes) {
  std::size_t grid = 1;
  for (const auto& axis : axes) {
    if (grid > MAX_POINTS / axis.values.size()) {
      grid = MAX_POINTS + 1;
      break;
    }
    grid *= axis.values.size();
  }
  std::vector<std::vector<std::size_t>> points;
  if (design == "grid") {
    for (const char* key : {"samples", "sample_seed"})
      if (root.has(key)) root.fail_key(key, "only with design: random");
    if (grid > MAX_POINTS)
      root.fail_key("axes", fmt::format("the grid has more than {} points; use design: random", MAX_POINTS));
    for (std::size_t i = 0; i < grid; ++i) {
      std::vector<std::size_t> p(axes.size());
      for (std::size_t a = axes.size(), index = i; a-- > 0;) {
        p[a] = index % axes[a].values.size();
        index /= axes[a].values.size();
      }
      points.push_back(std::move(p));
    }
  } else if (design == "random") {
    const auto samples = root.required<int>("samples");
    check_between(root, "samples", samples, 1, static_cast<int>(std::min<std::size_t>(grid, MAX_POINTS)));
    const auto seed = root.optional<std::uint64_t>("sample_seed", 1);
    // Distinct points, one value per axis drawn from the plan's own stream, listed in grid order: the sample
    // depends on nothing but the plan, however large the grid.
    RandomStream rng(seed, "sweep.random");
    std::set<std::vector<std::size_t>> chosen;
    while (chosen.size() < static_cast<std::size_t>(samples)) {
      std::vector<std::size_t> p;
      for (const auto& axis : axes) p.push_back(rng.below(axis.values.size()));
      chosen.insert(std::move(p));
    }
    points.assign(chosen.begin(), chosen.end());
  } else {
    root.fail_key("design", fmt::format("expected grid or random, found '{}'", design));
  }
  return points;
}

}  // namespace

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
  for (const ConfigNode& a : axes.elements()) plan.axes.push_back(read_axis(a, names));
  if (plan.axes.empty()) axes.fail("expected at least one axis");

  plan.design = root.optional<std::string>("design", "grid");
  plan.points = design_points(root, plan.design, plan.axes);

  if (auto g = root.maybe_child("goal")) {
    Goal goal;
    goal.metric = g->required<std::string>("metric");
    goal.at_least = g->maybe<double>("at_least");
    goal.at_most = g->maybe<double>("at_most");
    if (goal.at_least.has_value() == goal.at_most.has_value())
      g->fail("give one of at_least or at_most (the bound on the metric)");
    goal.minimize = g->optional<std::string>("minimize", "gpus");
    // A name no run reports would leave every point out of bounds: an answer without a question.
    for (const auto& [key, name] : {std::pair{"metric", goal.metric}, std::pair{"minimize", goal.minimize}})
      if (std::ranges::find(SWEEP_METRICS, name) == SWEEP_METRICS.end())
        g->fail_key(key, fmt::format("unknown metric '{}'; known: {}", name, fmt::join(SWEEP_METRICS, ", ")));
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

std::vector<SweepRun> SweepPlan::runs() const {
  std::vector<SweepRun> all;
  std::map<std::string, std::size_t> owner;
  for (std::size_t p = 0; p < points.size(); ++p)
    for (std::size_t t = 0; t < trials; ++t) {
      auto doc = scenario(p, t);
      const std::string key = run_key(*doc);
      const auto seed = std::stoull(canonical(doc->root())["seed"].get<std::string>());
      if (const auto [it, fresh] = owner.emplace(key, p); !fresh)
        throw_input_error({file, 0, 0}, "axes",
                          fmt::format("points {} ({}) and {} ({}) are the same scenario: an axis value changes nothing",
                                      it->second, label(it->second), p, label(p)));
      all.push_back({p, t, seed, key});
    }
  return all;
}

json SweepPlan::labels(std::size_t p) const {
  json out = json::object();
  for (std::size_t a = 0; a < axes.size(); ++a) out[axes[a].name] = axes[a].values[points.at(p)[a]].label;
  return out;
}

}  // namespace snsim::studies
