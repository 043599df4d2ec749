#include "scenario/failures.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace snsim {
namespace {

bool is_switch(const Fabric& fabric, DeviceId v) {
  return fabric.device(v).kind == DeviceKind::nvswitch;
}

/// A GPU's NVLink channels into the fabric (to switches, or straight to peer GPUs), both directions. NVLink-C2C to
/// the Grace host is an NVLink channel too, but not one of the GPU's 18 fabric links.
std::vector<ChannelId> fabric_links(const Fabric& fabric, DeviceId gpu) {
  std::vector<ChannelId> channels;
  for (auto c : fabric.out_channels(gpu))
    if (fabric.channel(c).kind == ChannelKind::nvlink && fabric.device(fabric.target(c)).kind != DeviceKind::host)
      channels.push_back(c);
  for (auto c : fabric.in_channels(gpu))
    if (fabric.channel(c).kind == ChannelKind::nvlink && fabric.device(fabric.source(c)).kind != DeviceKind::host)
      channels.push_back(c);
  return channels;
}

/// NVLink lanes leaving a GPU into the fabric (one direction) whose far end is not a switch chip in `down`: 18 on
/// an H100/H200/B200 with every switch up.
int lanes_up(const Fabric& fabric, DeviceId gpu, const std::set<DeviceId>& down) {
  int lanes = 0;
  for (auto c : fabric_links(fabric, gpu))
    if (fabric.source(c) == gpu && !down.contains(fabric.target(c))) lanes += fabric.channel(c).lanes;
  return lanes;
}

std::optional<DeviceId> plane_switch(const Fabric& fabric, int plane) {
  for (auto v : fabric.devices())
    if (is_switch(fabric, v) && fabric.device(v).index == plane) return v;
  return std::nullopt;
}

int plane_count(const Fabric& fabric) {
  int n = 0;
  for (auto v : fabric.devices()) n += is_switch(fabric, v);
  return n;
}

/// Switch chips by tray (Device::tray), for the topologies that build trays.
std::map<int, std::vector<DeviceId>> trays(const Fabric& fabric) {
  std::map<int, std::vector<DeviceId>> out;
  for (auto v : fabric.devices())
    if (is_switch(fabric, v) && fabric.device(v).tray >= 0) out[fabric.device(v).tray].push_back(v);
  return out;
}

/// The GPUs with an NVLink channel to one of `chips`.
std::set<DeviceId> gpus_on(const Fabric& fabric, const std::vector<DeviceId>& chips) {
  std::set<DeviceId> gpus;
  for (auto chip : chips)
    for (auto c : fabric.out_channels(chip))
      if (fabric.device(fabric.target(c)).kind == DeviceKind::gpu) gpus.insert(fabric.target(c));
  return gpus;
}

int gpu_rank(const ConfigNode& node, std::string_view key, const Fabric& fabric) {
  const int gpu = node.required<int>(key);
  const int n = static_cast<int>(fabric.gpus().size());
  if (gpu < 0 || gpu >= n)
    node.fail_key(key, fmt::format("GPU {} does not exist (the topology has {} GPUs: 0-{})", gpu, n, n - 1));
  return gpu;
}

/// A time factor of a slowed entry: optional, > 0.
double time_factor(const ConfigNode& node, std::string_view key) {
  const double factor = node.optional<double>(key, 1.0);
  check_positive(node, key, factor);
  return factor;
}

std::string chip_names(const Fabric& fabric, const std::vector<DeviceId>& chips) {
  std::vector<std::string> names;
  for (auto c : chips) names.push_back(fabric.device(c).name);
  return fmt::format("{}", fmt::join(names, ", "));
}

constexpr std::array<std::string_view, 6> KINDS{"link", "plane", "tray", "degraded", "slowed", "gpu_lost"};

/// What the fabric failures so far did, by GPU rank and switch chip; the bandwidth each channel has left follows
/// from it (target()).
struct FabricState {
  std::set<DeviceId> down;             // switch chips
  std::map<int, int> lanes_lost;       // by rank
  std::map<int, double> degraded;      // by rank: product of the factors (absent: 1)
  std::map<ChannelId, double> factor;  // by channel: the share of its bandwidth it has now (absent: 1)

  /// Fails on `node.key` if a GPU is left without a lane into the fabric: that is gpu_lost.
  void check(const Fabric& fabric, const ConfigNode& node, std::string_view key) const {
    for (std::size_t rank = 0; rank < fabric.gpus().size(); ++rank) {
      const int up = lanes_up(fabric, fabric.gpus()[rank], down);
      const auto lost = lanes_lost.find(static_cast<int>(rank));
      const int gone = lost == lanes_lost.end() ? 0 : lost->second;
      if (up - gone <= 0)
        node.fail_key(key, fmt::format("GPU {} would have no NVLink lane left ({} of its {} lanes lead to switch "
                                       "chips that are up, {} lost); at least one must remain (a GPU cut off is "
                                       "gpu_lost)",
                                       rank, up, lanes_up(fabric, fabric.gpus()[rank], {}), gone));
    }
  }

