// NCCL's own tuning model, as NCCL 2.30.7 evaluates it to choose an algorithm and a protocol for a collective
// (src/graph/tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime, src/enqueue.cc topoGetAlgoInfo), restated from
// docs/nccl.md sections 5 and 6: per (function, algorithm, protocol) a latency in us and a bandwidth in GB/s computed
// from the graph search's channels and per-channel speeds, and time = latency + bytes / bandwidth; the smallest time
// wins. snsim uses it for two things only: which algorithm and protocol a collective runs (and on how many channels),
// and as a consistency reference in tests. The time snsim predicts is its own (models/collective.hpp and the flows of
// runtime/collective_executor.cpp); this model's times are never fitted to and never replace them.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "models/collective.hpp"

namespace snsim::models::nccl {

/// The GPU architecture rows of NCCL's tables (src/graph/tuning.cc), from the communicator's lowest compute
/// capability.
enum class Arch { volta, ampere, hopper, blackwell };
/// NCCL's algorithms, in NCCL's order (ties go to the first).
enum class Algo { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
/// The functions of NCCL's tuning tables (send/recv and all-to-all have none).
enum class Func { broadcast, reduce, all_gather, reduce_scatter, all_reduce };
inline constexpr int ALGOS = 7;
inline constexpr int PROTOS = 3;  // models::Protocol: LL, LL128, Simple

std::string_view to_string(Algo algo);
std::optional<Algo> algo(std::string_view name);  // NCCL_ALGO's names, case-insensitive: "ring", "NVLSTree", ...
std::optional<Func> func(CollectiveKind kind);    // nullopt for all_to_all
/// The GPU preset names snsim knows to NCCL's architecture row: h100/h200 Hopper, b200/gb200 Blackwell, a100 Ampere.
std::optional<Arch> arch_of(std::string_view gpu_model);

/// One graph of NCCL's topology search: search channels and their per-channel speeds (GB/s).
struct Graph {
  int channels = 0;
  double bw_intra = 0;
  double bw_inter = 0;
  bool balanced_tree = true;  // tree graphs: BALANCED_TREE pattern (else TREE, which NCCL derates by 0.85)
  bool nvlink = true;         // the intra-node path is NVLink (else PCIe latencies)
};

/// What NCCL's model sees of a communicator.
struct System {
  Arch arch = Arch::hopper;
  int nodes = 1;  // NCCL's nodes: hosts, or NVLink cliques (MNNVL: a whole NVL72 rack is one node)
  int ranks = 8;
  bool amd_host = false;
  Graph ring, tree, nvls, collnet;
  int compute_channels = 0;      // coll channels after duplication
  int nvls_channels = 0;         // NVLS compute channels
  bool nvls_support = false;     // NVLS/NVLSTree (SM90+, NVSwitches with multicast)
  bool collnet_support = false;  // a CollNet (SHARP) plugin with NCCL_COLLNET_ENABLE=1
  int ranks_per_node() const { return ranks / nodes; }
};

/// The machine whose graphs derive() searches: per node `gpus` GPUs of `arch` with `nvlinks` NVLinks each to
/// NVSwitches (0: none, PCIe only), `nics` NICs of `nic_bandwidth` each. SHARP switches enable CollNet.
struct Machine {
  Arch arch = Arch::hopper;
  int nodes = 1;
  int gpus_per_node = 8;
  int nvlinks = 18;
  int nics = 8;
  BytesPerSecond nic_bandwidth{50e9};
  bool nvls = true;
  bool sharp = false;
  bool amd_host = false;
};
/// NCCL's graph search results for a machine, by the rules of docs/nccl.md section 5 (reproduces its 5.4 table: one
/// HGX node ring 12 x 30, tree 12 x 30, NVLS 8 ch 40/60, 24 compute and 16 NVLS channels; several nodes ring and tree
/// 8 x 48 one NIC each, NVLS 8 ch 40/48, 16 and 16; an NVL72 rack ring 16 x 45, NVLS 32 x 20/40, 32 and 24).
System derive(const Machine& machine);

/// NCCL's latency (us) and bandwidth (GB/s, an algorithm bandwidth as NCCL stores it; 0 = disabled).
struct Entry {
  double latency_us = 0;
  double bandwidth = 0;
};
Entry entry(const System& system, Func f, Algo a, Protocol p);
/// ncclTopoGetAlgoTime: latency + bytes / bandwidth with the tree correction factors and the multi-node ring plateau;
/// -1 when the combination cannot run.
double time_us(const System& system, Func f, Algo a, Protocol p, double bytes);

/// The share of NCCL's latency that its network steps add beyond what the same steps would cost inside a node (us):
/// ring n_inter x (netLat - intraLat) plus the proxy overhead where it exceeds intraLat, tree and NVLSTree
/// 2 log2(nodes) netLat, NVLS and CollNet one netLat; 0 on one node.
double network_latency_us(const System& system, Func f, Algo a, Protocol p);

/// One network step of NCCL's rings (us): what a send across nodes costs beyond an NVLink step, for the collectives
/// NCCL's tables leave out (all-to-all, send/recv).
double network_step_us(Protocol p);

/// NVLSTree's algorithm bandwidth cap (GB/s): channels x NCCL's per-channel NVLSTree maximum (Hopper 57.7 on 2 nodes,
/// 45.5 beyond), as an algorithm bandwidth; 0 where the table has none.
double nvls_tree_cap(const System& system);

/// What the user allows (NCCL_ALGO / NCCL_PROTO): a set per algorithm and per protocol.
struct Allowed {
  std::array<bool, ALGOS> algos{true, true, true, true, true, true, true};
  std::array<bool, PROTOS> protos{true, true, true};
};
/// topoGetAlgoInfo's result for one operation: the pick, its time, and the channels and threads it runs on.
struct Choice {
  Algo algo = Algo::ring;
  Protocol protocol = Protocol::simple;
  double time_us = 0;
  int channels = 1;
  int threads = 0;
};
/// The combination with the smallest time, or nullopt when nothing allowed can run (NCCL: "No algorithm/protocol
/// available").
std::optional<Choice> choose(const System& system, Func f, double bytes, const Allowed& allowed = {});
/// The channels and threads NCCL gives one operation of `bytes` with (a, p): fewer while bytes < channels x threads x
/// threshold (docs/nccl.md 6.6).
std::pair<int, int> channels_and_threads(const System& system, Func f, Algo a, Protocol p, double bytes);

}  // namespace snsim::models::nccl
