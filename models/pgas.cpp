#include "models/pgas.hpp"

#include <algorithm>
#include <cmath>

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 3> SCOPE_NAMES{"thread", "warp", "block"};

// Every default comes from our H200 x2 captures (validation/traces/h200/, CAPTURES.md): `nvshmem/...` records are
// in h200x2-nvshmem.jsonl, `latency/...` in h200x2-latency-jitter.jsonl, `uvm/...` in h200x2-uvm.jsonl; medians.
// They are solved from the formulas in pgas.hpp with the route these GPUs show: L = 354.3 ns one way, half of
// what a peer pointer chase adds to a local one, (850.2 - 141.5) / 2 ns [latency/peer_load/chase/0-1/4194304,
// latency/local_load/chase/0/4194304], and B = 450 GB/s (18 NVLink4 links). `snsim calibrate` refits them.
struct ScopeDefault {
  double issue_ns, put_gbps, get_gbps, efficiency, barrier_round_ns;
};
constexpr std::array<ScopeDefault, 3> SCOPE_DEFAULTS{{
    // thread: issue = 8 B / 2.923e7 B/s, 1000 puts by one thread [nvshmem/put_rate/thread/0-1/8]; put rate = the
    // slope of put+quiet from 32 to 64 KiB [nvshmem/put_latency/thread/0-1/{32768,65536}]; get rate likewise
    // [nvshmem/get_latency/thread/0-1/{32768,65536}]; efficiency = 162.9 of 450 GB/s with 8192 threads
    // [nvshmem/put_rate/thread/0-1/268435456]; barrier round = 2.484 us - L [nvshmem/barrier/thread/0-1/0].
    {274, 0.179, 0.0359, 0.362, 2130},
    // warp: issue [nvshmem/put_rate/warp/0-1/8]; efficiency = 319.8 of 450 GB/s with 1024 warps
    // [nvshmem/put_rate/warp/0-1/268435456]. No record has a lone warp: put rate = a block's / 8 (a 256-thread
    // block's 8 warps share its rate), get rate = 32 x a thread's, barrier round = a thread's [unverified].
    {246, 1.32, 1.15, 0.711, 2130},
    // block: issue [nvshmem/put_rate/block/0-1/8]; put rate of one block at 64 MiB
    // [nvshmem/put_rate_blocks/block/0-1/67108864/b1]; efficiency = 369.1 of 450 GB/s with 128 blocks
    // [.../b128]; barrier round = 3.189 us - L [nvshmem/barrier/block/0-1/0]; get rate = 256 x a thread's
    // [unverified: no block get record].
    {274, 10.55, 9.2, 0.82, 2835},
}};
// A store's trip from the SM into the target's memory beyond the wire: half a local L2 round trip, 141.5 / 2 ns
// [latency/local_load/chase/0/4194304]. Only write + quiet is measured (below); the split is [unverified].
constexpr double WRITE_NS = 71;
// put + quiet of 8 B by one thread: 1.400 us = L + write + issue + L_back + quiet
// [nvshmem/put_latency/thread/0-1/8].
constexpr double QUIET_NS = 347;
// NVSHMEM implements fence, like quiet, as a system-scope memory fence on NVLink peers; no record measures it
// alone [unverified: quiet's value].
constexpr double FENCE_NS = 347;
// put_signal ping-pong of 8 B by one thread: 3.924 us round trip, half = L + write + issue + L_back + L + signal
// [nvshmem/put_signal_pingpong/round_trip/0-1/8/thread].
constexpr double SIGNAL_NS = 554;
// A dependent get of 8 B: 1.303 us = L + read + L_back + issue [nvshmem/get_latency/thread/0-1/8].
constexpr double READ_NS = 321;
// Dependent loads, one thread, ld.global.cg: 4 MiB span (L2-resident) 141.5 ns, 1 GiB span (HBM) 336.4 ns
// [latency/local_load/chase/0/4194304, latency/local_load/chase/0/1073741824]; L2 of an H200: 60 MiB (the trace
// header's l2_bytes, 62914560).
constexpr double LOAD_L2_NS = 141.5;
constexpr double LOAD_HBM_NS = 336.4;
constexpr std::uint64_t L2_BYTES = 60ull << 20;
// Streaming SM reads of 4 GiB: from the peer 373.5 of 450 GB/s [uvm/read/peer_mapped/0-1/4294967296], local
// 3861 of 4800 GB/s HBM [uvm/read/local/0/4294967296].
constexpr double LOAD_EFFICIENCY = 0.83;
constexpr double LOCAL_READ_EFFICIENCY = 0.804;
// Two PEs putting to each other at once, 32 blocks each, 128 MiB: 295.5 GB/s per direction, against one block's
// put_bandwidth x 32 (339.0 GB/s) [nvshmem/put_rate_bidir/block/0-1/134217728 in h200x2-nvshmem-bidir.jsonl]; the same
// machine measured 319.9 alone (extra `unidirectional`): x0.92. With 1 to 16 blocks the slowdown is smaller (x0.97 to
// x0.95 against alone): the share is the one of 32 blocks, the exchanges' count [unverified below 32].
constexpr double DUPLEX_PUT_SHARE = 0.872;
// The probe's averaging kernel over a 32 MiB chunk and the peer's copy of it (96 MiB read and written): 99.6 us,
// 1.01 TB/s, a fifth of HBM's peak (one 2-byte element per thread and iteration) [nvshmem/exchange/alone/0-1/67108864
// and .../after_flush/..., extra reduce_phase]; over 128 MiB chunks 1.09 TB/s [.../268435456].
constexpr double REDUCE_GBPS = 1010;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<PgasModel>();
  for (std::size_t i = 0; i < SCOPE_NAMES.size(); ++i) {
    const ConfigNode s = node.section(SCOPE_NAMES[i]);
    const auto& d = SCOPE_DEFAULTS[i];
    auto& out = m->scopes[i];
    out.issue = s.optional<Seconds>("issue", Seconds{d.issue_ns * 1e-9});
    check_positive(s, "issue", out.issue);
    out.put_bandwidth = s.optional<BytesPerSecond>("put_bandwidth", BytesPerSecond{d.put_gbps * 1e9});
    check_positive(s, "put_bandwidth", out.put_bandwidth);
    out.get_bandwidth = s.optional<BytesPerSecond>("get_bandwidth", BytesPerSecond{d.get_gbps * 1e9});
    check_positive(s, "get_bandwidth", out.get_bandwidth);
    out.efficiency = s.optional<double>("efficiency", d.efficiency);
    check_between(s, "efficiency", out.efficiency, 0.01, 1.0);
    out.barrier_round = s.optional<Seconds>("barrier_round", Seconds{d.barrier_round_ns * 1e-9});
  }
  m->write_latency = node.optional<Seconds>("write_latency", Seconds{WRITE_NS * 1e-9});
  m->read_latency = node.optional<Seconds>("read_latency", Seconds{READ_NS * 1e-9});
  m->quiet = node.optional<Seconds>("quiet", Seconds{QUIET_NS * 1e-9});
  m->fence = node.optional<Seconds>("fence", Seconds{FENCE_NS * 1e-9});
  m->signal = node.optional<Seconds>("signal", Seconds{SIGNAL_NS * 1e-9});
  m->load_l2_latency = node.optional<Seconds>("load_l2_latency", Seconds{LOAD_L2_NS * 1e-9});
  m->load_hbm_latency = node.optional<Seconds>("load_hbm_latency", Seconds{LOAD_HBM_NS * 1e-9});
  m->l2_size = node.optional<Bytes>("l2_size", Bytes{L2_BYTES});
  m->load_efficiency = node.optional<double>("load_efficiency", LOAD_EFFICIENCY);
  check_between(node, "load_efficiency", m->load_efficiency, 0.01, 1.0);
  m->local_read_efficiency = node.optional<double>("local_read_efficiency", LOCAL_READ_EFFICIENCY);
  check_between(node, "local_read_efficiency", m->local_read_efficiency, 0.01, 1.0);
  m->duplex_put_share = node.optional<double>("duplex_put_share", DUPLEX_PUT_SHARE);
  check_between(node, "duplex_put_share", m->duplex_put_share, 0.01, 1.0);
  m->reduce_bandwidth = node.optional<BytesPerSecond>("reduce_bandwidth", BytesPerSecond{REDUCE_GBPS * 1e9});
  check_positive(node, "reduce_bandwidth", m->reduce_bandwidth);
  return m;
}
}  // namespace

