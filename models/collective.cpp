#include "models/collective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "models/nccl_tuning.hpp"

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 5> COLLECTIVE_KIND_NAMES{"all_reduce", "all_gather", "reduce_scatter",
                                                                "all_to_all", "broadcast"};
constexpr std::array<std::string_view, 3> PROTOCOL_NAMES{"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, 8> ALGORITHM_NAMES{"ring", "tree",   "one_shot",  "two_shot",
                                                          "nvls", "direct", "nvls_tree", "collnet"};

template <std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, auto value) {
  return names[static_cast<std::size_t>(value)];
}

template <class T, std::size_t N>
std::optional<T> parse_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<T>(i);
  return std::nullopt;
}

constexpr std::size_t LL = 0, LL128 = 1, SIMPLE = 2;  // indices of CollectiveModel::protocols and ::tree

/// NCCL's algorithm for one of snsim's, where NCCL's tuning tables have it.
std::optional<nccl::Algo> nccl_algo(Algorithm a) {
  switch (a) {
    case Algorithm::ring:
      return nccl::Algo::ring;
    case Algorithm::tree:
      return nccl::Algo::tree;
    case Algorithm::nvls:
      return nccl::Algo::nvls;
    case Algorithm::nvls_tree:
      return nccl::Algo::nvls_tree;
    case Algorithm::collnet:
      return nccl::Algo::collnet_direct;
    default:
      return std::nullopt;
  }
}
std::optional<Algorithm> snsim_algorithm(nccl::Algo a) {
  switch (a) {
    case nccl::Algo::ring:
      return Algorithm::ring;
    case nccl::Algo::tree:
      return Algorithm::tree;
    case nccl::Algo::nvls:
      return Algorithm::nvls;
    case nccl::Algo::nvls_tree:
      return Algorithm::nvls_tree;
    case nccl::Algo::collnet_direct:
    case nccl::Algo::collnet_chain:
      return Algorithm::collnet;
    default:
      return std::nullopt;
  }
}

}  // namespace

