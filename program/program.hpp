// Programs: what each GPU does, as a list of ops (design.md, "Workloads are programs").
//
// Every workload -- an explicit program from the scenario or a generator such as collective_sweep -- expands into
// one Program per rank; the Runner (runtime/runner.hpp) executes them, one SimGrid actor per GPU. Peers and groups
// are resolved to concrete ranks when the Program is built, so bad references are input errors before the run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "models/collective.hpp"
#include "models/copy.hpp"
#include "models/pgas.hpp"
#include "sim/config.hpp"
#include "sim/fabric.hpp"

namespace snsim::workloads {

/// The ranks taking part in a collective or barrier, sorted; shared by every member's op.
using Group = std::shared_ptr<const std::vector<int>>;

/// The host CPU as the other end of a copy.
inline constexpr int HOST = -1;
/// The topology's NVMe drives as the other end of a copy: striped over all of them (GPUDirect Storage).
inline constexpr int NVME = -2;

struct ComputeOp {
  Flops flops;                      // in `dtype`
  Bytes bytes;                      // HBM traffic
  std::optional<Seconds> duration;  // a fixed time instead of the roofline
  Dtype dtype = Dtype::bf16;        // the number format of the FLOPs: picks the GPU's peak rate
  bool pipelined = false;  // queued behind the previous kernel of the stream: pays the queue gap, not the launch
};

struct CopyOp {
  int peer = 0;  // the other end: a rank, HOST, NVME, or the issuing rank itself for a device-local copy
  Bytes bytes;
  models::CopyEngine engine = models::CopyEngine::ce;
  bool pipelined = false;  // queued behind the previous copy on the same stream: pays the engine's queue gap
  bool pull = false;       // the issuing rank reads from `peer` (data flows peer -> issuer); else it writes to it
};

struct CollectiveOp {
  models::CollectiveKind kind = models::CollectiveKind::all_reduce;
  Bytes bytes;                               // nccl-tests' size: see models/collective.hpp
  int root = 0;                              // broadcast
  std::optional<models::Protocol> protocol;  // forced, else chosen by size
  Group group;
  std::optional<models::Algorithm> algorithm;  // forced, else chosen by size
  std::optional<int> channels;                 // forced, else one per NVLink
  models::Launch launch = models::Launch::stream;
};

/// Waits for every member of the group. A `sync` barrier is free: generators use it to separate measurements.
struct BarrierOp {
  Group group;
  bool sync = false;
};

// PGAS ops with NVSHMEM semantics (models/pgas.hpp), run by runtime/pgas_executor.cpp. Signals live on a symmetric
// heap: every PE has a counter per signal id, starting at 0.

/// nvshmem[x]_putmem_nbi[_warp|_block], `count` times by each of `issuers` issuers of `scope`; non-blocking.
struct PutOp {
  int to = 0;   // target PE
  Bytes bytes;  // per put
  models::Scope scope = models::Scope::thread;
  int issuers = 1;
  int count = 1;
  std::optional<int> signal;  // put_signal: adds issuers x count to the target's signal once the data is visible
};

/// nvshmem[x]_getmem[_warp|_block]: blocks until the data is here.
struct GetOp {
  int from = 0;
  Bytes bytes;
  models::Scope scope = models::Scope::thread;
};

enum class Compare { eq, ne, gt, ge, lt, le };

/// nvshmem_signal_wait_until on this PE's signal; `consume` then subtracts `value` (for loops).
struct SignalWaitOp {
  int signal = 0;
  std::uint64_t value = 0;
  Compare cmp = Compare::ge;
  bool consume = false;
};

/// nvshmem_quiet: waits until every put this PE issued is complete.
struct QuietOp {};

/// nvshmem_fence: puts issued after it to a PE become visible after those issued before it to that PE.
struct FenceOp {};

/// nvshmem_barrier_all (device side) over the group: completes this PE's puts, then synchronizes.
struct ShmemBarrierOp {
  Group group;
  models::Scope scope = models::Scope::thread;
};

/// cudaEventRecord on one of this GPU's streams: counts the records of `event` on this rank. Generators only (a
/// training step's backward records each gradient bucket's readiness for the stream that reduces it).
struct EventRecordOp {
  int event = 0;
};

/// cudaStreamWaitEvent between two streams of the same GPU: waits until `event` has been recorded `count` times on
/// this rank. Free: a same-device wait is resolved by the GPU's scheduler, not the host (models/stream.hpp's
/// event_wait is the cross-GPU case).
struct EventWaitOp {
  int event = 0;
  std::uint64_t count = 1;
};

/// SM loads by one thread from this GPU's or a peer's memory, over a span of `bytes`.
struct LoadOp {
  int from = 0;  // the issuing rank itself for local memory
  Bytes bytes;
  models::LoadPattern pattern = models::LoadPattern::chase;
  std::uint64_t count = 1;  // dependent loads (chase) or passes over the span (stream)
};

// Unified memory (models/uvm.hpp), run by runtime/uvm_executor.cpp. Buffers are named within the program that declares
// them; every op naming a buffer holds its declaration.

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
  ManagedPtr buffer;
};

