#include "validation/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/models.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/fit.hpp"
#include "validation/twins.hpp"
#include "validation/validate.hpp"

namespace snsim::validation {
namespace {

FitPlatform make_platform(const Platform& platform) {
  auto document = platform_document(platform);
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  auto defaults = ConfigDocument::load_string("{}", "<calibration>");
  FitPlatform p{topologies.create(document->root().child("topology"))->build(),
                models::Models::load(defaults->root().section("models")),
                {},
                {}};
  p.peer = p.fabric.cost(p.fabric.gpus()[0], p.fabric.gpus()[1]);
  p.gpu = *p.fabric.device(p.fabric.gpus()[0]).gpu;
  return p;
}

std::vector<std::string> ids(const std::vector<TracedRecord>& records) {
  std::vector<std::string> out;
  for (const auto& t : records) out.push_back(fmt::format("{}:{}", t.trace->source, t.record->id));
  return out;
}

}  // namespace

Fit::Fit(std::vector<TracedRecord> calibration, FitPlatform platform, Calibration& out)
    : calibration_(std::move(calibration)), platform_(std::move(platform)), out_(out) {}

std::vector<TracedRecord> Fit::select(Family family, const std::vector<std::string>& tests,
                                      std::optional<std::string_view> variant,
                                      const std::function<bool(const TraceRecord&)>& also,
                                      std::string_view method) const {
  std::vector<TracedRecord> out;
  for (const auto& t : calibration_) {
    const auto& r = *t.record;
    if (r.family != family || (variant && r.variant != *variant) || std::ranges::find(tests, r.test) == tests.end())
      continue;
    if (timing_method(*t.trace, r) != method) continue;
    if (also && !also(r)) continue;
    out.push_back(t);
  }
  return out;
}

bool Fit::enough(const std::vector<TracedRecord>& records, std::size_t needed, std::string_view what) {
  if (records.size() >= needed) return true;
  note(fmt::format("{}: not fitted ({} calibration records, needs {})", what, records.size(), needed));
  return false;
}

void Fit::add_time(const std::string& key, Seconds value, std::string method, const std::vector<TracedRecord>& from) {
  values_[key] = value.count();
  out_.parameters.push_back({key, fmt::format("{:.4g}us", value.count() * 1e6), std::move(method), ids(from)});
}

void Fit::add_number(const std::string& key, double value, std::string method, const std::vector<TracedRecord>& from) {
  values_[key] = value;
  out_.parameters.push_back({key, fmt::format("{:.6g}", value), std::move(method), ids(from)});
}

void Fit::add_yaml(const std::string& key, std::string yaml, std::string method,
                   const std::vector<TracedRecord>& from) {
  out_.parameters.push_back({key, std::move(yaml), std::move(method), ids(from)});
}

std::optional<double> Fit::value(const std::string& key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? std::nullopt : std::optional{it->second};
}

Seconds Fit::non_negative(Seconds value, const std::string& key) {
  if (value >= Seconds{0}) return value;
  note(fmt::format("{}: the fit gave {}, clamped to 0", key, to_string(value)));
  return Seconds{0};
}

double Fit::intercept(const std::vector<TracedRecord>& records,
                      const std::function<double(const TraceRecord&)>& residual) {
  double sum = 0, weights = 0;
  for (const auto& t : records) {
    const double w = 1 / (t.record->median * t.record->median);
    sum += w * residual(*t.record);
    weights += w;
  }
  return sum / weights;
}

std::vector<double> Fit::relative_least_squares(const std::vector<TracedRecord>& records,
                                                const std::function<std::vector<double>(const TraceRecord&)>& row,
                                                const std::function<double(const TraceRecord&)>& target) {
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& t : records) {
    rows.push_back(row(*t.record));
    y.push_back(target ? target(*t.record) : t.record->median);
    w.push_back(1 / (t.record->median * t.record->median));
  }
  return least_squares(rows, y, w);
}

