#include "sim/fabric.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>

#include <fmt/ranges.h>

#include <limits>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

namespace snsim {

std::string_view to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::host:
      return "host";
    case DeviceKind::nvswitch:
      return "nvswitch";
    case DeviceKind::pcie_switch:
      return "pcie_switch";
    case DeviceKind::nic:
      return "nic";
    case DeviceKind::ib_switch:
      return "ib_switch";
    case DeviceKind::nvme:
      return "nvme";
  }
  return "?";
}

std::string_view to_string(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::nvlink:
      return "nvlink";
    case ChannelKind::pcie:
      return "pcie";
    case ChannelKind::ib:
      return "ib";
  }
  return "?";
}

namespace {
bool forwards(DeviceKind kind) {
  return kind == DeviceKind::nvswitch || kind == DeviceKind::pcie_switch || kind == DeviceKind::nic ||
         kind == DeviceKind::ib_switch;
}

constexpr std::size_t unreached = std::numeric_limits<std::size_t>::max();

/// Hop counts from `origin` along channels that only switches (or the origin) forward: a breadth-first search.
std::vector<std::size_t> hop_distances(const Fabric& fabric, DeviceId origin) {
  std::vector<std::size_t> distance(fabric.device_count(), unreached);
  distance[origin] = 0;
  std::vector<DeviceId> frontier{origin};
  for (std::size_t depth = 1; !frontier.empty(); ++depth) {
    std::vector<DeviceId> next;
    for (auto u : frontier) {
      if (u != origin && !forwards(fabric.device(u).kind)) continue;
      for (auto c : fabric.out_channels(u)) {
        const DeviceId v = fabric.target(c);
        if (distance[v] != unreached) continue;
        distance[v] = depth;
        next.push_back(v);
      }
    }
    frontier = std::move(next);
  }
  return distance;
}
}  // namespace

DeviceId Fabric::add_device(Device device) {
  const auto kind = device.kind;
  const DeviceId id = devices_.size();
  devices_.push_back(std::move(device));
  out_.emplace_back();
  in_.emplace_back();
  if (kind == DeviceKind::gpu) gpus_.push_back(id);
  if (kind == DeviceKind::host && !host_) host_ = id;
  if (kind == DeviceKind::nvme) nvme_.push_back(id);
  return id;
}

ChannelId Fabric::add_channel(DeviceId from, DeviceId to, Channel channel) {
  const ChannelId id{channels_.size()};
  channels_.push_back({from, to, channel});
  out_[from].push_back(id);
  in_[to].push_back(id);
  return id;
}

void Fabric::add_duplex(DeviceId a, DeviceId b, Channel channel) {
  add_channel(a, b, channel);
  add_channel(b, a, channel);
}

std::optional<DeviceId> Fabric::find(std::string_view name) const {
  for (auto v : devices())
    if (devices_[v].name == name) return v;
  return std::nullopt;
}

std::optional<Route> Fabric::route(DeviceId from, DeviceId to) const {
  return Router(*this).route(from, to);
}

namespace {
constexpr std::uint8_t FAR = std::numeric_limits<std::uint8_t>::max();  // not reached
}

Router::Router(const Fabric& fabric) : fabric_{fabric} {
  forward_.distance.assign(fabric.device_count(), FAR);
  backward_.distance.assign(fabric.device_count(), FAR);
  on_path_.assign(fabric.device_count(), 0);
}

void Router::Search::reset() {
  for (const auto& level : levels)
    for (auto v : level) distance[v] = FAR;
  levels.clear();
}

void Router::Search::expand(const Fabric& fabric, bool forward) {
  const DeviceId end = levels.front().front();
  const std::size_t depth = levels.size();  // of the level labelled now
  if (depth + 1 >= FAR) throw std::logic_error("a route of more than 254 hops");
  std::vector<DeviceId> next;
  auto label = [&](DeviceId v) {
    if (distance[v] != FAR) return;
    distance[v] = static_cast<std::uint8_t>(depth);
    next.push_back(v);
  };
  for (auto u : levels.back()) {
    if (u != end && !forwards(fabric.device(u).kind)) continue;  // endpoints do not forward
    if (forward)
      for (auto c : fabric.out_channels(u)) label(fabric.target(c));
    else
      for (auto c : fabric.in_channels(u)) label(fabric.source(c));
  }
  levels.push_back(std::move(next));
}

