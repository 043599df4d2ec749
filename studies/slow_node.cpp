#include "studies/slow_node.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "models/params.hpp"
#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/files.hpp"
#include "sim/isolated.hpp"
#include "studies/inputs.hpp"
#include "studies/python.hpp"

namespace snsim::studies {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The default sweep: the slow GPU's compute time x1.02 ... x1.20 (2 % to 20 % longer kernels).
constexpr std::array<double, 4> DEFAULT_FACTORS{1.02, 1.05, 1.10, 1.20};

// Study defaults for variability a scenario leaves at `none`. Clock and HBM: the slow-node question as the project
// posed it ("clocks ±0.5 %, HBM ±2 %"), read as sigma 0.5 % and 1 % (±2 % as two sigmas); the link jitter is the
// one measured on our H200s (the h200 parameter set).
constexpr const char* DEFAULT_CLOCK = "{dist: normal, sigma: 0.005}";
constexpr const char* DEFAULT_HBM = "{dist: normal, sigma: 0.01}";
constexpr const char* MEASURED_PRESET = "h200";

/// A distribution of the scenario as one line: "normal sigma 0.005", "empirical, 1000 samples".
std::string describe(const models::Distribution& d) {
  switch (d.kind()) {
    case models::Distribution::Kind::none:
      return "none";
    case models::Distribution::Kind::constant:
      return fmt::format("constant {}", d.median());
    case models::Distribution::Kind::normal:
      return fmt::format("normal, 1 sigma {:.3g} %", 100 * (d.quantile(0.8413447460685429) - d.median()));
    case models::Distribution::Kind::lognormal:
      return fmt::format("lognormal, median {}, p99 x{:.4g}", d.median(), d.quantile(0.99) / d.median());
    case models::Distribution::Kind::empirical:
      return fmt::format("empirical, p01 {:.4g}, p50 {:.4g}, p99 {:.4g}", d.quantile(0.01), d.median(),
                         d.quantile(0.99));
  }
  return "";
}

/// A distribution node of a parameter file written back as one YAML flow map (its scalars as written).
std::string distribution_yaml(const ConfigNode& node) {
  std::vector<std::string> items;
  for (const auto& key : node.keys()) {
    const ConfigNode value = node.child(key);
    if (value.is_sequence()) {
      std::vector<std::string> elements;
      for (const auto& e : value.elements()) elements.push_back(e.scalar());
      items.push_back(fmt::format("{}: [{}]", key, fmt::join(elements, ", ")));
    } else {
      items.push_back(fmt::format("{}: {}", key, value.scalar()));
    }
  }
  return fmt::format("{{{}}}", fmt::join(items, ", "));
}

/// models.jitter.<name> of the measured parameter set, as YAML.
std::string measured_jitter(const std::string& name) {
  for (const auto& preset : models::params_presets())
    if (preset.name == MEASURED_PRESET) {
      auto doc = ConfigDocument::load_string(preset.text, preset.file);
      return distribution_yaml(doc->root().child("models").child("jitter").child(name));
    }
  throw std::logic_error(fmt::format("no parameter set '{}'", MEASURED_PRESET));
}

std::shared_ptr<ConfigDocument> load_document(const SlowNodeOptions& o) {
  auto doc = ConfigDocument::load_file(o.scenario);
  apply_overrides(*doc, o.sets, o.seed);
  return doc;
}

}  // namespace