const ParamTable<CollectiveModel>& collective_params() {
  using M = CollectiveModel;
  static const ParamTable<M> table = [] {
    ParamTable<M> params;
    // NCCL's tuning model for Hopper inside one node [model: NVIDIA/nccl src/graph/tuning.cc,
    // docs/hardware.md#nccl-model]: ring base latency {LL 6.6, LL128 14.0, Simple 8.4} us; NVLink hardware
    // latency per ring step {0.6, 1.9, 3.4} us; LL carries 8 data bytes per 16 B line (50 %) and is capped at
    // llMaxBw = 141 GB/s on Hopper; LL128 carries 120 of 128 B (NCCL tunes it at 0.92). Recalibrated from our
    // H200 NCCL traces.
    // Channel ramp: NCCL drops channels while bytes < channels x threads x threadThreshold [src: NVIDIA/nccl
    // src/enqueue.cc topoGetAlgoInfo], with threads = NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS {512, 640, 512}
    // [src/include/device.h] and threadThreshold = NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD {8, 8, 64}
    // [src/include/comm.h]; a ring's LL threshold is multiplied by the ranks [src/graph/tuning.cc].
    params.add({.key = "LL.efficiency",
                .unit = "fraction",
                .fallback = 0.5,
                .check = between(0.01, 1.0),
                .doc = "payload share of an LL line",
                .source = "src NCCL device.h"},
               [](M& m) { return &m.protocols[LL].efficiency; });
    params.add({.key = "LL.max_bandwidth",
                .fallback = 141_GBps,
                .doc = "LL per-rank cap on Hopper; 0 = none",
                .source = "model NCCL tuning.cc"},
               [](M& m) { return &m.protocols[LL].max_bandwidth; });
    params.add(
        {.key = "LL.base_latency", .fallback = 6.6_us, .doc = "ring: per collective", .source = "model NCCL tuning.cc"},
        [](M& m) { return &m.protocols[LL].base_latency; });
    params.add(
        {.key = "LL.step_latency", .fallback = 0.6_us, .doc = "ring: per step", .source = "model NCCL tuning.cc"},
        [](M& m) { return &m.protocols[LL].step_latency; });
    params.add({.key = "LL.channel_bytes",
                .fallback = 512 * 8_B,
                .doc = "ring and tree add a channel per this many bytes, x ranks on a ring; 0 = all channels",
                .source = "src NCCL enqueue.cc, 512 threads x 8"},
               [](M& m) { return &m.protocols[LL].channel_bytes; });
    params.add({.key = "LL128.efficiency",
                .unit = "fraction",
                .fallback = 0.92,
                .check = between(0.01, 1.0),
                .doc = "payload share of an LL128 line"},
               [](M& m) { return &m.protocols[LL128].efficiency; });
    params.add({.key = "LL128.max_bandwidth", .fallback = 0_GBps, .doc = "per-rank cap; 0 = none"},
               [](M& m) { return &m.protocols[LL128].max_bandwidth; });
    params.add({.key = "LL128.base_latency", .fallback = 14_us, .doc = "ring: per collective"},
               [](M& m) { return &m.protocols[LL128].base_latency; });
    params.add({.key = "LL128.step_latency", .fallback = 1.9_us, .doc = "ring: per step"},
               [](M& m) { return &m.protocols[LL128].step_latency; });
    params.add({.key = "LL128.channel_bytes",
                .fallback = 640 * 8_B,
                .doc = "bytes per channel of ring and tree",
                .source = "src NCCL, 640 threads x 8"},
               [](M& m) { return &m.protocols[LL128].channel_bytes; });
    params.add({.key = "Simple.efficiency",
                .unit = "fraction",
                .fallback = 1.0,
                .check = between(0.01, 1.0),
                .doc = "payload share"},
               [](M& m) { return &m.protocols[SIMPLE].efficiency; });
    params.add({.key = "Simple.max_bandwidth", .fallback = 0_GBps, .doc = "per-rank cap; 0 = none"},
               [](M& m) { return &m.protocols[SIMPLE].max_bandwidth; });
    params.add({.key = "Simple.base_latency", .fallback = 8.4_us, .doc = "ring: per collective"},
               [](M& m) { return &m.protocols[SIMPLE].base_latency; });
    params.add({.key = "Simple.step_latency", .fallback = 3.4_us, .doc = "ring: per step"},
               [](M& m) { return &m.protocols[SIMPLE].step_latency; });
    params.add({.key = "Simple.channel_bytes",
                .fallback = 512 * 64_B,
                .doc = "bytes per channel of ring and tree",
                .source = "src NCCL, 512 threads x 64"},
               [](M& m) { return &m.protocols[SIMPLE].channel_bytes; });
    // Tree: base {6.8, 14.0, 8.4} us, NVLink hwLat {0.6, 1.25, 4.0} us per chain hop; NCCL charges 2(n-1) hops
    // [model: NVIDIA/nccl src/graph/tuning.cc].
    params.add({.key = "tree.LL.base_latency",
                .fallback = 6.8_us,
                .doc = "tree (a chain): per collective",
                .source = "model NCCL tuning.cc"},
               [](M& m) { return &m.tree[LL].base_latency; });
    params.add({.key = "tree.LL.step_latency",
                .fallback = 0.6_us,
                .doc = "tree: per chain hop, 2(n-1) hops",
                .source = "model NCCL tuning.cc"},
               [](M& m) { return &m.tree[LL].step_latency; });
    params.add({.key = "tree.LL128.base_latency", .fallback = 14_us, .doc = "tree: per collective"},
               [](M& m) { return &m.tree[LL128].base_latency; });
    params.add({.key = "tree.LL128.step_latency", .fallback = 1.25_us, .doc = "tree: per chain hop"},
               [](M& m) { return &m.tree[LL128].step_latency; });
    params.add({.key = "tree.Simple.base_latency", .fallback = 8.4_us, .doc = "tree: per collective"},
               [](M& m) { return &m.tree[SIMPLE].base_latency; });
    params.add({.key = "tree.Simple.step_latency", .fallback = 4_us, .doc = "tree: per chain hop"},
               [](M& m) { return &m.tree[SIMPLE].step_latency; });
    // One-shot / two-shot: symmetric-memory kernels start in ~3 us end to end on 8xB200 for the smallest
    // messages [meas: NCCL 2.27 blog, NVIDIA/nccl-tests#333, docs/hardware.md#latency]; split as base + one step
    // [unverified split].
    params.add({.key = "one_shot.base_latency",
                .fallback = 2_us,
                .doc = "one-shot all-reduce: per collective",
                .source = "meas NCCL 2.27 blog, ~3us"},
               [](M& m) { return &m.one_shot.base_latency; });
    params.add({.key = "one_shot.step_latency", .fallback = 1_us, .doc = "one-shot: its one step"},
               [](M& m) { return &m.one_shot.step_latency; });
    params.add({.key = "two_shot.base_latency", .fallback = 2_us, .doc = "two-shot all-reduce: per collective"},
               [](M& m) { return &m.two_shot.base_latency; });
    params.add({.key = "two_shot.step_latency", .fallback = 1_us, .doc = "two-shot: per step (2 steps)"},
               [](M& m) { return &m.two_shot.step_latency; });
    // all_to_all's grouped sends: NCCL's peer-to-peer path has no latency model of its own; unset, they pay
    // the chosen protocol's ring latencies.
    params.add<std::optional<Seconds>>(
        {.key = "direct.base_latency",
         .doc = "all_to_all (grouped send/recv): per collective; unset with step_latency = the protocol's ring "
                "latencies, else the other one is 0",
         .unset = "ring's"},
        [](M& m, std::optional<Seconds> v) {
          if (v) m.direct.emplace(m.direct.value_or(Latencies{})).base_latency = *v;
        },
        [](const M& m) { return m.direct ? std::optional{m.direct->base_latency} : std::nullopt; });
    params.add<std::optional<Seconds>>(
        {.key = "direct.step_latency", .doc = "all_to_all: its one step", .unset = "ring's"},
        [](M& m, std::optional<Seconds> v) {
          if (v) m.direct.emplace(m.direct.value_or(Latencies{})).step_latency = *v;
        },
        [](const M& m) { return m.direct ? std::optional{m.direct->step_latency} : std::nullopt; });
    params.add({.key = "nvls",
                .fallback = true,
                .doc = "allow NVLS where the NVSwitches reduce (NCCL_NVLS_ENABLE; our H200 traces: false)"},
               [](M& m) { return &m.nvls_enabled; });
    // NVLS: NCCL's latency is hwLat = 25 us flat with base 0 on one node [model: tuning.cc]; it matches the
    // ~30 us of a forced-NVLS 1 KB all-reduce on 8xH200 (Azure ND_H200_v5_results.md, docs/hardware.md#latency).
    params.add(
        {.key = "nvls_latency", .fallback = 25_us, .doc = "NVLS fixed cost", .source = "model NCCL tuning.cc hwLat"},
        [](M& m) { return &m.nvls_latency; });
    // Scenario-wide forcing, as NCCL_ALGO / NCCL_PROTO with one name each: every collective that can run it runs it;
    // an op's own algorithm: / protocol: wins.
    params.add<std::string>(
        {.key = "algorithm",
         .unit = "name",
         .fallback = "auto",
         .check = one_of<std::string>({"auto", "ring", "tree", "nvls", "nvls_tree", "collnet"}),
         .doc = "force every collective's algorithm where it can run (NCCL_ALGO); auto = NCCL's choice"},
        [](M& m, const std::string& v) { m.forced_algorithm = v == "auto" ? std::nullopt : algorithm(v); },
        [](const M& m) { return m.forced_algorithm ? std::string(to_string(*m.forced_algorithm)) : "auto"; });
    params.add<std::string>(
        {.key = "protocol",
         .unit = "name",
         .fallback = "auto",
         .check = one_of<std::string>({"auto", "LL", "LL128", "Simple"}),
         .doc = "force every collective's protocol where it can run (NCCL_PROTO); auto = NCCL's choice"},
        [](M& m, const std::string& v) { m.forced_protocol = v == "auto" ? std::nullopt : protocol(v); },
        [](const M& m) { return m.forced_protocol ? std::string(to_string(*m.forced_protocol)) : "auto"; });
    // NCCL's graph search runs an NDR 400 Gb/s NIC (50 GB/s) at most at 48 GB/s per channel, the top of its SM90
    // inter-node speed list [src: NVIDIA/nccl src/graph/search.cc, docs/nccl.md 5.2]; no trace of ours measures a NIC.
    params.add({.key = "nic_efficiency",
                .unit = "fraction",
                .fallback = 0.96,
                .check = between(0.1, 1.0),
                .doc = "payload share of a NIC's line rate that collectives reach across nodes",
                .source = "src NCCL search.cc 48 of 50 GB/s"},
               [](M& m) { return &m.nic_efficiency; });
    // Launch, on the GPU: an empty kernel node of a CUDA graph 0.52 us apart [meas: validation/traces/h200/
    // h200x1-launch.jsonl, graph_back_to_back]; a collective launched from a stream takes ~3 us longer than the
    // same collective replayed from a graph wherever the GPU, not the host, sets the pace (LL128 and Simple at every
    // size, every kind: 2.75-3.08 us; the fit over every pair with the host's term, 3.16 us) [meas: validation/
    // traces/h200/h200x2-collective*.jsonl, out_of_place - graph; fits/collective_fit.cpp].
    params.add({.key = "stream_launch",
                .fallback = 3.68_us,
                .check = non_negative,
                .doc = "what a collective launched from a stream costs the GPU beyond its kernel",
                .source = "meas h200x2-collective out_of_place - graph"},
               [](M& m) { return &m.stream_launch; });
    params.add({.key = "graph_launch",
                .fallback = 0.52_us,
                .check = non_negative,
                .doc = "the same for a collective replayed from a CUDA graph",
                .source = "meas h200x1-launch graph_back_to_back"},
               [](M& m) { return &m.graph_launch; });
    // The host: NCCL calls back to back on a stream run no faster than one per 11-13 us at small sizes whatever the
    // GPU does in them (LL all_reduce 11.0-12.4 us against 5.8-6.8 us replayed from a graph), and all_to_all's group
    // of sends and recvs 13-17 us [meas: h200x2-collective*.jsonl, the host-bound out_of_place records].
    params.add({.key = "host_call",
                .fallback = 12.09_us,
                .check = non_negative,
                .doc = "NCCL's CPU time per collective call on a stream; calls back to back go no faster",
                .source = "meas h200x2-collective out_of_place"},
               [](M& m) { return &m.host_call; });
    params.add({.key = "host_p2p_call",
                .fallback = 0.37_us,
                .check = non_negative,
                .doc = "the CPU time each send or recv adds to a grouped call (all_to_all)",
                .source = "meas h200x2-collective all_to_all out_of_place"},
               [](M& m) { return &m.host_p2p_call; });
    // A framework's per-call cost before NCCL's (PyTorch ProcessGroupNCCL's work object, stream guards, the
    // record of the call), so that measurements at the framework level can be expressed; 0 = NCCL called directly
    // [unverified default: no trace of ours measures a framework].
    params.add({.key = "framework_call",
                .fallback = 0_us,
                .check = non_negative,
                .doc = "a framework's per-call cost on top of NCCL's launch (PyTorch c10d); 0 = none"},
               [](M& m) { return &m.framework_call; });
    // Device-side barrier across the ranks [unverified default; measured by the probe's nvshmem family].
    params.add({.key = "barrier_latency", .fallback = 2_us, .doc = "device-side barrier across the ranks"},
               [](M& m) { return &m.barrier_latency; });
    // NCCL moves data in 512 KiB NVLink chunks [src: NVIDIA/nccl src/init.cc P2P_NVL_CHUNKSIZE]; we cap the
    // chunk count so that a 1 GiB broadcast or tree stays a few hundred transfers.
    params.add({.key = "broadcast_chunk",
                .fallback = 512_KiB,
                .check = positive,
                .doc = "pipeline chunk of broadcast and tree",
                .source = "src NCCL init.cc"},
               [](M& m) { return &m.chain_chunk; });
    params.add({.key = "max_chunks",
                .unit = "count",
                .fallback = 128,
                .check = between(1, 4096),
                .doc = "most chunks per pipeline"},
               [](M& m) { return &m.max_chunks; });
    // Each kind's kernel rate relative to all_reduce's: 1 until calibrated [unverified default; `snsim
    // calibrate` fits it from the probe's collective family, validation/fits/collective_fit.cpp].
    params.add({.key = "all_reduce.relative_rate",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(0.1, 4.0),
                .doc = "all_reduce kernels' payload rate: the reference"},
               [](M& m) { return &m.relative_rate[0]; });
    params.add({.key = "all_gather.relative_rate",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(0.1, 4.0),
                .doc = "all_gather kernels' payload rate relative to all_reduce's"},
               [](M& m) { return &m.relative_rate[1]; });
    params.add({.key = "reduce_scatter.relative_rate",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(0.1, 4.0),
                .doc = "reduce_scatter kernels' rate relative to all_reduce's"},
               [](M& m) { return &m.relative_rate[2]; });
    params.add({.key = "all_to_all.relative_rate",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(0.1, 4.0),
                .doc = "all_to_all (grouped send/recv) rate relative to all_reduce's"},
               [](M& m) { return &m.relative_rate[3]; });
    params.add({.key = "broadcast.relative_rate",
                .unit = "factor",
                .fallback = 1.0,
                .check = between(0.1, 4.0),
                .doc = "broadcast kernels' rate relative to all_reduce's"},
               [](M& m) { return &m.relative_rate[4]; });
    return params;
  }();
  return table;
}