/// A kernel touching one word per page of [offset, offset + bytes): pages neither resident nor mapped here fault.
struct TouchOp {
  ManagedPtr buffer;
  Bytes offset;
  Bytes bytes;
  bool write = false;
};

/// cudaMemPrefetchAsync of [offset, offset + bytes) to a GPU or the host.
struct PrefetchOp {
  ManagedPtr buffer;
  int to = HOST;
  Bytes offset;
  Bytes bytes;
};

/// cudaMemAdvise over the whole buffer: replaces its advice (absent keys: none).
struct AdviseOp {
  ManagedPtr buffer;
  std::optional<int> preferred;  // HOST or a rank
  std::vector<int> accessed_by;  // ranks that map the pages wherever they are and read them there
  bool read_mostly = false;      // reads duplicate pages instead of moving them
};

/// A kernel streaming through [offset, offset + bytes) `passes` times: faults what is neither resident nor mapped,
/// then reads every page where it is (local HBM, a peer over NVLink, the host over PCIe).
struct ReadOp {
  ManagedPtr buffer;
  Bytes offset;
  Bytes bytes;
  std::uint64_t passes = 1;
};

struct Op;

struct RepeatOp {
  int count = 1;
  std::vector<Op> body;
};

/// Runs op lists concurrently on the same GPU, like CUDA streams: each list in order, the lists at once; the op
/// ends when every list has.
struct StreamsOp {
  std::vector<std::vector<Op>> streams;
};

struct Op {
  std::variant<ComputeOp, CopyOp, CollectiveOp, BarrierOp, RepeatOp, StreamsOp, PutOp, GetOp, SignalWaitOp, QuietOp,
               FenceOp, ShmemBarrierOp, LoadOp, ManagedOp, TouchOp, PrefetchOp, AdviseOp, ReadOp, EventRecordOp,
               EventWaitOp>
      what;
  int phase = 0;  // index of the workload that emitted it
  int tag = -1;   // generators' key for summarising records (a sweep point); -1 when not summarised
};

struct Program {
  std::vector<Op> ops;
};

/// Parses a rank selector: all | 3 | [0, 2] | "0-3" | even | odd. Fails on `node` for bad or absent ranks.
std::vector<int> parse_ranks(const ConfigNode& node, int gpus);

/// The `ranks` selector of `parent`, or every rank when it has none.
std::vector<int> parse_ranks_or_all(const ConfigNode& parent, int gpus);

/// A collective's name (all_reduce, ...); an unknown name lists the known ones.
models::CollectiveKind parse_collective_kind(const ConfigNode& node);

/// The optional `protocol` key of `parent` (LL, LL128, Simple).
std::optional<models::Protocol> parse_protocol(const ConfigNode& parent);

/// The optional `algorithm`, `protocol`, `channels` and `launch` keys of `parent` into `op`, checked against every
/// collective in `kinds` and against the fabric (nvls needs switches that reduce).
void parse_collective_options(const ConfigNode& parent, const std::vector<models::CollectiveKind>& kinds,
                              const Fabric& fabric, CollectiveOp& op);

/// Parses a peer expression relative to `rank`: an index, next, prev, xor:K, host.
int parse_peer(const ConfigNode& node, int rank, int gpus);

/// Parses a list of ops for the given ranks into their programs. Checks sizes against the GPUs' memory.
void parse_ops(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
               std::vector<Program>& programs);

/// Parses a UVM op (managed, touch, prefetch, advise, read) for `ranks` (program/uvm_parse.cpp). Buffer names
/// resolve within the current parse_ops call.
void parse_uvm(const std::string& kind, const ConfigNode& op, const std::vector<int>& ranks, const Fabric& fabric,
               int phase, std::vector<Program>& programs);

/// The managed buffers one program declares, by name: parse_ops opens one for the ops it parses.
class ManagedScope {
 public:
  ManagedScope();
  ~ManagedScope();
  ManagedScope(const ManagedScope&) = delete;
  ManagedScope& operator=(const ManagedScope&) = delete;
};

/// Size limit of one op's buffer: what one GPU's memory can hold.
void check_size(const ConfigNode& parent, std::string_view key, Bytes bytes, const Fabric& fabric);

/// Counts ops after expanding repeats (for limits and progress).
std::uint64_t expanded_size(const std::vector<Op>& ops);

}  // namespace snsim::workloads
