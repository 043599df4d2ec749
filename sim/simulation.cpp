#include "sim/simulation.hpp"

#include "sim/error.hpp"

#include <malloc.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xbt/log.h>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
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

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::hbm:
      return "hbm";
    case LinkKind::gpu_egress:
      return "gpu_egress";
    case LinkKind::fabric:
      return "fabric";
  }
  return "?";
}

std::string Simulation::hop_name(const Fabric& fabric, const Hop& hop) {
  std::set<DeviceId> from, to;
  for (auto c : hop.channels) {
    from.insert(fabric.source(c));
    to.insert(fabric.target(c));
  }
  return fmt::format("{}->{}", device_list(fabric, from), device_list(fabric, to));
}

// Our zone: SimGrid asks it for the links between two of its hosts when a communication starts; the Simulation
// answers from its routes, computing them on first use. Links carry no latency (see the file comment).
class Simulation::Zone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  Zone(const std::string& name, Simulation& simulation) : NetZoneImpl(name), simulation_{simulation} {}

  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* /*latency*/) override {
    for (auto index : simulation_.zone_route(src->id(), dst->id()))
      into->link_list_.push_back(simulation_.s4u_links_[index]->get_impl());
  }

 private:
  Simulation& simulation_;
};

std::uint64_t max_actors(std::optional<std::uint64_t> max_map_count, bool guard_pages) {
  if (!guard_pages) return (64ull << 40) / (8ull << 20);
  // The kernel's default, where /proc does not say (not Linux, or hidden).
  std::uint64_t maps = 65'530;
  if (max_map_count) {
    maps = *max_map_count;
  } else if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    unsigned long long value = 0;
    if (std::fscanf(f, "%llu", &value) == 1) maps = value;
    std::fclose(f);
  }
  // Left for the process itself: its libraries, heap arenas and SimGrid's own maps. Measured here (65,530 maps, one
  // rank's `streams` of N lists on a 2-GPU HGX): 31,763 actors ran, 32,702 aborted.
  constexpr std::uint64_t OWN_MAPS = 2'000;
  return maps > OWN_MAPS ? (maps - OWN_MAPS) / 2 : 0;
}

namespace {
/// The words of SNSIM_ENGINE_ARGS, as given (checked where they are used).
std::vector<std::string> engine_args_from_environment() {
  std::vector<std::string> words;
  if (const char* from_env = std::getenv("SNSIM_ENGINE_ARGS")) {
    std::istringstream in(from_env);
    for (std::string word; in >> word;) words.push_back(word);
  }
  return words;
}
}  // namespace

std::optional<int> guard_pages_asked(const std::vector<std::string>& engine_args) {
  constexpr std::string_view KEY = "--cfg=contexts/guard-size:";
  std::optional<int> pages;
  auto look = [&](std::string_view option) {
    if (option.starts_with(KEY) && engine_option_problem(option).empty())
      pages = std::stoi(std::string(option.substr(KEY.size())));
  };
  for (const auto& option : engine_args_from_environment()) look(option);
  for (const auto& option : engine_args) look(option);
  return pages;
}