SlowNodePlan plan_slow_node(const SlowNodeOptions& o) {
  if (o.trials < 1 || o.trials > MAX_TRIALS)
    throw_input_error({fmt::format("--trials {}", o.trials), 0, 0}, "",
                      fmt::format("must be between 1 and {}, got {}", MAX_TRIALS, o.trials));
  if (o.jobs && (*o.jobs < 1 || *o.jobs > MAX_JOBS))
    throw_input_error({fmt::format("--jobs {}", *o.jobs), 0, 0}, "",
                      fmt::format("must be between 1 and {}, got {}", MAX_JOBS, *o.jobs));
  if (o.steps && *o.steps < 1)
    throw_input_error({fmt::format("--steps {}", *o.steps), 0, 0}, "", fmt::format("must be >= 1, got {}", *o.steps));
  const auto scenario = workloads::Scenario::load(load_document(o));
  SlowNodePlan plan;
  plan.trials = o.trials;
  plan.jobs = o.jobs.value_or(usable_cpus());
  plan.name = scenario.name();
  plan.gpus = static_cast<int>(scenario.fabric().gpus().size());
  plan.seed = scenario.seed();
  if (o.steps)
    plan.steps = {*o.steps, "--steps"};
  else
    plan.steps = infer_steps(scenario.programs());

  plan.points.emplace_back();
  if (o.slow.empty()) {
    // The scenario's own slow GPU and factor join the sweep, so that its case is one of the points.
    const auto& slow = scenario.models().slow->gpus;
    const int gpu = slow.empty() ? 0 : slow.front().gpu;
    std::vector<double> factors(DEFAULT_FACTORS.begin(), DEFAULT_FACTORS.end());
    if (!slow.empty() && slow.front().compute > 1 && std::ranges::find(factors, slow.front().compute) == factors.end())
      factors.push_back(slow.front().compute);
    std::ranges::sort(factors);
    for (double f : factors) plan.points.push_back({{{gpu, f, 1}}});
  } else {
    for (const auto& text : o.slow) plan.points.push_back(parse_slow_point(text, plan.gpus));
  }

  const auto& m = scenario.models();
  auto add = [&](std::string key, const models::Distribution& d, const std::string& fallback, std::string why) {
    if (!d.is_none()) {
      plan.variables.push_back({std::move(key), describe(d), "scenario", ""});
      return;
    }
    auto doc = ConfigDocument::load_string("d: " + fallback, "<study default>");
    const auto dist = models::Distribution::parse(doc->root().child("d"));
    plan.variables.push_back(
        {key, describe(dist), "study default: " + std::move(why), fmt::format("{}={}", key, fallback)});
  };
  add("models.variation.clock", m.variation->clock, DEFAULT_CLOCK,
      "clocks ±0.5 % (docs/design.md#purpose), sigma 0.5 %");
  add("models.variation.hbm", m.variation->hbm, DEFAULT_HBM, "HBM ±2 % (docs/design.md#purpose) as two sigmas");
  add("models.jitter.latency", m.jitter->latency, measured_jitter("latency"),
      "measured on H200 NVLink (validation/params/h200.yaml)");
  add("models.jitter.bandwidth", m.jitter->bandwidth, measured_jitter("bandwidth"),
      "measured on H200 NVLink (validation/params/h200.yaml)");
  return plan;
}