std::string_view to_string(Scope scope) {
  return SCOPE_NAMES[static_cast<std::size_t>(scope)];
}

std::optional<Scope> scope(std::string_view name) {
  for (std::size_t i = 0; i < SCOPE_NAMES.size(); ++i)
    if (SCOPE_NAMES[i] == name) return static_cast<Scope>(i);
  return std::nullopt;
}

std::string_view to_string(LoadPattern pattern) {
  return pattern == LoadPattern::chase ? "chase" : "stream";
}

BytesPerSecond PgasModel::issuer_put_rate(Scope s, Bytes size, bool duplex) const {
  // An issuer injects at most one put per `issue`: small puts are bound by the message rate, large ones by the
  // issuer's store bandwidth, which is lower while the peer's writes come into this GPU's memory.
  return std::min(params(s).put_bandwidth * (duplex ? duplex_put_share : 1.0), size / params(s).issue);
}

Bytes PgasModel::wire_bytes(Bytes payload, Scope s) const {
  return Bytes{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / params(s).efficiency))};
}

Seconds PgasModel::flow_time(Bytes payload, Scope s, BytesPerSecond rate) const {
  return wire_bytes(payload, s) / (rate * (1 / params(s).efficiency));
}

Seconds PgasModel::put_arrival_time(Scope s, Bytes size, int issuers, int count, const PgasRoute& route) const {
  // Alone on the fabric, each of the N issuer flows gets the smaller of its own rate and 1/N of the line's
  // payload rate.
  const BytesPerSecond share = route.line_rate * (params(s).efficiency / issuers);
  const BytesPerSecond rate = std::min(issuer_put_rate(s, size), share);
  return route.latency + write_latency + flow_time(Bytes{size.count() * static_cast<std::uint64_t>(count)}, s, rate);
}

