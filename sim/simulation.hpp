// Simulation: owns the SimGrid engine and the platform built from a Fabric, and moves bytes through it.
//
// SimGrid facts that shape this class (docs/simgrid.md):
// - One simulation per process: SimGrid 3.32 cannot reset its clock, so a Simulation is created once per process
//   and is neither copyable nor movable.
// - The fluid model is made exact (`network/model:CM02`, `network/crosstraffic:0`, `network/TCP-gamma:0`): a lone
//   transfer takes latency + size/bandwidth, shared links are shared max-min.
// - Links carry no latency: CM02 would share a link in proportion to 1/route-latency. Each transfer's latency is
//   paid by the model before its bytes move (Simulation::transfer), which also lets it be jittered per transfer.
//
// The platform is one zone of our own (a SimGrid NetZoneImpl answering routes from this class): a host per endpoint
// (GPU or host CPU), a link per route hop (the parallel channels of a hop, e.g. a GPU's links to the 4 NVSwitch
// planes, are one link of their summed bandwidth, since traffic is striped over them and the switch is non-blocking),
// and the route between two endpoints computed from the Fabric when it is first used. Small platforms (at most
// EAGER_ENDPOINTS endpoints) route every pair up front, creating a link per distinct hop in pair order; larger ones
// (NVL576: 331k pairs, a 4,096-GPU superpod: 16.8M) route only the pairs their programs use. SimGrid 3.32 creates no
// link once the platform is sealed, so they take each new hop's link from a pool of spare links created up front
// (one per channel and per endpoint, more than the distinct hops of any fabric we build) and give it the hop's name
// and bandwidth; their report lists only the links used.
//
// Crossbar domains (Fabric::crossbar_domains: HGX, NVL72, an NVL576 half-rack, a superpod node) also get a hub host
// with routes gpu -> hub (the GPU's HBM and up-link) and hub -> gpu (down-link and HBM): the links of the route
// between two members, split at the non-blocking switch. The crossbar fast path moves a GPU's aggregated traffic of
// one round over them (crossbar_flow).
//
// The GPU shares its resources the way the chip does:
// - every GPU has an HBM link ("hbm:gpu3", its HBM bandwidth, shared by reads and writes) at both ends of every
//   route that starts or ends there, and a loopback route through it alone: a transfer reads its source's HBM and
//   writes its destination's, device-local copies and kernels' memory traffic cross it, and all of them share it
//   max-min (a peer copy is NVLink-bound, so the HBM link changes nothing when it is alone);
// - a GPU's host computes at the GPU's peak rate; kernels run their FLOPs there, and SM-driven copies and collective
//   kernels hold a share of it while they run (hold_sms), so concurrent compute slows by that share. The hold lowers
//   the host's speed (a pstate per number of holders) rather than running a never-ending exec, which would keep the
//   engine's clock running to its far-away end after a deadlock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/forward.h>

#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim {

/// What a platform link stands for, so that readers of a run's links need not parse their names (a GPU of a custom
/// fabric may be called anything, a switch "gpu_tray").
enum class LinkKind {
  hbm,         ///< a GPU's memory, read and written by every transfer that starts or ends there ("hbm:gpu3")
  gpu_egress,  ///< a fabric hop out of a GPU: its NVLink, PCIe or NIC lanes
  fabric,      ///< any other fabric hop: out of a switch, a NIC, the host or a drive
};
std::string_view to_string(LinkKind kind);

/// One SimGrid link of the platform and what crossed it.
struct LinkUsage {
  std::string name;  // "gpu0->nvswitch[0-3]"
  LinkKind kind;
  BytesPerSecond bandwidth;  // capacity, one direction
  Bytes wire_bytes;          // bytes on the wire, headers and protocol overhead included
  Bytes payload_bytes;       // bytes the programs asked to move
};

/// The path between two endpoints on the platform.
struct PlatformRoute {
  std::vector<std::size_t> links;  // indices into Simulation::links(), HBM links at the GPU ends included
  Seconds latency;                 // sum of the hops' latencies (the slowest channel of each hop)
  BytesPerSecond bottleneck;       // smallest link bandwidth on the way
};