namespace {

/// One trial, in a child process: the scenario with this point's slow GPUs, the defaults and the trial's seed.
std::string run_trial(const SlowNodeOptions& o, const SlowNodePlan& plan, const SlowPoint& point, std::uint64_t seed) {
  auto doc = load_document(o);
  doc->set(fmt::format("seed={}", seed), "the study's trial seed");
  doc->set("models.slow=" + point.yaml(), "the study's slow GPUs");
  for (const auto& v : plan.variables)
    if (!v.assignment.empty()) doc->set(v.assignment, "the study's default variability");
  const auto scenario = workloads::Scenario::load(doc);
  const Report report = scenario.run();
  json waits = json::array();
  for (const auto& w : report.waits) waits.push_back(to_json(w));
  return json{{"outcome", report.outcome}, {"makespan_s", report.simulated_time.count()}, {"waits", waits}}.dump();
}

PointResult analyse(std::vector<Trial> trials, int gpus) {
  PointResult p;
  p.trials = std::move(trials);
  std::vector<double> steps;
  for (const auto& t : p.trials) steps.push_back(t.step);
  p.step = summarize(steps);
  const auto n = static_cast<std::size_t>(gpus);
  p.busy.assign(n, 0);
  p.waiting.assign(n, 0);
  p.on.assign(n, {});
  const double k = 1.0 / static_cast<double>(p.trials.size());
  for (const auto& t : p.trials)
    for (const auto& w : t.waits) {
      const auto r = static_cast<std::size_t>(w.rank);
      p.busy.at(r) += k * w.busy.count();
      p.waiting.at(r) += k * w.waiting.count();
      for (const auto& [j, time] : w.on) p.on.at(r)[j] += k * time.count();
    }
  for (std::size_t r = 0; r < n; ++r) {
    std::optional<int> most;
    double longest = 0;
    for (const auto& [j, time] : p.on[r])  // by rank: the first of equals is the lowest
      if (time > longest) {
        most = j;
        longest = time;
      }
    p.most.push_back(most);
  }
  return p;
}

std::string gpu(int rank) {
  return fmt::format("gpu{}", rank);
}

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json summary_json(const Summary& s) {
  return {{"n", s.n},     {"mean", s.mean}, {"stddev", s.stddev},          {"min", s.min},
          {"p50", s.p50}, {"p99", s.p99},   {"ci95_low", opt(s.ci95_low)}, {"ci95_high", opt(s.ci95_high)},
          {"max", s.max}};
}

/// study.md: how the study ran (and how to run it again), the picture, the tables and how to read them.
std::string study_markdown(const SlowNodeOptions& o, const SlowNodePlan& plan, const std::vector<PointResult>& results,
                           const Table& steps, const Table& waits, bool plotted) {
  const std::size_t n = plan.trials;
  std::string md = fmt::format("# Slow-node study: {}\n\n", plan.name);
  md += fmt::format(
      "{} GPUs; {} points x {} trials, seeds {}-{} (trial i has the same seed at every point). Step time: {}.\n\n",
      plan.gpus, plan.points.size(), n, plan.seed, plan.seed + n - 1, plan.steps.why);
  std::string command = fmt::format("snsim study slow-node {} --trials {} --seed {}", o.scenario, n, plan.seed);
  for (const auto& s : o.slow) command += " --slow " + s;
  if (o.steps) command += fmt::format(" --steps {}", *o.steps);
  for (const auto& s : o.sets) command += " --set " + s;
  md += fmt::format("Run again (the same study.json, byte for byte, with any --jobs): `{} --out DIR`\n\n", command);
  if (plotted)
    md +=
        "![efficiency lost and step time p50 / p99 against the slow GPU's slowdown](study.png)\n\n"
        "Left: the job's efficiency lost against the throughput the slow GPU loses (paired over the common seeds, "
        "with its 95 % interval; on the dashed line the job loses exactly what the GPU loses). Middle: the step "
        "time's p50 and p99 per point (the band: the 95 % interval of the mean). Right: each GPU's mean waiting "
        "time per step at the healthy and the most slowed point, over the GPU it waited on most.\n\n";
  md += "What varies in every trial:\n\n";
  for (const auto& v : plan.variables) md += fmt::format("- `{}`: {} ({})\n", v.key, v.what, v.source);
  md += "\n## Step time and efficiency lost\n\n";
  md += format_markdown(steps);
  md += fmt::format(
      "\nThe GPU slowdown is the throughput the slow GPU loses (1 - 1/factor); efficiency lost is the job's "
      "(1 - healthy p50 / p50); an amplification of 1 means the job loses what the slow GPU loses, below 1 the "
      "rest of the step (communication) dilutes it, above 1 waits compound it. The 95 % interval is the mean's "
      "(Student t over {} trials).\n",
      n);
  Table paired{"efficiency lost per trial against the healthy trial of the same seed",
               {"point", "mean_pct", "ci95_low_pct", "ci95_high_pct", "min_pct", "max_pct"},
               {}};
  auto pct = [](const std::optional<double>& v) { return v ? json(100 * *v) : json(nullptr); };
  for (std::size_t p = 1; p < results.size(); ++p)
    if (const auto& l = results[p].paired_lost)
      paired.rows.push_back(
          {plan.points[p].label(), 100 * l->mean, pct(l->ci95_low), pct(l->ci95_high), 100 * l->min, 100 * l->max});
  if (!paired.rows.empty()) {
    md += "\n## Efficiency lost, paired over the common seeds\n\n";
    md += format_markdown(paired);
    md +=
        "\nTrial i of every point has the same seed, so 1 - healthy_i / slowed_i removes the noise the points share: "
        "a tighter estimate than the difference of p50s.\n";
  }
  md += "\n## Who waited on whom\n\n";
  md += format_markdown(waits);
  md +=
      "\nA rank waits in a collective or barrier from its arrival until the last member arrives (blamed on that "
      "member), in a signal_wait until the put that made the signal hold (blamed on its issuer), and in a get for "
      "the whole get (blamed on the PE read from).\n";
  md +=
      "\nFiles: `study.json` (everything, also per rank the waiting time on every other rank), `study.csv` (one line "
      "per trial)";
  md += plotted ? ", `study.png`.\n" : ".\n";
  return md;
}

}  // namespace

