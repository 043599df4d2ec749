// PGAS operations with NVSHMEM semantics on a symmetric heap, issued by GPU threads, warps or blocks (no host in
// the loop), and SM loads from a GPU's own or a peer's memory.
//
// On NVLink, NVSHMEM's puts and gets are SM stores and loads to the peer's memory, so their costs come from the
// issuing granularity (scope) and the route:
//
//   L, L_back   the route's wire latency, issuer to target and back (from the Fabric)
//   B           the route's bottleneck line rate, one direction (from the Fabric)
//   issue[s]    the least time one issuer of scope s spends per put or get (its message rate)
//   bw[s]       the payload rate one issuer can inject (put) or pull (get)
//   eff[s]      payload share of the line rate for stores of scope s (headers go on the wire: payload / eff)
//
// A put of S bytes, `count` times by each of N issuers (nvshmem[x]_putmem_nbi[_warp|_block]):
//   the PE is busy count x issue[s], then continues (non-blocking); each issuer's data flows at
//     r = min(bw[s] x d, S / issue[s])   capped further by its max-min share of the links (B x eff[s] / N alone)
//   where d = duplex_put_share while puts towards the issuing PE are in flight (its GPU's memory takes the peer's
//   writes while its issuers load their sources from it: each issuer's loads wait longer), else 1. Two PEs putting
//   to each other share neither the link (split duplex: with enough issuers both directions reach the one-way rate)
//   nor a fixed memory bandwidth (far from HBM's), but each issuer is slower.
//   arrival  = L + write_latency + count x S / r                       (data visible at the target)
//   quiet    = arrival + L_back + quiet                                (the acks come back)
//   signal   = arrival + L_back + L + signal                           (put_signal: a fence, then the signal)
// A get of S bytes (blocking): 2 wire trips plus the remote access, then the data at the issuer's rate:
//   get      = L + read_latency + L_back + S / min(get_bw[s], S / issue[s], B x eff[s])
// A device barrier over n PEs (nvshmem_barrier_all): a dissemination barrier of ceil(log2 n) rounds:
//   barrier  = ceil(log2 n) x (L + barrier_round[s])
// A PGAS reduction sums the chunks it received into its own with an elementwise kernel, one 2-byte element per
// thread and iteration (NVSHMEM leaves the arithmetic to the program; the probe's is such a kernel): its loads in
// flight, not HBM's peak, bound it, so it runs at its own rate over the bytes it reads and writes:
//   reduce   = (chunks received + 2) x chunk / reduce_bandwidth
// SM loads over a span of memory (its size decides L2 or HBM hits):
//   chase    = count x (load latency(span) + [peer] L + L_back)       (dependent loads: latency-bound)
//   stream   = load latency(span) + [peer] L + L_back + bytes / rate  (rate: B x load_efficiency from a peer,
//                                                                      HBM x local_read_efficiency locally)
// Payload terms are computed on the wire, as the simulation moves them: S / r above is exactly
// ceil(S / eff) / (r / eff) (flow_time), which differs from S / r by under a byte's time.
// The *_time functions below are these formulas for an op alone on an idle fabric: the simulation reproduces them
// exactly (tested), and calibration fits the parameters through them.
// The defaults were solved with the route our H200 pair shows, L = 354 ns one way (models/pgas.cpp), which is what
// the hgx preset's two hops of 177 ns give (topologies/gpus.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

/// Who issues an NVSHMEM operation: one thread, a warp (nvshmemx_*_warp) or a block (nvshmemx_*_block).
enum class Scope { thread, warp, block };
std::string_view to_string(Scope scope);
std::optional<Scope> scope(std::string_view name);

/// How SM loads walk a span: dependent pointer chasing (latency-bound) or streaming reads (bandwidth-bound).
enum class LoadPattern { chase, stream };
std::string_view to_string(LoadPattern pattern);

/// The costs of one issuing granularity.
struct ScopeParams {
  Seconds issue;                 // least time per put or get of one issuer: message rate = 1 / issue
  BytesPerSecond put_bandwidth;  // payload rate one issuer's stores reach
  BytesPerSecond get_bandwidth;  // payload rate one issuer's loads reach (blocking gets)
  double efficiency = 1;         // payload share of the line rate for this scope's stores
  Seconds barrier_round;         // one round of a device barrier, on top of the wire latency
};