std::string_view to_string(CollectiveKind kind) {
  return name_of(COLLECTIVE_KIND_NAMES, kind);
}
std::string_view to_string(Protocol protocol) {
  return name_of(PROTOCOL_NAMES, protocol);
}
std::string_view to_string(Algorithm algorithm) {
  return name_of(ALGORITHM_NAMES, algorithm);
}
std::optional<CollectiveKind> collective_kind(std::string_view name) {
  return parse_name<CollectiveKind>(COLLECTIVE_KIND_NAMES, name);
}
std::optional<Protocol> protocol(std::string_view name) {
  return parse_name<Protocol>(PROTOCOL_NAMES, name);
}
std::optional<Algorithm> algorithm(std::string_view name) {
  return parse_name<Algorithm>(ALGORITHM_NAMES, name);
}

double bus_bandwidth_factor(CollectiveKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return (n - 1) / n;
    case CollectiveKind::broadcast:
      return 1;
  }
  return 1;
}

std::vector<Algorithm> algorithms_for(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return {Algorithm::ring, Algorithm::tree,      Algorithm::one_shot, Algorithm::two_shot,
              Algorithm::nvls, Algorithm::nvls_tree, Algorithm::collnet};
    case CollectiveKind::all_to_all:
      return {Algorithm::direct};
    default:
      return {Algorithm::ring};
  }
}