/// Per-transfer variability: factors drawn for the device whose actor issues the transfer (unset = 1).
struct TransferJitter {
  std::function<double(DeviceId issuer)> latency;    // on fixed costs: route latency, setup, launch, step latency
  std::function<double(DeviceId issuer)> bandwidth;  // on the achievable rate
};

/// The most actors a process can hold at once. With a guard page under each stack (SimGrid's default), each actor's
/// stack is a memory map of its own and its guard page another, and the kernel allows vm.max_map_count maps per
/// process (65,530 by default; beyond it SimGrid aborts, "Failed to protect stack"): half of what
/// /proc/sys/vm/max_map_count allows, less what the process maps itself (`max_map_count` stands in for the file when
/// given, in tests). Without guard pages the stacks come from the heap, whose neighbouring maps merge (202 maps for
/// 32,900 actors, measured): the address space bounds them instead, 8 MiB of virtual stack each in 64 TiB.
std::uint64_t max_actors(std::optional<std::uint64_t> max_map_count = std::nullopt, bool guard_pages = true);

/// The engine option that runs actors' stacks without guard pages.
inline constexpr std::string_view UNGUARDED_STACKS = "--cfg=contexts/guard-size:0";
/// The guard pages SNSIM_ENGINE_ARGS, then `engine_args`, ask for (the last contexts/guard-size wins); nullopt when
/// neither says.
std::optional<int> guard_pages_asked(const std::vector<std::string>& engine_args);

/// What is wrong with one SimGrid option given through `--engine` or SNSIM_ENGINE_ARGS, or "" when snsim passes
/// it: contexts/factory, contexts/stack-size, contexts/guard-size and --log thresholds and formats, values checked.
std::string engine_option_problem(std::string_view option);

/// What every mailbox message carries: nothing. Only a comm's simulated size matters, so all of them point here.
inline int mailbox_payload = 0;

class Simulation {
 public:
  /// Creates the engine with the exact-fluid flags and builds the platform. Only one per process. `sm_hold_share` is
  /// the share of a GPU's compute rate each hold_sms() takes (0: holds take nothing). SimGrid options come from the
  /// environment variable SNSIM_ENGINE_ARGS (whitespace-separated, e.g. `--cfg=contexts/factory:thread`, which the
  /// `asan` preset sets: ASan cannot follow SimGrid's raw context switches), then from `engine_args`, which win.
  explicit Simulation(const Fabric& fabric, const std::vector<std::string>& engine_args = {}, double sm_hold_share = 0);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const Fabric& fabric() const { return fabric_; }
  simgrid::s4u::Host* host(DeviceId device) const;
  /// The route between two endpoints (GPUs or host), computed on first use. Throws std::logic_error if none.
  const PlatformRoute& route(DeviceId from, DeviceId to);

  /// Platforms with at most this many endpoints route every pair up front (and list every link in the report).
  static constexpr std::size_t EAGER_ENDPOINTS = 160;

  /// The crossbar domain (an index into Fabric::crossbar_domains()) of a GPU, or nullopt.
  std::optional<std::size_t> crossbar_of(DeviceId gpu) const;
  /// Starts moving `bytes` (SimGrid bytes: already timed) between a GPU of a crossbar domain and the domain's hub,
  /// out of the GPU (`egress`) or into it, at most at `max_rate` bytes/s (0: no cap), from the calling actor, which
  /// must run on the GPU: the aggregated traffic of one port in one round of the crossbar fast path. Waiting on the
  /// returned activity waits for the bytes. Byte accounting is the caller's (account(), on the real pairs).
  simgrid::s4u::CommPtr crossbar_flow(DeviceId gpu, bool egress, double bytes, double max_rate);

  /// Starts an actor on an endpoint's host.
  void spawn(const std::string& name, DeviceId device, std::function<void()> body);
  /// Like spawn (the run does not end before `job` has), on a pooled actor: for the helpers of PGAS puts and gets,
  /// one per op (an MoE step on an NVL72 started 100,000s, and their stacks' maps took a third of its time).
  void spawn_pooled(DeviceId device, std::function<void()> job);

  /// Runs the engine until every actor has finished. Returns the simulated end time.
  Seconds run();
  /// Current simulated time (inside and after run()).
  static Seconds now();

