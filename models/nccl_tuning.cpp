#include "models/nccl_tuning.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

namespace snsim::models::nccl {
namespace {

constexpr std::array<std::string_view, ALGOS> ALGO_NAMES{"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                                         "NVLSTree", "PAT"};

constexpr int TREE = 0;  // NCCL's index of Tree: PAT and one-rank-per-node rings take its network latency
constexpr int NVL_FABRIC = 0, PCI_FABRIC = 1, NET_FABRIC = 2;

// All constants below: NCCL v2.30.7 src/graph/tuning.cc, as tabulated in docs/nccl.md 6.1.
constexpr double BASE_LAT[ALGOS][PROTOS] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},      {0, 0, 0},
                                            {0, 0, 0},        {0, 0, 0},        {8.0, 8.0, 8.0}};
constexpr double HW_LAT[3][ALGOS][PROTOS] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// Rows: Volta, Ampere, Hopper, Blackwell; columns: 1 node, 2 nodes, >= 3 nodes.
constexpr double LL_MAX_BW[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double PER_CH_RING_LL128[4] = {20, 20, 36.7, 40};
constexpr double PER_CH_TREE_LL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double PER_CH_TREE[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double PER_CH_NVLS_TREE[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
constexpr double NVLS_EFFICIENCY[4] = {0, 0, 0.85, 0.74};
// treeCorrectionFactor[protocol][floor(log2(bytes)) - 6] for 64 B <= bytes < 512 MiB.
constexpr double TREE_CORRECTION[PROTOS][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// Graph-search speed lists (GB/s), src/graph/search.cc.
constexpr std::array<double, 11> SM90_INTRA{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr std::array<double, 17> SM90_INTER{48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
constexpr std::array<double, 12> SM100_INTRA{90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
constexpr std::array<double, 20> SM100_INTER{96, 86,   80, 48, 45.1, 42, 40,  30,  24,   22,
                                             20, 17.5, 15, 12, 6,    3,  2.4, 1.2, 0.24, 0.12};
// NVLink per link as the search counts it (src/graph/topo.h): SM90 20.6, SM100 40.1, SM80 20.0, SM70 20.0 GB/s.
constexpr double NVLINK_BW[4] = {20.0, 20.0, 20.6, 40.1};

int arch_row(Arch a) {
  return static_cast<int>(a);
}
int node_column(int nodes) {
  return nodes <= 2 ? nodes - 1 : 2;
}
int log2i(int v) {
  int r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

const Graph& graph_of(const System& s, Algo a) {
  switch (a) {
    case Algo::ring:
      return s.ring;
    case Algo::collnet_direct:
    case Algo::collnet_chain:
      return s.collnet;
    case Algo::nvls:
    case Algo::nvls_tree:
      return s.nvls;
    default:  // Tree and PAT use the tree graph
      return s.tree;
  }
}

// Whether NCCL's model considers (f, a, p) at all, before its bandwidth makes it 0 (docs/nccl.md 2 and 6.5).
bool considered(const System& s, Func f, Algo a, Protocol p) {
  const int ppn = s.ranks_per_node();
  const bool simple_only = a != Algo::ring && a != Algo::tree;
  if (simple_only && p != Protocol::simple) return false;
  switch (a) {
    case Algo::ring:
      return true;
    case Algo::tree:
      return f == Func::all_reduce;
    case Algo::collnet_direct:
    case Algo::collnet_chain:
      return s.collnet_support && s.nodes >= 2 && f == Func::all_reduce;
    case Algo::nvls:
      if (!s.nvls_support) return false;
      if (f != Func::all_reduce && f != Func::all_gather && f != Func::reduce_scatter) return false;
      if (f != Func::all_reduce && ppn > 32) return false;
      return s.nodes == 1 || s.collnet_support;  // across nodes only as NVLS+SHARP
    case Algo::nvls_tree:
      return s.nvls_support && s.nodes > 1 && f == Func::all_reduce;
    case Algo::pat:
      return (f == Func::all_gather || f == Func::reduce_scatter) && s.nodes == s.ranks && s.nodes > 1;
  }
  return false;
}

}  // namespace

std::string_view to_string(Algo a) {
  return ALGO_NAMES[static_cast<std::size_t>(a)];
}

std::optional<Algo> algo(std::string_view name) {
  auto lower = [](std::string_view v) {
    std::string out(v);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (std::size_t i = 0; i < ALGO_NAMES.size(); ++i)
    if (lower(ALGO_NAMES[i]) == lower(name)) return static_cast<Algo>(i);
  return std::nullopt;
}

std::optional<Func> func(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return Func::all_reduce;
    case CollectiveKind::all_gather:
      return Func::all_gather;
    case CollectiveKind::reduce_scatter:
      return Func::reduce_scatter;
    case CollectiveKind::broadcast:
      return Func::broadcast;
    case CollectiveKind::all_to_all:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Arch> arch_of(std::string_view gpu_model) {
  if (gpu_model == "h100" || gpu_model == "h200" || gpu_model == "h20" || gpu_model == "h800") return Arch::hopper;
  if (gpu_model == "b200" || gpu_model == "gb200" || gpu_model == "b300" || gpu_model == "gb300")
    return Arch::blackwell;
  if (gpu_model == "a100" || gpu_model == "a800") return Arch::ampere;
  if (gpu_model == "v100") return Arch::volta;
  return std::nullopt;
}

System derive(const Machine& m) {
  System s;
  s.arch = m.arch;
  s.nodes = std::max(1, m.nodes);
  s.ranks = s.nodes * std::max(1, m.gpus_per_node);
  s.amd_host = m.amd_host;
  const bool blackwell = m.arch == Arch::blackwell;
  const bool hopper_or_later = m.arch == Arch::hopper || blackwell;
  const std::vector<double> intra = blackwell ? std::vector<double>(SM100_INTRA.begin(), SM100_INTRA.end())
                                              : std::vector<double>(SM90_INTRA.begin(), SM90_INTRA.end());
  const std::vector<double> inter = blackwell ? std::vector<double>(SM100_INTER.begin(), SM100_INTER.end())
                                              : std::vector<double>(SM90_INTER.begin(), SM90_INTER.end());
  // A GPU's NVLinks to NVSwitches count as one link of count x perLinkBw; without them, PCIe Gen5 x16 (48 GB/s).
  const bool nvswitch = m.nvlinks > 0;
  const double total = nvswitch ? m.nvlinks * NVLINK_BW[arch_row(m.arch)] : 48.0;
  const int gpus = std::max(1, m.gpus_per_node);
  auto first_at_most = [](const std::vector<double>& speeds, double limit) {
    for (double v : speeds)
      if (v <= limit + 1e-9) return v;
    return speeds.back();
  };
  if (s.nodes == 1) {
    // As many channels as fit at the highest speed, then duplicated (half speed each) unless the speed is below 25,
    // or (SM > 80) below 50 with more than 4 channels.
    const double speed = first_at_most(intra, total);
    int channels = std::clamp(static_cast<int>(std::floor(total / speed + 1e-9)), 1, 32);
    double bw = speed;
    const bool keep = bw < 25 || (hopper_or_later && bw < 50 && channels > 4);
    if (!keep) {
      channels *= 2;
      bw /= 2;
    }
    s.ring = {channels, bw, bw, true, nvswitch};
    s.tree = s.ring;
  } else {
    // One channel per NIC's worth at the highest inter-node speed the NIC carries, within the NVLink budget (every GPU
    // but the channel's exit sends over NVLink); 48 < 50 with more than 4 channels: not duplicated.
    const double nic = m.nic_bandwidth.count() / 1e9;
    const double speed = first_at_most(inter, nic);
    const int per_nic = std::max(1, static_cast<int>(std::floor(nic / speed + 1e-9)));
    const double nvlink_budget = gpus > 1 ? total / speed * gpus / (gpus - 1) : 64.0;
    int channels = std::clamp(std::min(std::max(1, m.nics) * per_nic, static_cast<int>(nvlink_budget + 1e-9)), 1, 32);
    s.ring = {channels, speed, speed, true, nvswitch};
    // SM90+: the balanced tree fails at PIX and the search takes the simpler TREE pattern first.
    s.tree = {channels, speed, speed, !hopper_or_later, nvswitch};
  }
  // NVLS: one channel per GPU (at most 32), the head of each needs twice the speed; bwInter raised up to twice
  // bwIntra, within the speed list (across nodes, within the NIC's inter-node speed).
  s.nvls_support = m.nvls && hopper_or_later && nvswitch && gpus >= 2;
  if (s.nvls_support) {
    const int channels = std::min(32, gpus);
    const double speed = first_at_most(intra, total / (channels + 1));
    const double raised = s.nodes > 1 ? std::min(2 * speed, first_at_most(inter, m.nic_bandwidth.count() / 1e9))
                                      : std::min(2 * speed, intra.front());
    s.nvls = {channels, speed, raised, true, true};
    s.nvls_channels = blackwell ? (s.nodes > 1 ? 32 : 24) : 16;
  }
  // Compute channels: twice the search channels, twice again on several SM90+ nodes with fast rings and fewer than
  // 16; at most 64.
  int compute = 2 * std::min(s.ring.channels, s.tree.channels);
  if (s.nodes > 1 && hopper_or_later && s.ring.bw_intra > 45 && compute < 16) compute *= 2;
  s.compute_channels = std::min(64, compute);
  // CollNet (SHARP): one head per NIC, the NIC's inter-node speed.
  s.collnet_support = m.sharp && s.nodes >= 2 && nvswitch && gpus <= 8;
  if (s.collnet_support) {
    const double nic = m.nic_bandwidth.count() / 1e9;
    const double speed = first_at_most(inter, nic);
    s.collnet = {std::max(1, std::min(m.nics, gpus)), speed, speed, true, nvswitch};
  }
  return s;
}

Entry entry(const System& s, Func f, Algo a, Protocol p) {
  const int ai = static_cast<int>(a), pi = static_cast<int>(p), row = arch_row(s.arch), col = node_column(s.nodes);
  Entry e;
  if (!considered(s, f, a, p)) return e;
  const Graph& g = graph_of(s, a);
  const int n = s.ranks, ppn = s.ranks_per_node(), ch = g.channels;
  if (ch <= 0) return e;
  const int nsteps = f == Func::all_reduce                                  ? 2 * (n - 1)
                     : (f == Func::all_gather || f == Func::reduce_scatter) ? n - 1
                                                                            : n;
  const bool collnet = a == Algo::collnet_direct || a == Algo::collnet_chain;
  const bool nvls_like = a == Algo::nvls || a == Algo::nvls_tree;
  const bool ag_rs = f == Func::all_gather || f == Func::reduce_scatter;
  // llMaxBw: on one node by architecture; on several by CPU vendor (Intel and others the first row, AMD the second).
  const double ll_max = s.nodes == 1 ? LL_MAX_BW[row][0] : LL_MAX_BW[s.amd_host ? 1 : 0][col];

  // Bandwidth (docs/nccl.md 6.3).
  double bw = (s.nodes <= 2 || collnet) ? g.bw_intra : g.bw_inter;
  if (nvls_like) {
    if (ch < 2) return e;
    double intra = g.bw_intra * NVLS_EFFICIENCY[row] * (ch - 1) / ch;
    if (f == Func::all_reduce) intra *= 2;
    if (ag_rs) intra *= static_cast<double>(ppn - 1) / ppn;
    double inter_bw = g.bw_inter;
    if (a == Algo::nvls_tree && s.nodes <= 2) inter_bw *= 2;
    bw = std::min(intra, inter_bw);
    if (a == Algo::nvls_tree) bw = std::min(bw, PER_CH_NVLS_TREE[row][col]);
  }
  double bus = ch * bw;
  if (a == Algo::ring && p == Protocol::ll) bus = std::min(ll_max, 0.5 * bus);
  if (a == Algo::ring && p == Protocol::ll128) bus = std::min(0.92 * bus, ch * PER_CH_RING_LL128[row]);
  if (a == Algo::tree && f == Func::all_reduce) bus = std::min(0.92 * bus, ch * PER_CH_TREE[row][col]);
  if (a == Algo::tree && p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
  if (a == Algo::tree && p == Protocol::ll128)
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * PER_CH_TREE_LL128[row][col]);
  if (a == Algo::tree && !g.balanced_tree) bus *= 0.85;
  if (a == Algo::pat) bus *= 0.75;
  if (collnet && p != Protocol::simple) bus = 0;
  if (a == Algo::collnet_direct && p == Protocol::simple) {
    if (ag_rs) {
      bus = ppn * std::min(g.bw_intra, 0.9 * g.bw_inter);
    } else {
      const double ratio = static_cast<double>(ppn) / ch;
      bus /= (ratio + 1) / 2;
      if (s.arch == Arch::hopper || s.arch == Arch::blackwell) bus *= 0.85;
    }
  }
  if ((a == Algo::nvls || a == Algo::collnet_direct) && ag_rs && s.nodes > 1) bus = 0;
  // To an algorithm bandwidth, except non-ring AG/RS, which keep the bus bandwidth.
  if (!(ag_rs && a != Algo::ring)) {
    if (a == Algo::ring || nvls_like) bus *= static_cast<double>(n) / nsteps;
    if (a == Algo::tree || collnet) bus *= 0.5;
  }
  e.bandwidth = bus;

  // Latency (docs/nccl.md 6.4); the IB transport's latencyInter is 0.
  const int fabric = g.nvlink ? NVL_FABRIC : PCI_FABRIC;
  const double base = BASE_LAT[ai][pi];
  const double intra_lat = HW_LAT[fabric][ai][pi];
  const double inter_lat = ppn == 1 ? HW_LAT[NET_FABRIC][TREE][pi] : HW_LAT[NET_FABRIC][ai][pi];
  const int log_nodes = log2i(s.nodes);
  double lat = base;
  switch (a) {
    case Algo::ring:
      if (f == Func::all_reduce || ag_rs) {
        const int n_inter = s.nodes == 1 ? 0 : (f == Func::all_reduce ? 2 * (s.nodes - 1) : s.nodes - 1);
        double overhead = s.nodes == 1 ? 0.0 : (s.amd_host ? 2.0 : 1.0);
        if (p == Protocol::simple) overhead *= 3;
        lat = base + (nsteps - n_inter) * std::max(intra_lat, overhead) + n_inter * inter_lat;
      } else {
        lat = base + (p == Protocol::simple ? HW_LAT[fabric][TREE][pi] : intra_lat);
      }
      break;
    case Algo::tree:
      lat = base + 2 * ((ppn - 1) * intra_lat + log_nodes * inter_lat);
      break;
    case Algo::collnet_direct:
      lat = base + 2 * (std::min(1, ppn - 1) * intra_lat + 0.4 * (ppn - 1)) + inter_lat;
      break;
    case Algo::collnet_chain:
      lat = base + 2 * (ppn - 1) * intra_lat + inter_lat;
      break;
    case Algo::nvls:
      lat = intra_lat + (s.nodes > 1 ? inter_lat : 0);
      break;
    case Algo::nvls_tree:
      lat = intra_lat + 2 * log_nodes * inter_lat;
      break;
    case Algo::pat:
      lat = base + log_nodes * inter_lat / 3.5 + 2.8 * n;
      break;
  }
  e.latency_us = lat;
  return e;
}

double network_latency_us(const System& s, Func f, Algo a, Protocol p) {
  if (s.nodes <= 1 || !considered(s, f, a, p)) return 0;
  const int ai = static_cast<int>(a), pi = static_cast<int>(p);
  const Graph& g = graph_of(s, a);
  const int n = s.ranks, ppn = s.ranks_per_node();
  const bool ag_rs = f == Func::all_gather || f == Func::reduce_scatter;
  const double intra_lat = HW_LAT[g.nvlink ? NVL_FABRIC : PCI_FABRIC][ai][pi];
  const double inter_lat = ppn == 1 ? HW_LAT[NET_FABRIC][TREE][pi] : HW_LAT[NET_FABRIC][ai][pi];
  const int log_nodes = log2i(s.nodes);
  switch (a) {
    case Algo::ring: {
      if (f != Func::all_reduce && !ag_rs) return 0;
      const int nsteps = f == Func::all_reduce ? 2 * (n - 1) : n - 1;
      const int n_inter = f == Func::all_reduce ? 2 * (s.nodes - 1) : s.nodes - 1;
      double overhead = s.amd_host ? 2.0 : 1.0;
      if (p == Protocol::simple) overhead *= 3;
      return n_inter * (inter_lat - intra_lat) + (nsteps - n_inter) * std::max(0.0, overhead - intra_lat);
    }
    case Algo::tree:
    case Algo::nvls_tree:
      return 2 * log_nodes * inter_lat;
    case Algo::pat:
      return log_nodes * inter_lat / 3.5;
    default:
      return inter_lat;
  }
}

double network_step_us(Protocol p) {
  const int pi = static_cast<int>(p);
  return HW_LAT[NET_FABRIC][static_cast<int>(Algo::ring)][pi] - HW_LAT[NVL_FABRIC][static_cast<int>(Algo::ring)][pi];
}

double nvls_tree_cap(const System& s) {
  if (s.nodes <= 1 || s.nvls.channels <= 0) return 0;
  const double bus = s.nvls.channels * PER_CH_NVLS_TREE[arch_row(s.arch)][node_column(s.nodes)];
  return bus * s.ranks / (2.0 * (s.ranks - 1));
}

double time_us(const System& s, Func f, Algo a, Protocol p, double bytes) {
  const Entry e = entry(s, f, a, p);
  if (e.bandwidth <= 0) return -1;
  double bw = e.bandwidth;
  double lat = e.latency_us;
  const bool tree_corrected =
      f == Func::all_reduce && (a == Algo::tree || (a == Algo::nvls_tree && s.arch == Arch::blackwell && !s.amd_host));
  if (tree_corrected && bytes >= 64 && bytes < 512.0 * 1024 * 1024) {
    const int index = static_cast<int>(std::floor(std::log2(bytes))) - 6;
    bw *= TREE_CORRECTION[static_cast<int>(p)][std::clamp(index, 0, 22)];
  }
  if (a == Algo::ring && p == Protocol::simple && f == Func::all_reduce && s.nodes > 1 &&
      bytes / (static_cast<double>(s.compute_channels) * s.ranks) >= 64)
    lat *= 1.4;
  return lat + bytes / (1000 * bw);
}

std::pair<int, int> channels_and_threads(const System& s, Func f, Algo a, Protocol p, double bytes) {
  (void)f;
  if (a == Algo::nvls || a == Algo::nvls_tree) {
    const int nc = s.nodes > 1 ? std::min(s.nvls_channels, s.compute_channels) : s.nvls_channels;
    return {std::max(1, nc), 640};
  }
  if (a == Algo::collnet_direct || a == Algo::collnet_chain) return {std::max(1, s.compute_channels), 640};
  int nt = p == Protocol::ll128 ? 640 : 512;
  double threshold = p == Protocol::simple ? 64 : 8;
  if (a == Algo::ring && p == Protocol::ll) threshold *= s.ranks;
  int nc = std::max(1, s.compute_channels);
  while (bytes < static_cast<double>(nc) * nt * threshold) {
    if (nc >= 2)
      --nc;
    else if (nt % 128 == 0)
      nt /= 2;
    else
      break;
  }
  if (p == Protocol::simple) nt += a == Algo::ring ? 32 : 128;
  nt = std::max(nt, 96);
  if (a == Algo::tree || a == Algo::pat) nt = 640;
  return {nc, nt};
}

std::optional<Choice> choose(const System& s, Func f, double bytes, const Allowed& allowed) {
  std::optional<Choice> best;
  for (int a = 0; a < ALGOS; ++a) {
    if (!allowed.algos[static_cast<std::size_t>(a)]) continue;
    for (int p = 0; p < PROTOS; ++p) {
      if (!allowed.protos[static_cast<std::size_t>(p)]) continue;
      const double t = time_us(s, f, static_cast<Algo>(a), static_cast<Protocol>(p), bytes);
      if (t < 0 || (best && t >= best->time_us)) continue;
      best = Choice{static_cast<Algo>(a), static_cast<Protocol>(p), t, 1, 0};
    }
  }
  if (best) std::tie(best->channels, best->threads) = channels_and_threads(s, f, best->algo, best->protocol, bytes);
  return best;
}

}  // namespace snsim::models::nccl
