// Unified memory (models/uvm.hpp): managed buffers and the kernels, prefetches and advice that use them. Run by
// runtime/uvm_executor.cpp. Buffers are named within the program that declares them; every op naming a buffer
// holds its declaration.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "program/op_kinds.hpp"

namespace snsim::workloads {

void parse_managed(const ConfigNode& op, const OpParse& at);
void parse_touch(const ConfigNode& op, const OpParse& at);
void parse_prefetch(const ConfigNode& op, const OpParse& at);
void parse_advise(const ConfigNode& op, const OpParse& at);
void parse_read(const ConfigNode& op, const OpParse& at);

/// A managed allocation (cudaMallocManaged) and where its pages start.
struct ManagedBuffer {
  std::string name;
  Bytes bytes;
  Bytes page{4096};  // residency and fault granularity: 4 KiB, 64 KiB or 2 MiB
  int on = HOST;     // HOST or a rank
};
using ManagedPtr = std::shared_ptr<const ManagedBuffer>;

/// Allocates the buffer with every page at `on` and no advice; run again, it frees and allocates it anew. The
/// allocation and first placement take no simulated time (they are set up, not simulated).
struct ManagedOp {
  static constexpr OpKind KIND{.name = "managed", .track = TimelineTrack::uvm, .parse = parse_managed};
  ManagedPtr buffer;
};

/// A kernel touching one word per page of [offset, offset + bytes): pages neither resident nor mapped here fault.
struct TouchOp {
  static constexpr OpKind KIND{.name = "touch", .track = TimelineTrack::uvm, .parse = parse_touch};
  ManagedPtr buffer;
  Bytes offset;
  Bytes bytes;
  bool write = false;
};

/// cudaMemPrefetchAsync of [offset, offset + bytes) to a GPU or the host.
struct PrefetchOp {
  static constexpr OpKind KIND{
      .name = "prefetch", .track = TimelineTrack::uvm, .moves_bytes = true, .parse = parse_prefetch};
  ManagedPtr buffer;
  int to = HOST;
  Bytes offset;
  Bytes bytes;
};

/// cudaMemAdvise over the whole buffer: replaces its advice (absent keys: none).
struct AdviseOp {
  static constexpr OpKind KIND{.name = "advise", .track = TimelineTrack::uvm, .parse = parse_advise};
  ManagedPtr buffer;
  std::optional<int> preferred;  // HOST or a rank
  std::vector<int> accessed_by;  // ranks that map the pages wherever they are and read them there
  bool read_mostly = false;      // reads duplicate pages instead of moving them
};

/// A kernel streaming through [offset, offset + bytes) `passes` times: faults what is neither resident nor mapped,
/// then reads every page where it is (local HBM, a peer over NVLink, the host over PCIe).
struct ReadOp {
  static constexpr OpKind KIND{.name = "read", .track = TimelineTrack::uvm, .parse = parse_read};
  ManagedPtr buffer;
  Bytes offset;
  Bytes bytes;
  std::uint64_t passes = 1;
};

/// The records of what a touch, read or prefetch caused: a round of fault batches (the driver's service), and a
/// migration of pages between two locations.
inline constexpr OpKind FAULT_KIND{.name = "fault", .track = TimelineTrack::faults, .source = OpSource::runtime};
inline constexpr OpKind MIGRATE_KIND{
    .name = "migrate", .track = TimelineTrack::migrations, .moves_bytes = true, .source = OpSource::runtime};

/// The managed buffers one program declares, by name: parse_ops opens one for the ops it parses.
class ManagedScope {
 public:
  ManagedScope();
  ~ManagedScope();
  ManagedScope(const ManagedScope&) = delete;
  ManagedScope& operator=(const ManagedScope&) = delete;
};

/// "host" or "gpuN".
std::string location_name(int location);

OpDescription describe(const ManagedOp& op);
OpDescription describe(const TouchOp& op);
OpDescription describe(const PrefetchOp& op);
OpDescription describe(const AdviseOp& op);
OpDescription describe(const ReadOp& op);

}  // namespace snsim::workloads
