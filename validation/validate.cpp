#include "validation/validate.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/models.hpp"
#include "models/params.hpp"
#include "runtime/runner.hpp"
#include "sim/config.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "topologies/register.hpp"
#include "validation/twins.hpp"

namespace snsim::validation {
namespace {

// The jitter family is validated on distributions: its twins draw this many samples, so that the simulated p99.9
// is the model's (50 samples beyond it), not the luck of a few draws.
constexpr int JITTER_SAMPLES = 50'000;

/// The use of records that do not alternate along their curve: jitter distributions and training steps only
/// validate (what the models compose to), the step family's lone GEMMs only calibrate (the compute rate, as launch
/// records are the launch costs).
std::optional<Use> fixed_use(const TraceRecord& r) {
  if (r.family == Family::jitter) return Use::validation;
  if (r.family == Family::step) return r.test == "gemm" ? Use::calibration : Use::validation;
  return std::nullopt;
}

std::string curve_key(const TracedRecord& t) {
  const auto& r = *t.record;
  return fmt::format("{}|{}|{}|{}|{}", t.trace->source, to_string(r.family), r.test, r.variant,
                     fmt::join(r.ranks, ","));
}

double median_of(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

}  // namespace

std::string_view to_string(Use use) {
  return use == Use::calibration ? "calibration" : "validation";
}

std::vector<Use> split_records(const std::vector<TracedRecord>& records) {
  std::map<std::string, std::vector<std::size_t>> curves;
  for (std::size_t i = 0; i < records.size(); ++i) curves[curve_key(records[i])].push_back(i);
  std::vector<Use> uses(records.size(), Use::calibration);
  for (auto& [key, members] : curves) {
    std::ranges::stable_sort(members, {}, [&](std::size_t i) { return records[i].record->bytes; });
    for (std::size_t k = 0; k < members.size(); ++k) {
      const auto& r = *records[members[k]].record;
      if (const auto use = fixed_use(r))
        uses[members[k]] = *use;
      else if (members.size() > 1 && k % 2 == 1)
        uses[members[k]] = Use::validation;
    }
  }
  return uses;
}

Platform platform_of(const Trace& trace) {
  Platform p;
  std::string name;
  for (const auto& g : trace.header.gpus)
    if (!g.name.empty()) name = g.name;
  for (auto [pattern, preset] : {std::pair{"H200", "h200"}, {"H100", "h100"}, {"B200", "gb200"}})
    if (name.find(pattern) != std::string::npos) p.gpu = preset;
  if (p.gpu.empty())
    throw_input_error({trace.source, 1, 0}, "gpus",
                      name.empty() ? "the header names no GPU model: snsim cannot tell which GPU to simulate"
                                   : fmt::format("no GPU preset for '{}' (known: H100, H200, B200)", name));
  p.gpus = std::max<int>(2, static_cast<int>(trace.header.gpus.size()));
  for (const auto& r : trace.records)
    for (int rank : r.ranks) p.gpus = std::max(p.gpus, rank + 1);
  return p;
}

std::vector<Simulated> simulate_twins(const Platform& platform, const std::vector<TracedRecord>& records,
                                      const TwinOptions& options) {
  const std::string text = run_isolated([&]() -> std::string {
    auto document = ConfigDocument::load_string(
        fmt::format("topology: {{type: hgx, gpu: {}, gpus: {}}}\n", platform.gpu, platform.gpus),
        "<validation platform>");
    if (options.params) document->set(fmt::format("models.params={}", *options.params), "--params");
    models::apply_params(*document);
    Registry<Topology> topologies("topology");
    topologies::register_topologies(topologies);
    const Fabric fabric = topologies.create(document->root().child("topology"))->build();
    const auto models = models::Models::load(document->root().section("models"));
    document->reject_unknown_keys();

    const std::size_t gpus = fabric.gpus().size();
    std::vector<int> everyone(gpus);
    std::iota(everyone.begin(), everyone.end(), 0);
    const workloads::Group all = std::make_shared<const std::vector<int>>(everyone);
    std::vector<workloads::Program> programs(gpus);
    std::vector<Twin> twins(records.size());
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < records.size(); ++i) {
      auto made = make_twin(*records[i].trace, *records[i].record, static_cast<int>(gpus), models);
      if (auto* reason = std::get_if<std::string>(&made)) {
        out.push_back({{"skipped", *reason}});
        continue;
      }
      twins[i] = std::get<Twin>(std::move(made));
      out.push_back(nullptr);
      twins[i].samples = records[i].record->family == Family::jitter ? JITTER_SAMPLES
                                                                     : std::min(twins[i].samples, options.max_samples);
      for (int s = -twins[i].warmup; s < twins[i].samples; ++s) {
        for (std::size_t r = 0; r < gpus; ++r) {
          for (auto op : twins[i].sample[r]) {
            op.phase = static_cast<int>(i);
            op.tag = s;
            programs[r].ops.push_back(std::move(op));
          }
          programs[r].ops.push_back(workloads::Op{workloads::BarrierOp{all, true}, static_cast<int>(i), s});
        }
      }
    }
    Simulation simulation(fabric);
    workloads::Runner runner(simulation, models, std::move(programs), options.seed);
    runner.launch();
    simulation.run();
    if (const auto stuck = runner.unfinished(); !stuck.empty())
      throw std::runtime_error(fmt::format("twins deadlocked: ranks {} did not finish", fmt::join(stuck, ", ")));

    // Each sample spans from its first op's start to the end of its last measured op.
    std::map<std::pair<int, int>, std::pair<double, double>> spans;  // (record, sample) -> (start, end)
    for (const auto& op : runner.records()) {
      const auto& twin = twins[static_cast<std::size_t>(op.phase)];
      auto [it, inserted] = spans.try_emplace({op.phase, op.tag}, op.start.count(), -1.0);
      it->second.first = std::min(it->second.first, op.start.count());
      if (twin.measured_label.empty() || op.label.find(twin.measured_label) != std::string::npos)
        it->second.second = std::max(it->second.second, op.end.count());
    }
    std::vector<std::vector<double>> values(records.size());
    for (const auto& [key, span] : spans) {
      if (key.second < 0) continue;  // a warm-up sample
      const auto& twin = twins[static_cast<std::size_t>(key.first)];
      const double per_repetition = (span.second - span.first) / twin.repetitions;
      values[static_cast<std::size_t>(key.first)].push_back(
          twin.rate_bytes ? static_cast<double>(twin.rate_bytes->count()) / per_repetition : per_repetition);
    }
    for (std::size_t i = 0; i < records.size(); ++i)
      if (out[i].is_null()) out[i] = {{"samples", values[i]}};
    return out.dump();
  });
  std::vector<Simulated> simulated;
  for (const auto& entry : nlohmann::json::parse(text)) {
    Simulated s;
    if (entry.contains("skipped")) s.skipped = entry["skipped"].get<std::string>();
    if (entry.contains("samples")) s.samples = entry["samples"].get<std::vector<double>>();
    simulated.push_back(std::move(s));
  }
  return simulated;
}

bool KnownMiss::matches(const Comparison& c) const {
  return c.family == family && c.test == test && (variant.empty() || c.variant == variant) &&
         (statistic.empty() || c.statistic == statistic) && c.bytes >= from && c.bytes <= to;
}

Bounds load_bounds(const std::string& yaml, const std::string& file_name) {
  auto document = ConfigDocument::load_string(yaml, file_name);
  Bounds bounds;
  const ConfigNode root = document->root();
  for (const auto& name : root.keys()) {
    const ConfigNode node = root.child(name);
    if (name == "known_misses") {
      for (const auto& m : node.elements()) {
        KnownMiss miss{m.required<std::string>("family"),      m.required<std::string>("test"),
                       m.optional<std::string>("variant", ""), m.optional<std::string>("statistic", ""),
                       m.optional<Bytes>("from", Bytes{0}),    m.optional<Bytes>("to", Bytes{~0ull}),
                       m.required<std::string>("why")};
        if (!family_from_string(miss.family))
          m.fail_key("family", fmt::format("not a trace family; known: {}", known_family_names()));
        bounds.known_misses.push_back(std::move(miss));
      }
      continue;
    }
    if (!family_from_string(name))
      node.fail(fmt::format("not a trace family (or known_misses); known: {}", known_family_names()));
    FamilyBound b{node.maybe<double>("median"), node.maybe<double>("max")};
    for (auto [key, value] : {std::pair{"median", b.median}, {"max", b.max}})
      if (value && !(*value > 0)) node.fail_key(key, fmt::format("must be > 0, got {}", *value));
    bounds.families[name] = b;
  }
  document->reject_unknown_keys();
  return bounds;
}

ValidationResult validate(const std::vector<Trace>& traces, const Bounds& bounds, const TwinOptions& options) {
  std::vector<TracedRecord> all;
  for (const auto& t : traces)
    for (const auto& r : t.records) all.push_back({&t, &r});
  const auto uses = split_records(all);

  // One simulation per platform, and the jitter family in one of its own: its draws then do not depend on which
  // other records are validated with it.
  std::map<std::pair<Platform, bool>, std::vector<std::size_t>> by_platform;
  for (std::size_t i = 0; i < all.size(); ++i)
    by_platform[{platform_of(*all[i].trace), all[i].record->family == Family::jitter}].push_back(i);
  std::vector<Simulated> simulated(all.size());
  for (const auto& [platform, members] : by_platform) {
    std::vector<TracedRecord> group;
    for (auto i : members) group.push_back(all[i]);
    auto results = simulate_twins(platform.first, group, options);
    for (std::size_t k = 0; k < members.size(); ++k) simulated[members[k]] = std::move(results[k]);
  }

  ValidationResult result;
  std::map<std::string, FamilySummary> families;
  std::map<std::string, std::vector<std::string>> autocorrelations;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& r = *all[i].record;
    const std::string family(to_string(r.family));
    auto& summary = families[family];
    summary.family = family;
    if (!simulated[i].skipped.empty() || simulated[i].samples.empty()) {
      ++summary.skipped;
      summary.note = simulated[i].skipped;
      result.skipped.push_back(fmt::format("{}:{}: {}", all[i].trace->source, r.id, simulated[i].skipped));
      continue;
    }
    (uses[i] == Use::calibration ? summary.calibration_count : summary.validation_count)++;
    auto compare = [&](std::string statistic, double measured, double predicted) {
      result.comparisons.push_back({all[i].trace->source, r.id, family, r.test, r.variant, r.bytes, uses[i],
                                    std::move(statistic), std::string(to_string(r.unit)), measured, predicted,
                                    measured > 0 ? predicted / measured - 1 : 0});
    };
    const auto& predicted = simulated[i].samples;
    compare("median", r.median, median_of(predicted));
    if (r.family == Family::jitter && !r.samples.empty()) {
      compare("p99", quantile(r.samples, 0.99), quantile(predicted, 0.99));
      compare("p99.9", quantile(r.samples, 0.999), quantile(predicted, 0.999));
      autocorrelations[family].push_back(fmt::format("{} measured {:.2f} simulated {:.2f}", r.test,
                                                     lag1_autocorrelation(r.samples), lag1_autocorrelation(predicted)));
    }
  }
  for (auto& [name, summary] : families) {
    std::vector<double> errors, all_errors;
    for (const auto& c : result.comparisons) {
      if (c.family != name || c.use != Use::validation) continue;
      all_errors.push_back(std::abs(c.error));
      if (std::ranges::any_of(bounds.known_misses, [&](const KnownMiss& m) { return m.matches(c); }))
        ++summary.known_misses;
      else
        errors.push_back(std::abs(c.error));
    }
    if (!errors.empty()) {
      summary.median_abs_error = median_of(errors);
      summary.max_abs_error = *std::ranges::max_element(errors);
    }
    if (!all_errors.empty()) summary.max_abs_error_all = *std::ranges::max_element(all_errors);
    if (auto it = bounds.families.find(name); it != bounds.families.end()) {
      summary.bound = it->second;
      summary.has_bound = true;
      if (errors.empty()) {
        summary.pass = false;
        summary.note =
            fmt::format("no validation record was simulated{}", summary.note.empty() ? "" : ": " + summary.note);
      }
      if (summary.bound.median && summary.median_abs_error > *summary.bound.median) summary.pass = false;
      if (summary.bound.max && summary.max_abs_error > *summary.bound.max) summary.pass = false;
    }
    if (auto it = autocorrelations.find(name); it != autocorrelations.end())
      summary.note = fmt::format("lag-1 autocorrelation: {}", fmt::join(it->second, "; "));
    result.pass = result.pass && summary.pass;
    result.families.push_back(summary);
  }
  return result;
}

