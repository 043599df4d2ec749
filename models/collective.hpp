// BSP collectives the way NCCL runs them inside one NVLink domain, at the grain of one transfer per algorithm step:
// channels and chunking are folded into each step's rate and latency.
//
// A collective of S bytes on n ranks with the ring algorithm is 2(n-1) steps of S/n (all_reduce) or n-1 steps of
// S/n (all_gather, reduce_scatter); all_to_all sends S/n to every peer at once; broadcast pipelines chunks along a
// chain from the root. Each step pays the protocol's per-step latency plus the route's wire latency, then moves its
// bytes with SM copies at the protocol's payload efficiency:
//
//   time = base + steps * (step_latency + route_latency + S_step / (line_rate * sm_efficiency * protocol_eff))
//
// The protocol (LL, LL128, Simple) is chosen by size as NCCL does -- the one with the smallest predicted time --
// unless the op forces one. Constants follow NCCL's own tuning model (reference/hardware.md §2.4).
#pragma once

#include <array>
#include <optional>
#include <string>

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast };
enum class Protocol { ll, ll128, simple };

std::string_view to_string(CollectiveKind kind);
std::string_view to_string(Protocol protocol);
std::optional<CollectiveKind> collective_kind(std::string_view name);
std::optional<Protocol> protocol(std::string_view name);
/// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n, all_gather / reduce_scatter / all_to_all (n-1)/n,
/// broadcast 1.
double bus_bandwidth_factor(CollectiveKind kind, int ranks);

struct ProtocolParams {
  double efficiency = 1;         // payload share of a line after flags (LL 8 of 16 B, LL128 120 of 128 B)
  BytesPerSecond max_bandwidth;  // per-rank payload rate cap; 0 = none (LL's llMaxBw)
  Seconds base_latency;          // once per collective (kernel start, setup)
  Seconds step_latency;          // per algorithm step, on top of the route's wire latency
};

/// What one rank does for one collective: how many steps of how many bytes, at which protocol.
struct CollectivePlan {
  Protocol protocol = Protocol::simple;
  int steps = 0;
  Bytes step_bytes;  // payload each rank sends per step (per peer for all_to_all, per chunk for broadcast)
  int chunks = 1;    // broadcast pipeline chunks
  Seconds base_latency;
  Seconds step_latency;
  double efficiency = 1;         // protocol payload efficiency (SM copy efficiency is applied by the caller)
  BytesPerSecond max_bandwidth;  // payload rate cap per transfer; 0 = none
};

class CollectiveModel final : public Model {
 public:
  std::array<ProtocolParams, 3> protocols{};  // indexed by Protocol
  Seconds barrier_latency;                    // a device-side barrier across the ranks
  Bytes broadcast_chunk;                      // pipeline chunk of broadcast
  int max_chunks = 0;                         // at most this many chunks per broadcast

  const ProtocolParams& params(Protocol p) const { return protocols[static_cast<std::size_t>(p)]; }

  /// The plan for one collective. `rate` is the per-rank SM copy rate (line rate x SM efficiency) and `hop_latency`
  /// the route's wire latency, used only to pick the protocol when `forced` is empty.
  CollectivePlan plan(CollectiveKind kind, Bytes size, int ranks, BytesPerSecond rate, Seconds hop_latency,
                      std::optional<Protocol> forced) const;
  /// Predicted time of a plan without contention (the selection criterion).
  Seconds predict(const CollectivePlan& plan, BytesPerSecond rate, Seconds hop_latency) const;
};

Registry<Model>::Entry collective_model_entry();

}  // namespace snsim::models