  /// The share of its bandwidth a channel keeps: none if it touches a chip that is down; on a GPU's end, its
  /// degraded factor times the lanes left over the lanes that reach live chips (traffic is striped over the lanes
  /// left, so every channel of the GPU carries (A - lost) / A of its rate).
  double target(const Fabric& fabric, ChannelId c) const {
    double share = 1;
    for (DeviceId end : {fabric.source(c), fabric.target(c)}) {
      const Device& d = fabric.device(end);
      if (down.contains(end)) return 0;
      if (d.kind != DeviceKind::gpu) continue;
      const int alive = lanes_up(fabric, end, down);
      const auto lost = lanes_lost.find(d.index);
      if (lost != lanes_lost.end()) share *= double(alive - lost->second) / alive;
      if (auto g = degraded.find(d.index); g != degraded.end()) share *= g->second;
    }
    return share;
  }

  /// The factors that take `channels` from their current share to their target, recording the targets.
  std::map<ChannelId, double> retarget(const Fabric& fabric, const std::vector<ChannelId>& channels) {
    std::map<ChannelId, double> factors;
    for (auto c : channels) {
      auto [it, fresh] = factor.emplace(c, 1.0);
      const double to = target(fabric, c);
      if (to == it->second || it->second == 0) continue;  // unchanged, or already carrying nothing
      factors[c] = to / it->second;
      it->second = to;
    }
    return factors;
  }
};

}  // namespace