std::string engine_option_problem(std::string_view option) {
  // SimGrid 3.32 aborts (xbt_die, or a crash later) on a bad value of most of its options instead of throwing, and
  // others would change the model snsim sets up (network/model, maxmin/precision) or run actors on several threads
  // (contexts/nthreads), which snsim's executors do not allow. So only these pass, their values checked first.
  const auto integer_in = [](std::string_view text, long low, long high) {
    long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() && value >= low && value <= high;
  };
  if (option.starts_with("--cfg=contexts/factory:")) {
    const auto value = option.substr(std::string_view("--cfg=contexts/factory:").size());
    if (value == "thread" || value == "raw" || value == "ucontext" || value == "boost") return "";
    return fmt::format("contexts/factory: expected thread, raw, ucontext or boost, found '{}'", value);
  }
  if (option.starts_with("--cfg=contexts/stack-size:"))
    return integer_in(option.substr(std::string_view("--cfg=contexts/stack-size:").size()), 1024, 1 << 20)
               ? ""
               : "contexts/stack-size: expected KiB between 1024 and 1048576";
  if (option.starts_with("--cfg=contexts/guard-size:"))
    return integer_in(option.substr(std::string_view("--cfg=contexts/guard-size:").size()), 0, 16)
               ? ""
               : "contexts/guard-size: expected pages between 0 and 16";
  if (option.starts_with("--log=")) {
    // CATEGORY.thres:LEVEL (SimGrid checks LEVEL itself, and throws) or CATEGORY.fmt:FORMAT; appenders write files.
    const auto setting = option.substr(6);
    const auto dot = setting.find('.'), colon = setting.find(':');
    if (dot != std::string_view::npos && colon != std::string_view::npos && dot < colon && dot > 0) {
      const auto what = setting.substr(dot + 1, colon - dot - 1);
      if (what == "thres" || what == "threshold" || what == "fmt") return "";
    }
    return fmt::format("expected --log=CATEGORY.thres:LEVEL or --log=CATEGORY.fmt:FORMAT, found '{}'", option);
  }
  return fmt::format(
      "snsim passes only --cfg=contexts/factory:F, --cfg=contexts/stack-size:KiB, --cfg=contexts/guard-size:PAGES "
      "and --log=CATEGORY.thres:LEVEL to SimGrid, found '{}'",
      option);
}

Simulation::Simulation(const Fabric& fabric, const std::vector<std::string>& engine_args, double sm_hold_share)
    : fabric_{fabric}, router_{fabric} {
  std::vector<std::string> args{"snsim"};
  // Every simulation of a process tree (tests, `snsim validate`'s children) sees the same environment: the one place
  // a sanitized build can switch every one of them to thread contexts.
  for (const auto& word : engine_args_from_environment()) {
    if (const auto problem = engine_option_problem(word); !problem.empty())
      throw InputError(fmt::format("SNSIM_ENGINE_ARGS: {}", problem));
    args.push_back(word);
  }
  for (const auto& option : engine_args)
    if (const auto problem = engine_option_problem(option); !problem.empty())
      throw InputError(fmt::format("--engine: {}", problem));
  args.insert(args.end(), engine_args.begin(), engine_args.end());
  if (guard_pages_asked(engine_args) == 0) {
    // Unguarded stacks are 8 MiB mallocs. glibc raises its mmap threshold past a freed block's size, after which such
    // stacks come from the heap and their touched pages stay resident when the actor ends: Llama 3.1 405B on 8,192
    // GPUs took 9.1 GB instead of 3.7. A fixed threshold keeps every stack a map of its own, returned at its end
    // (and neighbouring maps still merge: the run fits the default vm.max_map_count).
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
  }
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
  // The exact fluid model (docs/simgrid.md#exact-fluid-model): no latency or bandwidth factors, no reverse-path cross
  // traffic, no TCP window cap. Must be set before any zone exists.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");

  // The first zone created becomes the engine's root (as create_full_zone's FullZone would); the engine owns it.
  auto* zone = (new Zone("fabric", *this))->get_iface();
  hosts_.assign(fabric.device_count(), nullptr);
  memory_links_.assign(fabric.device_count(), std::nullopt);
  sm_holders_.assign(fabric.device_count(), 0);
  std::vector<DeviceId> endpoints;
  for (auto v : fabric.devices()) {
    const Device& d = fabric.device(v);
    if (!is_endpoint(d.kind)) continue;
    const double speed = d.gpu ? d.gpu->dense_bf16.count() : HOST_CPU_FLOPS;
    // Pstate k: the speed left with k SM holders (hold_sms), while some is left.
    std::vector<double> pstates{speed};
    if (d.gpu && sm_hold_share > 0) {
      for (int k = 1; 1 - k * sm_hold_share > 1e-9; ++k) pstates.push_back(speed * (1 - k * sm_hold_share));
      max_pstate_ = pstates.size() - 1;
    }
    hosts_[v] = zone->create_host(d.name, pstates)->seal();
    zone_device_.push_back(static_cast<long>(v));  // zone ids count hosts in creation order
    device_of_host_.emplace(hosts_[v], v);
    endpoints.push_back(v);
    if (d.gpu) {  // SHARED (the default policy): reads and writes draw on one HBM bandwidth
      const std::string name = fmt::format("hbm:{}", d.name);
      s4u_links_.push_back(zone->create_link(name, d.gpu->hbm_bandwidth.count())->set_latency(0)->seal());
      links_.push_back({name, LinkKind::hbm, d.gpu->hbm_bandwidth, Bytes{0}, Bytes{0}});
      link_channels_.emplace_back();
      memory_links_[v] = links_.size() - 1;
    }
  }
  crossbar_of_.assign(fabric.device_count(), std::nullopt);
  const auto domains = fabric.crossbar_domains();
  for (std::size_t k = 0; k < domains.size(); ++k) {
    for (auto gpu : domains[k]) crossbar_of_[gpu] = k;
    hubs_.push_back(zone->create_host(fmt::format("crossbar{}", k), HOST_CPU_FLOPS)->seal());
    zone_device_.push_back(-1 - static_cast<long>(k));
  }

  zone_ = zone;
  domains_ = domains;
  lazy_ = endpoints.size() > EAGER_ENDPOINTS;
  if (!lazy_) {
    // Every pair now, in pair order: links are created (and listed) in the order their hops first appear.
    for (auto from : endpoints)
      for (auto to : endpoints)
        if (auto r = make_route(from, to)) routes_.emplace(from * fabric.device_count() + to, std::move(*r));
  } else {
    // Spare links for the hops of the routes used, one per channel and per endpoint.
    const std::size_t spares = fabric.channel_count() + endpoints.size();
    spare_links_.reserve(spares);
    for (std::size_t i = 0; i < spares; ++i)
      spare_links_.push_back(zone->create_link(fmt::format("spare{}", i), 1.0)->set_latency(0)->seal());
    std::ranges::reverse(spare_links_);  // handed out from the back, in creation order
  }
  zone->seal();
  XBT_VERB("platform: %zu hosts, %zu links, %zu routes, %zu crossbar domains", endpoints.size(), links_.size(),
           routes_.size(), domains.size());
}