std::vector<Protocol> protocols_for(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring:
    case Algorithm::tree:
      return {Protocol::ll, Protocol::ll128, Protocol::simple};
    case Algorithm::direct:  // NCCL's peer-to-peer sends use LL below a threshold, else Simple
      return {Protocol::ll, Protocol::simple};
    default:  // NCCL runs NVLS with Simple only; symmetric-memory kernels load and store directly
      return {Protocol::simple};
  }
}

double switch_reduction(const Fabric& fabric) {
  return switch_reduction(fabric, fabric.gpus());
}

double switch_reduction(const Fabric& fabric, const std::vector<DeviceId>& gpus) {
  if (gpus.empty()) return 0;
  const auto domain = fabric.nvlink_domain(gpus.front());
  if (std::ranges::any_of(gpus, [&](DeviceId g) { return !std::ranges::binary_search(domain, g); })) return 0;
  double efficiency = std::numeric_limits<double>::infinity();
  for (auto gpu : gpus) {
    bool has_switch = false;
    for (auto e : fabric.out_channels(gpu)) {
      const Device& d = fabric.device(fabric.target(e));
      if (fabric.channel(e).kind != ChannelKind::nvlink || d.kind != DeviceKind::nvswitch) continue;
      has_switch = true;
      efficiency = std::min(efficiency, d.in_switch_reduction);
    }
    if (!has_switch) return 0;
  }
  return std::isinf(efficiency) ? 0 : efficiency;
}

