// BSP collectives the way NCCL runs them inside one NVLink domain, at the grain of one transfer per algorithm step:
// channels and chunking are folded into each step's rate and latency.
//
// Algorithms (S bytes, n ranks; "per rank" = what one GPU sends, and receives, in each direction):
//
//   ring      all_reduce 2(n-1) steps of S/n to the next rank; all_gather / reduce_scatter n-1 steps of S/n;
//             broadcast: S in chunks pipelined along the ring from the root, latency paid once per hop.
//   tree      all_reduce on NCCL's intra-node tree, which is a chain: chunks are reduced up the chain to the root
//             and broadcast back down, both pipelines running at once (a middle rank sends 2S).
//   one_shot  all_reduce in 1 step: every rank reads every peer's whole buffer ((n-1)S) and reduces locally
//             (TensorRT-LLM / PyTorch symmetric-memory custom all-reduce).
//   two_shot  all_reduce in 2 steps: reduce-scatter then all-gather, each by direct exchange of S/n with every
//             peer ((n-1)S/n per step).
//   nvls      all_reduce with in-switch reduction (NVLink SHARP): multimem.ld_reduce of each rank's slice then
//             multimem.st of the result, pipelined, so each GPU pushes S + S/n into the switch and receives
//             S/n + S, at the switch's reduction efficiency; needs NVSwitches that reduce.
//   direct    all_to_all: S/n to every peer at once.
//
// A lone collective takes
//
//   time = launch + base + latency_steps * (step_latency + route_latency) + serial_bytes / rate
//   rate = min(line_rate * sm_efficiency * protocol_efficiency * relative_rate(kind) * min(1, channels / links)
//              [* reduction], max_bandwidth)
//
// where channels is what the op forces, else, for ring and tree, NCCL's ramp (src/enqueue.cc topoGetAlgoInfo: fewer
// channels while bytes < channels x threads x threadThreshold):
//
//   channels(S) = clamp(floor(S / threshold), 1, links),  threshold = channel_bytes(protocol) [x ranks for ring LL]
//
// so that a ring runs one channel up to 2 thresholds, then grows its rate with the size (time flat over a range of
// mid sizes) until every link has its channel. nvls, one_shot, two_shot and direct run all their channels.
// where relative_rate is the payload rate of the kind's kernels relative to all_reduce's: NCCL runs a different
// kernel per collective (all_gather copies to its own output as it sends, broadcast only sends from the root), and
// on our H200 x2 traces their rates stand in the same ratios under LL, LL128 and Simple.
// where serial_bytes is what a rank's busiest link direction carries one step after another. The algorithm and
// protocol (LL, LL128, Simple) are chosen by size as NCCL does -- the pair with the smallest predicted time among
// ring, tree and nvls (one_shot and two_shot need symmetric memory, so they run only when forced) -- unless the op
// forces them. Constants follow NCCL's own tuning model (docs/hardware.md#nccl-model).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "models/stream.hpp"
#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim::models {
namespace nccl {
struct System;
}

enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast };
enum class Protocol { ll, ll128, simple };
/// nvls_tree and collnet run across nodes: NVLS inside each node with a double binary tree between the nodes'
/// heads, and in-network reduction by SHARP switches (NCCL's CollNetDirect).
enum class Algorithm { ring, tree, one_shot, two_shot, nvls, direct, nvls_tree, collnet };

std::string_view to_string(CollectiveKind kind);
std::string_view to_string(Protocol protocol);
std::string_view to_string(Algorithm algorithm);
std::optional<CollectiveKind> collective_kind(std::string_view name);
std::optional<Protocol> protocol(std::string_view name);
std::optional<Algorithm> algorithm(std::string_view name);
/// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n, all_gather / reduce_scatter / all_to_all (n-1)/n,
/// broadcast 1.
double bus_bandwidth_factor(CollectiveKind kind, int ranks);