Simulation::~Simulation() = default;

sg4::Host* Simulation::host(DeviceId device) const {
  return hosts_.at(device);
}

std::size_t Simulation::link_for(const Hop& hop) {
  auto key = hop.channels;
  std::ranges::sort(key);
  if (auto it = link_of_hop_.find(key); it != link_of_hop_.end()) return it->second;
  // The hop's lanes left (failures already applied: scale_channels) for a link given out late.
  double bandwidth = 0;
  for (auto c : hop.channels) {
    auto it = channel_factor_.find(c);
    bandwidth += fabric_.channel(c).bandwidth().count() * (it == channel_factor_.end() ? 1.0 : it->second);
  }
  const std::string name = hop_name(fabric_, hop);
  sg4::Link* link = nullptr;
  if (lazy_) {
    if (spare_links_.empty()) throw std::logic_error(fmt::format("no spare link left for the hop {}", name));
    link = spare_links_.back();
    spare_links_.pop_back();
  } else {
    link = zone_->create_link(name, bandwidth)->set_latency(0)->seal();
  }
  // Registered before set_bandwidth, a simcall during which other actors run and may want the same hop.
  s4u_links_.push_back(link);
  const bool out_of_gpu = std::ranges::all_of(
      hop.channels, [this](ChannelId c) { return fabric_.device(fabric_.source(c)).kind == DeviceKind::gpu; });
  links_.push_back(
      {name, out_of_gpu ? LinkKind::gpu_egress : LinkKind::fabric, BytesPerSecond{bandwidth}, Bytes{0}, Bytes{0}});
  link_channels_.push_back(key);
  const std::size_t index = links_.size() - 1;
  link_of_hop_.emplace(std::move(key), index);
  if (lazy_) link->set_bandwidth(bandwidth);
  return index;
}

BytesPerSecond Simulation::bottleneck(const std::vector<std::size_t>& links) const {
  // From the channels' lanes left (failures), not from SimGrid: a spare link another actor has just taken may not
  // have its bandwidth yet (set_bandwidth is a simcall).
  BytesPerSecond b{std::numeric_limits<double>::infinity()};
  for (auto index : links) {
    if (channel_factor_.empty() || link_channels_[index].empty()) {  // no failure yet, or HBM
      b = std::min(b, links_[index].bandwidth);
      continue;
    }
    double bandwidth = 0;
    for (auto c : link_channels_[index]) {
      auto it = channel_factor_.find(c);
      bandwidth += fabric_.channel(c).bandwidth().count() * (it == channel_factor_.end() ? 1.0 : it->second);
    }
    b = std::min(b, BytesPerSecond{bandwidth});
  }
  return b;
}

