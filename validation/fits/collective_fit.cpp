// Fits of the collective model from the probe's `collective` family (tools/probe/src/families/collective.cu): NCCL
// collectives on 2 GPUs, with NCCL_PROTO forced per trace. NCCL runs ring on 2 GPUs inside a node (twins/collective.cpp
// says why), so these records give ring's per-protocol latencies, rates and channel ramps.
//
// A lone collective takes launch + base + latency_steps x (step_latency + route latency) + serial_bytes / rate
// (models/collective.hpp), with rate = line rate x SM copy efficiency x protocol efficiency x the kind's relative
// rate x channels / links, and channels = NCCL's ramp, one per channel_bytes of the message up to one per link. The
// design matrix comes from CollectiveModel::make_plan, the plan the runner executes.
//
// The measured curves bend more than this line does: past the ramp (~1 MiB) the payload rate still grows by a fifth
// from 8 MiB to 1 GiB (Simple all_reduce: 260 -> 330 GB/s), so least squares over all sizes at once gives a rate
// between the two and predicts 1 GiB 15-22 % slow. Capacity planning needs the large-size rate, so the fit takes it
// where latency no longer counts, and the rest from the smaller sizes:
//   1. per protocol and kind, the rate is the slope of time over bytes across the records of >= 32 MiB;
//   2. the kinds' relative rates and the protocols' efficiencies split those slopes (least squares in logs);
//   3. per protocol, base and step latencies by least squares on relative errors of the smaller records with the byte
//      term known, at each channel_bytes of a log grid; the channel_bytes with the least error is kept.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "sim/statistics.hpp"
#include "validation/fit.hpp"
#include "validation/twins/collective_twin.hpp"

namespace snsim::validation::fits {
namespace {

using models::Algorithm;
using models::CollectiveKind;
using models::Protocol;

constexpr std::array<Protocol, 3> PROTOCOLS{Protocol::ll, Protocol::ll128, Protocol::simple};
// The kinds NCCL runs as ring; all_reduce is the reference of relative rates.
constexpr std::array<CollectiveKind, 4> RING_KINDS{CollectiveKind::all_reduce, CollectiveKind::all_gather,
                                                   CollectiveKind::reduce_scatter, CollectiveKind::broadcast};
const std::vector<std::string> TESTS{"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"};
// Records this large give the rates: a 2-GPU ring at ~300 GB/s takes >= 100 us there, several times its latency, and
// on our H200 traces three calibration sizes (32, 128, 512 MiB) lie above it. From 64 MiB the 1 GiB rate comes out
// closer still (within 5 %), at the cost of 2-64 MiB, and the family's median error crosses 10 %.
constexpr std::uint64_t LARGE_BYTES = 32ull << 20;
// The channel_bytes grid: from 256 B, 8 points per octave (powers of two, NCCL's thresholds, lie on it).
constexpr std::uint64_t GRID_LOW = 256;
constexpr double GRID_PER_OCTAVE = 8;

std::size_t index(auto value) {
  return static_cast<std::size_t>(value);
}

/// A calibration record with what its twin runs.
struct Point {
  TracedRecord traced;
  twins::CollectiveRequirements need;
  models::Launch launch = models::Launch::stream;

