// PGAS ops with NVSHMEM semantics (models/pgas.hpp), and the stream events that generators use between a GPU's
// streams. Run by runtime/pgas_executor.cpp. Signals live on a symmetric heap: every PE has a counter per signal
// id, starting at 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "models/pgas.hpp"
#include "program/op_kinds.hpp"

namespace snsim::workloads {

void parse_put(const ConfigNode& op, const OpParse& at);
void parse_get(const ConfigNode& op, const OpParse& at);
void parse_signal_wait(const ConfigNode& op, const OpParse& at);
void parse_quiet(const ConfigNode& op, const OpParse& at);
void parse_fence(const ConfigNode& op, const OpParse& at);
void parse_shmem_barrier(const ConfigNode& op, const OpParse& at);
void parse_load(const ConfigNode& op, const OpParse& at);

/// nvshmem[x]_putmem_nbi[_warp|_block], `count` times by each of `issuers` issuers of `scope`; non-blocking. Its
/// record is its issue only: the data moves after it.
struct PutOp {
  static constexpr OpKind KIND{.name = "put", .track = TimelineTrack::pgas, .parse = parse_put};
  int to = 0;   // target PE
  Bytes bytes;  // per put
  models::Scope scope = models::Scope::thread;
  int issuers = 1;
  int count = 1;
  std::optional<int> signal;  // put_signal: adds issuers x count to the target's signal once the data is visible
};

/// nvshmem[x]_getmem[_warp|_block]: blocks until the data is here.
struct GetOp {
  static constexpr OpKind KIND{
      .name = "get", .track = TimelineTrack::pgas, .moves_bytes = true, .blocks = true, .parse = parse_get};
  int from = 0;
  Bytes bytes;
  models::Scope scope = models::Scope::thread;
};

enum class Compare { eq, ne, gt, ge, lt, le };

/// "==", "!=", ...
std::string_view symbol(Compare cmp);

/// nvshmem_signal_wait_until on this PE's signal; `consume` then subtracts `value` (for loops).
struct SignalWaitOp {
  static constexpr OpKind KIND{
      .name = "signal_wait", .track = TimelineTrack::pgas, .blocks = true, .parse = parse_signal_wait};
  int signal = 0;
  std::uint64_t value = 0;
  Compare cmp = Compare::ge;
  bool consume = false;
};

/// nvshmem_quiet: waits until every put this PE issued is complete.
struct QuietOp {
  static constexpr OpKind KIND{.name = "quiet", .track = TimelineTrack::pgas, .parse = parse_quiet};
};

/// nvshmem_fence: puts issued after it to a PE become visible after those issued before it to that PE.
struct FenceOp {
  static constexpr OpKind KIND{.name = "fence", .track = TimelineTrack::pgas, .parse = parse_fence};
};

/// nvshmem_barrier_all (device side) over the group: completes this PE's puts, then synchronizes.
struct ShmemBarrierOp {
  static constexpr OpKind KIND{
      .name = "shmem_barrier", .track = TimelineTrack::pgas, .blocks = true, .parse = parse_shmem_barrier};
  Group group;
  models::Scope scope = models::Scope::thread;
};

/// SM loads by one thread from this GPU's or a peer's memory, over a span of `bytes`.
struct LoadOp {
  static constexpr OpKind KIND{.name = "load", .track = TimelineTrack::pgas, .moves_bytes = true, .parse = parse_load};
  int from = 0;  // the issuing rank itself for local memory
  Bytes bytes;
  models::LoadPattern pattern = models::LoadPattern::chase;
  std::uint64_t count = 1;  // dependent loads (chase) or passes over the span (stream)
};

/// cudaEventRecord on one of this GPU's streams: counts the records of `event` on this rank. Generators only (a
/// training step's backward records each gradient bucket's readiness for the stream that reduces it).
struct EventRecordOp {
  static constexpr OpKind KIND{
      .name = "event_record", .track = TimelineTrack::stream_events, .source = OpSource::generator};
  int event = 0;
};

/// cudaStreamWaitEvent between two streams of the same GPU: waits until `event` has been recorded `count` times on
/// this rank. Free: a same-device wait is resolved by the GPU's scheduler, not the host (models/stream.hpp's
/// event_wait is the cross-GPU case).
struct EventWaitOp {
  static constexpr OpKind KIND{
      .name = "event_wait", .track = TimelineTrack::stream_events, .source = OpSource::generator};
  int event = 0;
  std::uint64_t count = 1;
};

/// `n` times `size`; the parser keeps every op's product below 2^50 bytes.
inline Bytes times(Bytes size, std::uint64_t n) {
  return Bytes{size.count() * n};
}

OpDescription describe(const PutOp& op);
OpDescription describe(const GetOp& op);
OpDescription describe(const SignalWaitOp& op);
OpDescription describe(const QuietOp& op);
OpDescription describe(const FenceOp& op);
OpDescription describe(const ShmemBarrierOp& op);
OpDescription describe(const LoadOp& op);
OpDescription describe(const EventRecordOp& op);
OpDescription describe(const EventWaitOp& op);

}  // namespace snsim::workloads
