#include "sim/failures.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace snsim {
namespace {

/// A GPU's NVLink channels, both directions.
std::vector<ChannelId> nvlinks_of(const Fabric& fabric, DeviceId gpu) {
  std::vector<ChannelId> channels;
  for (auto c : boost::make_iterator_range(boost::out_edges(gpu, fabric.graph())))
    if (fabric.channel(c).kind == ChannelKind::nvlink) channels.push_back(c);
  for (auto c : boost::make_iterator_range(boost::in_edges(gpu, fabric.graph())))
    if (fabric.channel(c).kind == ChannelKind::nvlink) channels.push_back(c);
  return channels;
}

/// NVLink lanes leaving a GPU (one direction): 18 on an H100/H200/B200.
int nvlink_lanes(const Fabric& fabric, DeviceId gpu) {
  int lanes = 0;
  for (auto c : boost::make_iterator_range(boost::out_edges(gpu, fabric.graph())))
    if (fabric.channel(c).kind == ChannelKind::nvlink) lanes += fabric.channel(c).lanes;
  return lanes;
}

std::optional<DeviceId> plane_switch(const Fabric& fabric, int plane) {
  for (auto v : boost::make_iterator_range(boost::vertices(fabric.graph())))
    if (fabric.device(v).kind == DeviceKind::nvswitch && fabric.device(v).index == plane) return v;
  return std::nullopt;
}

int plane_count(const Fabric& fabric) {
  int n = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(fabric.graph())))
    n += fabric.device(v).kind == DeviceKind::nvswitch;
  return n;
}

int gpu_rank(const ConfigNode& node, std::string_view key, const Fabric& fabric) {
  const int gpu = node.required<int>(key);
  const int n = static_cast<int>(fabric.gpus().size());
  if (gpu < 0 || gpu >= n) node.fail_key(key, fmt::format("GPU {} does not exist (the topology has {} GPUs)", gpu, n));
  return gpu;
}

}  // namespace

std::vector<Failure> parse_failures(const std::optional<ConfigNode>& list, const Fabric& fabric) {
  std::vector<Failure> failures;
  if (!list) return failures;
  std::map<int, int> lanes_lost;  // by rank, over the whole list
  std::map<int, bool> planes_down;
  for (const auto& item : list->elements()) {
    Failure f;
    f.at = item.required<Seconds>("at");
    if (f.at < Seconds{0}) item.fail_key("at", "must not be negative");
    const int kinds = item.has("link") + item.has("plane") + item.has("degraded") + item.has("gpu_lost");
    if (kinds != 1) item.fail("needs exactly one of link, plane, degraded, gpu_lost");
    if (item.has("link")) {
      const ConfigNode link = item.child("link");
      f.kind = Failure::Kind::link;
      f.gpu = gpu_rank(link, "gpu", fabric);
      f.lanes = link.required<int>("lanes");
      const int total = nvlink_lanes(fabric, fabric.gpus()[f.gpu]);
      if (f.lanes < 1) link.fail_key("lanes", "must be at least 1");
      // Losing every lane would leave a link of no bandwidth, on which a transfer never ends: that is gpu_lost.
      if ((lanes_lost[f.gpu] += f.lanes) >= total)
        link.fail_key("lanes", fmt::format("GPU {} would lose {} of its {} NVLink lanes; at least one must remain "
                                           "(a GPU cut off is gpu_lost)",
                                           f.gpu, lanes_lost[f.gpu], total));
      f.what = fmt::format("gpu{} loses {} of {} NVLink lanes", f.gpu, f.lanes, total);
    } else if (item.has("plane")) {
      f.kind = Failure::Kind::plane;
      f.plane = item.required<int>("plane");
      if (!plane_switch(fabric, f.plane))
        item.fail_key("plane", fmt::format("NVSwitch plane {} does not exist (the topology has {})", f.plane,
                                           plane_count(fabric)));
      if (planes_down[f.plane]) item.fail_key("plane", fmt::format("plane {} is already down", f.plane));
      planes_down[f.plane] = true;
      if (static_cast<int>(planes_down.size()) >= plane_count(fabric))
        item.fail_key("plane", "would take down every NVSwitch plane; at least one must remain");
      f.what = fmt::format("nvswitch{} (plane {}) down", f.plane, f.plane);
    } else if (item.has("degraded")) {
      const ConfigNode degraded = item.child("degraded");
      f.kind = Failure::Kind::degraded;
      f.gpu = gpu_rank(degraded, "gpu", fabric);
      f.factor = degraded.required<double>("factor");
      if (!(f.factor > 0 && f.factor <= 1)) degraded.fail_key("factor", "must be in (0, 1]");
      f.what = fmt::format("gpu{} NVLink bandwidth x {}", f.gpu, f.factor);
    } else {
      f.kind = Failure::Kind::gpu_lost;
      f.gpu = gpu_rank(item, "gpu_lost", fabric);
      f.what = fmt::format("gpu{} lost", f.gpu);
    }
    failures.push_back(std::move(f));
  }
  return failures;
}