/// The route between two PEs as an op sees it (both directions, since acks and get responses come back).
struct PgasRoute {
  Seconds latency;           // wire and switches, issuer to target
  Seconds latency_back;      // target to issuer
  BytesPerSecond line_rate;  // bottleneck line rate issuer to target, one direction
};

/// Every parameter is set by pgas_params(), where its default, range and source are declared.
class PgasModel final : public Model {
 public:
  std::array<ScopeParams, 3> scopes{};  // indexed by Scope
  Seconds write_latency;                // a store's remote memory write, on top of the wire
  Seconds read_latency;                 // a get's remote access and overhead, on top of both wire trips
  Seconds quiet;                        // nvshmem_quiet after the last ack is back
  Seconds fence;                        // nvshmem_fence's cost to the PE
  Seconds signal;                       // put_signal's signal update and its detection by the waiter
  Seconds load_l2_latency;              // one dependent load hitting L2
  Seconds load_hbm_latency;             // one dependent load missing L2 (HBM)
  Bytes l2_size;                        // spans up to this size are L2-resident
  double load_efficiency = 1;           // payload share of the line rate for streaming loads from a peer
  double local_read_efficiency = 1;     // share of HBM bandwidth for streaming loads of local memory
  double duplex_put_share = 1;          // share of put_bandwidth an issuer reaches while puts come into its PE
  BytesPerSecond reduce_bandwidth;      // HBM traffic rate of the kernel summing received chunks into one's own

  const ScopeParams& params(Scope s) const { return scopes[static_cast<std::size_t>(s)]; }

  /// Payload rate of one put issuer moving `size`-byte puts: min(put_bandwidth, size / issue); `duplex`: puts
  /// towards the issuing PE are in flight (put_bandwidth x duplex_put_share).
  BytesPerSecond issuer_put_rate(Scope s, Bytes size, bool duplex = false) const;
  /// Bytes on the wire for `payload` bytes stored with scope `s`.
  Bytes wire_bytes(Bytes payload, Scope s) const;

  /// From the put's issue to its last byte being visible at the target (N issuers x count puts of `size`).
  Seconds put_arrival_time(Scope s, Bytes size, int issuers, int count, const PgasRoute& route) const;
  /// A put followed by nvshmem_quiet: from the issue to the end of the quiet.
  Seconds put_quiet_time(Scope s, Bytes size, int issuers, int count, const PgasRoute& route) const;
  /// A put with a signal: from the issue to the waiter seeing the signal. A ping-pong round trip is twice this.
  Seconds put_signal_time(Scope s, Bytes size, const PgasRoute& route) const;
  /// A blocking get of `size` bytes from the target.
  Seconds get_time(Scope s, Bytes size, const PgasRoute& route) const;
  /// A device-side barrier over `pes` PEs whose farthest partner is `latency` away.
  Seconds barrier_time(Scope s, int pes, Seconds latency) const;
  /// One dependent load within a span of `span` bytes (L2 or HBM), without the wire.
  Seconds load_latency(Bytes span) const;
  /// `count` dependent loads; `round_trip` is 0 locally, L + L_back from a peer.
  Seconds chase_time(std::uint64_t count, Bytes span, Seconds round_trip) const;
  /// Streaming `total` bytes of this GPU's HBM (a span of `span`); `hbm` is its peak bandwidth.
  Seconds local_stream_time(Bytes total, Bytes span, BytesPerSecond hbm) const;
  /// Streaming `total` bytes from a peer's memory (a span of `span`) over `route`.
  Seconds peer_stream_time(Bytes total, Bytes span, const PgasRoute& route) const;
  /// Bytes on the wire for `payload` bytes of streaming peer loads.
  Bytes load_wire_bytes(Bytes payload) const;
  /// The elementwise kernel summing `received` chunks of `chunk` bytes into this PE's own (reads all, writes one).
  Seconds reduce_time(Bytes chunk, int received) const;
  /// Time to move `payload` bytes stored with scope `s` at a payload rate of `rate` (headers on the wire).
  Seconds flow_time(Bytes payload, Scope s, BytesPerSecond rate) const;
};

/// The parameters of models.pgas, declared once.
const ParamTable<PgasModel>& pgas_params();
Registry<Model>::Entry pgas_model_entry();

}  // namespace snsim::models
