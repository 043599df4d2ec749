#include "sim/simulation.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xbt/log.h>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>

XBT_LOG_NEW_DEFAULT_CATEGORY(snsim_simulation, "snsim: platform building and the engine");

namespace sg4 = simgrid::s4u;

namespace snsim {
namespace {

// Compute rate given to host CPUs; no workload computes on them yet.
constexpr double HOST_CPU_FLOPS = 1e12;

bool is_endpoint(DeviceKind kind) {
  return kind == DeviceKind::gpu || kind == DeviceKind::host || kind == DeviceKind::nvme;
}

/// "nvswitch[0-3]" for nvswitch0..nvswitch3, "gpu0" for one device, "a+b" otherwise.
std::string device_list(const Fabric& fabric, const std::set<DeviceId>& ids) {
  std::vector<const Device*> devices;
  for (auto id : ids) devices.push_back(&fabric.device(id));
  if (devices.size() == 1) return devices.front()->name;
  const auto kind = devices.front()->kind;
  const bool same_kind = std::ranges::all_of(devices, [&](const Device* d) { return d->kind == kind; });
  std::vector<int> indices;
  for (const auto* d : devices) indices.push_back(d->index);
  std::ranges::sort(indices);
  const bool consecutive = indices.back() - indices.front() + 1 == static_cast<int>(indices.size());
  if (same_kind && consecutive) return fmt::format("{}[{}-{}]", to_string(kind), indices.front(), indices.back());
  std::vector<std::string> names;
  for (const auto* d : devices) names.push_back(d->name);
  return fmt::format("{}", fmt::join(names, "+"));
}

}  // namespace

std::string Simulation::hop_name(const Fabric& fabric, const Hop& hop) {
  std::set<DeviceId> from, to;
  for (auto c : hop.channels) {
    from.insert(fabric.source(c));
    to.insert(fabric.target(c));
  }
  return fmt::format("{}->{}", device_list(fabric, from), device_list(fabric, to));
}

Simulation::Simulation(const Fabric& fabric, const std::vector<std::string>& engine_args, double sm_hold_share)
    : fabric_{fabric} {
  std::vector<std::string> args{"snsim"};
  args.insert(args.end(), engine_args.begin(), engine_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  xbt_log_control_set("xbt_cfg.thres:warning");  // hide "Configuration change" lines
  try {
    engine_ = std::make_unique<sg4::Engine>(&argc, argv.data());
  } catch (const std::exception& e) {  // a bad --log or --cfg passed through to SimGrid
    throw InputError(fmt::format("--engine: {}", e.what()));
  }
  // The exact fluid model (reference/simgrid-3.32.md §3): no latency or bandwidth factors, no reverse-path cross
  // traffic, no TCP window cap. Must be set before any zone exists.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");

  auto* zone = sg4::create_full_zone("fabric");
  const auto& graph = fabric.graph();
  hosts_.assign(fabric.device_count(), nullptr);
  memory_links_.assign(fabric.device_count(), std::nullopt);
  sm_holders_.assign(fabric.device_count(), 0);
  std::vector<DeviceId> endpoints;
  for (auto v : boost::make_iterator_range(boost::vertices(graph))) {
    const Device& d = graph[v];
    if (!is_endpoint(d.kind)) continue;
    const double speed = d.gpu ? d.gpu->dense_bf16.count() : HOST_CPU_FLOPS;
    // Pstate k: the speed left with k SM holders (hold_sms), while some is left.
    std::vector<double> pstates{speed};
    if (d.gpu && sm_hold_share > 0) {
      for (int k = 1; 1 - k * sm_hold_share > 1e-9; ++k) pstates.push_back(speed * (1 - k * sm_hold_share));
      max_pstate_ = pstates.size() - 1;
    }
    hosts_[v] = zone->create_host(d.name, pstates)->seal();
    device_of_host_.emplace(hosts_[v], v);
    endpoints.push_back(v);
    if (d.gpu) {  // SHARED (the default policy): reads and writes draw on one HBM bandwidth
      const std::string name = fmt::format("hbm:{}", d.name);
      s4u_links_.push_back(zone->create_link(name, d.gpu->hbm_bandwidth.count())->set_latency(0)->seal());
      links_.push_back({name, d.gpu->hbm_bandwidth, Bytes{0}, Bytes{0}});
      link_channels_.emplace_back();
      memory_links_[v] = links_.size() - 1;
    }
  }

  // One link per distinct hop (a set of parallel channels), shared by every route that crosses it.
  std::map<std::vector<ChannelId>, std::size_t> link_of_hop;
  auto link_for = [&](const Hop& hop) {
    auto key = hop.channels;
    std::ranges::sort(key);
    if (auto it = link_of_hop.find(key); it != link_of_hop.end()) return it->second;
    BytesPerSecond bandwidth{0};
    for (auto c : hop.channels) bandwidth = bandwidth + fabric.channel(c).bandwidth();
    const std::string name = hop_name(fabric, hop);
    auto* link = zone->create_link(name, bandwidth.count())->set_latency(0)->seal();
    s4u_links_.push_back(link);
    links_.push_back({name, bandwidth, Bytes{0}, Bytes{0}});
    link_channels_.push_back(key);
    link_of_hop.emplace(std::move(key), links_.size() - 1);
    return links_.size() - 1;
  };

  Router router(fabric);  // one graph search per endpoint and direction, not per pair
  for (auto from : endpoints) {
    for (auto to : endpoints) {
      PlatformRoute route{{}, Seconds{0}, BytesPerSecond{std::numeric_limits<double>::infinity()}};
      std::vector<sg4::LinkInRoute> in_route;
      auto add_link = [&](std::size_t index) {
        route.links.push_back(index);
        in_route.emplace_back(s4u_links_[index]);
        route.bottleneck = std::min(route.bottleneck, links_[index].bandwidth);
      };
      if (from == to) {
        // The loopback of a GPU: its HBM link once, carrying the reads and the writes a local copy makes. Without a
        // route of its own, a Full zone would use SimGrid's implicit 10 GB/s loopback (reference/simgrid-3.32.md).
        if (!memory_links_[from]) continue;
        add_link(*memory_links_[from]);
      } else {
        auto r = router.route(from, to);
        if (!r) continue;  // unconnected endpoints: transfers between them are rejected before the run
        route.latency = fabric.cost(*r).latency;
        if (memory_links_[from]) add_link(*memory_links_[from]);
        for (const auto& hop : r->hops) {
          add_link(link_for(hop));
        }
        if (memory_links_[to]) add_link(*memory_links_[to]);
      }
      zone->add_route(hosts_[from]->get_netpoint(), hosts_[to]->get_netpoint(), nullptr, nullptr, in_route, false);
      routes_.emplace(std::pair{from, to}, std::move(route));
    }
  }
  zone->seal();
  XBT_VERB("platform: %zu hosts, %zu links, %zu routes", endpoints.size(), links_.size(), routes_.size());
}

Simulation::~Simulation() = default;

sg4::Host* Simulation::host(DeviceId device) const {
  return hosts_.at(device);
}

const PlatformRoute& Simulation::route(DeviceId from, DeviceId to) const {
  auto it = routes_.find({from, to});
  if (it == routes_.end())
    throw std::logic_error(fmt::format("no route from {} to {}", fabric_.device(from).name, fabric_.device(to).name));
  return it->second;
}

void Simulation::spawn(const std::string& name, DeviceId device, std::function<void()> body) {
  sg4::Actor::create(name, host(device), std::move(body));
}

Seconds Simulation::run() {
  engine_->run();
  return now();
}

Seconds Simulation::now() {
  return Seconds{sg4::Engine::get_clock()};
}

// A daemon actor on one endpoint that runs one job at a time when woken (SimGrid actors are costly to create).
struct Simulation::Worker {
  sg4::SemaphorePtr wake = sg4::Semaphore::create(0);
  std::function<void()> job;
};

void Simulation::run_on(DeviceId device, std::function<void()> job) {
  auto& idle = idle_workers_[device];
  std::shared_ptr<Worker> w;
  if (idle.empty()) {
    w = std::make_shared<Worker>();
    sg4::Actor::create("worker", host(device), [this, w, device] {
      for (;;) {
        w->wake->acquire();
        auto job = std::move(w->job);
        job();
        idle_workers_[device].push_back(w);
      }
    })->daemonize();
  } else {
    w = idle.back();
    idle.pop_back();
  }
  w->job = std::move(job);
  w->wake->release();
}

void Simulation::transfer(DeviceId from, DeviceId to, Bytes wire, Bytes payload, Seconds fixed_cost,
                          BytesPerSecond max_rate, bool cap_follows_route) {
  const PlatformRoute& path = route(from, to);
  // The caller took the cap from the bottleneck it saw now; a failure during the fixed cost changes the line.
  const double share = cap_follows_route ? max_rate.count() / path.bottleneck.count() : 0;
  delay(path.latency + fixed_cost);
  add_bytes(path, wire, payload);
  if (max_rate.count() <= 0) {
    sg4::Comm::sendto(host(from), host(to), timed_bytes(wire).count());
    return;
  }
  // SimGrid 3.32 ignores Comm::set_rate on host-to-host (sendto) comms; mailbox comms honour it, but run from the
  // sender's host to the receiver's: pooled workers (run_on) receive on the destination and, when the caller is not
  // on the source (a pull), send from the source, while the caller waits for the bytes.
  static int token = 0;
  // One mailbox per pair: receivers only take bytes, and each put carries its own size and rate. A receiver that
  // matches a put started the comm: its cap is brought up to date if a failure came in between (rescale_caps).
  auto* mailbox = sg4::Mailbox::by_name(fmt::format("transfer:{}>{}", from, to));
  run_on(to, [this, mailbox] {
    int* slot = nullptr;
    auto comm = mailbox->get_async<int>(&slot);
    rescale_caps(comm->get_impl());
    comm->wait();
  });
  const double size = timed_bytes(wire).count();
  auto send = [this, mailbox, size, from, to, share, cap = max_rate.count()] {
    // Taken now, when the put is posted: the rate of a comm is its sender's.
    const double rate = share > 0 ? share * route(from, to).bottleneck.count() : cap;
    auto comm = mailbox->put_init(&token, size)->set_rate(rate);
    comm->start();
    if (share > 0) capped_.emplace(comm->get_impl(), CappedTransfer{from, to, share, epoch_});
    comm->wait();
    if (share > 0) capped_.erase(comm->get_impl());
  };
  if (sg4::this_actor::get_host() == host(from)) {
    send();
    return;
  }
  auto done = sg4::Semaphore::create(0);
  run_on(from, [send, done] {
    send();
    done->release();
  });
  done->acquire();
}

void Simulation::rescale_caps(const simgrid::kernel::activity::ActivityImpl* activity) {
  if (activity) {  // one comm: only if its rate is older than the last failure (rare: skip the search otherwise)
    auto it = capped_.find(activity);
    if (it == capped_.end() || it->second.epoch == epoch_) return;
  }
  // The network model's running actions, found through the root zone (one network model for the whole platform).
  auto* model = dynamic_cast<simgrid::kernel::resource::Model*>(engine_->get_netzone_root()->get_network_model());
  if (!model) throw std::logic_error("rescale_caps: the network model is not a kernel::resource::Model");
  for (auto& action : *model->get_started_action_set()) {
    if (activity && action.get_activity() != activity) continue;
    auto it = capped_.find(action.get_activity());
    if (it == capped_.end() || it->second.epoch == epoch_) continue;
    const double rate = it->second.share * route(it->second.from, it->second.to).bottleneck.count();
    action.set_user_bound(rate);  // what CM02 bounds the comm's variable with (network_cm02.cpp)
    action.set_bound(rate);       // the bytes moved so far are kept; the rest flow at the new bound
    it->second.epoch = epoch_;
  }
}

DeviceId Simulation::current_device() const {
  return device_of_host_.at(sg4::this_actor::get_host());
}

void Simulation::delay(Seconds t) {
  if (!(t > Seconds{0})) return;  // nothing to wait: no draw either
  const double factor = jitter_.latency ? jitter_.latency(current_device()) : 1.0;
  sg4::this_actor::sleep_for(t.count() * factor);
}

Bytes Simulation::timed_bytes(Bytes wire) {
  if (!jitter_.bandwidth || wire.count() == 0) return wire;
  const double factor = jitter_.bandwidth(current_device());
  if (factor == 1.0) return wire;
  // At least one byte, so that a transfer never becomes free.
  return Bytes{std::max<std::uint64_t>(1, std::llround(static_cast<double>(wire.count()) / factor))};
}

void Simulation::kernel(DeviceId gpu, Seconds math, Seconds memory, Bytes hbm_bytes) {
  sg4::ExecPtr exec;
  sg4::CommPtr comm;
  // Work at the full rate (pstate 0), so that SM holders stretch it.
  if (math > Seconds{0})
    exec = sg4::this_actor::exec_init(math.count() * host(gpu)->get_pstate_speed(0))->set_host(host(gpu));
  if (exec) exec->start();
  if (memory > Seconds{0}) {
    const auto& hbm = memory_links_.at(gpu);
    if (!hbm) throw std::logic_error(fmt::format("{} has no HBM link", fabric_.device(gpu).name));
    add_bytes(route(gpu, gpu), hbm_bytes, hbm_bytes);
    const double bytes = std::round(memory.count() * links_[*hbm].bandwidth.count());
    comm = sg4::Comm::sendto_async(host(gpu), host(gpu), static_cast<std::uint64_t>(std::max(1.0, bytes)));
  }
  if (comm) comm->wait();
  if (exec) exec->wait();
}

void Simulation::hold_sms(DeviceId gpu) {
  host(gpu)->set_pstate(std::min(++sm_holders_.at(gpu), max_pstate_));
}

void Simulation::release_sms(DeviceId gpu) {
  if (sm_holders_.at(gpu) == 0) throw std::logic_error("release_sms without hold_sms");
  host(gpu)->set_pstate(std::min(--sm_holders_[gpu], max_pstate_));
}

std::vector<std::string> Simulation::scale_channels(const std::map<ChannelId, double>& factors) {
  for (const auto& [c, f] : factors) {
    auto [it, fresh] = channel_factor_.emplace(c, 1.0);
    it->second *= f;
  }
  std::vector<std::string> changed;
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const auto& channels = link_channels_[i];
    if (std::ranges::none_of(channels, [&](ChannelId c) { return factors.contains(c); })) continue;
    double bandwidth = 0;
    for (auto c : channels) {
      auto it = channel_factor_.find(c);
      bandwidth += fabric_.channel(c).bandwidth().count() * (it == channel_factor_.end() ? 1.0 : it->second);
    }
    s4u_links_[i]->set_bandwidth(bandwidth);
    changed.push_back(links_[i].name);
  }
  // Rate caps and models read a route's bottleneck (a copy engine reaches a share of the line it finds): ops that
  // start from now on see the lanes left.
  for (auto& [pair, route] : routes_) {
    route.bottleneck = BytesPerSecond{std::numeric_limits<double>::infinity()};
    for (auto index : route.links)
      route.bottleneck = std::min(route.bottleneck, BytesPerSecond{s4u_links_[index]->get_bandwidth()});
  }
  // Caps that follow their route, in flight: a comm not yet matched is brought up to date by its receiver.
  ++epoch_;
  if (!capped_.empty()) rescale_caps();
  return changed;
}

void Simulation::account(DeviceId from, DeviceId to, Bytes wire, Bytes payload) {
  add_bytes(route(from, to), wire, payload);
}

void Simulation::add_bytes(const PlatformRoute& path, Bytes wire, Bytes payload) {
  for (auto index : path.links) {
    links_[index].wire_bytes += wire;
    links_[index].payload_bytes += payload;
  }
}

}  // namespace snsim