std::optional<Route> Router::route(DeviceId from, DeviceId to) {
  if (from == to) return Route{};
  auto passes = [&](DeviceId v) { return v == from || v == to || forwards(fabric_.device(v).kind); };
  forward_.reset();
  backward_.reset();
  forward_.distance[from] = 0;
  forward_.levels.push_back({from});
  backward_.distance[to] = 0;
  backward_.levels.push_back({to});
  // Grow the smaller frontier a level at a time. Once the depths reached sum to the shortest meeting found, that is
  // the route's length: any shorter path would have a device within both depths, labelled by both searches.
  std::size_t length = std::numeric_limits<std::size_t>::max();
  for (;;) {
    const std::size_t reached = forward_.levels.size() + backward_.levels.size() - 2;
    if (length <= reached) break;
    const bool forward_open = !forward_.levels.back().empty(), backward_open = !backward_.levels.back().empty();
    if (!forward_open && !backward_open) break;
    const bool forward =
        forward_open && (!backward_open || forward_.levels.back().size() <= backward_.levels.back().size());
    Search& grown = forward ? forward_ : backward_;
    const Search& other = forward ? backward_ : forward_;
    grown.expand(fabric_, forward);
    for (auto v : grown.levels.back())
      if (other.distance[v] != FAR && passes(v))
        length = std::min<std::size_t>(length, std::size_t{grown.distance[v]} + other.distance[v]);
  }
  if (length == std::numeric_limits<std::size_t>::max()) return std::nullopt;
  // The devices on shortest paths, by position k: where both distances are known (k within the forward depth and
  // length - k within the backward depth), those whose distances sum to the length; nearer `from`, the forward
  // level's devices with a channel into the next position's; nearer `to`, the backward level's with a channel from
  // the previous position's.
  const std::size_t forward_depth = forward_.levels.size() - 1, backward_depth = backward_.levels.size() - 1;
  const std::size_t low = length > backward_depth ? length - backward_depth : 0;
  const std::size_t high = std::min(forward_depth, length);
  std::vector<DeviceId> marked;
  auto mark = [&](DeviceId v, std::size_t k) {
    on_path_[v] = static_cast<std::uint8_t>(k + 1);
    marked.push_back(v);
  };
  for (std::size_t k = low; k <= high; ++k)
    for (auto v : forward_.levels[k])
      if (backward_.distance[v] == length - k && passes(v)) mark(v, k);
  for (std::size_t k = low; k-- > 0;)
    for (auto v : forward_.levels[k]) {
      if (!passes(v)) continue;
      for (auto c : fabric_.out_channels(v))
        if (on_path_[fabric_.target(c)] == k + 2) {
          mark(v, k);
          break;
        }
    }
  for (std::size_t k = high + 1; k <= length; ++k)
    for (auto v : backward_.levels[length - k]) {
      if (!passes(v)) continue;
      for (auto c : fabric_.in_channels(v))
        if (on_path_[fabric_.source(c)] == k) {
          mark(v, k);
          break;
        }
    }
  Route route;
  route.hops.resize(length);
  // Walk the shortest-path DAG level by level: hop k holds every channel from a device at position k to one at
  // position k + 1 (devices in id order, each device's channels in the order Fabric::out_channels lists them).
  std::vector<DeviceId> level{from};
  for (std::size_t k = 0; k < length; ++k) {
    std::vector<DeviceId> next;
    for (auto u : level)
      for (auto c : fabric_.out_channels(u)) {
        const DeviceId v = fabric_.target(c);
        if (on_path_[v] != k + 2) continue;
        route.hops[k].channels.push_back(c);
        next.push_back(v);
      }
    std::ranges::sort(next);
    next.erase(std::unique(next.begin(), next.end()), next.end());
    level = std::move(next);
  }
  for (auto v : marked) on_path_[v] = 0;
  return route;
}

namespace {
constexpr std::array<std::string_view, 6> DTYPE_NAMES{"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"};
}

std::string_view to_string(Dtype dtype) {
  return DTYPE_NAMES[static_cast<std::size_t>(dtype)];
}

std::optional<Dtype> dtype_from_string(std::string_view name) {
  for (std::size_t i = 0; i < DTYPE_NAMES.size(); ++i)
    if (DTYPE_NAMES[i] == name) return static_cast<Dtype>(i);
  return std::nullopt;
}

