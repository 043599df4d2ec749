#include "validation/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/models.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/validate.hpp"

namespace snsim::validation {
namespace {

using models::CopyEngine;

// Distributions keep this many quantiles: enough for a p99.9 (validation/bounds.yaml checks it).
constexpr int DISTRIBUTION_POINTS = 1000;
// Single copies up to this size are fixed-cost bound (the data takes < 2 % of the time): their spread is latency
// jitter. From this size up they are bandwidth bound: their spread is bandwidth jitter.
constexpr std::uint64_t LATENCY_BOUND_MAX = 64 * 1024;
constexpr std::uint64_t BANDWIDTH_BOUND_MIN = 256ull << 20;

/// What the fits need to know about the platform, from the same presets and defaults the simulator uses.
struct Context {
  Fabric fabric;
  models::Models defaults;
  RouteCost peer;  // GPU 0 -> GPU 1
  GpuSpec gpu;
};

Context make_context(const Platform& platform) {
  auto document = ConfigDocument::load_string(
      fmt::format("topology: {{type: hgx, gpu: {}, gpus: {}}}\n", platform.gpu, platform.gpus), "<calibration>");
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  Context c{topologies.create(document->root().child("topology"))->build(),
            models::Models::load(document->root().section("models")),
            {},
            {}};
  c.peer = c.fabric.cost(c.fabric.gpus()[0], c.fabric.gpus()[1]);
  c.gpu = *c.fabric.device(c.fabric.gpus()[0]).gpu;
  return c;
}

std::string micros(double seconds) {
  return fmt::format("{:.4g}us", seconds * 1e6);
}
std::string number(double value) {
  return fmt::format("{:.6g}", value);
}

class Fitter {
 public:
  Fitter(const std::vector<TracedRecord>& records, const std::vector<Use>& uses, Context context)
      : context_(std::move(context)) {
    for (std::size_t i = 0; i < records.size(); ++i)
      if (uses[i] == Use::calibration) calibration_.push_back(records[i]);
  }

  Calibration run(std::vector<std::string> traces) {
    result_.traces = std::move(traces);
    const auto ce = fit_peer(CopyEngine::ce, {"ce_peer"}, "ce");
    const auto sm = fit_peer(CopyEngine::sm, {"sm_push", "sm_pull"}, "sm");
    if (ce) fit_queue_gap(*ce, {"ce_peer"}, "ce");
    if (sm) fit_queue_gap(*sm, {"sm_push", "sm_pull"}, "sm");
    fit_local();
    if (ce) fit_event_wait(*ce);
    fit_launch();
    fit_latency_jitter();
    fit_bandwidth_jitter();
    return std::move(result_);
  }

 private:
  /// A lone peer copy: t = setup + route latency + bytes / (line rate x efficiency).
  struct PeerFit {
    Seconds setup;
    double efficiency;
  };

  std::vector<TracedRecord> select(Family family, const std::vector<std::string>& tests, std::string_view variant,
                                   const std::function<bool(const TraceRecord&)>& also = {}) const {
    std::vector<TracedRecord> out;
    for (const auto& t : calibration_) {
      const auto& r = *t.record;
      if (r.family != family || r.variant != variant || r.unit != MeasureUnit::seconds) continue;
      if (std::ranges::find(tests, r.test) == tests.end()) continue;
      if (also && !also(r)) continue;
      out.push_back(t);
    }
    return out;
  }

  static std::vector<std::string> ids(const std::vector<TracedRecord>& records) {
    std::vector<std::string> out;
    for (const auto& t : records) out.push_back(fmt::format("{}:{}", t.trace->source, t.record->id));
    return out;
  }

  void add(std::string key, std::string value, std::string method, const std::vector<TracedRecord>& from) {
    result_.parameters.push_back({std::move(key), std::move(value), std::move(method), ids(from)});
  }