  /// Moves `wire` bytes from one endpoint to another, from the calling actor: waits the route's latency plus
  /// `fixed_cost` (delay()), then the bytes flow at a jittered rate (timed_bytes()), at most at `max_rate` wire bytes/s
  /// (0: no cap), sharing links max-min with everything else. Returns when they arrived. With `cap_follows_route`,
  /// the cap is taken as its share of the route's bottleneck now (a copy engine reaches a share of the line it finds)
  /// and keeps that share when failures change the bottleneck (scale_channels), during the fixed cost and while the
  /// bytes flow.
  void transfer(DeviceId from, DeviceId to, Bytes wire, Bytes payload, Seconds fixed_cost = Seconds{0},
                BytesPerSecond max_rate = BytesPerSecond{0}, bool cap_follows_route = false);

  /// Installs per-transfer jitter (models/jitter.hpp draws it). Before run().
  void set_jitter(TransferJitter jitter) { jitter_ = std::move(jitter); }
  /// Waits `t` times a latency factor drawn for the calling actor. Every fixed cost of a transfer goes through here.
  void delay(Seconds t);
  /// The bytes SimGrid must move so that a transfer of `wire` bytes runs at f x its rate, f a bandwidth factor
  /// drawn for the calling actor: wire / f. A lone transfer then takes size / (bw f) exactly and, under sharing,
  /// one slowed transfer takes a normal max-min share but needs more of it, like a lower payload efficiency (which
  /// is modelled the same way, models/copy.hpp). A rate cap (Comm::set_rate) could not make a transfer faster than
  /// its line (f > 1) and would hand its bandwidth to others. Byte accounting stays on the true `wire` bytes.
  Bytes timed_bytes(Bytes wire);
  /// The endpoint the calling actor runs on.
  DeviceId current_device() const;

  /// Runs a kernel on `gpu` from the calling actor: its FLOP side (`math`, its time alone) as work on the GPU's
  /// host and its memory side (`memory`, its time alone) as bytes through the GPU's HBM link, concurrently; returns
  /// when both are done. Alone that is max(math, memory); next to other work each side gets its max-min share.
  /// `hbm_bytes` are counted on the HBM link.
  void kernel(DeviceId gpu, Seconds math, Seconds memory, Bytes hbm_bytes);
  /// Takes sm_hold_share of a GPU's compute rate until release_sms(): SM-driven copies and collective kernels hold
  /// it while they run, so that concurrent kernels get the rest (k holders take k shares, at most all but one).
  void hold_sms(DeviceId gpu);
  void release_sms(DeviceId gpu);

  /// Counts `wire` bytes (`payload` of them asked for by a program) on every link from `from` to `to`.
  void account(DeviceId from, DeviceId to, Bytes wire, Bytes payload);
  const std::vector<LinkUsage>& links() const { return links_; }

  /// Multiplies the bandwidth of each channel by its factor, now (failures, scenario/failures.hpp): every platform link
  /// carrying one gets the sum of its channels' bandwidths left, through Link::set_bandwidth, so transfers in flight
  /// keep the bytes they moved and continue at the new max-min share; routes' bottlenecks follow, so rate caps of ops
  /// that start later see the lanes left, and caps that follow their route (transfer()) are rescaled in flight.
  /// Returns the names of the links changed.
  std::vector<std::string> scale_channels(const std::map<ChannelId, double>& factors);

  /// Runs `job` on a pooled daemon actor on `device`'s endpoint: far cheaper than an actor of its own (each maps
  /// and unmaps a stack) where millions run. A daemon ends with the last non-daemon actor: only what the ranks
  /// wait for, or what need not finish, belongs there.
  void run_pooled(DeviceId device, std::function<void()> job) { run_on(host(device), std::move(job)); }

  /// A job that its starter waits for (start_pooled()).
  class Started {
   public:
    /// Waits until the job has ended.
    void join();

   private:
    friend class Simulation;
    explicit Started(simgrid::s4u::SemaphorePtr done) : done_{std::move(done)} {}
    simgrid::s4u::SemaphorePtr done_;
  };
  /// Runs `job` on a pooled actor of `device`'s endpoint, for a helper that the caller joins (a stream list, a tree's
  /// upward pipeline, a migration's or an NVMe stripe's transfer). A training step of 1,024 GPUs started 150,000
  /// such helpers as actors of their own, and mapping, touching and unmapping their stacks took a third of its time.
  Started start_pooled(DeviceId device, std::function<void()> job);