std::vector<int> nodes_of(const Fabric& fabric, const std::vector<DeviceId>& gpus) {
  // A node: the component of a GPU through every channel that stays off NICs, InfiniBand and the host.
  std::vector<int> component(fabric.device_count(), -1);
  auto component_of = [&](DeviceId start) {
    if (component[start] >= 0) return component[start];
    const int id = static_cast<int>(start);
    std::vector<DeviceId> frontier{start};
    component[start] = id;
    while (!frontier.empty()) {
      const DeviceId u = frontier.back();
      frontier.pop_back();
      for (auto e : fabric.out_channels(u)) {
        const DeviceId v = fabric.target(e);
        const auto kind = fabric.device(v).kind;
        if (component[v] >= 0 || fabric.channel(e).kind == ChannelKind::ib || kind == DeviceKind::nic ||
            kind == DeviceKind::ib_switch || kind == DeviceKind::host)
          continue;
        component[v] = id;
        frontier.push_back(v);
      }
    }
    return id;
  };
  std::map<int, int> index;
  std::vector<int> out;
  for (auto g : gpus) out.push_back(index.try_emplace(component_of(g), static_cast<int>(index.size())).first->second);
  return out;
}

int switch_links(const Fabric& fabric, DeviceId gpu) {
  int links = 0;
  for (auto e : fabric.out_channels(gpu)) {
    const auto kind = fabric.device(fabric.target(e)).kind;
    if (kind == DeviceKind::nvswitch || kind == DeviceKind::pcie_switch) links += fabric.channel(e).lanes;
  }
  return std::max(1, links);
}