std::optional<PlatformRoute> Simulation::make_route(DeviceId from, DeviceId to) {
  PlatformRoute route{{}, Seconds{0}, BytesPerSecond{0}};
  if (from == to) {
    // The loopback of a GPU: its HBM link once, carrying the reads and the writes a local copy makes. Without a
    // route of its own, SimGrid would use its implicit 10 GB/s loopback (docs/simgrid.md#loopback).
    if (!memory_links_[from]) return std::nullopt;
    route.links.push_back(*memory_links_[from]);
  } else {
    auto r = router_.route(from, to);
    if (!r) return std::nullopt;  // unconnected endpoints: transfers between them are rejected before the run
    route.latency = fabric_.cost(*r).latency;
    if (memory_links_[from]) route.links.push_back(*memory_links_[from]);
    for (const auto& hop : r->hops) route.links.push_back(link_for(hop));
    if (memory_links_[to]) route.links.push_back(*memory_links_[to]);
  }
  route.bottleneck = bottleneck(route.links);
  return route;
}

const PlatformRoute& Simulation::route(DeviceId from, DeviceId to) {
  const std::uint64_t key = from * fabric_.device_count() + to;
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  auto r = lazy_ ? make_route(from, to) : std::nullopt;
  if (!r)
    throw std::logic_error(fmt::format("no route from {} to {}", fabric_.device(from).name, fabric_.device(to).name));
  return routes_.emplace(key, std::move(*r)).first->second;
}

const std::vector<std::size_t>& Simulation::zone_route(unsigned long from, unsigned long to) {
  static const std::vector<std::size_t> none;
  const long a = zone_device_.at(from), b = zone_device_.at(to);
  if (a >= 0 && b >= 0) {
    const std::uint64_t key = static_cast<std::uint64_t>(a) * fabric_.device_count() + static_cast<std::uint64_t>(b);
    if (auto it = routes_.find(key); it != routes_.end()) return it->second.links;
    if (!lazy_) return none;  // no route (a host's loopback): SimGrid's own, as a Full zone without the entry
    if (auto r = make_route(static_cast<DeviceId>(a), static_cast<DeviceId>(b)))
      return routes_.emplace(key, std::move(*r)).first->second.links;
    return none;
  }
  const std::uint64_t key = from * zone_device_.size() + to;
  if (auto it = hub_routes_.find(key); it != hub_routes_.end()) return it->second;
  // A GPU and its domain's hub: the GPU's half of the route to (or from) another member of its domain.
  const bool egress = a >= 0;
  const auto gpu = static_cast<DeviceId>(egress ? a : b);
  const auto hub = static_cast<std::size_t>(-1 - (egress ? b : a));
  if (crossbar_of_.at(gpu) != hub) throw std::logic_error("a route between a GPU and another domain's hub");
  const auto& members = domains_[hub];
  const DeviceId other = members[0] == gpu ? members[1] : members[0];
  const auto r = egress ? router_.route(gpu, other) : router_.route(other, gpu);
  if (!r || r->hops.size() != 2) throw std::logic_error("a crossbar route without two hops");
  std::vector<std::size_t> links;
  if (egress && memory_links_[gpu]) links.push_back(*memory_links_[gpu]);
  links.push_back(link_for(r->hops[egress ? 0 : 1]));
  if (!egress && memory_links_[gpu]) links.push_back(*memory_links_[gpu]);
  return hub_routes_.emplace(key, std::move(links)).first->second;
}

std::optional<std::size_t> Simulation::crossbar_of(DeviceId gpu) const {
  return crossbar_of_.at(gpu);
}