/// The algorithms that can run a collective, in order of preference on ties.
std::vector<Algorithm> algorithms_for(CollectiveKind kind);
/// The protocols an algorithm runs with (nvls, one_shot, two_shot and direct: Simple only, as in NCCL).
std::vector<Protocol> protocols_for(Algorithm algorithm);
/// The in-switch reduction efficiency shared by every NVSwitch that a GPU of `fabric` reaches over NVLink, or 0 when
/// some GPU has no NVLink switch or one of them cannot reduce (then nvls cannot run).
double switch_reduction(const Fabric& fabric);
/// The same for a group of GPUs: 0 unless they are all in one NVLink domain (Fabric::nvlink_domain), where NVLS can
/// reduce; a superpod's NVSwitches reduce within a node only.
double switch_reduction(const Fabric& fabric, const std::vector<DeviceId>& gpus);
/// NCCL's node of each GPU of `gpus`, numbered from 0 in order of first appearance: the GPUs that reach each other
/// without a NIC (a host's NVLink or PCIe domain; a whole NVL72 rack, as NCCL's MNNVL makes it one node).
std::vector<int> nodes_of(const Fabric& fabric, const std::vector<DeviceId>& gpus);
/// Lanes from `gpu` into its NVLink or PCIe switches, at least 1: NCCL runs a channel per link's worth of bandwidth.
int switch_links(const Fabric& fabric, DeviceId gpu);
/// NCCL's channel count for `size` bytes: one channel per `threshold` bytes, at least 1 and at most `links`
/// (src/enqueue.cc topoGetAlgoInfo drops a channel while size < channels x threshold).
int ramp_channels(Bytes size, Bytes threshold, int links);

/// How one step moves data between the ranks.
enum class Pattern {
  ring,       // send to the next rank, receive from the previous one
  all_peers,  // send to every other rank and receive from every other rank at once
  chain,      // chunks pipelined along a chain: broadcast from the root; tree: up to the root and back down
  nodes,      // across nodes: each pair's flows follow from the group's nodes (runtime/collective_executor.cpp)
};

/// The data movement of a plan, without protocol or platform: what calibration needs for its design matrix.
struct CollectiveShape {
  Pattern pattern = Pattern::ring;
  int steps = 0;       // transfer steps per rank (chains: chunk stages)
  Bytes step_bytes;    // payload of one transfer (per peer for all_peers, per chunk for chains)
  int peers = 1;       // transfers a rank starts per step
  int chunks = 1;      // chains: chunks in the pipeline
  int latency_steps;   // how many times a lone collective pays step latency + route latency
  Bytes serial_bytes;  // payload through a rank's busiest link direction, one step after another
};

struct ProtocolParams {
  double efficiency = 1;         // payload share of a line after flags (LL 8 of 16 B, LL128 120 of 128 B)
  BytesPerSecond max_bandwidth;  // per-rank payload rate cap; 0 = none (LL's llMaxBw)
  Seconds base_latency;          // once per collective (kernel start, setup)
  Seconds step_latency;          // per algorithm step, on top of the route's wire latency
  Bytes channel_bytes;           // bytes per channel before ring and tree add one (NCCL's threads x threadThreshold)
};

/// Per-algorithm latencies (efficiency and rate caps belong to the protocol's line format).
struct Latencies {
  Seconds base_latency;
  Seconds step_latency;
};

/// What a collective needs to know about the platform, seen from one rank.
struct CollectivePlatform {
  BytesPerSecond line_rate;     // the route's bottleneck line rate to a peer, one direction
  double sm_efficiency = 1;     // payload share of the line rate that SM copies reach
  Seconds hop_latency;          // the route's wire latency
  int links = 1;                // NVLinks (or PCIe links) leaving a GPU: NCCL runs a channel per link's worth
  double switch_reduction = 0;  // in-switch reduction efficiency; 0 = no NVLS on this platform
  int nodes = 1;                // NCCL's nodes the group spans (NVLink domains); ranks per node = ranks / nodes
  // What NCCL's tuning model sees of the group (models/nccl_tuning.hpp); set, it chooses the algorithm, protocol and
  // channel count as NCCL does; unset (2 ranks in one node, where our traces calibrate snsim's own choice, or a GPU
  // NCCL's tables do not cover), the pair with the smallest predicted time wins.
  const nccl::System* nccl = nullptr;
};

/// What a collective op asks for.
struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::all_reduce;
  Bytes bytes;
  int ranks = 2;
  std::optional<Algorithm> algorithm;  // forced, else chosen by size
  std::optional<Protocol> protocol;    // forced, else chosen by size
  std::optional<int> channels;         // forced, else NCCL's ramp up to one per link (channels_for)
  Launch launch = Launch::stream;
};

