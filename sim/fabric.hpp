// Fabric: what a platform is made of, as plain data (a directed graph of devices and channels).
//
// Topology builders (topologies/) write a Fabric; `snsim topo` prints it; the Simulation (sim/simulation.hpp)
// turns it into SimGrid zones, hosts and links. Nothing here knows SimGrid, so topologies are tested without it.
//
//   gpu0 ==nvlink x5==> nvswitch0 ==nvlink x5==> gpu1        every physical link direction is one Channel
//        ==nvlink x4==> nvswitch1 ==nvlink x4==>             (split duplex: a cable is two channels)
//        ...                                                 parallel switch chips are "planes"
//
// Routing is ECMP over shortest paths: a route is a list of hops, each hop the set of parallel channels that
// lie on some shortest path at that depth, and traffic is striped over a hop's channels in proportion to their
// bandwidth. Only switches forward traffic; GPUs and hosts are endpoints.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/units.hpp"

namespace snsim {

// Switches (nvswitch, pcie_switch, ib_switch) and NICs forward traffic; GPUs, hosts and NVMe drives are endpoints.
enum class DeviceKind { gpu, host, nvswitch, pcie_switch, nic, ib_switch, nvme };
enum class ChannelKind { nvlink, pcie, ib };

std::string_view to_string(DeviceKind kind);
std::string_view to_string(ChannelKind kind);

/// What a GPU can do; the compute model reads it. Sources are given where presets are defined (topologies/).
/// Number formats a kernel computes in; GPUs publish a dense peak rate for each.
enum class Dtype { fp64, fp32, tf32, bf16, fp16, fp8 };
std::string_view to_string(Dtype dtype);
std::optional<Dtype> dtype_from_string(std::string_view name);
/// "bf16, fp16, fp32, fp64, fp8, tf32", for messages.
std::string known_dtype_names();

struct GpuSpec {
  std::string model;                             // "h200"
  FlopsPerSecond dense_bf16;                     // peak dense tensor rate
  BytesPerSecond hbm_bandwidth;                  // peak HBM bandwidth
  Bytes memory;                                  // HBM capacity
  Bytes l2{};                                    // L2 cache size; 0 = not modelled
  std::map<Dtype, FlopsPerSecond> dense_peak{};  // peak dense rate per number format (bf16 as dense_bf16)
  int sms = 0;           // streaming multiprocessors: a GEMM's tiles run in waves over them; 0 = not known
  double boost_mhz = 0;  // SM clock at which the peaks are published; 0 = not known

  /// The peak for `dtype`, or nullopt when the preset has no published number for it.
  std::optional<FlopsPerSecond> peak(Dtype dtype) const;
};

struct Device {
  std::string name;  // unique path name used in errors, logs and reports: "gpu3", "nvswitch0", "host"
  DeviceKind kind = DeviceKind::gpu;
  int index = 0;               // rank for GPUs; plane number for NVSwitch chips
  std::optional<GpuSpec> gpu;  // set for GPUs
  // NVSwitches with NVLink SHARP reduce multicast traffic in the switch (NVLS): the share of the SM-driven link rate
  // at which they do; 0 = this switch cannot reduce.
  double in_switch_reduction = 0;
  // Ports of a switch chip (its radix), checked against the lanes attached to it; 0 = not checked.
  int ports = 0;
  // The switch tray (a chassis of switch chips that fails as one, scenario/failures.hpp) a chip sits in; -1 = none.
  int tray = -1;
};

/// One direction of one physical connection, possibly several bonded lanes (NVLinks) wide.
struct Channel {
  ChannelKind kind = ChannelKind::nvlink;
  int lanes = 1;                  // bonded links, e.g. 5 NVLinks from a GPU to one NVSwitch chip
  BytesPerSecond lane_bandwidth;  // line rate per lane, this direction
  Seconds latency;                // wire and switch traversal of this hop