std::string known_dtype_names() {
  std::vector<std::string_view> names(DTYPE_NAMES.begin(), DTYPE_NAMES.end());
  std::ranges::sort(names);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::optional<FlopsPerSecond> GpuSpec::peak(Dtype dtype) const {
  if (dtype == Dtype::bf16) return dense_bf16;
  const auto it = dense_peak.find(dtype);
  if (it == dense_peak.end()) return std::nullopt;
  return it->second;
}

RouteCost Fabric::cost(const Route& route) const {
  RouteCost c{Seconds{0}, BytesPerSecond{std::numeric_limits<double>::infinity()}};
  for (const auto& hop : route.hops) {
    Seconds latency{0};
    BytesPerSecond bandwidth{0};
    for (auto ch : hop.channels) {
      latency = std::max(latency, channel(ch).latency);
      bandwidth = bandwidth + channel(ch).bandwidth();
    }
    c.latency += latency;
    c.bottleneck = std::min(c.bottleneck, bandwidth);
  }
  return c;
}

RouteCost Fabric::cost(DeviceId from, DeviceId to) const {
  const auto r = route(from, to);
  if (!r) throw std::logic_error(fmt::format("no route from {} to {}", device(from).name, device(to).name));
  return cost(*r);
}

BytesPerSecond Fabric::egress_bandwidth(DeviceId device) const {
  BytesPerSecond total{0};
  for (auto c : out_[device]) total = total + channel(c).bandwidth();
  return total;
}

BytesPerSecond Fabric::bisection_bandwidth() const {
  if (gpus_.size() < 2) return BytesPerSecond{0};
  // Capacities in whole bytes per second, as integers: push-relabel on doubles leaves rounding residues that break
  // its own flow-conservation check (an assertion in builds without NDEBUG, such as the asan preset's), and the
  // result is exact for every bandwidth we build (whole B/s, sums far below 2^63).
  using Capacity = std::int64_t;
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, Capacity,
                      boost::property<boost::edge_residual_capacity_t, Capacity,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = device_count();
  FlowGraph flow(n + 2);
  const std::size_t source = n, sink = n + 1;
  auto capacity = boost::get(boost::edge_capacity, flow);
  auto reverse = boost::get(boost::edge_reverse, flow);
  auto connect = [&](std::size_t u, std::size_t v, Capacity c) {
    auto e = boost::add_edge(u, v, flow).first;
    auto r = boost::add_edge(v, u, flow).first;
    capacity[e] = c;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  std::vector<int> half(n, -1);  // 0: sending half, 1: receiving half, -1: not a GPU
  for (std::size_t i = 0; i < gpus_.size(); ++i) half[gpus_[i]] = i < gpus_.size() / 2 ? 0 : 1;
  auto whole = [](BytesPerSecond b) { return static_cast<Capacity>(std::llround(b.count())); };
  auto egress = [&](DeviceId d) {
    Capacity total = 0;
    for (auto c : out_[d]) total += whole(channel(c).bandwidth());
    return total;
  };
  auto ingress = [&](DeviceId d) {
    Capacity total = 0;
    for (auto c : in_[d]) total += whole(channel(c).bandwidth());
    return total;
  };
  // A GPU cannot send (or receive) more than its links carry: that bound stands for "unlimited" without overflow.
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    if (half[gpus_[i]] == 0)
      connect(source, gpus_[i], egress(gpus_[i]));
    else
      connect(gpus_[i], sink, ingress(gpus_[i]));
  }
  for (const auto& [u, v, c] : channels_) {
    // Only switches forward; a sending GPU only sends, a receiving GPU only receives.
    const bool u_ok = forwards(devices_[u].kind) || half[u] == 0;
    const bool v_ok = forwards(devices_[v].kind) || half[v] == 1;
    if (u_ok && v_ok) connect(u, v, whole(c.bandwidth()));
  }
  return BytesPerSecond{static_cast<double>(boost::push_relabel_max_flow(flow, source, sink))};
}

int Fabric::lanes_attached(DeviceId device) const {
  int out = 0, in = 0;
  for (auto c : out_[device]) out += channel(c).lanes;
  for (auto c : in_[device]) in += channel(c).lanes;
  return std::max(out, in);
}

std::optional<std::string> Fabric::check() const {
  // Rates and latencies first, in the one range every quantity keeps (sim/units.hpp): a builder multiplies lanes by
  // a lane's rate, and a value out of range must be refused here, not by SimGrid's abort part way through a run.
  for (const Device& d : devices_) {
    if (!d.gpu) continue;
    if (auto p = quantity_problem(d.gpu->dense_bf16); !p.empty() || !(d.gpu->dense_bf16 > FlopsPerSecond{0}))
      return fmt::format("{}: dense BF16 rate {} {}", d.name, d.gpu->dense_bf16, p.empty() ? "must be > 0" : p);
    if (auto p = quantity_problem(d.gpu->hbm_bandwidth); !p.empty() || !(d.gpu->hbm_bandwidth > BytesPerSecond{0}))
      return fmt::format("{}: HBM bandwidth {} {}", d.name, d.gpu->hbm_bandwidth, p.empty() ? "must be > 0" : p);
  }
  for (const ChannelEnds& ends : channels_) {
    const Channel& c = ends.properties;
    const auto name = [&] { return fmt::format("{} -> {}", devices_[ends.source].name, devices_[ends.target].name); };
    if (auto p = quantity_problem(c.bandwidth()); !p.empty() || !(c.bandwidth() > BytesPerSecond{0}))
      return fmt::format("channel {}: bandwidth {} {}", name(), c.bandwidth(), p.empty() ? "must be > 0" : p);
    if (auto p = quantity_problem(c.latency); !p.empty())
      return fmt::format("channel {}: latency {} {}", name(), c.latency, p);
  }
  // Ports next: a switch with too many lanes is a wiring mistake that explains itself better than what it breaks.
  for (auto v : devices()) {
    const Device& d = devices_[v];
    if (d.ports > 0 && lanes_attached(v) > d.ports)
      return fmt::format("{} has {} lanes attached, more than its {} ports", d.name, lanes_attached(v), d.ports);
  }
  if (gpus_.size() < 2) return std::nullopt;
  // GPU a reaches GPU b through a direct channel or through forwarding devices (switches, NICs) joined to both.
  // Connected groups of forwarding devices come from a union-find over channels between them, taken as undirected:
  // builders add channels in duplex pairs. This is linear in the fabric, where a search per GPU would be quadratic.
  std::vector<std::size_t> parent(device_count());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find_root = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [u, v, c] : channels_)
    if (forwards(devices_[u].kind) && forwards(devices_[v].kind)) parent[find_root(u)] = find_root(v);
  std::vector<std::vector<std::size_t>> groups(gpus_.size());  // per GPU: the forwarding groups it is attached to
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    for (auto c : out_[gpus_[i]])
      if (forwards(devices_[target(c)].kind)) groups[i].push_back(find_root(target(c)));
    std::ranges::sort(groups[i]);
    groups[i].erase(std::unique(groups[i].begin(), groups[i].end()), groups[i].end());
  }
  std::vector<std::size_t> common = groups[0];
  for (const auto& g : groups) {
    std::vector<std::size_t> both;
    std::ranges::set_intersection(common, g, std::back_inserter(both));
    common = std::move(both);
  }
  if (!common.empty()) return std::nullopt;  // one switched fabric joins every GPU
  auto direct = [&](DeviceId a, DeviceId b) {
    for (auto c : out_[a])
      if (target(c) == b) return true;
    return false;
  };
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    for (std::size_t j = 0; j < gpus_.size(); ++j) {
      if (i == j) continue;
      std::vector<std::size_t> both;
      std::ranges::set_intersection(groups[i], groups[j], std::back_inserter(both));
      if (both.empty() && !direct(gpus_[i], gpus_[j]))
        return fmt::format("{} cannot reach {}: no switch or direct link joins them", devices_[gpus_[i]].name,
                           devices_[gpus_[j]].name);
    }
  return std::nullopt;
}