std::vector<Failure> parse_failures(const std::optional<ConfigNode>& list, const Fabric& fabric) {
  std::vector<Failure> failures;
  if (!list) return failures;
  FabricState state;  // over the whole list: the union of its fabric failures must leave every GPU a lane
  const auto tray_chips = trays(fabric);
  for (const auto& item : list->elements()) {
    Failure f;
    f.at = item.required<Seconds>("at");
    if (f.at < Seconds{0}) item.fail_key("at", fmt::format("must be >= 0, got {}", f.at));
    std::vector<std::string_view> found;
    for (auto kind : KINDS)
      if (item.has(kind)) found.push_back(kind);
    if (found.size() != 1)
      item.fail(fmt::format("needs exactly one of {}; found {}", fmt::join(KINDS, ", "),
                            found.empty() ? std::string("none") : fmt::format("{}", fmt::join(found, " and "))));
    if (item.has("link")) {
      const ConfigNode link = item.child("link");
      f.kind = Failure::Kind::link;
      f.gpu = gpu_rank(link, "gpu", fabric);
      f.lanes = link.required<int>("lanes");
      if (f.lanes < 1) link.fail_key("lanes", fmt::format("must be >= 1, got {}", f.lanes));
      state.lanes_lost[f.gpu] += f.lanes;
      state.check(fabric, link, "lanes");
      f.what =
          fmt::format("gpu{} loses {} of {} NVLink lanes", f.gpu, f.lanes, lanes_up(fabric, fabric.gpus()[f.gpu], {}));
    } else if (item.has("plane")) {
      f.kind = Failure::Kind::plane;
      const int plane = item.required<int>("plane");
      const auto chip = plane_switch(fabric, plane);
      if (!chip) {
        const int n = plane_count(fabric);
        item.fail_key(
            "plane",
            n == 0 ? fmt::format("NVSwitch plane {} does not exist (the topology has no NVSwitch)", plane)
                   : fmt::format("NVSwitch plane {} does not exist (the topology has {}: 0-{})", plane, n, n - 1));
      }
      if (state.down.contains(*chip)) item.fail_key("plane", fmt::format("plane {} is already down", plane));
      f.chips = {*chip};
      state.down.insert(*chip);
      state.check(fabric, item, "plane");
      f.what = fmt::format("nvswitch{} (plane {}) down", plane, plane);
    } else if (item.has("tray")) {
      f.kind = Failure::Kind::tray;
      const int tray = item.required<int>("tray");
      if (tray_chips.empty())
        item.fail_key("tray", fmt::format("tray {} on a topology without switch trays (nvl72 and nvl36x2 have "
                                          "them); one switch chip down is plane: N",
                                          tray));
      const auto it = tray_chips.find(tray);
      if (it == tray_chips.end())
        item.fail_key("tray", fmt::format("switch tray {} does not exist (the topology has {} trays: 0-{})", tray,
                                          tray_chips.size(), tray_chips.rbegin()->first));
      if (std::ranges::all_of(it->second, [&](DeviceId c) { return state.down.contains(c); }))
        item.fail_key("tray", fmt::format("switch tray {} is already down", tray));
      f.chips = it->second;
      state.down.insert(f.chips.begin(), f.chips.end());
      state.check(fabric, item, "tray");
      f.what = fmt::format("switch tray {} down ({})", tray, chip_names(fabric, f.chips));
    } else if (item.has("degraded")) {
      const ConfigNode degraded = item.child("degraded");
      f.kind = Failure::Kind::degraded;
      f.gpu = gpu_rank(degraded, "gpu", fabric);
      f.factor = degraded.required<double>("factor");
      if (!(f.factor > 0 && f.factor <= 1))
        degraded.fail_key("factor", fmt::format("must be in (0, 1], got {}", f.factor));
      f.what = fmt::format("gpu{} NVLink bandwidth x {}", f.gpu, f.factor);
    } else if (item.has("slowed")) {
      const ConfigNode slowed = item.child("slowed");
      f.kind = Failure::Kind::slowed;
      f.gpu = gpu_rank(slowed, "gpu", fabric);
      if (!slowed.has("compute") && !slowed.has("hbm"))
        slowed.fail("needs compute or hbm (time factors, as in models.slow); found neither");
      f.compute = time_factor(slowed, "compute");
      f.hbm = time_factor(slowed, "hbm");
      f.what = fmt::format("gpu{} kernels: compute time x {}, HBM time x {}", f.gpu, f.compute, f.hbm);
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

/// Applies one failure other than gpu_lost now.
void apply(Simulation& simulation, const Failure& f, FailureLog& log, FabricState& state, const FailureHooks& hooks) {
  const Fabric& fabric = simulation.fabric();
  std::vector<ChannelId> touched;  // channels whose share may change
  switch (f.kind) {
    case Failure::Kind::link:
      state.lanes_lost[f.gpu] += f.lanes;
      touched = fabric_links(fabric, fabric.gpus()[f.gpu]);
      break;
    case Failure::Kind::degraded: {
      auto [it, fresh] = state.degraded.emplace(f.gpu, 1.0);
      it->second *= f.factor;
      touched = fabric_links(fabric, fabric.gpus()[f.gpu]);
      break;
    }
    case Failure::Kind::plane:
    case Failure::Kind::tray:
      // The chips' lanes carry nothing; each hop keeps its other channels' lanes, over which traffic is striped.
      // The GPUs on them have fewer live lanes, which changes the share a lost lane takes from the others.
      state.down.insert(f.chips.begin(), f.chips.end());
      for (auto chip : f.chips) {
        for (auto c : fabric.out_channels(chip)) touched.push_back(c);
        for (auto c : fabric.in_channels(chip)) touched.push_back(c);
      }
      for (auto gpu : gpus_on(fabric, f.chips))
        for (auto c : fabric_links(fabric, gpu)) touched.push_back(c);
      break;
    case Failure::Kind::slowed:
      hooks.slow_gpu(f.gpu, f.compute, f.hbm);
      log.applied.push_back({f.at, f.what, {}});
      return;
    case Failure::Kind::gpu_lost:
      throw std::logic_error("apply: a lost GPU is handled by the failures actor");
  }
  log.applied.push_back({f.at, f.what, simulation.scale_channels(state.retarget(fabric, touched))});
}

}  // namespace

void schedule_failures(Simulation& simulation, std::vector<Failure> failures, FailureLog& log, FailureHooks hooks) {
  if (!hooks.slow_gpu &&
      std::ranges::any_of(failures, [](const Failure& f) { return f.kind == Failure::Kind::slowed; }))
    throw std::logic_error("schedule_failures: a slowed failure needs FailureHooks::slow_gpu");
  std::ranges::stable_sort(failures, {}, &Failure::at);
  // Failures at 0 s (but a lost GPU) apply before the run, so that every op that starts then sees them: an actor
  // at 0 s may run after the ranks' first ops.
  FabricState state;
  std::size_t first_later = 0;
  while (first_later < failures.size() && failures[first_later].at <= Seconds{0} &&
         failures[first_later].kind != Failure::Kind::gpu_lost)
    apply(simulation, failures[first_later++], log, state, hooks);
  failures.erase(failures.begin(), failures.begin() + static_cast<std::ptrdiff_t>(first_later));
  if (failures.empty()) return;
  const DeviceId home = simulation.fabric().gpus().front();
  sg4::Actor::create("failures", simulation.host(home),
                     [&simulation, &log, failures, state, hooks = std::move(hooks)]() mutable {
                       for (const auto& f : failures) {
                         sg4::this_actor::sleep_until(f.at.count());
                         if (f.kind == Failure::Kind::gpu_lost) {
                           log.applied.push_back({f.at, f.what, {}});
                           log.outcome = fmt::format("failed: GPU {} lost at {}", f.gpu, f.at);
                           sg4::Actor::kill_all();  // every other actor: the engine has nothing left to run and stops
                           return;
                         }
                         apply(simulation, f, log, state, hooks);
                       }
                     })
      ->daemonize();
}

}  // namespace snsim
