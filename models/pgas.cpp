#include "models/pgas.hpp"

#include <algorithm>
#include <cmath>

#include "topologies/gpus.hpp"

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 3> SCOPE_NAMES{"thread", "warp", "block"};

}  // namespace

const ParamTable<PgasModel>& pgas_params() {
  using M = PgasModel;
  constexpr std::size_t THREAD = 0, WARP = 1, BLOCK = 2;
  // Every default comes from our H200 x2 captures (validation/traces/h200/, CAPTURES.md): `nvshmem/...` records are
  // in h200x2-nvshmem.jsonl, `latency/...` in h200x2-latency-jitter.jsonl, `uvm/...` in h200x2-uvm.jsonl; medians.
  // They are solved from the formulas in pgas.hpp with the route these GPUs show: L = 354.3 ns one way, half of
  // what a peer pointer chase adds to a local one, (850.2 - 141.5) / 2 ns [latency/peer_load/chase/0-1/4194304,
  // latency/local_load/chase/0/4194304], and B = 450 GB/s (18 NVLink4 links). `snsim calibrate` refits them.
  static const ParamTable<M> table = [] {
    ParamTable<M> params;
    // thread: issue = 8 B / 2.923e7 B/s, 1000 puts by one thread [nvshmem/put_rate/thread/0-1/8]; put rate =
    // the slope of put+quiet from 32 to 64 KiB [nvshmem/put_latency/thread/0-1/{32768,65536}]; get rate
    // likewise [nvshmem/get_latency/thread/0-1/{32768,65536}]; efficiency = 162.9 of 450 GB/s with 8192
    // threads [nvshmem/put_rate/thread/0-1/268435456]; barrier round = 2.484 us - L
    // [nvshmem/barrier/thread/0-1/0].
    params.add({.key = "thread.issue",
                .fallback = 274_ns,
                .check = positive,
                .doc = "least time per put/get of one thread",
                .source = "meas put_rate/thread/8"},
               [](M& m) { return &m.scopes[THREAD].issue; });
    params.add({.key = "thread.put_bandwidth",
                .fallback = 0.179_GBps,
                .check = positive,
                .doc = "store rate of one thread",
                .source = "meas put_latency slope"},
               [](M& m) { return &m.scopes[THREAD].put_bandwidth; });
    params.add({.key = "thread.get_bandwidth",
                .fallback = 0.0359_GBps,
                .check = positive,
                .doc = "load rate of one thread",
                .source = "meas get_latency slope"},
               [](M& m) { return &m.scopes[THREAD].get_bandwidth; });
    params.add({.key = "thread.efficiency",
                .unit = "fraction",
                .fallback = 0.362,
                .check = between(0.01, 1.0),
                .doc = "payload share of line rate",
                .source = "meas put_rate/thread 256MiB"},
               [](M& m) { return &m.scopes[THREAD].efficiency; });
    params.add({.key = "thread.barrier_round",
                .fallback = 2130_ns,
                .doc = "barrier round beyond the wire",
                .source = "meas barrier/thread"},
               [](M& m) { return &m.scopes[THREAD].barrier_round; });
    // warp: issue [nvshmem/put_rate/warp/0-1/8]; efficiency = 319.8 of 450 GB/s with 1024 warps
    // [nvshmem/put_rate/warp/0-1/268435456]. No record has a lone warp: put rate = a block's / 8 (a 256-thread
    // block's 8 warps share its rate), get rate = 32 x a thread's, barrier round = a thread's [unverified].
    params.add({.key = "warp.issue",
                .fallback = 246_ns,
                .check = positive,
                .doc = "least time per put/get of one warp",
                .source = "meas put_rate/warp/8"},
               [](M& m) { return &m.scopes[WARP].issue; });
    params.add({.key = "warp.put_bandwidth",
                .fallback = 1.32_GBps,
                .check = positive,
                .doc = "store rate of one warp",
                .source = "block's / 8, unverified"},
               [](M& m) { return &m.scopes[WARP].put_bandwidth; });
    params.add({.key = "warp.get_bandwidth",
                .fallback = 1.15_GBps,
                .check = positive,
                .doc = "load rate of one warp",
                .source = "32 threads', unverified"},
               [](M& m) { return &m.scopes[WARP].get_bandwidth; });
    params.add({.key = "warp.efficiency",
                .unit = "fraction",
                .fallback = 0.711,
                .check = between(0.01, 1.0),
                .doc = "payload share of line rate",
                .source = "meas put_rate/warp 256MiB"},
               [](M& m) { return &m.scopes[WARP].efficiency; });
    params.add({.key = "warp.barrier_round",
                .fallback = 2130_ns,
                .doc = "barrier round beyond the wire",
                .source = "thread's, unverified"},
               [](M& m) { return &m.scopes[WARP].barrier_round; });
    // block: issue [nvshmem/put_rate/block/0-1/8]; put rate of one block at 64 MiB
    // [nvshmem/put_rate_blocks/block/0-1/67108864/b1]; efficiency = 369.1 of 450 GB/s with 128 blocks
    // [.../b128]; barrier round = 3.189 us - L [nvshmem/barrier/block/0-1/0]; get rate = 256 x a thread's
    // [unverified: no block get record].
    params.add({.key = "block.issue",
                .fallback = 274_ns,
                .check = positive,
                .doc = "least time per put/get of one block",
                .source = "meas put_rate/block/8"},
               [](M& m) { return &m.scopes[BLOCK].issue; });
    params.add({.key = "block.put_bandwidth",
                .fallback = 10.55_GBps,
                .check = positive,
                .doc = "store rate of one block",
                .source = "meas put_rate_blocks/b1"},
               [](M& m) { return &m.scopes[BLOCK].put_bandwidth; });
    params.add({.key = "block.get_bandwidth",
                .fallback = 9.2_GBps,
                .check = positive,
                .doc = "load rate of one block",
                .source = "256 threads', unverified"},
               [](M& m) { return &m.scopes[BLOCK].get_bandwidth; });
    params.add({.key = "block.efficiency",
                .unit = "fraction",
                .fallback = 0.82,
                .check = between(0.01, 1.0),
                .doc = "payload share of line rate",
                .source = "meas put_rate_blocks/b128"},
               [](M& m) { return &m.scopes[BLOCK].efficiency; });
    params.add({.key = "block.barrier_round",
                .fallback = 2835_ns,
                .doc = "barrier round beyond the wire",
                .source = "meas barrier/block"},
               [](M& m) { return &m.scopes[BLOCK].barrier_round; });
    // A store's trip from the SM into the target's memory beyond the wire: half a local L2 round trip,
    // 141.5 / 2 ns [latency/local_load/chase/0/4194304]. Only write + quiet is measured (below); the split is
    // [unverified].
    params.add({.key = "write_latency",
                .fallback = 71_ns,
                .doc = "remote store into memory beyond the wire",
                .source = "half local L2 chase"},
               [](M& m) { return &m.write_latency; });
    // A dependent get of 8 B: 1.303 us = L + read + L_back + issue [nvshmem/get_latency/thread/0-1/8].
    params.add({.key = "read_latency",
                .fallback = 321_ns,
                .doc = "get's remote access beyond both wire trips",
                .source = "meas get_latency/8"},
               [](M& m) { return &m.read_latency; });
    // put + quiet of 8 B by one thread: 1.400 us = L + write + issue + L_back + quiet
    // [nvshmem/put_latency/thread/0-1/8].
    params.add({.key = "quiet",
                .fallback = 347_ns,
                .doc = "quiet after the last ack is back",
                .source = "meas put_latency/thread/8"},
               [](M& m) { return &m.quiet; });
    // NVSHMEM implements fence, like quiet, as a system-scope memory fence on NVLink peers; no record measures
    // it alone [unverified: quiet's value].
    params.add(
        {.key = "fence", .fallback = 347_ns, .doc = "cost of a fence to the PE", .source = "quiet's, unverified"},
        [](M& m) { return &m.fence; });
    // put_signal ping-pong of 8 B by one thread: 3.924 us round trip, half = L + write + issue + L_back + L +
    // signal [nvshmem/put_signal_pingpong/round_trip/0-1/8/thread].
    params.add({.key = "signal",
                .fallback = 554_ns,
                .doc = "signal update and detection after fence",
                .source = "meas put_signal_pingpong/8"},
               [](M& m) { return &m.signal; });
    // Dependent loads, one thread, ld.global.cg: 4 MiB span (L2-resident) 141.5 ns, 1 GiB span (HBM) 336.4 ns
    // [latency/local_load/chase/0/4194304, latency/local_load/chase/0/1073741824].
    params.add({.key = "load_l2_latency",
                .fallback = 141.5_ns,
                .doc = "dependent load hitting L2",
                .source = "meas local_load/chase 4MiB"},
               [](M& m) { return &m.load_l2_latency; });
    params.add({.key = "load_hbm_latency",
                .fallback = 336.4_ns,
                .doc = "dependent load from HBM",
                .source = "meas local_load/chase 1GiB"},
               [](M& m) { return &m.load_hbm_latency; });
    // The span up to which loads hit L2 is the L2 size of the GPU the defaults were measured on (the trace
    // header's l2_bytes, 62914560): the H200 preset's, topologies/gpus.hpp.
    params.add({.key = "l2_size",
                .fallback = topologies::H200_L2,
                .doc = "spans up to this size hit L2",
                .source = "H200 trace header"},
               [](M& m) { return &m.l2_size; });
    // Streaming SM reads of 4 GiB: from the peer 373.5 of 450 GB/s [uvm/read/peer_mapped/0-1/4294967296],
    // local 3861 of 4800 GB/s HBM [uvm/read/local/0/4294967296].
    params.add({.key = "load_efficiency",
                .unit = "fraction",
                .fallback = 0.83,
                .check = between(0.01, 1.0),
                .doc = "payload share of line rate, streaming peer loads",
                .source = "meas uvm"},
               [](M& m) { return &m.load_efficiency; });
    params.add({.key = "local_read_efficiency",
                .unit = "fraction",
                .fallback = 0.804,
                .check = between(0.01, 1.0),
                .doc = "share of HBM bandwidth, streaming local loads",
                .source = "meas uvm"},
               [](M& m) { return &m.local_read_efficiency; });
    // Two PEs putting to each other at once, 32 blocks each, 128 MiB: 295.5 GB/s per direction, against one
    // block's put_bandwidth x 32 (339.0 GB/s) [nvshmem/put_rate_bidir/block/0-1/134217728 in
    // h200x2-nvshmem-bidir.jsonl]; the same machine measured 319.9 alone (extra `unidirectional`): x0.92. With
    // 1 to 16 blocks the slowdown is smaller (x0.97 to x0.95 against alone): the share is the one of 32 blocks,
    // the exchanges' count [unverified below 32].
    params.add({.key = "duplex_put_share",
                .unit = "fraction",
                .fallback = 0.872,
                .check = between(0.01, 1.0),
                .doc = "share of put_bandwidth while puts come into the issuing PE",
                .source = "meas put_rate_bidir, block"},
               [](M& m) { return &m.duplex_put_share; });
    // The probe's averaging kernel over a 32 MiB chunk and the peer's copy of it (96 MiB read and written):
    // 99.6 us, 1.01 TB/s, a fifth of HBM's peak (one 2-byte element per thread and iteration)
    // [nvshmem/exchange/alone/0-1/67108864 and .../after_flush/..., extra reduce_phase]; over 128 MiB chunks
    // 1.09 TB/s [.../268435456].
    params.add({.key = "reduce_bandwidth",
                .fallback = 1010_GBps,
                .check = positive,
                .doc = "HBM traffic rate of the kernel summing received chunks",
                .source = "meas nvshmem exchange reduce_phase"},
               [](M& m) { return &m.reduce_bandwidth; });
    return params;
  }();
  return table;
}

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
  return route.latency + write_latency + flow_time(size * count, s, rate);
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
  return chunk * (received + 2) / reduce_bandwidth;
}

Bytes PgasModel::load_wire_bytes(Bytes payload) const {
  return Bytes{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / load_efficiency))};
}

Seconds PgasModel::peer_stream_time(Bytes total, Bytes span, const PgasRoute& route) const {
  return load_latency(span) + route.latency + route.latency_back + load_wire_bytes(total) / route.line_rate;
}

Registry<Model>::Entry pgas_model_entry() {
  return model_entry(
      "pgas",
      "NVSHMEM-like one-sided ops (put, get, signals, quiet, fence, barrier) by thread/warp/block, and SM loads",
      pgas_params());
}

}  // namespace snsim::models