std::string SlowPoint::label() const {
  if (gpus.empty()) return "healthy";
  std::vector<std::string> parts;
  for (const auto& g : gpus)
    parts.push_back(g.hbm == 1 ? fmt::format("gpu{} x{}", g.gpu, g.compute)
                               : fmt::format("gpu{} x{} hbm x{}", g.gpu, g.compute, g.hbm));
  return fmt::format("{}", fmt::join(parts, "+"));
}

double SlowPoint::slowdown() const {
  double most = 0;
  for (const auto& g : gpus) most = std::max({most, 1 - 1 / g.compute, 1 - 1 / g.hbm});
  return most;
}

std::string SlowPoint::yaml() const {
  std::vector<std::string> items;
  for (const auto& g : gpus)
    items.push_back(g.hbm == 1 ? fmt::format("{{gpu: {}, compute: {}}}", g.gpu, g.compute)
                               : fmt::format("{{gpu: {}, compute: {}, hbm: {}}}", g.gpu, g.compute, g.hbm));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

SlowPoint parse_slow_point(const std::string& text, int gpus) {
  const SourceLocation where{"--slow " + text, 0, 0};
  // A factor: 1.05, or 5% for the same; > 0.
  auto factor = [&where](std::string_view written, std::string_view what) {
    std::string_view digits = written;
    const bool pct = !digits.empty() && digits.back() == '%';
    if (pct) digits.remove_suffix(1);
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || !std::isfinite(value))
      throw_input_error(
          where, "", fmt::format("expected {} factor after ':' (1.05, or 5% for the same), found '{}'", what, written));
    if (pct) value = 1 + value / 100;
    // models.slow's range (models/jitter.hpp says why).
    if (!(value >= models::MIN_SLOW_FACTOR && value <= models::MAX_SLOW_FACTOR))
      throw_input_error(where, "",
                        fmt::format("the {} factor must be between {} and {}, got {}", what.substr(what.find(' ') + 1),
                                    models::MIN_SLOW_FACTOR, models::MAX_SLOW_FACTOR, value));
    return value;
  };
  SlowPoint point;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    std::vector<std::string_view> parts;
    for (auto colon = item.find(':'); colon != std::string_view::npos; colon = item.find(':')) {
      parts.push_back(item.substr(0, colon));
      item.remove_prefix(colon + 1);
    }
    parts.push_back(item);
    if (parts.size() < 2 || parts.size() > 3)
      throw_input_error(where, "",
                        "expected GPU:FACTOR[:HBM_FACTOR], such as 3:1.05 or 3:5% (GPU 3's kernels take 5 % longer)");
    int g = -1;
    const auto [end, ec] = std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(), g);
    if (ec != std::errc{} || end != parts[0].data() + parts[0].size() || parts[0].empty())
      throw_input_error(where, "", fmt::format("expected a GPU index before ':', found '{}'", parts[0]));
    if (g < 0 || g >= gpus)
      throw_input_error(where, "",
                        fmt::format("GPU {} does not exist (the topology has {} GPUs: 0-{})", g, gpus, gpus - 1));
    if (std::ranges::any_of(point.gpus, [g](const models::SlowGpu& s) { return s.gpu == g; }))
      throw_input_error(where, "", fmt::format("GPU {} is named twice", g));
    point.gpus.push_back(
        {g, factor(parts[1], "a compute-time"), parts.size() == 3 ? factor(parts[2], "an HBM-time") : 1});
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return point;
}