  /// Name of a route's hop link, derived from its channels: "gpu0->nvswitch[0-3]".
  static std::string hop_name(const Fabric& fabric, const Hop& hop);

 private:
  void add_bytes(const PlatformRoute& path, Bytes wire, Bytes payload);
  /// Runs `job` on a pooled daemon actor on a host (see transfer()), then `then` once the actor is back in the pool.
  void run_on(simgrid::s4u::Host* where, std::function<void()> job, std::function<void()> then = {});
  /// The link of a hop: created in eager mode, taken from the spare pool in lazy mode.
  std::size_t link_for(const Hop& hop);
  /// Computes a route between two endpoints with the Router; nullopt if there is none.
  std::optional<PlatformRoute> make_route(DeviceId from, DeviceId to);
  /// The links SimGrid asks our zone for, between two of its hosts (by their zone ids).
  const std::vector<std::size_t>& zone_route(unsigned long from, unsigned long to);
  BytesPerSecond bottleneck(const std::vector<std::size_t>& links) const;
  /// The cap of a transfer whose cap follows its route, now: its share of the route's bottleneck.
  struct CappedTransfer {
    DeviceId from, to;
    double share;         // of the route's bottleneck
    unsigned long epoch;  // scale_channels calls when its rate was last set
  };
  /// Sets the rate bound of the running comms of `capped` (all of them, or the one of `activity`) to their share of
  /// their route's bottleneck now, where a failure changed it since it was set. SimGrid 3.32's s4u Comm cannot change
  /// its rate once started; its network action (kernel/resource/Action.hpp, installed) can.
  void rescale_caps(const simgrid::kernel::activity::ActivityImpl* activity = nullptr);

  struct Worker;
  class Zone;

  const Fabric& fabric_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> hosts_;  // by DeviceId; null for switches
  std::vector<simgrid::s4u::Link*> s4u_links_;
  std::vector<LinkUsage> links_;
  std::vector<std::vector<ChannelId>> link_channels_;     // by link: the channels it aggregates (none for HBM)
  std::map<ChannelId, double> channel_factor_;            // bandwidth left per channel after failures (absent: 1)
  std::vector<std::optional<std::size_t>> memory_links_;  // by DeviceId: the HBM link of a GPU
  simgrid::s4u::NetZone* zone_ = nullptr;
  bool lazy_ = false;                           // routes on first use, links from spare_links_
  std::vector<std::vector<DeviceId>> domains_;  // Fabric::crossbar_domains()
  Router router_;
  std::map<std::vector<ChannelId>, std::size_t> link_of_hop_;  // sorted channels of a hop -> its link
  std::vector<simgrid::s4u::Link*> spare_links_;               // lazy mode: links not yet given to a hop
  std::unordered_map<std::uint64_t, PlatformRoute> routes_;    // by from x device_count + to
  std::vector<std::optional<std::size_t>> crossbar_of_;        // by DeviceId
  std::vector<simgrid::s4u::Host*> hubs_;                      // by crossbar domain
  std::vector<long> zone_device_;                              // by zone host id: the DeviceId, or -1 - hub index
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> hub_routes_;  // by zone ids from x hosts + to
  std::map<const simgrid::s4u::Host*, DeviceId> device_of_host_;
  std::vector<unsigned long> sm_holders_;  // by DeviceId
  unsigned long max_pstate_ = 0;           // the pstate of the most holders the GPUs' hosts model
  TransferJitter jitter_;
  std::map<const simgrid::s4u::Host*, std::vector<std::shared_ptr<Worker>>> idle_workers_;  // by host
  // spawn_pooled's jobs not yet ended, and what the actor that keeps the run going while there are any waits for.
  std::uint64_t pooled_to_end_ = 0;
  simgrid::s4u::SemaphorePtr pooled_all_ended_;
  std::map<const simgrid::kernel::activity::ActivityImpl*, CappedTransfer> capped_;  // in flight
  unsigned long epoch_ = 0;                                                          // scale_channels calls
};

}  // namespace snsim