  BytesPerSecond bandwidth() const { return lane_bandwidth * static_cast<double>(lanes); }
};

/// Devices are numbered from 0 in the order they were added.
using DeviceId = std::size_t;

/// Channels are numbered from 0 in the order they were added. A type of its own, so that a device's number cannot be
/// passed for a channel's; ordered (and hashed) by that number, so maps keyed by channel list them in that order.
struct ChannelId {
  std::size_t index = 0;
  friend auto operator<=>(const ChannelId&, const ChannelId&) = default;
};

/// The ids 0, 1, ..., count - 1 of devices or channels, for range-for.
template <class Id>
class IdRange {
 public:
  class iterator {
   public:
    explicit iterator(std::size_t index) : index_{index} {}
    Id operator*() const { return Id{index_}; }
    iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const iterator&) const = default;

   private:
    std::size_t index_;
  };
  explicit IdRange(std::size_t count) : count_{count} {}
  iterator begin() const { return iterator{0}; }
  iterator end() const { return iterator{count_}; }
  std::size_t size() const { return count_; }

 private:
  std::size_t count_;
};

/// A set of parallel channels that share one hop of a route; traffic is striped over them.
struct Hop {
  std::vector<ChannelId> channels;
};

/// The path between two endpoints: hops in order.
struct Route {
  std::vector<Hop> hops;
};

/// What a route costs a lone transfer: the sum of its hops' latencies (the slowest channel of each hop) and the
/// smallest hop bandwidth (a hop's channels summed: traffic is striped over them).
struct RouteCost {
  Seconds latency;
  BytesPerSecond bottleneck;
};

class Fabric {
 public:
  DeviceId add_device(Device device);
  /// Adds one direction of a connection.
  ChannelId add_channel(DeviceId from, DeviceId to, Channel channel);
  /// Adds both directions with the same properties.
  void add_duplex(DeviceId a, DeviceId b, Channel channel);

  const Device& device(DeviceId id) const { return devices_[id]; }
  const Channel& channel(ChannelId id) const { return channels_[id.index].properties; }
  DeviceId source(ChannelId id) const { return channels_[id.index].source; }
  DeviceId target(ChannelId id) const { return channels_[id.index].target; }
  std::size_t device_count() const { return devices_.size(); }
  std::size_t channel_count() const { return channels_.size(); }
  /// Every device, in id order.
  IdRange<DeviceId> devices() const { return IdRange<DeviceId>{devices_.size()}; }
  /// Every channel, in id order (the order they were added).
  IdRange<ChannelId> channels() const { return IdRange<ChannelId>{channels_.size()}; }
  /// The channels leaving a device, in the order they were added; routes list a hop's channels in this order.
  const std::vector<ChannelId>& out_channels(DeviceId id) const { return out_[id]; }
  /// The channels arriving at a device, in the order they were added.
  const std::vector<ChannelId>& in_channels(DeviceId id) const { return in_[id]; }

  /// GPUs in rank order.
  const std::vector<DeviceId>& gpus() const { return gpus_; }
  /// The host CPU, if the fabric has one.
  std::optional<DeviceId> host() const { return host_; }
  /// NVMe drives in the order they were added (copies from `nvme` stripe over all of them).
  const std::vector<DeviceId>& nvme_drives() const { return nvme_; }
  std::optional<DeviceId> find(std::string_view name) const;

  /// ECMP route between two endpoints; nullopt if they are not connected.
  std::optional<Route> route(DeviceId from, DeviceId to) const;

  RouteCost cost(const Route& route) const;
  /// Cost of the route between two endpoints; throws std::logic_error if they are not connected.
  RouteCost cost(DeviceId from, DeviceId to) const;

  /// Sum of the bandwidth leaving `device` (one direction).
  BytesPerSecond egress_bandwidth(DeviceId device) const;

  /// Bisection bandwidth between the two halves of the GPUs (by rank), one direction: the max flow from the first
  /// half to the second, where every channel carries at most its bandwidth.
  BytesPerSecond bisection_bandwidth() const;

  /// The first reason this fabric cannot run programs, or nullopt: a GPU that cannot reach another GPU (only
  /// switches and NICs forward), or a switch with more lanes attached than its `ports`. Every topology is checked
  /// with it at load (scenario/scenario.cpp), so builders and custom graphs fail the same way.
  std::optional<std::string> check() const;

  /// Lanes attached to a device: the larger of its outgoing and incoming lane sums (a duplex port counts once).
  int lanes_attached(DeviceId device) const;