namespace {

/// Applies one failure other than gpu_lost now. `lanes_lost` (by rank) lets a second loss scale what the first left.
void apply(Simulation& simulation, const Failure& f, FailureLog& log, std::map<int, int>& lanes_lost) {
  const Fabric& fabric = simulation.fabric();
  std::map<ChannelId, double> factors;
  switch (f.kind) {
    case Failure::Kind::link: {
      // Traffic spreads over the lanes left: every NVLink channel of the GPU keeps (L - lost) / L of its rate,
      // which is exact for the aggregated links (a hop's channels are one link).
      const int total = nvlink_lanes(fabric, fabric.gpus()[f.gpu]);
      const int before = total - lanes_lost[f.gpu];
      const int after = before - f.lanes;
      lanes_lost[f.gpu] += f.lanes;
      for (auto c : nvlinks_of(fabric, fabric.gpus()[f.gpu])) factors[c] = double(after) / before;
      break;
    }
    case Failure::Kind::plane: {
      const DeviceId sw = *plane_switch(fabric, f.plane);
      // The chip's lanes carry nothing; the hop's link keeps the other planes' lanes (parse_failures leaves
      // at least one plane up), over which the traffic is striped.
      for (auto c : boost::make_iterator_range(boost::out_edges(sw, fabric.graph()))) factors[c] = 0;
      for (auto c : boost::make_iterator_range(boost::in_edges(sw, fabric.graph()))) factors[c] = 0;
      break;
    }
    case Failure::Kind::degraded:
      for (auto c : nvlinks_of(fabric, fabric.gpus()[f.gpu])) factors[c] = f.factor;
      break;
    case Failure::Kind::gpu_lost:
      throw std::logic_error("apply: a lost GPU is handled by the failures actor");
  }
  log.applied.push_back({f.at, f.what, simulation.scale_channels(factors)});
}

}  // namespace

void schedule_failures(Simulation& simulation, std::vector<Failure> failures, FailureLog& log) {
  std::ranges::stable_sort(failures, {}, &Failure::at);
  // Failures at 0 s (but a lost GPU) apply before the run, so that every op that starts then sees them: an actor
  // at 0 s may run after the ranks' first ops.
  std::map<int, int> lanes_lost;
  std::size_t first_later = 0;
  while (first_later < failures.size() && failures[first_later].at <= Seconds{0} &&
         failures[first_later].kind != Failure::Kind::gpu_lost)
    apply(simulation, failures[first_later++], log, lanes_lost);
  failures.erase(failures.begin(), failures.begin() + static_cast<std::ptrdiff_t>(first_later));
  if (failures.empty()) return;
  const DeviceId home = simulation.fabric().gpus().front();
  sg4::Actor::create("failures", simulation.host(home), [&simulation, &log, failures, lanes_lost]() mutable {
    for (const auto& f : failures) {
      sg4::this_actor::sleep_until(f.at.count());
      if (f.kind == Failure::Kind::gpu_lost) {
        log.applied.push_back({f.at, f.what, {}});
        log.outcome = fmt::format("failed: GPU {} lost at {}", f.gpu, f.at);
        sg4::Actor::kill_all();  // every other actor: the engine has nothing left to run and stops
        return;
      }
      apply(simulation, f, log, lanes_lost);
    }
  })->daemonize();
}

}  // namespace snsim