Seconds PgasModel::put_quiet_time(Scope s, Bytes size, int issuers, int count, const PgasRoute& route) const {
  return put_arrival_time(s, size, issuers, count, route) + route.latency_back + quiet;
}

Seconds PgasModel::put_signal_time(Scope s, Bytes size, const PgasRoute& route) const {
  return put_arrival_time(s, size, 1, 1, route) + route.latency_back + route.latency + signal;
}

Seconds PgasModel::get_time(Scope s, Bytes size, const PgasRoute& route) const {
  // A get takes at least its issue time: the rate of a tiny get is its size per issue time.
  const BytesPerSecond rate =
      std::min({params(s).get_bandwidth, size / params(s).issue, route.line_rate * params(s).efficiency});
  return route.latency + read_latency + route.latency_back + flow_time(size, s, rate);
}

Seconds PgasModel::barrier_time(Scope s, int pes, Seconds latency) const {
  const int rounds = pes > 1 ? static_cast<int>(std::ceil(std::log2(pes))) : 0;
  return (latency + params(s).barrier_round) * rounds;
}

Seconds PgasModel::load_latency(Bytes span) const {
  return span <= l2_size ? load_l2_latency : load_hbm_latency;
}

Seconds PgasModel::chase_time(std::uint64_t count, Bytes span, Seconds round_trip) const {
  return (load_latency(span) + round_trip) * static_cast<double>(count);
}

Seconds PgasModel::local_stream_time(Bytes total, Bytes span, BytesPerSecond hbm) const {
  return load_latency(span) + total / (hbm * local_read_efficiency);
}