int ramp_channels(Bytes size, Bytes threshold, int links) {
  links = std::max(1, links);
  if (threshold.count() == 0) return links;
  return static_cast<int>(std::clamp<std::uint64_t>(size / threshold, 1, static_cast<std::uint64_t>(links)));
}

int CollectiveModel::channels_for(const CollectiveRequest& request, Algorithm algorithm, Protocol protocol,
                                  const CollectivePlatform& platform) const {
  if (request.channels) return *request.channels;
  // NCCL tunes the channel count of ring and tree only; NVLS runs its own fixed count, and symmetric-memory kernels
  // and peer-to-peer sends are not channel-tuned this way.
  if (algorithm != Algorithm::ring && algorithm != Algorithm::tree) return platform.links;
  Bytes threshold = params(protocol).channel_bytes;
  if (algorithm == Algorithm::ring && protocol == Protocol::ll) threshold = threshold * request.ranks;
  return ramp_channels(request.bytes, threshold, platform.links);
}

CollectiveShape CollectiveModel::shape(CollectiveKind kind, Bytes size, int ranks, Algorithm algorithm) const {
  const auto allowed = algorithms_for(kind);
  if (std::ranges::find(allowed, algorithm) == allowed.end())
    throw std::logic_error(fmt::format("{} cannot run {}", to_string(algorithm), to_string(kind)));
  const auto n = static_cast<std::uint64_t>(ranks);
  const int peers = ranks - 1;
  auto chunked = [&](CollectiveShape s) {
    const auto chunks = std::clamp<std::uint64_t>(pieces(size, chain_chunk), 1, static_cast<std::uint64_t>(max_chunks));
    s.pattern = Pattern::chain;
    s.chunks = static_cast<int>(chunks);
    s.step_bytes = ceil_div(size, chunks);
    return s;
  };
  CollectiveShape s;
  switch (algorithm) {
    case Algorithm::ring:
      if (kind == CollectiveKind::broadcast) {
        // Every hop forwards every chunk as it arrives (hops + chunks - 1 stages). Latency is paid once per hop, to
        // fill the pipeline: NCCL keeps several chunks in flight per channel, and on our H200 x2 traces an 8 MiB
        // Simple broadcast (16 chunks) takes 40 us, less than 16 step latencies alone.
        s = chunked(s);
        s.steps = peers + s.chunks - 1;
        s.latency_steps = peers;
        s.serial_bytes = s.step_bytes * s.steps;
        return s;
      }
      s.steps = kind == CollectiveKind::all_reduce ? 2 * peers : peers;
      s.step_bytes = ceil_div(size, n);
      break;
    case Algorithm::tree: {
      // A chain of n ranks: chunks go up n-1 hops to the root and down n-1 hops, both pipelines at once. Latency is
      // paid once per hop to fill the pipeline (NCCL charges 2(n-1) hwLat). A middle rank's links carry the chunks
      // going up and those going down, 2S in all; with 2 ranks nothing is shared and the last chunk ends C+1 chunk
      // times after the first starts.
      s = chunked(s);
      s.steps = 2 * peers + s.chunks - 1;
      s.latency_steps = 2 * peers;
      const auto chunk_times = ranks == 2 ? s.chunks + 1 : 2 * s.chunks + 2 * (ranks - 2);
      s.serial_bytes = s.step_bytes * chunk_times;
      return s;
    }
    case Algorithm::one_shot:
      s.pattern = Pattern::all_peers;
      s.steps = 1;
      s.step_bytes = size;
      s.peers = peers;
      break;
    case Algorithm::two_shot:
      s.pattern = Pattern::all_peers;
      s.steps = 2;
      s.step_bytes = ceil_div(size, n);
      s.peers = peers;
      break;
    case Algorithm::nvls:
      // Reduce-scatter by multimem.ld_reduce (S up, S/n down) and all-gather by multimem.st (S/n up, S down),
      // pipelined: one step in which each direction of a GPU's links carries S + S/n.
      s.steps = 1;
      s.step_bytes = size + ceil_div(size, n);
      break;
    case Algorithm::direct:
      s.pattern = Pattern::all_peers;
      s.steps = 1;
      s.step_bytes = ceil_div(size, n);
      s.peers = peers;
      break;
    case Algorithm::nvls_tree:
    case Algorithm::collnet:
      // Across nodes: the runtime derives each pair's flows from the nodes (runtime/collective_executor.cpp); as a
      // lone estimate, a GPU's links carry what NVLS puts on them.
      s.pattern = Pattern::nodes;
      s.steps = 1;
      s.step_bytes = size + ceil_div(size, n);
      break;
  }
  s.latency_steps = s.steps;
  s.serial_bytes = s.step_bytes * (s.steps * s.peers);
  return s;
}