Steps infer_steps(const std::vector<workloads::Program>& programs) {
  std::optional<int> count;
  bool uniform = !programs.empty();
  for (const auto& p : programs)
    for (const auto& op : p.ops) {
      if (const auto* b = std::get_if<workloads::BarrierOp>(&op.what); b && b->sync) continue;  // between workloads
      const auto* r = std::get_if<workloads::RepeatOp>(&op.what);
      if (!r || (count && *count != r->count)) uniform = false;
      if (r && !count) count = r->count;
    }
  if (uniform && count)
    return {*count, fmt::format("makespan / {}: every workload's ops are one `repeat: {}`", *count, *count)};
  return {1, "the makespan: the workloads are not all one `repeat` of the same count (--steps sets it)"};
}

std::vector<PointResult> run_slow_node(const SlowNodeOptions& o, const SlowNodePlan& plan,
                                       const std::function<void(std::size_t task)>& finished) {
  // Trial t of point p is task p * N + t, seeded S + t at every point.
  const std::size_t n = plan.trials, count = plan.points.size() * n;
  const auto texts = run_isolated_each(
      count, plan.jobs,
      [&](std::size_t task) { return run_trial(o, plan, plan.points[task / n], plan.seed + task % n); }, finished);

  std::vector<PointResult> results;
  for (std::size_t p = 0; p < plan.points.size(); ++p) {
    std::vector<Trial> trials;
    for (std::size_t t = 0; t < n; ++t) {
      const json result = json::parse(texts[p * n + t]);
      const auto outcome = result.at("outcome").get<std::string>();
      if (outcome != "completed")
        throw SimulatedFailure(fmt::format("trial {} of {} (seed {}) did not complete: {}", t, plan.points[p].label(),
                                           plan.seed + t, outcome));
      Trial trial;
      trial.seed = plan.seed + t;
      trial.makespan = result.at("makespan_s").get<double>();
      trial.step = trial.makespan / plan.steps.count;
      for (const auto& w : result.at("waits")) trial.waits.push_back(rank_waits_from_json(w));
      trials.push_back(std::move(trial));
    }
    results.push_back(analyse(std::move(trials), plan.gpus));
  }
  const auto& healthy = results.front();
  for (std::size_t p = 1; p < results.size(); ++p) {
    auto& r = results[p];
    r.efficiency_lost = 1 - healthy.step.p50 / r.step.p50;
    if (plan.points[p].slowdown() > 0) r.amplification = *r.efficiency_lost / plan.points[p].slowdown();
    std::vector<double> lost;
    for (std::size_t t = 0; t < n; ++t) lost.push_back(1 - healthy.trials[t].step / r.trials[t].step);
    r.paired_lost = summarize(lost);
  }

  return results;
}

Table steps_table(const SlowNodePlan& plan, const std::vector<PointResult>& results) {
  Table t{
      "step time per point (us), efficiency lost = 1 - healthy p50 / p50, amplification = efficiency lost / "
      "the slow GPU's throughput loss",
      {"point", "gpu_slowdown_pct", "mean_us", "p50_us", "p99_us", "ci95_low_us", "ci95_high_us", "efficiency_lost_pct",
       "amplification"},
      {}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    auto us = [](const std::optional<double>& v) { return v ? json(*v * 1e6) : json("-"); };
    t.rows.push_back({plan.points[i].label(), 100 * plan.points[i].slowdown(), r.step.mean * 1e6, r.step.p50 * 1e6,
                      r.step.p99 * 1e6, us(r.step.ci95_low), us(r.step.ci95_high),
                      r.efficiency_lost ? json(100 * *r.efficiency_lost) : json("-"),
                      r.amplification ? json(*r.amplification) : json("-")});
  }
  return t;
}