  const TraceRecord& record() const { return *traced.record; }
  models::CollectiveRequest request(std::optional<Algorithm> algorithm, std::optional<Protocol> protocol) const {
    return {need.kind, record().bytes, static_cast<int>(record().ranks.size()), algorithm, protocol, {}, launch};
  }
};

/// The lone-collective terms of a plan: t = launch + base + steps x (step + hop) + unit_time / (efficiency x relative
/// rate), where unit_time is serial_bytes at the plan's rate with both at 1.
struct Terms {
  Seconds launch;
  double latency_steps = 0;
  double unit_time = 0;
};

Terms terms(const models::CollectiveModel& unit, const models::CollectivePlan& plan,
            const models::CollectivePlatform& platform) {
  return {plan.launch, static_cast<double>(plan.shape.latency_steps),
          static_cast<double>(plan.shape.serial_bytes.count()) / unit.rate(plan, platform).count()};
}

/// A stream-launched record and the same collective replayed from a CUDA graph (the probe measures both).
struct Paired {
  const Point* stream;
  double graph;  // the graph record's median, s
};

/// The launch and host terms from paired records: calls back to back on a stream take max(host, graph + delta),
/// the host's CPU time per call (CollectiveModel::host_cost: host_call, plus host_p2p_call for each send and recv of
/// a grouped all_to_all) or what the GPU
/// spends beyond a graph replay (delta: launch and NCCL's work upload). Least squares on relative errors: delta on a
/// grid of 1 ns steps, host_call exact for each (where it binds, the error is quadratic in it), host_p2p_call on a
/// grid after.
struct LaunchTerms {
  double delta = 0;
  models::CollectiveModel host;  // its host_call and host_p2p_call
  bool host_bound(const Point& pt, double graph) const { return host_of(pt) > graph + delta; }
  double host_of(const Point& pt) const {
    return host.host_cost(pt.need.kind, static_cast<int>(pt.record().ranks.size())).count();
  }
};

LaunchTerms fit_launch_terms(std::vector<Paired> calls, const std::vector<Paired>& grouped) {
  std::ranges::sort(calls, [](const Paired& a, const Paired& b) { return a.graph < b.graph; });
  const std::size_t n = calls.size();
  LaunchTerms best;
  best.host.host_p2p_call = Seconds{0};
  double best_error = std::numeric_limits<double>::infinity();
  for (int ns = 0; ns <= 10'000; ++ns) {
    const double delta = ns * 1e-9;
    // The first k calls (the smallest graph times) host bound: error = H^2 A - 2 H B + k over them, at its least
    // for H = B / A, which must lie above their graph + delta and below the next one's.
    std::vector<double> device_error(n + 1, 0.0);  // over calls k.. n-1, GPU bound
    for (std::size_t i = n; i-- > 0;) {
      const double s = calls[i].stream->record().median;
      device_error[i] = device_error[i + 1] + std::pow((calls[i].graph + delta) / s - 1, 2);
    }
    double a = 0, b = 0;
    for (std::size_t k = 0; k <= n; ++k) {
      if (k > 0) {
        const double s = calls[k - 1].stream->record().median;
        a += 1 / (s * s);
        b += 1 / s;
      }
      const double host = k == 0 ? 0 : b / a;
      if (k > 0 && !(host > calls[k - 1].graph + delta)) continue;
      if (k < n && host > calls[k].graph + delta) continue;
      const double error = host * host * a - 2 * host * b + static_cast<double>(k) + device_error[k];
      if (error < best_error) {
        best_error = error;
        best.delta = delta;
        best.host.host_call = Seconds{host};
      }
    }
  }
  double least = std::numeric_limits<double>::infinity();
  LaunchTerms trial = best;
  for (int ns = 0; ns <= 5'000 && !grouped.empty(); ++ns) {
    trial.host.host_p2p_call = Seconds{ns * 1e-9};
    double error = 0;
    for (const auto& g : grouped) {
      const double s = g.stream->record().median;
      error += std::pow(std::max(trial.host_of(*g.stream), g.graph + trial.delta) / s - 1, 2);
    }
    if (error < least) {
      least = error;
      best.host.host_p2p_call = trial.host.host_p2p_call;
    }
  }
  return best;
}

}  // namespace

void collectives(Fit& fit) {
  const auto& p = fit.platform();
  const DeviceId rank0 = p.fabric.gpus()[0];
  const models::CollectivePlatform platform{
      p.peer.bottleneck, fit.value_or("copy.sm.efficiency", p.defaults.copy->efficiency(models::CopyEngine::sm)),
      p.peer.latency, models::switch_links(p.fabric, rank0), models::switch_reduction(p.fabric)};
  const Seconds hop = platform.hop_latency;

  // A model whose protocols have efficiency 1, no cap, no latency and every channel at every size, and whose kinds
  // all run at all_reduce's rate: its plans give the fit's columns. Launch costs come from the launch family.
  models::CollectiveModel unit = *p.defaults.collective;
  unit.graph_launch = Seconds{fit.value_or("collective.graph_launch", unit.graph_launch.count())};
  for (auto& proto : unit.protocols) proto = {1, BytesPerSecond{0}, Seconds{0}, Seconds{0}, Bytes{0}};
  unit.relative_rate.fill(1);

  std::vector<Point> points;
  for (const char* variant : {"out_of_place", "graph"})
    for (const auto& t : fit.select(Family::collective, TESTS, variant)) {
      const auto need = twins::collective_requirements(*t.trace, *t.record);
      if (const auto* n = std::get_if<twins::CollectiveRequirements>(&need))
        points.push_back(
            {t, *n, std::string_view(variant) == "graph" ? models::Launch::graph : models::Launch::stream});
    }

  // 0. Launch and host: each stream record beside its graph record (same trace, kind and size), below the large
  //    sizes. Stream records the host paces then leave the latency fits below, which model the GPU alone.
  std::map<std::tuple<const Trace*, std::string, std::uint64_t>, double> graph_median;
  for (const auto& pt : points)
    if (pt.launch == models::Launch::graph)
      graph_median[{pt.traced.trace, pt.record().test, pt.record().bytes.count()}] = pt.record().median;
  auto graph_of = [&](const Point& pt) -> std::optional<double> {
    const auto it = graph_median.find({pt.traced.trace, pt.record().test, pt.record().bytes.count()});
    return it == graph_median.end() ? std::nullopt : std::optional{it->second};
  };
  std::vector<Paired> calls, grouped;
  std::vector<TracedRecord> paired_records;
  for (const auto& pt : points)
    if (pt.launch == models::Launch::stream && pt.record().bytes.count() < LARGE_BYTES)
      if (const auto g = graph_of(pt)) {
        (pt.need.kind == CollectiveKind::all_to_all ? grouped : calls).push_back({&pt, *g});
        paired_records.push_back(pt.traced);
      }
  if (fit.enough(paired_records, 6, "collective.stream_launch and host_call")) {
    const LaunchTerms launch = fit_launch_terms(calls, grouped);
    unit.stream_launch = unit.graph_launch + Seconds{launch.delta};
    const std::string method = fmt::format(
        "least squares on relative errors of the stream records < {} beside the graph records of the same kind and "
        "size: t_stream = max(host_call (+ 2 ranks x host_p2p_call for all_to_all), t_graph + stream_launch - "
        "graph_launch)",
        to_string(Bytes{LARGE_BYTES}));
    fit.add_time("collective.stream_launch", unit.stream_launch, method, paired_records);
    fit.add_time("collective.host_call", launch.host.host_call, method, paired_records);
    fit.add_time("collective.host_p2p_call", launch.host.host_p2p_call, method, paired_records);
    std::erase_if(points, [&](const Point& pt) {
      const auto g = graph_of(pt);
      return pt.launch == models::Launch::stream && g && launch.host_bound(pt, *g);
    });
  }

  // Ring records under a forced protocol, by protocol.
  std::array<std::vector<const Point*>, 3> ring;
  for (const auto& pt : points) {
    if (!pt.need.protocol || pt.need.kind == CollectiveKind::all_to_all) continue;
    if (pt.need.algorithm.value_or(Algorithm::ring) != Algorithm::ring) continue;
    ring[index(*pt.need.protocol)].push_back(&pt);
  }
  auto ring_terms = [&](const Point& pt, const models::CollectiveModel& model) {
    const auto proto = *pt.need.protocol;
    return terms(unit, model.make_plan(pt.request(Algorithm::ring, proto), Algorithm::ring, proto, platform), platform);
  };
  auto records_of = [](const std::vector<const Point*>& pts) {
    std::vector<TracedRecord> out;
    for (const auto* pt : pts) out.push_back(pt->traced);
    return out;
  };
  auto large = [](const Point* pt) { return pt->record().bytes.count() >= LARGE_BYTES; };

  // 1. Per protocol and kind, 1 / (efficiency x relative rate): the slope of time over unit_time across the large
  //    records (a free intercept takes launch, latencies and what else is fixed), where every channel runs.
  std::array<std::array<double, 5>, 3> slope{};  // 0 = not fitted
  for (auto proto : PROTOCOLS)
    for (auto k : RING_KINDS) {
      std::vector<const Point*> rows;
      std::map<const TraceRecord*, Terms> by_record;
      for (const auto* pt : ring[index(proto)])
        if (pt->need.kind == k && large(pt)) {
          rows.push_back(pt);
          by_record[&pt->record()] = ring_terms(*pt, unit);
        }
      const auto other_sizes = std::ranges::count_if(
          rows, [&](const Point* pt) { return pt->record().bytes != rows.front()->record().bytes; });
      if (other_sizes == 0) continue;  // one size (or none) gives no slope
      const auto x = Fit::relative_least_squares(
          records_of(rows),
          [&](const TraceRecord& r) {
            return std::vector<double>{1.0, by_record.at(&r).unit_time};
          },
          [&](const TraceRecord& r) { return r.median - by_record.at(&r).launch.count(); });
      if (x[1] > 0) slope[index(proto)][index(k)] = x[1];
    }
  std::vector<const Point*> all_ring;
  for (const auto& rows : ring) all_ring.insert(all_ring.end(), rows.begin(), rows.end());
  std::vector<const Point*> all_large;
  std::ranges::copy_if(all_ring, std::back_inserter(all_large), large);

  // 2. Relative rates: the geometric mean over protocols of all_reduce's slope over the kind's; efficiencies: the
  //    geometric mean over kinds of 1 / (slope x relative rate). Together the least squares fit of
  //    log slope = -log efficiency(protocol) - log relative_rate(kind).
  std::array<double, 5> relative{1, 1, 1, 1, 1};
  for (auto k : RING_KINDS) {
    if (k == CollectiveKind::all_reduce) continue;
    std::vector<double> logs;
    for (auto proto : PROTOCOLS)
      if (const auto& s = slope[index(proto)]; s[0] > 0 && s[index(k)] > 0)
        logs.push_back(std::log(s[0] / s[index(k)]));
    if (logs.empty()) continue;
    relative[index(k)] = std::clamp(std::exp(mean(logs)), 0.1, 4.0);
    fit.add_number(fmt::format("collective.{}.relative_rate", models::to_string(k)), relative[index(k)],
                   fmt::format("geometric mean over {} protocols of all_reduce's rate over {}'s, each the slope of "
                               "time over bytes across the records >= {} (every channel running)",
                               logs.size(), models::to_string(k), to_string(Bytes{LARGE_BYTES})),
                   records_of(all_large));
  }

  // 3. Per protocol: efficiency from the slopes, then base, step and channel_bytes from the smaller records.
  models::CollectiveModel fitted = *p.defaults.collective;  // protocols without records keep their defaults
  fitted.stream_launch = unit.stream_launch;
  fitted.graph_launch = unit.graph_launch;
  fitted.relative_rate = relative;
  for (auto proto : PROTOCOLS) {
    const std::string name(models::to_string(proto));
    std::vector<double> logs;
    for (auto k : RING_KINDS)
      if (const double s = slope[index(proto)][index(k)]; s > 0) logs.push_back(std::log(s * relative[index(k)]));
    std::vector<const Point*> rows;
    std::ranges::copy_if(ring[index(proto)], std::back_inserter(rows), [&](const Point* pt) { return !large(pt); });
    if (logs.empty()) {
      fit.note(fmt::format("collective.{}: no kind has records >= {} at two sizes: its rate is not fitted", name,
                           to_string(Bytes{LARGE_BYTES})));
      continue;
    }
    if (!fit.enough(records_of(rows), 6, fmt::format("collective.{} latencies and channel_bytes", name))) continue;
    const double efficiency = std::clamp(std::exp(-mean(logs)), 0.01, 1.0);

    // The grid: 8 points per octave from 256 B while the ramp still ends below every large record (their slopes
    // assumed every channel running).
    struct Best {
      double error = std::numeric_limits<double>::infinity();
      Bytes channel_bytes;
      std::vector<double> x;
    } best;
    models::CollectiveModel trial = unit;
    for (int step = 0; static_cast<double>(GRID_LOW) * std::exp2(step / GRID_PER_OCTAVE) <= LARGE_BYTES; ++step) {
      const Bytes cb{
          static_cast<std::uint64_t>(std::llround(static_cast<double>(GRID_LOW) * std::exp2(step / GRID_PER_OCTAVE)))};
      trial.protocols[index(proto)].channel_bytes = cb;
      if (std::ranges::any_of(all_large, [&](const Point* pt) {
            return pt->need.protocol == proto && trial.channels_for(pt->request(Algorithm::ring, proto),
                                                                    Algorithm::ring, proto, platform) < platform.links;
          }))
        break;
      std::map<const TraceRecord*, Terms> by_record;
      for (const auto* pt : rows) by_record[&pt->record()] = ring_terms(*pt, trial);
      auto target = [&](const TraceRecord& r) {
        const auto& t = by_record.at(&r);
        return r.median - t.launch.count() - t.latency_steps * hop.count() -
               t.unit_time / (efficiency * relative[index(*models::collective_kind(r.test))]);
      };
      auto row = [&](const TraceRecord& r) { return std::vector<double>{1.0, by_record.at(&r).latency_steps}; };
      const auto x = Fit::relative_least_squares(records_of(rows), row, target);
      double error = 0;
      for (const auto* pt : rows) {
        const auto& r = pt->record();
        const auto a = row(r);
        error += std::pow((a[0] * x[0] + a[1] * x[1] - target(r)) / r.median, 2);
      }
      // The calibration sizes pin channel_bytes only to a range (the same channel counts at every record): the
      // largest value of the range is kept, where NCCL's power-of-two thresholds (threads x threadThreshold) lie.
      if (error <= best.error * (1 + 1e-9)) best = {error, cb, x};
    }
    if (best.x.empty()) {
      fit.note(fmt::format("collective.{}: no channel_bytes of the grid ends the ramp below {}", name,
                           to_string(Bytes{LARGE_BYTES})));
      continue;
    }

    auto& out = fitted.protocols[index(proto)];
    out.base_latency = fit.non_negative(Seconds{best.x[0]}, fmt::format("collective.{}.base_latency", name));
    out.step_latency = fit.non_negative(Seconds{best.x[1]}, fmt::format("collective.{}.step_latency", name));
    out.efficiency = efficiency;
    out.channel_bytes = best.channel_bytes;
    out.max_bandwidth = BytesPerSecond{0};
    const auto all_rows = records_of(ring[index(proto)]);
    fit.add_number(
        fmt::format("collective.{}.efficiency", name), out.efficiency,
        fmt::format("geometric mean over {} kinds of 1 / (relative rate x slope of time over serial_bytes / ({} x SM "
                    "efficiency {:.3g})) across the ring records >= {} with {} (every channel running)",
                    logs.size(), to_string(platform.line_rate), platform.sm_efficiency, to_string(Bytes{LARGE_BYTES}),
                    name),
        all_rows);
    const std::string method = fmt::format(
        "least squares on relative errors of the ring records < {} with {}: t = launch (collective.stream_launch or "
        "graph_launch) + base + latency_steps x (step + route latency {}) + serial_bytes / rate, the rate fitted above "
        "x channels / {} links, channels = clamp(floor(bytes / channel_bytes{}), 1, links); channel_bytes the best of "
        "a grid of 8 points per octave from {}",
        to_string(Bytes{LARGE_BYTES}), name, to_string(hop), platform.links, proto == Protocol::ll ? " x ranks" : "",
        to_string(Bytes{GRID_LOW}));
    fit.add_time(fmt::format("collective.{}.base_latency", name), out.base_latency, method, all_rows);
    fit.add_time(fmt::format("collective.{}.step_latency", name), out.step_latency, method, all_rows);
    fit.add_yaml(fmt::format("collective.{}.channel_bytes", name), fmt::format("{}B", out.channel_bytes.count()),
                 method, all_rows);
    if (proto == Protocol::ll) {
      // NCCL caps LL at llMaxBw (141 GB/s on Hopper). On our traces LL's rate follows the kernel like the other
      // protocols' (broadcast 164 GB/s, all_reduce 123 GB/s at 1 GiB): no flat cap binds, so the efficiency above is
      // fitted with the cap off and the cap is written off.
      fit.add_yaml("collective.LL.max_bandwidth", "0GBps",
                   "off: LL's fitted efficiency carries its rate, which differs per collective like the other "
                   "protocols' (no flat llMaxBw cap binds on these records)",
                   all_rows);
    }
  }

  // 4. all_to_all is grouped send/recv, which picks LL or Simple by size whatever NCCL_PROTO says, with fixed costs of
  //    its own (~13 us at 8 B under every NCCL_PROTO, against 11-19 us for the ring kinds): its relative rate from the
  //    slope across its large records, then its latency from the smaller ones, with the fitted protocols and the
  //    protocol the model picks, as the twins will.
  std::vector<const Point*> direct;
  for (const auto& pt : points)
    if (pt.need.kind == CollectiveKind::all_to_all) direct.push_back(&pt);
  std::vector<const Point*> direct_large, direct_small;
  std::ranges::partition_copy(direct, std::back_inserter(direct_large), std::back_inserter(direct_small), large);
  const auto other_sizes = std::ranges::count_if(
      direct_large, [&](const Point* pt) { return pt->record().bytes != direct_large.front()->record().bytes; });
  if (fit.enough(records_of(direct_small), 4, "collective.direct latencies") && other_sizes > 0) {
    // Per record: the byte term's column (unit_time / efficiency) and the fixed costs other than base, under the
    // protocol the model picks; the pick depends on the fitted latency, so fit twice.
    std::map<const TraceRecord*, std::pair<double, double>> columns;
    auto refresh = [&] {
      for (const auto* pt : direct) {
        const auto plan = fitted.plan(pt->request({}, {}), platform);
        const Terms t =
            terms(unit, unit.make_plan(pt->request({}, {}), plan.algorithm, plan.protocol, platform), platform);
        columns[&pt->record()] = {t.unit_time / fitted.params(plan.protocol).efficiency,
                                  t.launch.count() + t.latency_steps * hop.count()};
      }
    };
    double rate = 1;
    Seconds base{0};
    std::vector<TracedRecord> latency_records;
    for (int pass = 0; pass < 2; ++pass) {
      refresh();
      const auto x = Fit::relative_least_squares(
          records_of(direct_large),
          [&](const TraceRecord& r) {
            return std::vector<double>{1.0, columns.at(&r).first};
          },
          [&](const TraceRecord& r) { return r.median - columns.at(&r).second; });
      rate = std::clamp(x[1] > 0 ? 1 / x[1] : 1.0, 0.1, 4.0);
      // The latency from the records whose byte term is under a tenth of their time: between those and the large
      // ones the rate of grouped sends ramps up well beyond what the model's one line follows (16 MiB: 167 GB/s,
      // 1 GiB: 334 GB/s).
      latency_records.clear();
      for (const auto* pt : direct_small)
        if (columns.at(&pt->record()).first / rate < 0.1 * pt->record().median) latency_records.push_back(pt->traced);
      if (latency_records.empty()) break;
      base = Seconds{Fit::intercept(latency_records, [&](const TraceRecord& r) {
        return r.median - columns.at(&r).second - columns.at(&r).first / rate;
      })};
      fitted.relative_rate[index(CollectiveKind::all_to_all)] = rate;
      fitted.direct = models::Latencies{Seconds{std::max(0.0, base.count())}, Seconds{0}};
    }
    fit.add_number("collective.all_to_all.relative_rate", rate,
                   fmt::format("1 / the slope of time over (n-1)/n S / (line rate x SM efficiency x the protocol's "
                               "efficiency) across the all_to_all records >= {}, the protocol (LL or Simple) the one "
                               "the model picks",
                               to_string(Bytes{LARGE_BYTES})),
                   records_of(direct_large));
    const std::string method = fmt::format(
        "weighted mean (1 / median^2) over the all_to_all records whose byte term is under a tenth of their time of "
        "t - launch - route latency - the byte term at the rate above: one step cannot tell base from step latency, "
        "so all of it is base");
    fit.add_time("collective.direct.base_latency", fit.non_negative(base, "collective.direct.base_latency"), method,
                 latency_records);
    fit.add_time("collective.direct.step_latency", Seconds{0}, method, latency_records);
  }

  // 5. The model's own choice where the capture let NCCL choose: ring (NCCL's choice on 2 GPUs), never tree, with
  //    NVLS off as it was.
  fitted.nvls_enabled = false;
  std::size_t not_ring = 0, chosen = 0;
  for (const auto& pt : points) {
    if (pt.need.kind != CollectiveKind::all_reduce || pt.record().ranks.size() != 2) continue;
    ++chosen;
    if (fitted.plan(pt.request({}, pt.need.protocol), platform).algorithm != Algorithm::ring) ++not_ring;
  }
  if (not_ring > 0)
    fit.note(
        fmt::format("collective: with the fitted parameters and NVLS off the model picks another algorithm than "
                    "ring for {} of {} 2-GPU all_reduce records (NCCL runs ring there; their twins force it)",
                    not_ring, chosen));
}

}  // namespace snsim::validation::fits