sg4::CommPtr Simulation::crossbar_flow(DeviceId gpu, bool egress, double bytes, double max_rate) {
  const auto domain = crossbar_of_.at(gpu);
  if (!domain) throw std::logic_error(fmt::format("{} is in no crossbar domain", fabric_.device(gpu).name));
  sg4::Host* hub = hubs_[*domain];
  sg4::Host* from = egress ? host(gpu) : hub;
  sg4::Host* to = egress ? hub : host(gpu);
  // The hub's half-route now, from the actor: in lazy mode its links may come from the spare pool.
  zone_route(from->get_netpoint()->id(), to->get_netpoint()->id());
  const std::uint64_t size = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(bytes)));
  if (max_rate <= 0) return sg4::Comm::sendto_async(from, to, size);
  // Rate caps need mailbox comms (see transfer()): a pooled worker on the hub takes (egress) or sends (ingress).
  auto* mailbox = sg4::Mailbox::by_name(fmt::format("crossbar:{}{}", egress ? ">" : "<", gpu));
  if (egress) {
    run_on(hub, [mailbox] { mailbox->get<int>(); });
    sg4::CommPtr put = mailbox->put_init(&mailbox_payload, size);
    put->set_rate(max_rate);
    put->start();
    return put;
  }
  // Concurrent ingress flows into one GPU (streams) may pair with each other's workers: each moves its bytes anyway.
  run_on(hub, [mailbox, size, max_rate] { mailbox->put_init(&mailbox_payload, size)->set_rate(max_rate)->wait(); });
  static int* slot = nullptr;
  return mailbox->get_async<int>(&slot);
}

void Simulation::spawn(const std::string& name, DeviceId device, std::function<void()> body) {
  sg4::Actor::create(name, host(device), std::move(body));
}

void Simulation::spawn_pooled(DeviceId device, std::function<void()> job) {
  // Pooled actors are daemons, which SimGrid stops with the last other actor: while such jobs run, one actor of the
  // simulation's own (no daemon) waits for the last to end, so that the run ends when spawn()'s would have.
  if (pooled_to_end_++ == 0) {
    pooled_all_ended_ = sg4::Semaphore::create(0);
    sg4::Actor::create("pooled-jobs", host(device), [ended = pooled_all_ended_] { ended->acquire(); });
  }
  run_on(host(device), std::move(job), [this] {
    if (--pooled_to_end_ == 0) pooled_all_ended_->release();
  });
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
  std::function<void()> then;  // once the worker is back in the pool
};

void Simulation::run_on(sg4::Host* where, std::function<void()> job, std::function<void()> then) {
  auto& idle = idle_workers_[where];
  std::shared_ptr<Worker> w;
  if (idle.empty()) {
    w = std::make_shared<Worker>();
    sg4::Actor::create("worker", where, [this, w, where] {
      for (;;) {
        w->wake->acquire();
        auto next = std::move(w->job);
        auto after = std::move(w->then);
        next();
        // Back in the pool before `after` wakes anyone: a joiner that starts its next job at once finds it there.
        idle_workers_[where].push_back(w);
        if (after) after();
      }
    })->daemonize();
  } else {
    w = idle.back();
    idle.pop_back();
  }
  w->job = std::move(job);
  w->then = std::move(then);
  w->wake->release();
}

void Simulation::Started::join() {
  done_->acquire();
}

Simulation::Started Simulation::start_pooled(DeviceId device, std::function<void()> job) {
  auto done = sg4::Semaphore::create(0);
  // An exception in the job ends the run, as an actor's own would.
  run_on(host(device), std::move(job), [done] { done->release(); });
  return Started{done};
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
  // One mailbox per pair: receivers only take bytes, and each put carries its own size and rate. A receiver that
  // matches a put started the comm: its cap is brought up to date if a failure came in between (rescale_caps).
  auto* mailbox = sg4::Mailbox::by_name(fmt::format("transfer:{}>{}", from, to));
  run_on(host(to), [this, mailbox] {
    int* slot = nullptr;
    auto comm = mailbox->get_async<int>(&slot);
    rescale_caps(comm->get_impl());
    comm->wait();
  });
  const double size = timed_bytes(wire).count();
  auto send = [this, mailbox, size, from, to, share, cap = max_rate.count()] {
    // Taken now, when the put is posted: the rate of a comm is its sender's.
    const double rate = share > 0 ? share * route(from, to).bottleneck.count() : cap;
    auto comm = mailbox->put_init(&mailbox_payload, size)->set_rate(rate);
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
  run_on(host(from), [send, done] {
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