Table waits_by_point(const SlowNodePlan& plan, const std::vector<PointResult>& results) {
  Table t{"mean waiting time per step (us) and the rank most waited on, per point", {"rank"}, {}};
  for (const auto& p : plan.points) {
    t.columns.push_back(p.label() + " waiting_us");
    t.columns.push_back(p.label() + " on");
  }
  for (int r = 0; r < plan.gpus; ++r) {
    std::vector<json> row{gpu(r)};
    for (const auto& res : results) {
      const auto k = static_cast<std::size_t>(r);
      row.push_back(res.waiting[k] / plan.steps.count * 1e6);
      row.push_back(res.most[k] ? gpu(*res.most[k]) : std::string("-"));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

SlowNodeFiles write_slow_node_files(const std::filesystem::path& out, const SlowNodeOptions& o,
                                    const SlowNodePlan& plan, const std::vector<PointResult>& results,
                                    const Table& steps, const Table& waits) {
  const std::size_t n = plan.trials;
  json points = json::array();
  for (std::size_t p = 0; p < results.size(); ++p) {
    const auto& r = results[p];
    json slow = json::array();
    for (const auto& g : plan.points[p].gpus) slow.push_back({{"gpu", g.gpu}, {"compute", g.compute}, {"hbm", g.hbm}});
    json ranks = json::array();
    for (int k = 0; k < plan.gpus; ++k) {
      const auto i = static_cast<std::size_t>(k);
      json on = json::array();
      for (const auto& [j, time] : r.on[i])
        if (time > 0) on.push_back({{"rank", j}, {"waiting_s", time}});
      ranks.push_back({{"rank", k},
                       {"busy_s", r.busy[i]},
                       {"waiting_s", r.waiting[i]},
                       {"waiting_per_step_s", r.waiting[i] / plan.steps.count},
                       {"most_waited_on", r.most[i] ? json(*r.most[i]) : json(nullptr)},
                       {"on", std::move(on)}});
    }
    json trials = json::array();
    for (const auto& t : r.trials)
      trials.push_back({{"seed", t.seed}, {"makespan_s", t.makespan}, {"step_time_s", t.step}});
    points.push_back({{"label", plan.points[p].label()},
                      {"slow", std::move(slow)},
                      {"gpu_slowdown", plan.points[p].slowdown()},
                      {"step_time_s", summary_json(r.step)},
                      {"efficiency_lost", opt(r.efficiency_lost)},
                      {"amplification", opt(r.amplification)},
                      {"efficiency_lost_paired", r.paired_lost ? summary_json(*r.paired_lost) : json(nullptr)},
                      {"ranks", std::move(ranks)},
                      {"trials", std::move(trials)}});
  }
  json variables = json::array();
  for (const auto& v : plan.variables)
    variables.push_back({{"key", v.key}, {"distribution", v.what}, {"source", v.source}});
  const json study{{"study", "slow-node"},
                   {"scenario", plan.name},
                   {"gpus", plan.gpus},
                   {"trials", plan.trials},
                   {"seeds", {plan.seed, plan.seed + n - 1}},
                   {"steps", plan.steps.count},
                   {"step_time", plan.steps.why},
                   {"variability", std::move(variables)},
                   {"points", std::move(points)}};
  write_file(out / "study.json", study.dump(1) + "\n");

  std::string csv = "point,trial,seed,makespan_s,step_time_s";
  for (int k = 0; k < plan.gpus; ++k) csv += fmt::format(",waiting_gpu{}_s", k);
  csv += "\n";
  for (std::size_t p = 0; p < results.size(); ++p)
    for (std::size_t t = 0; t < n; ++t) {
      const auto& trial = results[p].trials[t];
      csv += fmt::format("{},{},{},{:.12g},{:.12g}", plan.points[p].label(), t, trial.seed, trial.makespan, trial.step);
      for (const auto& w : trial.waits) csv += fmt::format(",{:.12g}", w.waiting.count());
      csv += "\n";
    }
  write_file(out / "study.csv", csv);

  // The picture is for looking: without matplotlib, one line says why there is none, and study.md has no link.
  const auto drawn = run_plot_script("plot_study.py",
                                     {(out / "study.json").string(), "--out", (out / "study.png").string(), "--quiet"});
  SlowNodeFiles files;
  files.plotted = drawn.status == 0;
  if (!files.plotted)
    files.plot_problem = drawn.status ? fmt::format("plot_study.py exited with {}", *drawn.status) : drawn.problem;
  write_file(out / "study.md", study_markdown(o, plan, results, steps, waits, files.plotted));
  return files;
}

}  // namespace snsim::studies