std::vector<std::vector<DeviceId>> Fabric::crossbar_domains() const {
  // Candidates: GPUs with the same NVSwitches out and in; then each candidate group is checked for what else could
  // put a hop between two members (a direct channel, a shared PCIe switch).
  auto switches = [&](DeviceId gpu, bool out) {
    std::vector<DeviceId> s;
    if (out) {
      for (auto c : out_[gpu])
        if (devices_[target(c)].kind == DeviceKind::nvswitch) s.push_back(target(c));
    } else {
      for (auto c : in_[gpu])
        if (devices_[source(c)].kind == DeviceKind::nvswitch) s.push_back(source(c));
    }
    std::ranges::sort(s);
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  };
  std::map<std::pair<std::vector<DeviceId>, std::vector<DeviceId>>, std::vector<DeviceId>> candidates;
  for (auto gpu : gpus_) {
    auto out = switches(gpu, true), in = switches(gpu, false);
    if (!out.empty() && out == in) candidates[{std::move(out), std::move(in)}].push_back(gpu);
  }
  std::vector<std::vector<DeviceId>> domains;
  for (auto& [planes, members] : candidates) {
    if (members.size() < 2) continue;
    std::vector<bool> member(device_count(), false), plane(device_count(), false);
    for (auto m : members) member[m] = true;
    for (auto p : planes.first) plane[p] = true;
    bool clean = true;
    for (auto m : members)
      for (auto c : out_[m]) {
        const DeviceId x = target(c);
        if (member[x]) clean = false;  // a direct channel between two members
        if (plane[x] || !forwards(devices_[x].kind)) continue;
        for (auto f : out_[x])
          if (target(f) != m && member[target(f)]) clean = false;
      }
    if (clean) domains.push_back(std::move(members));
  }
  std::ranges::sort(domains, [&](const auto& a, const auto& b) { return devices_[a[0]].index < devices_[b[0]].index; });
  return domains;
}