  /// Fewest and most hops between two distinct GPUs, over routes from up to `max_sources` GPUs (evenly spread by
  /// rank; all of them below that), so that 4,096-GPU fabrics stay quick to describe.
  struct HopCounts {
    std::size_t min = 0, max = 0;
    std::size_t sources = 0;  // GPUs whose routes were measured
  };
  HopCounts gpu_hop_counts(std::size_t max_sources = 512) const;

  /// Non-blocking crossbar domains: groups of 2 or more GPUs joined by one stage of NVSwitches, where every member
  /// has channels to and from the same switches, no direct channel to another member, and no other forwarding device
  /// shared with one. A route between two members is then the sender's channels into those switches and the
  /// receiver's channels out of them, whoever the two are, and the switch itself is non-blocking, so only the
  /// members' ports bind (HGX, NVL72, an NVL576 half-rack, a superpod node). GPUs in rank order; GPUs of no domain are
  /// left out.
  std::vector<std::vector<DeviceId>> crossbar_domains() const;
  /// By channel index: whether the channel lies between the two tiers of a non-blocking leaf-spine network of
  /// InfiniBand switches, where no traffic can ever make it a bottleneck. That needs a two-tier Clos: every switch
  /// with a port to a NIC (a leaf) has channels to and from every switch without one (a spine), and no channel joins
  /// two leaves or two spines, so a route climbs from a leaf to the spines and comes down to another leaf at most once
  /// and never turns back up. A route's hop up is then all of its leaf's up-channels and a hop down all the spines'
  /// channels into a leaf (ECMP), and the up-hop carries only what entered the leaf from below: when the leaf's
  /// up-channels together are at least as wide as its ports from below, no set of flows can fill them before those
  /// ports are full (likewise down). Oversubscribed leaves (fewer up than down) fail the test. All false when the
  /// fabric has no such network.
  std::vector<bool> non_binding_channels() const;
  /// The NVLink domain of a GPU: the GPUs it reaches through NVSwitches over NVLink channels alone, itself included,
  /// sorted. GPUs of two nodes of a superpod are in different domains although each node has NVSwitches: NVLS
  /// (in-switch reduction) works only inside one.
  std::vector<DeviceId> nvlink_domain(DeviceId gpu) const;

 private:
  struct ChannelEnds {
    DeviceId source, target;
    Channel properties;
  };
  std::vector<Device> devices_;
  std::vector<ChannelEnds> channels_;
  std::vector<std::vector<ChannelId>> out_, in_;  // by device
  std::vector<DeviceId> gpus_;
  std::optional<DeviceId> host_;
  std::vector<DeviceId> nvme_;
};

/// Finds Fabric::route's routes (every shortest path, endpoints not forwarding) by a search from both ends that stops
/// where they meet, so that a route costs what lies within half its length of either end, not a search of the whole
/// fabric: a superpod route crosses a few dozen devices of tens of thousands, and nothing is kept per endpoint (a
/// distance array per endpoint and direction was 340 MB on a 1,024-node superpod). Its scratch arrays make it
/// single-threaded.
class Router {
 public:
  explicit Router(const Fabric& fabric);
  std::optional<Route> route(DeviceId from, DeviceId to);

 private:
  /// Hop distances from one end, for the devices reached so far (FAR for the others), and the devices by distance.
  struct Search {
    std::vector<std::uint8_t> distance;
    std::vector<std::vector<DeviceId>> levels;  // levels[d]: the devices at distance d
    /// Labels the next level: over out-channels (forward) or in-channels (backward) of the last level's devices that
    /// may be passed through (switches and NICs, and the search's own end).
    void expand(const Fabric& fabric, bool forward);
    void reset();
  };

  const Fabric& fabric_;
  Search forward_, backward_;
  std::vector<std::uint8_t> on_path_;  // scratch: 1 + the position of a device on a shortest path, 0 if on none
};

}  // namespace snsim

template <>
struct std::hash<snsim::ChannelId> {
  std::size_t operator()(const snsim::ChannelId& id) const noexcept { return std::hash<std::size_t>{}(id.index); }
};