double lag1_autocorrelation(const std::vector<double>& series) {
  if (series.size() < 3) return 0;
  const double mean = std::accumulate(series.begin(), series.end(), 0.0) / static_cast<double>(series.size());
  double numerator = 0, denominator = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    denominator += (series[i] - mean) * (series[i] - mean);
    if (i > 0) numerator += (series[i] - mean) * (series[i - 1] - mean);
  }
  return denominator > 0 ? numerator / denominator : 0;
}

nlohmann::json ValidationResult::to_json() const {
  nlohmann::json j;
  j["pass"] = pass;
  for (const auto& f : families) {
    nlohmann::json b = nlohmann::json::object();
    if (f.bound.median) b["median"] = *f.bound.median;
    if (f.bound.max) b["max"] = *f.bound.max;
    j["families"].push_back({{"family", f.family},
                             {"validation_records", f.validation_count},
                             {"calibration_records", f.calibration_count},
                             {"skipped_records", f.skipped},
                             {"median_abs_error", f.median_abs_error},
                             {"max_abs_error", f.max_abs_error},
                             {"known_misses", f.known_misses},
                             {"max_abs_error_with_known_misses", f.max_abs_error_all},
                             {"bound", b},
                             {"pass", f.pass},
                             {"note", f.note}});
  }
  for (const auto& c : comparisons)
    j["comparisons"].push_back({{"trace", c.trace},
                                {"id", c.id},
                                {"family", c.family},
                                {"test", c.test},
                                {"variant", c.variant},
                                {"bytes", c.bytes.count()},
                                {"use", to_string(c.use)},
                                {"statistic", c.statistic},
                                {"unit", c.unit},
                                {"measured", c.measured},
                                {"predicted", c.predicted},
                                {"error", c.error}});
  j["skipped"] = skipped;
  return j;
}

std::string ValidationResult::to_csv() const {
  std::string out = "trace,id,family,test,variant,bytes,use,statistic,unit,measured,predicted,error\n";
  for (const auto& c : comparisons)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.6f}\n", c.trace, c.id, c.family, c.test, c.variant,
                       c.bytes.count(), to_string(c.use), c.statistic, c.unit, c.measured, c.predicted, c.error);
  return out;
}

}  // namespace snsim::validation