std::vector<bool> Fabric::non_binding_channels() const {
  std::vector<bool> result(channel_count(), false);
  auto is_switch = [&](DeviceId v) { return devices_[v].kind == DeviceKind::ib_switch; };
  std::vector<DeviceId> leaves, spines;
  for (auto v : devices()) {
    if (!is_switch(v)) continue;
    const bool below = std::ranges::any_of(in_[v], [&](ChannelId c) { return !is_switch(source(c)); }) ||
                       std::ranges::any_of(out_[v], [&](ChannelId c) { return !is_switch(target(c)); });
    (below ? leaves : spines).push_back(v);
  }
  if (leaves.empty() || spines.empty()) return result;
  std::vector<int> tier(device_count(), -1);  // 0 leaf, 1 spine
  for (auto v : leaves) tier[v] = 0;
  for (auto v : spines) tier[v] = 1;
  // Every leaf-spine pair joined both ways, and no channel within a tier.
  for (auto v : leaves) {
    std::vector<bool> up(device_count(), false), down(device_count(), false);
    for (auto c : out_[v])
      if (is_switch(target(c))) {
        if (tier[target(c)] != 1) return result;
        up[target(c)] = true;
      }
    for (auto c : in_[v])
      if (is_switch(source(c))) {
        if (tier[source(c)] != 1) return result;
        down[source(c)] = true;
      }
    if (!std::ranges::all_of(spines, [&](DeviceId s) { return up[s] && down[s]; })) return result;
  }
  for (auto v : spines)
    for (auto c : out_[v])
      if (tier[target(c)] != 0) return result;
  for (auto v : leaves) {
    double from_below = 0, to_below = 0, up = 0, down = 0;
    for (auto c : in_[v]) (is_switch(source(c)) ? down : from_below) += channel(c).bandwidth().count();
    for (auto c : out_[v]) (is_switch(target(c)) ? up : to_below) += channel(c).bandwidth().count();
    if (up >= from_below)
      for (auto c : out_[v])
        if (is_switch(target(c))) result[c.index] = true;
    if (down >= to_below)
      for (auto c : in_[v])
        if (is_switch(source(c))) result[c.index] = true;
  }
  return result;
}

std::vector<DeviceId> Fabric::nvlink_domain(DeviceId gpu) const {
  // A search from the GPU through NVSwitches only: GPUs on a direct NVLink are peers, not a switch domain.
  std::vector<bool> seen(device_count(), false);
  std::vector<DeviceId> frontier{gpu}, domain{gpu};
  seen[gpu] = true;
  while (!frontier.empty()) {
    const DeviceId u = frontier.back();
    frontier.pop_back();
    for (auto c : out_[u]) {
      const DeviceId v = target(c);
      const auto kind = devices_[v].kind;
      if (seen[v] || channel(c).kind != ChannelKind::nvlink) continue;
      if (kind != DeviceKind::nvswitch && !(kind == DeviceKind::gpu && devices_[u].kind == DeviceKind::nvswitch))
        continue;
      seen[v] = true;
      if (kind == DeviceKind::gpu) domain.push_back(v);
      frontier.push_back(v);
    }
  }
  std::ranges::sort(domain);
  return domain;
}

Fabric::HopCounts Fabric::gpu_hop_counts(std::size_t max_sources) const {
  HopCounts counts;
  if (gpus_.size() < 2 || max_sources == 0) return counts;
  counts.min = unreached;
  const std::size_t stride = (gpus_.size() + max_sources - 1) / max_sources;
  for (std::size_t i = 0; i < gpus_.size(); i += stride) {
    const auto distance = hop_distances(*this, gpus_[i]);
    for (auto other : gpus_) {
      if (other == gpus_[i] || distance[other] == unreached) continue;
      counts.min = std::min(counts.min, distance[other]);
      counts.max = std::max(counts.max, distance[other]);
    }
    ++counts.sources;
  }
  if (counts.min == unreached) counts.min = 0;
  return counts;
}

}  // namespace snsim
