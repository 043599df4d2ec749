// Simulation: owns the SimGrid engine and the platform built from a Fabric, and moves bytes through it.
//
// SimGrid facts that shape this class (reference/simgrid-3.32.md):
// - One simulation per process: SimGrid 3.32 cannot reset its clock, so a Simulation is created once per process
//   and is neither copyable nor movable.
// - The fluid model is made exact (`network/model:CM02`, `network/crosstraffic:0`, `network/TCP-gamma:0`): a lone
//   transfer takes latency + size/bandwidth, shared links are shared max-min.
// - Links carry no latency: CM02 would share a link in proportion to 1/route-latency. Each transfer's latency is
//   paid by the model before its bytes move (Simulation::transfer), which also lets it be jittered per transfer.
//
// The platform is one Full zone: a host per endpoint (GPU or host CPU), a link per route hop (the parallel channels
// of a hop, e.g. a GPU's links to the 4 NVSwitch planes, are one link of their summed bandwidth, since traffic is
// striped over them and the switch is non-blocking), and an explicit route between every pair of endpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u/Comm.hpp>

#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim {

/// One SimGrid link of the platform and what crossed it.
struct LinkUsage {
  std::string name;          // "gpu0->nvswitch[0-3]"
  BytesPerSecond bandwidth;  // capacity, one direction
  Bytes wire_bytes;          // bytes on the wire, headers and protocol overhead included
  Bytes payload_bytes;       // bytes the programs asked to move
};

/// The path between two endpoints on the platform.
struct PlatformRoute {
  std::vector<std::size_t> links;  // indices into Simulation::links()
  Seconds latency;                 // sum of the hops' latencies (the slowest channel of each hop)
  BytesPerSecond bottleneck;       // smallest link bandwidth on the way
};

class Simulation {
 public:
  /// Creates the engine with the exact-fluid flags and builds the platform. Only one per process.
  explicit Simulation(const Fabric& fabric, const std::vector<std::string>& engine_args = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const Fabric& fabric() const { return fabric_; }
  simgrid::s4u::Host* host(DeviceId device) const;
  /// The precomputed route between two endpoints (GPUs or host). Throws std::logic_error if none.
  const PlatformRoute& route(DeviceId from, DeviceId to) const;

  /// Starts an actor on an endpoint's host.
  void spawn(const std::string& name, DeviceId device, std::function<void()> body);

  /// Runs the engine until every actor has finished. Returns the simulated end time.
  Seconds run();
  /// Current simulated time (inside and after run()).
  static Seconds now();

  /// Moves `wire` bytes from one endpoint to another, from the calling actor: waits the route's latency plus
  /// `fixed_cost` (which may be negative to hide part of the latency, never below zero in total), then the bytes
  /// flow at most at `max_rate` wire bytes/s (0: no cap), sharing links max-min with everything else. Returns when
  /// they arrived.
  void transfer(DeviceId from, DeviceId to, Bytes wire, Bytes payload, Seconds fixed_cost = Seconds{0},
                BytesPerSecond max_rate = BytesPerSecond{0});
  /// Starts the bytes flowing now (the caller has paid the latency) and returns the comm to wait on.
  simgrid::s4u::CommPtr start_transfer(DeviceId from, DeviceId to, Bytes wire, Bytes payload);

  /// Counts `wire` bytes (`payload` of them asked for by a program) on every link from `from` to `to`.
  void account(DeviceId from, DeviceId to, Bytes wire, Bytes payload);
  const std::vector<LinkUsage>& links() const { return links_; }

  /// Name of a route's hop link, derived from its channels: "gpu0->nvswitch[0-3]".
  static std::string hop_name(const Fabric& fabric, const Hop& hop);

 private:
  void add_bytes(const PlatformRoute& path, Bytes wire, Bytes payload);

  const Fabric& fabric_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> hosts_;  // by DeviceId; null for switches
  std::vector<simgrid::s4u::Link*> s4u_links_;
  std::vector<LinkUsage> links_;
  std::map<std::pair<DeviceId, DeviceId>, PlatformRoute> routes_;
};

}  // namespace snsim