  bool enough(const std::vector<TracedRecord>& records, std::size_t needed, std::string_view what) {
    if (records.size() >= needed) return true;
    result_.notes.push_back(
        fmt::format("{}: not fitted ({} calibration records, needs {})", what, records.size(), needed));
    return false;
  }

  std::optional<PeerFit> fit_peer(CopyEngine engine, const std::vector<std::string>& tests, const std::string& name) {
    const auto records = select(Family::copy, tests, "single");
    if (!enough(records, 4, fmt::format("copy.{} setup and efficiency", name))) return std::nullopt;
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const auto& t : records) {
      rows.push_back({1.0, static_cast<double>(t.record->bytes.count())});
      y.push_back(t.record->median);
      w.push_back(1 / (t.record->median * t.record->median));
    }
    const auto x = least_squares(rows, y, w);
    PeerFit fit{Seconds{x[0]} - context_.peer.latency, 1 / (x[1] * context_.peer.bottleneck.count())};
    fit.setup = clamp_time(fit.setup, fmt::format("copy.{}.setup", name));
    fit.efficiency = std::clamp(fit.efficiency, 0.01, 1.0);
    const std::string method = fmt::format(
        "weighted least squares on t = setup + route latency ({}) + bytes / ({} x efficiency), weights 1/t^2",
        to_string(context_.peer.latency), to_string(context_.peer.bottleneck));
    add(fmt::format("copy.{}.efficiency", name), number(fit.efficiency), method, records);
    add(fmt::format("copy.{}.setup", name), micros(fit.setup.count()), method, records);
    (void)engine;
    return fit;
  }

  Seconds clamp_time(Seconds value, const std::string& key) {
    if (value >= Seconds{0}) return value;
    result_.notes.push_back(fmt::format("{}: the fit gave {}, clamped to 0", key, to_string(value)));
    return Seconds{0};
  }

  /// The weighted mean of `residual(record)`, weights 1/t^2: the intercept of a fit whose slope is known.
  static double intercept(const std::vector<TracedRecord>& records,
                          const std::function<double(const TraceRecord&)>& residual) {
    double sum = 0, weights = 0;
    for (const auto& t : records) {
      const double w = 1 / (t.record->median * t.record->median);
      sum += w * residual(*t.record);
      weights += w;
    }
    return sum / weights;
  }

  void fit_queue_gap(const PeerFit& peer, const std::vector<std::string>& tests, const std::string& name) {
    const auto records = select(Family::copy, tests, "pipelined");
    if (!enough(records, 2, fmt::format("copy.{}.queue_gap", name))) return;
    const double rate = context_.peer.bottleneck.count() * peer.efficiency;
    const double gap = intercept(records, [&](const TraceRecord& r) {
      return r.median - static_cast<double>(r.bytes.count()) / rate - context_.peer.latency.count();
    });
    add(fmt::format("copy.{}.queue_gap", name), micros(clamp_time(Seconds{gap}, name).count()),
        fmt::format("weighted mean of t - route latency - bytes / {} (the engine rate fitted on single copies)",
                    to_string(BytesPerSecond{rate})),
        records);
  }