Seconds PgasModel::reduce_time(Bytes chunk, int received) const {
  return Bytes{chunk.count() * static_cast<std::uint64_t>(received + 2)} / reduce_bandwidth;
}

Bytes PgasModel::load_wire_bytes(Bytes payload) const {
  return Bytes{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / load_efficiency))};
}

Seconds PgasModel::peer_stream_time(Bytes total, Bytes span, const PgasRoute& route) const {
  return load_latency(span) + route.latency + route.latency_back + load_wire_bytes(total) / route.line_rate;
}

Registry<Model>::Entry pgas_model_entry() {
  return {
      "pgas",
      "NVSHMEM-like one-sided ops (put, get, signals, quiet, fence, barrier) by thread/warp/block, and SM loads",
      {
          {"thread.issue", "time", "274ns", "least time per put/get of one thread [meas put_rate/thread/8]"},
          {"thread.put_bandwidth", "bytes/s", "179MBps", "store rate of one thread [meas put_latency slope]"},
          {"thread.get_bandwidth", "bytes/s", "35.9MBps", "load rate of one thread [meas get_latency slope]"},
          {"thread.efficiency", "fraction", "0.362", "payload share of line rate [meas put_rate/thread 256MiB]"},
          {"thread.barrier_round", "time", "2.13us", "barrier round beyond the wire [meas barrier/thread]"},
          {"warp.issue", "time", "246ns", "least time per put/get of one warp [meas put_rate/warp/8]"},
          {"warp.put_bandwidth", "bytes/s", "1.32GBps", "store rate of one warp [block's / 8, unverified]"},
          {"warp.get_bandwidth", "bytes/s", "1.15GBps", "load rate of one warp [32 threads', unverified]"},
          {"warp.efficiency", "fraction", "0.711", "payload share of line rate [meas put_rate/warp 256MiB]"},
          {"warp.barrier_round", "time", "2.13us", "barrier round beyond the wire [thread's, unverified]"},
          {"block.issue", "time", "274ns", "least time per put/get of one block [meas put_rate/block/8]"},
          {"block.put_bandwidth", "bytes/s", "10.55GBps", "store rate of one block [meas put_rate_blocks/b1]"},
          {"block.get_bandwidth", "bytes/s", "9.2GBps", "load rate of one block [256 threads', unverified]"},
          {"block.efficiency", "fraction", "0.82", "payload share of line rate [meas put_rate_blocks/b128]"},
          {"block.barrier_round", "time", "2.835us", "barrier round beyond the wire [meas barrier/block]"},
          {"write_latency", "time", "71ns", "remote store into memory beyond the wire [half local L2 chase]"},
          {"read_latency", "time", "321ns", "get's remote access beyond both wire trips [meas get_latency/8]"},
          {"quiet", "time", "347ns", "quiet after the last ack is back [meas put_latency/thread/8]"},
          {"fence", "time", "347ns", "cost of a fence to the PE [quiet's, unverified]"},
          {"signal", "time", "554ns", "signal update and detection after fence [meas put_signal_pingpong/8]"},
          {"load_l2_latency", "time", "141.5ns", "dependent load hitting L2 [meas local_load/chase 4MiB]"},
          {"load_hbm_latency", "time", "336.4ns", "dependent load from HBM [meas local_load/chase 1GiB]"},
          {"l2_size", "bytes", "60MiB", "spans up to this size hit L2 [H200 trace header]"},
          {"load_efficiency", "fraction", "0.83", "payload share of line rate, streaming peer loads [meas uvm]"},
          {"local_read_efficiency", "fraction", "0.804", "share of HBM bandwidth, streaming local loads [meas uvm]"},
          {"duplex_put_share", "fraction", "0.872",
           "share of put_bandwidth while puts come into the issuing PE [meas put_rate_bidir, block]"},
          {"reduce_bandwidth", "bytes/s", "1010GBps",
           "HBM traffic rate of the kernel summing received chunks [meas nvshmem exchange reduce_phase]"},
      },
      make};
}

}  // namespace snsim::models