/// What one rank does for one collective.
struct CollectivePlan {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  CollectiveShape shape;
  int channels = 1;
  Seconds launch;                // kernel launch, stream or graph
  Seconds base_latency;          // once per collective
  Seconds step_latency;          // per latency step, on top of the route's wire latency
  double efficiency = 1;         // protocol payload efficiency (SM copy efficiency is the platform's)
  double rate_scale = 1;         // share of the SM copy rate: channels / links, times the switch's reduction efficiency
  BytesPerSecond max_bandwidth;  // per-rank payload rate cap; 0 = none
  int nodes = 1;                 // nodes the group spans
  Seconds network_latency;       // once per collective: the inter-node steps' latency beyond the intra-node steps'
  bool nccl_choice = false;      // the algorithm, protocol and channels are NCCL's tuning model's pick
};

/// Every parameter is set by collective_params(), where its default, range and source are declared.
class CollectiveModel final : public Model {
 public:
  std::array<ProtocolParams, 3> protocols{};  // indexed by Protocol; ring's latencies
  std::array<Latencies, 3> tree{};            // indexed by Protocol
  Latencies one_shot;
  Latencies two_shot;
  std::optional<Latencies> direct;  // all_to_all's grouped sends; unset = the chosen protocol's ring latencies
  bool nvls_enabled = false;        // NCCL_NVLS_ENABLE
  Seconds nvls_latency;             // NVLS fixed cost (NCCL: base 0, hwLat 25 us)
  Seconds stream_launch;            // what a kernel launched from a stream costs the GPU (launch, NCCL's work upload)
  Seconds graph_launch;             // the same for a kernel node of a CUDA graph
  Seconds host_call;                // NCCL's CPU time per collective call on a stream (enqueue and kernel launch)
  Seconds host_p2p_call;            // the CPU time each send or recv adds to a grouped call (all_to_all)
  Seconds framework_call;           // a framework's own per-call cost on top (PyTorch c10d), either launch
  Seconds barrier_latency;          // a device-side barrier across the ranks
  Bytes chain_chunk;                // pipeline chunk of broadcast and tree
  int max_chunks = 0;               // at most this many chunks per pipeline
  std::optional<Algorithm> forced_algorithm;  // every collective's algorithm where it can run (NCCL_ALGO)
  std::optional<Protocol> forced_protocol;    // every collective's protocol where it can run (NCCL_PROTO)
  double nic_efficiency = 1;                  // payload share of a NIC's line rate that NCCL reaches
  std::array<double, 5> relative_rate{};      // indexed by CollectiveKind; all_reduce's is the reference

  const ProtocolParams& params(Protocol p) const { return protocols[static_cast<std::size_t>(p)]; }

  /// The CPU time one call of `kind` on `ranks` costs the host thread: a loop of calls on a stream (nccl-tests) runs
  /// no faster. all_to_all is a group of a send and a recv to every rank (nccl-tests' alltoall, itself included).
  Seconds host_cost(CollectiveKind kind, int ranks) const;

  /// The channels a plan runs: the forced count, else NCCL's ramp for ring and tree (LL's threshold on a ring
  /// grows with the ranks, as in NCCL), else one per link.
  int channels_for(const CollectiveRequest& request, Algorithm algorithm, Protocol protocol,
                   const CollectivePlatform& platform) const;

  /// The data movement of (kind, bytes, ranks, algorithm); channels and protocol change only rates and latencies.
  /// Throws std::logic_error for an algorithm that cannot run `kind`.
  CollectiveShape shape(CollectiveKind kind, Bytes size, int ranks, Algorithm algorithm) const;
  /// The plan for a forced (algorithm, protocol) pair, without checking that the platform can run it.
  CollectivePlan make_plan(const CollectiveRequest& request, Algorithm algorithm, Protocol protocol,
                           const CollectivePlatform& platform) const;
  /// The plan for one collective: the forced algorithm and protocol, else NCCL's pick where the platform carries
  /// NCCL's view (CollectivePlatform::nccl), else the pair with the smallest predicted time.
  CollectivePlan plan(const CollectiveRequest& request, const CollectivePlatform& platform) const;
  /// Per-rank payload rate of a plan without contention.
  BytesPerSecond rate(const CollectivePlan& plan, const CollectivePlatform& platform) const;
  /// Predicted time of a plan without contention: what a lone collective takes (the selection criterion).
  Seconds predict(const CollectivePlan& plan, const CollectivePlatform& platform) const;
};

/// The parameters of models.collective, declared once.
const ParamTable<CollectiveModel>& collective_params();
Registry<Model>::Entry collective_model_entry();

}  // namespace snsim::models
