// Group syncs: collectives (NCCL's, planned by models/collective.hpp) and barriers. Run by
// runtime/collective_executor.cpp.
#pragma once

#include <optional>
#include <vector>

#include "models/collective.hpp"
#include "program/op_kinds.hpp"
#include "sim/fabric.hpp"

namespace snsim::workloads {

void parse_collective(const ConfigNode& op, const OpParse& at);
void parse_barrier(const ConfigNode& op, const OpParse& at);

struct CollectiveOp {
  static constexpr OpKind KIND{.name = "collective",
                               .track = TimelineTrack::collectives,
                               .moves_bytes = true,
                               .blocks = true,
                               .parse = parse_collective};
  models::CollectiveKind kind = models::CollectiveKind::all_reduce;
  Bytes bytes;                               // nccl-tests' size: see models/collective.hpp
  int root = 0;                              // broadcast
  std::optional<models::Protocol> protocol;  // forced, else chosen by size
  Group group;
  std::optional<models::Algorithm> algorithm;  // forced, else chosen by size
  std::optional<int> channels;                 // forced, else one per NVLink
  models::Launch launch = models::Launch::stream;
  // One call of a loop of calls on the host thread (nccl-tests, snsim-probe's out_of_place timing): the op takes at
  // least the call's CPU time (CollectiveModel::host_cost). Elsewhere the host runs ahead of the GPU.
  bool host_paced = false;
};

/// Waits for every member of the group. A `sync` barrier is free: generators use it to separate measurements, and
/// it is not recorded.
struct BarrierOp {
  static constexpr OpKind KIND{
      .name = "barrier", .track = TimelineTrack::collectives, .blocks = true, .parse = parse_barrier};
  Group group;
  bool sync = false;
};

/// A collective's name (all_reduce, ...); an unknown name lists the known ones.
models::CollectiveKind parse_collective_kind(const ConfigNode& node);

/// The optional `protocol` key of `parent` (LL, LL128, Simple).
std::optional<models::Protocol> parse_protocol(const ConfigNode& parent);

/// The optional `algorithm`, `protocol`, `channels` and `launch` keys of `parent` into `op`, checked against every
/// collective in `kinds` and against the fabric (nvls needs switches that reduce).
void parse_collective_options(const ConfigNode& parent, const std::vector<models::CollectiveKind>& kinds,
                              const Fabric& fabric, CollectiveOp& op);

OpDescription describe(const CollectiveOp& op);
OpDescription describe(const BarrierOp& op);

}  // namespace snsim::workloads