  /// Local copies: t = local_setup(engine) + 2 bytes / (HBM x efficiency), / l2_speedup when both buffers fit in L2.
  void fit_local() {
    const auto records = select(Family::copy, {"ce_local", "sm_local"}, "single");
    if (!enough(records, 6, "copy local copies")) return;
    const double l2 = static_cast<double>(context_.gpu.l2.count());
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    bool in_l2 = false, beyond = false;
    for (const auto& t : records) {
      const double traffic = 2.0 * static_cast<double>(t.record->bytes.count());
      const bool fits = l2 > 0 && traffic <= l2;
      in_l2 = in_l2 || (fits && traffic > 1e6);
      beyond = beyond || !fits;
      rows.push_back({t.record->test == "ce_local" ? 1.0 : 0.0, t.record->test == "sm_local" ? 1.0 : 0.0,
                      fits ? 0.0 : traffic, fits ? traffic : 0.0});
      y.push_back(t.record->median);
      w.push_back(1 / (t.record->median * t.record->median));
    }
    if (!in_l2 || !beyond) {
      result_.notes.push_back("copy local copies: need sizes both inside and beyond L2; not fitted");
      return;
    }
    const auto x = least_squares(rows, y, w);
    const double hbm = context_.gpu.hbm_bandwidth.count();
    const double efficiency = std::clamp(1 / (x[2] * hbm), 0.01, 1.0);
    const double speedup = std::clamp(x[2] / x[3], 1.0, 10.0);
    const std::string method = fmt::format(
        "weighted least squares on t = local_setup(engine) + 2 bytes / (HBM {} x efficiency), / speedup when "
        "2 bytes <= L2 ({})",
        to_string(context_.gpu.hbm_bandwidth), to_string(context_.gpu.l2));
    add("copy.ce.local_setup", micros(clamp_time(Seconds{x[0]}, "copy.ce.local_setup").count()), method, records);
    add("copy.sm.local_setup", micros(clamp_time(Seconds{x[1]}, "copy.sm.local_setup").count()), method, records);
    add("copy.local_hbm_efficiency", number(efficiency), method, records);
    add("copy.local_l2_speedup", number(speedup), method, records);

    auto memory_time = [&](const TraceRecord& r) {
      const double traffic = 2.0 * static_cast<double>(r.bytes.count());
      const double rate = hbm * efficiency * (l2 > 0 && traffic <= l2 ? speedup : 1.0);
      return traffic / rate;
    };
    for (const auto& [test, engine] : {std::pair{"ce_local", "ce"}, {"sm_local", "sm"}}) {
      const auto queued = select(Family::copy, {test}, "pipelined");
      if (!enough(queued, 2, fmt::format("copy.{}.local_queue_gap", engine))) continue;
      const double gap = intercept(queued, [&](const TraceRecord& r) { return r.median - memory_time(r); });
      add(fmt::format("copy.{}.local_queue_gap", engine), micros(std::max(0.0, gap)),
          "weighted mean of t - memory time (the local fit above)", queued);
    }
  }

  /// Copies both ways behind two cross-GPU event waits: t = 2 event_wait + a lone CE copy.
  void fit_event_wait(const PeerFit& ce) {
    const auto records = select(Family::copy, {"ce_peer_bidir"}, "single");
    if (!enough(records, 2, "stream.event_wait")) return;
    const double rate = context_.peer.bottleneck.count() * ce.efficiency;
    const double wait = intercept(records, [&](const TraceRecord& r) {
      return (r.median - (ce.setup + context_.peer.latency).count() - static_cast<double>(r.bytes.count()) / rate) / 2;
    });
    add("stream.event_wait", micros(std::max(0.0, wait)),
        "weighted mean of (t - a lone CE copy by the fit above) / 2: the probe waits on another GPU's event twice",
        records);
  }

  /// Kernel launches: the probe's empty-kernel medians are the parameters themselves.
  void fit_launch() {
    for (const auto& [variant, keys] :
         {std::pair{"back_to_back", std::vector<std::string>{"compute.launch", "collective.stream_launch"}},
          {"graph_back_to_back", std::vector<std::string>{"collective.graph_launch"}}}) {
      const auto records = select(Family::launch, {"empty_kernel"}, variant);
      if (!enough(records, 1, keys.front())) continue;
      std::vector<double> medians;
      for (const auto& t : records) medians.push_back(t.record->median);
      for (const auto& key : keys)
        add(key, micros(quantile(medians, 0.5)), fmt::format("median of empty_kernel/{} per kernel", variant), records);
    }
  }

  /// Samples of single copies divided by their record's median, pooled.
  std::vector<double> normalised_samples(const std::vector<TracedRecord>& records) const {
    std::vector<double> factors;
    for (const auto& t : records) {
      const double median = quantile(t.record->samples, 0.5);
      if (median <= 0) continue;
      for (double s : t.record->samples) factors.push_back(s / median);
    }
    return factors;
  }