Seconds CollectiveModel::host_cost(CollectiveKind kind, int ranks) const {
  if (kind != CollectiveKind::all_to_all) return host_call;
  return host_call + host_p2p_call * (2.0 * ranks);
}

CollectivePlan CollectiveModel::make_plan(const CollectiveRequest& request, Algorithm algorithm, Protocol protocol,
                                          const CollectivePlatform& platform) const {
  const auto& p = params(protocol);
  const auto i = static_cast<std::size_t>(protocol);
  CollectivePlan plan;
  plan.algorithm = algorithm;
  plan.protocol = protocol;
  plan.shape = shape(request.kind, request.bytes, request.ranks, algorithm);
  plan.channels = channels_for(request, algorithm, protocol, platform);
  plan.launch = (request.launch == Launch::graph ? graph_launch : stream_launch) + framework_call;
  plan.efficiency = std::min(1.0, p.efficiency * relative_rate[static_cast<std::size_t>(request.kind)]);
  plan.max_bandwidth = p.max_bandwidth;
  // NCCL's bus bandwidth is channels x one link's effective rate (tuning.cc: busBw = nChannels * bwIntra), so fewer
  // channels than links (forced, or a small message's ramp) leave links idle, and more cannot exceed the links.
  plan.rate_scale = std::min(1.0, static_cast<double>(plan.channels) / std::max(1, platform.links));
  Latencies lat{p.base_latency, p.step_latency};
  switch (algorithm) {
    case Algorithm::tree:
      lat = tree[i];
      break;
    case Algorithm::one_shot:
      lat = one_shot;
      break;
    case Algorithm::two_shot:
      lat = two_shot;
      break;
    case Algorithm::direct:
      if (direct) lat = *direct;
      break;
    case Algorithm::nvls:
    case Algorithm::nvls_tree:
      lat = {Seconds{0}, nvls_latency};
      plan.rate_scale *= platform.switch_reduction;
      break;
    case Algorithm::collnet:  // the heads' exchange inside the node; the network's part is network_latency
      lat = {Seconds{0}, p.step_latency};
      break;
    default:
      break;
  }
  plan.base_latency = lat.base_latency;
  plan.step_latency = lat.step_latency;
  plan.nodes = std::max(1, platform.nodes);
  // Across nodes a tree's chain spans one node, and NCCL's network steps cost more than NVLink steps (its tuning
  // tables: network hardware latencies and the proxy's per-step overhead, docs/nccl.md 6.4).
  if (plan.nodes > 1 && algorithm == Algorithm::tree) plan.shape.latency_steps = 2 * (request.ranks / plan.nodes - 1);
  if (plan.nodes > 1 && algorithm == Algorithm::nvls_tree) {
    // Inside each node NVLS moves S + S/ranks-per-node through a GPU's links; NCCL runs NVLSTree's kernels at most at
    // its per-channel NVLSTree maximum (docs/nccl.md 6.3), which no link of ours limits.
    plan.shape.step_bytes =
        request.bytes + ceil_div(request.bytes, static_cast<std::uint64_t>(request.ranks / plan.nodes));
    plan.shape.serial_bytes = plan.shape.step_bytes;
    if (platform.nccl)
      if (const double cap = nccl::nvls_tree_cap(*platform.nccl); cap > 0)
        plan.max_bandwidth = BytesPerSecond{cap * 1e9 * static_cast<double>(plan.shape.step_bytes.count()) /
                                            static_cast<double>(std::max<std::uint64_t>(1, request.bytes.count()))};
  }
  if (plan.nodes > 1 && algorithm == Algorithm::direct)
    plan.network_latency = Seconds{nccl::network_step_us(protocol) * 1e-6};
  if (plan.nodes > 1 && platform.nccl) {
    const auto f = nccl::func(request.kind);
    const auto a = nccl_algo(algorithm);
    if (f && a) plan.network_latency = Seconds{nccl::network_latency_us(*platform.nccl, *f, *a, protocol) * 1e-6};
  }
  return plan;
}