std::vector<double> minimize(const std::function<double(const std::vector<double>&)>& cost, std::vector<double> start,
                             const std::vector<double>& step, int evaluations, double tolerance) {
  const std::size_t n = start.size();
  std::vector<std::vector<double>> simplex(n + 1, start);
  for (std::size_t i = 0; i < n; ++i) simplex[i + 1][i] += step[i];
  std::vector<double> costs;
  for (const auto& p : simplex) costs.push_back(cost(p));
  int used = static_cast<int>(n) + 1;
  const auto along = [&](const std::vector<double>& centre, const std::vector<double>& from, double t) {
    std::vector<double> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = centre[i] + t * (from[i] - centre[i]);
    return p;
  };
  while (used < evaluations) {
    std::vector<std::size_t> order(n + 1);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::ranges::sort(order, {}, [&](std::size_t i) { return costs[i]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (std::abs(costs[worst] - costs[best]) <= tolerance * (std::abs(costs[best]) + tolerance)) break;
    std::vector<double> centre(n, 0);
    for (std::size_t i : order)
      if (i != worst)
        for (std::size_t j = 0; j < n; ++j) centre[j] += simplex[i][j] / static_cast<double>(n);
    // Reflect the worst point through the others' centre; expand, contract or shrink as the costs say.
    const auto reflected = along(centre, simplex[worst], -1);
    const double r = cost(reflected);
    ++used;
    if (r < costs[best]) {
      const auto expanded = along(centre, simplex[worst], -2);
      const double e = cost(expanded);
      ++used;
      std::tie(simplex[worst], costs[worst]) = e < r ? std::pair{expanded, e} : std::pair{reflected, r};
    } else if (r < costs[second]) {
      std::tie(simplex[worst], costs[worst]) = std::pair{reflected, r};
    } else {
      const auto contracted = along(centre, r < costs[worst] ? reflected : simplex[worst], 0.5);
      const double c = cost(contracted);
      ++used;
      if (c < std::min(r, costs[worst])) {
        std::tie(simplex[worst], costs[worst]) = std::pair{contracted, c};
      } else {
        for (std::size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          simplex[i] = along(simplex[best], simplex[i], 0.5);
          costs[i] = cost(simplex[i]);
          ++used;
        }
      }
    }
  }
  return simplex[static_cast<std::size_t>(std::ranges::min_element(costs) - costs.begin())];
}

std::vector<double> least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                                  const std::vector<double>& weights) {
  const std::size_t n = rows.empty() ? 0 : rows.front().size();
  // Normal equations (A^T W A) x = A^T W y, columns scaled to unit norm first: the byte columns are ~1e9 times the
  // constant one.
  std::vector<double> scale(n, 0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < n; ++j) scale[j] = std::max(scale[j], std::abs(row[j]));
  for (auto& s : scale) s = s > 0 ? s : 1;
  std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < n; ++k) m[j][k] += weights[i] * rows[i][j] / scale[j] * rows[i][k] / scale[k];
      m[j][n] += weights[i] * rows[i][j] / scale[j] * y[i];
    }
  for (std::size_t c = 0; c < n; ++c) {  // Gaussian elimination with partial pivoting
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    if (std::abs(m[pivot][c]) < 1e-300) throw std::invalid_argument("least squares: singular system");
    std::swap(m[c], m[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (std::size_t k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
    }
  }
  std::vector<double> x(n);
  for (std::size_t j = 0; j < n; ++j) x[j] = m[j][n] / m[j][j] / scale[j];
  return x;
}

void check_params(const std::string& yaml, const std::string& file_name) {
  auto params = ConfigDocument::load_string(yaml, file_name);
  auto document = ConfigDocument::load_string("{}", "<parameter check>");
  document->overlay(*params, "models");
  models::Models::load(document->root().section("models"));
  document->reject_unknown_keys();
}

Calibration calibrate(const std::vector<Trace>& traces, const PlatformChoice& choice) {
  if (traces.empty()) throw InputError("snsim calibrate: no trace given");
  const Platform platform = platform_of(traces.front(), choice);
  Platform widest = platform;
  std::vector<std::string> names;
  std::vector<std::string> notes;
  std::vector<std::string> imported;
  std::vector<TracedRecord> records;
  for (const auto& t : traces) {
    const Platform p = platform_of(t, choice);
    if (p.gpu != platform.gpu)
      throw_input_error({t.source, 1, 0}, "gpus",
                        fmt::format("captured on {} while {} was captured on {}: one parameter file describes one GPU "
                                    "model; calibrate them separately",
                                    p.gpu, traces.front().source, platform.gpu));
    if (p.gpu_of_rank.size() > widest.gpu_of_rank.size()) widest = p;
    names.push_back(t.source);
    for (const auto& r : t.records) records.push_back({&t, &r});
  }
  const auto uses = split_records(records);
  std::vector<TracedRecord> calibration;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (uses[i] == Use::calibration && imported_source(*records[i].trace).empty()) calibration.push_back(records[i]);
  // Other tools' output describes the user's machine: every record calibrates, read by the fits as the probe's
  // record of the same experiment (probe_equivalent); records of no probe experiment are counted in a note.
  std::deque<Trace> equivalents;
  for (const auto& t : traces) {
    if (imported_source(t).empty()) continue;
    Trace& e = equivalents.emplace_back();
    e.source = t.source;
    e.header.gpus = t.header.gpus;
    e.header.env = probe_environment(t);
    for (const auto& r : t.records)
      if (auto equivalent = probe_equivalent(t, r)) e.records.push_back(std::move(*equivalent));
    if (e.records.size() < t.records.size())
      notes.push_back(fmt::format("{}: {} of its {} records are no experiment the fits read", t.source,
                                  t.records.size() - e.records.size(), t.records.size()));
    const auto unforced = std::ranges::count_if(e.records, [&](const TraceRecord& r) {
      return r.family == Family::collective && !e.header.env.contains("NCCL_PROTO");
    });
    if (unforced > 0)
      notes.push_back(
          fmt::format("{}: its {} collective records ran without NCCL_PROTO: the collective fit reads "
                      "curves of one forced protocol (fits/collective_fit.cpp), so they validate only",
                      t.source, unforced));
    imported.push_back(t.source);
    for (const auto& r : e.records) calibration.push_back({&e, &r});
  }
  Calibration result;
  result.traces = names;
  result.notes = std::move(notes);
  result.imported = std::move(imported);
  Fit fit(std::move(calibration), make_platform(widest), result);
  fits::copies(fit);
  fits::launches(fit);
  fits::jitter(fit);
  fits::collectives(fit);
  fits::pgas(fit);
  fits::uvm(fit);
  fits::gemms(fit);  // before the power model: the clock readings' elasticity
  fits::compute(fit);
  fits::memory_kernels(fit);
  fits::attention(fit);
  return result;
}

std::string Calibration::to_yaml(const std::string& command) const {
  std::string out = fmt::format(
      "# Written by `{}`: model parameters fitted on the calibration records of the traces\n"
      "# below (every other size of each measured curve); the other records validate them (`snsim validate --params`\n"
      "# this file).\n"
      "# Overlay it with `models: {{params: FILE}}` in a scenario or `--params FILE`; scenario values still win.\n",
      command);
  if (!imported.empty())
    out += "# Other tools' output (listed under calibration: imported) calibrates with every record it has.\n";
  // models: nested by the dotted keys, in the order fitted.
  out += "models:\n";
  auto sorted = parameters;  // siblings together: a map key must not open twice
  std::ranges::stable_sort(sorted, {}, &FittedParameter::key);
  std::vector<std::string> open;  // the key path currently open
  for (const auto& p : sorted) {
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      const auto dot = p.key.find('.', start);
      parts.push_back(p.key.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (std::size_t i = common; i + 1 < parts.size(); ++i) {
      out += fmt::format("{:{}}{}:\n", "", 2 * (i + 1), parts[i]);
      open.push_back(parts[i]);
    }
    out += fmt::format("{:{}}{}: {}\n", "", 2 * parts.size(), parts.back(), p.value);
  }
  out +=
      "calibration:\n  source: \"fitted by snsim calibrate on the calibration records of the traces below; "
      "`snsim validate` checks the other records\"\n  traces:\n";
  for (const auto& t : traces) out += fmt::format("    - {}\n", t);
  if (!imported.empty()) {
    out += "  imported:\n";
    for (const auto& t : imported) out += fmt::format("    - {}\n", t);
  }
  out += "  parameters:\n";
  for (const auto& p : parameters) {
    out += fmt::format("    {}:\n      method: \"{}\"\n      records:\n", p.key, p.method);
    for (const auto& r : p.records) out += fmt::format("        - \"{}\"\n", r);
  }
  if (!notes.empty()) {
    out += "  notes:\n";
    for (const auto& n : notes) out += fmt::format("    - \"{}\"\n", n);
  }
  return out;
}

}  // namespace snsim::validation