  void fit_latency_jitter() {
    const auto records = select(Family::copy, {"ce_peer", "sm_push", "sm_pull", "ce_local", "sm_local"}, "single",
                                [](const TraceRecord& r) { return r.bytes.count() <= LATENCY_BOUND_MAX; });
    const auto factors = normalised_samples(records);
    if (factors.size() < 100) {
      result_.notes.push_back(fmt::format("jitter.latency: {} samples, needs 100; not fitted", factors.size()));
      return;
    }
    std::vector<std::string> points;
    for (int i = 0; i < DISTRIBUTION_POINTS; ++i)
      points.push_back(fmt::format("{:.4f}", quantile(factors, (i + 0.5) / DISTRIBUTION_POINTS)));
    add("jitter.latency", fmt::format("{{dist: empirical, samples: [{}]}}", fmt::join(points, ", ")),
        fmt::format("{} quantiles of {} samples of fixed-cost-bound single copies (<= {}), each over its record's "
                    "median",
                    DISTRIBUTION_POINTS, factors.size(), to_string(Bytes{LATENCY_BOUND_MAX})),
        records);
  }

  void fit_bandwidth_jitter() {
    const auto records = select(Family::copy, {"ce_peer", "sm_push", "sm_pull", "ce_local", "sm_local"}, "single",
                                [](const TraceRecord& r) { return r.bytes.count() >= BANDWIDTH_BOUND_MIN; });
    const auto factors = normalised_samples(records);
    if (factors.size() < 20) {
      result_.notes.push_back(fmt::format("jitter.bandwidth: {} samples, needs 20; not fitted", factors.size()));
      return;
    }
    double sum = 0, squares = 0;
    for (double f : factors) {
      sum += std::log(f);
      squares += std::log(f) * std::log(f);
    }
    const double n = static_cast<double>(factors.size());
    const double sigma = std::sqrt(std::max(0.0, squares / n - (sum / n) * (sum / n)));
    add("jitter.bandwidth", fmt::format("{{dist: lognormal, sigma: {:.3g}}}", sigma),
        fmt::format("standard deviation of log(sample / median) over {} samples of bandwidth-bound single copies "
                    "(>= {})",
                    factors.size(), to_string(Bytes{BANDWIDTH_BOUND_MIN})),
        records);
  }

  Context context_;
  std::vector<TracedRecord> calibration_;
  Calibration result_;
};

}  // namespace

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

Calibration calibrate(const std::vector<Trace>& traces) {
  if (traces.empty()) throw InputError("snsim calibrate: no trace given");
  const Platform platform = platform_of(traces.front());
  std::vector<std::string> names;
  std::vector<TracedRecord> records;
  for (const auto& t : traces) {
    const Platform p = platform_of(t);
    if (p.gpu != platform.gpu)
      throw_input_error({t.source, 1, 0}, "gpus",
                        fmt::format("captured on {} while {} was captured on {}: one parameter file describes one GPU "
                                    "model; calibrate them separately",
                                    p.gpu, traces.front().source, platform.gpu));
    names.push_back(t.source);
    for (const auto& r : t.records) records.push_back({&t, &r});
  }
  const auto uses = split_records(records);
  Platform widest = platform;
  for (const auto& t : traces) widest.gpus = std::max(widest.gpus, platform_of(t).gpus);
  return Fitter(records, uses, make_context(widest)).run(names);
}

std::string Calibration::to_yaml(const std::string& command) const {
  std::string out = fmt::format(
      "# Written by `{}`: model parameters fitted on the calibration records of the traces below (every other size\n"
      "# of each measured curve); the other records validate them (`snsim validate --params` this file).\n"
      "# Overlay it with `models: {{params: FILE}}` in a scenario or `--params FILE`; scenario values still win.\n",
      command);
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
  out += "calibration:\n  traces:\n";
  for (const auto& t : traces) out += fmt::format("    - {}\n", t);
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