CollectivePlan CollectiveModel::plan(const CollectiveRequest& request, const CollectivePlatform& platform) const {
  const auto runs = algorithms_for(request.kind);
  auto forced_algo = request.algorithm;  // the op's own, else the scenario's where this kind can run it
  if (!forced_algo && forced_algorithm && std::ranges::find(runs, *forced_algorithm) != runs.end())
    forced_algo = forced_algorithm;
  const auto forced_proto = request.protocol ? request.protocol : forced_protocol;
  const auto f = nccl::func(request.kind);
  const bool symmetric = forced_algo && !nccl_algo(*forced_algo);  // one_shot, two_shot, direct: not NCCL's tables
  if (platform.nccl && f && !symmetric) {
    nccl::Allowed allowed;
    allowed.algos[static_cast<std::size_t>(nccl::Algo::pat)] = false;            // snsim does not run PAT
    allowed.algos[static_cast<std::size_t>(nccl::Algo::collnet_chain)] = false;  // SHARP runs as CollNetDirect
    // NVLS across nodes needs SHARP underneath (NVLS+CollNet), which snsim does not run.
    if (platform.nodes > 1) allowed.algos[static_cast<std::size_t>(nccl::Algo::nvls)] = false;
    if (!nvls_enabled || platform.switch_reduction <= 0) {
      allowed.algos[static_cast<std::size_t>(nccl::Algo::nvls)] = false;
      allowed.algos[static_cast<std::size_t>(nccl::Algo::nvls_tree)] = false;
    }
    if (forced_algo) {
      const auto only = *nccl_algo(*forced_algo);
      for (std::size_t i = 0; i < allowed.algos.size(); ++i)
        allowed.algos[i] = allowed.algos[i] && static_cast<nccl::Algo>(i) == only;
    }
    if (forced_proto)
      for (std::size_t i = 0; i < allowed.protos.size(); ++i)
        allowed.protos[i] = static_cast<Protocol>(i) == *forced_proto;
    const auto choice = nccl::choose(*platform.nccl, *f, static_cast<double>(request.bytes.count()), allowed);
    // A forced pair NCCL's model cannot run here (nvls_tree on one node, tree for all_gather) keeps snsim's own
    // choice among what was forced, as an op-level force always did.
    if (choice) {
      auto chosen = make_plan(request, *snsim_algorithm(choice->algo), choice->protocol, platform);
      if (!request.channels) chosen.channels = choice->channels;
      chosen.nccl_choice = true;
      return chosen;
    }
  }
  std::vector<Algorithm> candidates;
  if (forced_algo) {
    candidates.push_back(*forced_algo);
  } else {
    for (auto a : runs) {
      // Symmetric-memory kernels need buffers registered by the application: never chosen, only forced.
      if (a == Algorithm::one_shot || a == Algorithm::two_shot) continue;
      if (a == Algorithm::nvls && !(nvls_enabled && platform.switch_reduction > 0)) continue;
      if (a == Algorithm::nvls_tree || a == Algorithm::collnet) continue;  // across nodes: NCCL's model picks them
      candidates.push_back(a);
    }
  }
  std::optional<CollectivePlan> best;
  Seconds best_time{std::numeric_limits<double>::infinity()};
  for (auto a : candidates) {
    for (auto p : protocols_for(a)) {
      if (forced_proto && p != *forced_proto) continue;
      auto candidate = make_plan(request, a, p, platform);
      if (auto t = predict(candidate, platform); !best || t < best_time) {
        best = candidate;
        best_time = t;
      }
    }
  }
  if (!best)
    throw std::logic_error(fmt::format("no algorithm runs {} with protocol {}", to_string(request.kind),
                                       forced_proto ? to_string(*forced_proto) : "any"));
  return *best;
}

BytesPerSecond CollectiveModel::rate(const CollectivePlan& plan, const CollectivePlatform& platform) const {
  BytesPerSecond r = platform.line_rate * (platform.sm_efficiency * plan.efficiency * plan.rate_scale);
  if (plan.max_bandwidth.count() > 0) r = std::min(r, plan.max_bandwidth);
  return r;
}

Seconds CollectiveModel::predict(const CollectivePlan& plan, const CollectivePlatform& platform) const {
  return plan.launch + plan.base_latency + (plan.step_latency + platform.hop_latency) * plan.shape.latency_steps +
         plan.shape.serial_bytes / rate(plan, platform);
}

Registry<Model>::Entry collective_model_entry() {
  return model_entry(
      "collective",
      "NCCL-like BSP collectives: ring, tree, one_shot, two_shot, nvls (all_reduce), direct (all_to_all); "
      "LL/LL128/Simple; algorithm, protocol and channels chosen by size, one transfer per step",
      collective_params());
}

}  // namespace snsim::models
