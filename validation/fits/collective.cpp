// Fits of the collective model from the probe's `collective` family (tools/probe/src/families/collective.cu): NCCL
// collectives on 2 GPUs, with NCCL_PROTO forced per trace. NCCL runs ring on 2 GPUs inside a node (twins/collective.cpp
// says why), so these records give ring's per-protocol latencies and rates.
//
// A lone collective takes launch + base + latency_steps x (step_latency + route latency) + serial_bytes / rate
// (models/collective.hpp), with rate = line rate x SM copy efficiency x protocol efficiency x the kind's relative
// rate (x channels / links). The design matrix comes from CollectiveModel::make_plan, the plan the runner executes.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "validation/fit.hpp"
#include "validation/twins/collective.hpp"

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

}  // namespace

void collectives(Fit& fit) {
  const auto& p = fit.platform();
  const DeviceId rank0 = p.fabric.gpus()[0];
  const models::CollectivePlatform platform{
      p.peer.bottleneck, fit.value_or("copy.sm.efficiency", p.defaults.copy->efficiency(models::CopyEngine::sm)),
      p.peer.latency, models::switch_links(p.fabric, rank0), models::switch_reduction(p.fabric)};
  const Seconds hop = platform.hop_latency;

  // A model whose protocols have efficiency 1, no cap and no latency, and whose kinds all run at all_reduce's rate:
  // its plans give the fit's columns. Launch costs come from the launch family.
  models::CollectiveModel unit = *p.defaults.collective;
  unit.stream_launch = Seconds{fit.value_or("collective.stream_launch", unit.stream_launch.count())};
  unit.graph_launch = Seconds{fit.value_or("collective.graph_launch", unit.graph_launch.count())};
  for (auto& proto : unit.protocols) proto = {1, BytesPerSecond{0}, Seconds{0}, Seconds{0}};
  unit.relative_rate.fill(1);

  std::vector<Point> points;
  for (const char* variant : {"out_of_place", "graph"})
    for (const auto& t : fit.select(Family::collective, TESTS, variant)) {
      const auto need = twins::collective_requirements(*t.trace, *t.record);
      if (const auto* n = std::get_if<twins::CollectiveRequirements>(&need))
        points.push_back(
            {t, *n, std::string_view(variant) == "graph" ? models::Launch::graph : models::Launch::stream});
    }

  // Ring records under a forced protocol, by protocol.
  std::array<std::vector<std::pair<const Point*, Terms>>, 3> ring;
  for (const auto& pt : points) {
    if (!pt.need.protocol || pt.need.kind == CollectiveKind::all_to_all) continue;
    if (pt.need.algorithm.value_or(Algorithm::ring) != Algorithm::ring) continue;
    const auto plan =
        unit.make_plan(pt.request(Algorithm::ring, pt.need.protocol), Algorithm::ring, *pt.need.protocol, platform);
    ring[index(*pt.need.protocol)].push_back({&pt, terms(unit, plan, platform)});
  }
  auto records_of = [](const auto& rows) {
    std::vector<TracedRecord> out;
    for (const auto& [pt, _] : rows) out.push_back(pt->traced);
    return out;
  };
  auto lookup = [](const auto& rows) {
    std::map<const TraceRecord*, Terms> by_record;
    for (const auto& [pt, t] : rows) by_record[pt->traced.record] = t;
    return by_record;
  };

  // 1. Each kind's rate relative to all_reduce's: per protocol, a byte column per kind; the geometric mean over the
  //    protocols of all_reduce's coefficient over the kind's.
  std::array<double, 5> relative{1, 1, 1, 1, 1};
  std::array<std::vector<double>, 5> log_ratios;
  for (const auto& rows : ring) {
    std::vector<CollectiveKind> present;
    for (auto k : RING_KINDS)
      if (std::ranges::count_if(rows, [&](const auto& row) { return row.first->need.kind == k; }) >= 3)
        present.push_back(k);
    if (present.empty() || present.front() != CollectiveKind::all_reduce || rows.size() < 2 + 2 * present.size())
      continue;
    const auto by_record = lookup(rows);
    const auto x = Fit::relative_least_squares(
        records_of(rows),
        [&](const TraceRecord& r) {
          const auto& t = by_record.at(&r);
          std::vector<double> row{1.0, t.latency_steps};
          for (auto k : present) row.push_back(models::collective_kind(r.test) == k ? t.unit_time : 0.0);
          return row;
        },
        [&](const TraceRecord& r) {
          const auto& t = by_record.at(&r);
          return r.median - t.launch.count() - t.latency_steps * hop.count();
        });
    for (std::size_t k = 1; k < present.size(); ++k)
      if (x[2] > 0 && x[2 + k] > 0) log_ratios[index(present[k])].push_back(std::log(x[2] / x[2 + k]));
  }
  std::vector<TracedRecord> ring_records;
  for (const auto& rows : ring)
    for (const auto& r : records_of(rows)) ring_records.push_back(r);
  for (auto k : RING_KINDS) {
    const auto& logs = log_ratios[index(k)];
    if (logs.empty()) continue;
    double sum = 0;
    for (double l : logs) sum += l;
    relative[index(k)] = std::clamp(std::exp(sum / static_cast<double>(logs.size())), 0.1, 4.0);
    fit.add_number(fmt::format("collective.{}.relative_rate", models::to_string(k)), relative[index(k)],
                   fmt::format("geometric mean over {} protocols of all_reduce's byte coefficient over {}'s, each "
                               "from least squares on relative errors of t = launch + base + steps x (step + route "
                               "latency) + one byte term per kind",
                               logs.size(), models::to_string(k)),
                   ring_records);
  }

  // 2. Per protocol: base, step and efficiency, with the kinds' relative rates known.
  models::CollectiveModel fitted = *p.defaults.collective;  // protocols without records keep their defaults
  fitted.stream_launch = unit.stream_launch;
  fitted.graph_launch = unit.graph_launch;
  fitted.relative_rate = relative;
  for (auto proto : PROTOCOLS) {
    const auto& rows = ring[index(proto)];
    const std::string name(models::to_string(proto));
    if (!fit.enough(records_of(rows), 6, fmt::format("collective.{} latencies and efficiency", name))) continue;
    const auto by_record = lookup(rows);
    const auto x = Fit::relative_least_squares(
        records_of(rows),
        [&](const TraceRecord& r) {
          const auto& t = by_record.at(&r);
          return std::vector<double>{1.0, t.latency_steps,
                                     t.unit_time / relative[index(*models::collective_kind(r.test))]};
        },
        [&](const TraceRecord& r) {
          const auto& t = by_record.at(&r);
          return r.median - t.launch.count() - t.latency_steps * hop.count();
        });
    auto& out = fitted.protocols[index(proto)];
    out.base_latency = fit.non_negative(Seconds{x[0]}, fmt::format("collective.{}.base_latency", name));
    out.step_latency = fit.non_negative(Seconds{x[1]}, fmt::format("collective.{}.step_latency", name));
    out.efficiency = std::clamp(1 / x[2], 0.01, 1.0);
    out.max_bandwidth = BytesPerSecond{0};
    const std::string method = fmt::format(
        "least squares on relative errors of t = launch (collective.stream_launch or graph_launch) + base + "
        "latency_steps x (step + route latency {}) + serial_bytes / ({} x SM efficiency {:.3g} x efficiency x "
        "relative rate of the kind), from CollectiveModel::make_plan of ring with {}",
        to_string(hop), to_string(platform.line_rate), platform.sm_efficiency, name);
    fit.add_time(fmt::format("collective.{}.base_latency", name), out.base_latency, method, records_of(rows));
    fit.add_time(fmt::format("collective.{}.step_latency", name), out.step_latency, method, records_of(rows));
    fit.add_number(fmt::format("collective.{}.efficiency", name), out.efficiency, method, records_of(rows));
    if (proto == Protocol::ll) {
      // NCCL caps LL at llMaxBw (141 GB/s on Hopper). On our traces LL's rate follows the kernel like the other
      // protocols' (broadcast 164 GB/s, all_reduce 123 GB/s at 1 GiB): no flat cap binds, so the efficiency above is
      // fitted with the cap off and the cap is written off.
      fit.add_yaml("collective.LL.max_bandwidth", "0GBps",
                   "off: LL's fitted efficiency carries its rate, which differs per collective like the other "
                   "protocols' (no flat llMaxBw cap binds on these records)",
                   records_of(rows));
    }
  }

  // 3. all_to_all is grouped send/recv, which picks LL or Simple by size whatever NCCL_PROTO says: its relative rate
  //    from its records with the fitted protocols, the protocol chosen by the model as the twins will.
  std::vector<const Point*> direct;
  for (const auto& pt : points)
    if (pt.need.kind == CollectiveKind::all_to_all) direct.push_back(&pt);
  std::vector<TracedRecord> direct_records;
  for (const auto* pt : direct) direct_records.push_back(pt->traced);
  if (fit.enough(direct_records, 4, "collective.all_to_all.relative_rate")) {
    double u = 1;  // 1 / relative rate; the protocol choice depends on it, so iterate to a fixed point
    for (int iteration = 0; iteration < 5; ++iteration) {
      fitted.relative_rate[index(CollectiveKind::all_to_all)] = 1 / u;
      double num = 0, den = 0;
      for (const auto* pt : direct) {
        auto plan = fitted.plan(pt->request({}, {}), platform);
        const Terms t =
            terms(unit, unit.make_plan(pt->request({}, {}), plan.algorithm, plan.protocol, platform), platform);
        const double efficiency = fitted.params(plan.protocol).efficiency;
        const double a = t.unit_time / efficiency;
        const double residual = pt->record().median - (plan.launch + plan.base_latency).count() -
                                t.latency_steps * (plan.step_latency + hop).count();
        const double w = 1 / (pt->record().median * pt->record().median);
        num += w * a * residual;
        den += w * a * a;
      }
      if (den > 0 && num > 0) u = num / den;
    }
    const double rate = std::clamp(1 / u, 0.1, 4.0);
    fitted.relative_rate[index(CollectiveKind::all_to_all)] = rate;
    fit.add_number("collective.all_to_all.relative_rate", rate,
                   "weighted least squares on relative errors of the byte term of t = launch + base + step + route "
                   "latency + (n-1)/n S / rate, with the protocols fitted above and the protocol (LL or Simple) the "
                   "model picks",
                   direct_records);
  }

  // 4. The model's own choice where the capture let NCCL choose: ring (NCCL's choice on 2 GPUs), never tree, with
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
