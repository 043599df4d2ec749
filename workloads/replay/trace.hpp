// A captured job as snsim replays it: per rank, a graph of what its host thread and its GPU streams did, read from a
// PyTorch profiler (Kineto) trace or a Chakra execution trace (workloads/replay/kineto.hpp, chakra.hpp), before it
// becomes a Program (workloads/replay/replay.hpp). docs/replay.md says what is kept and what is assumed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/collective.hpp"
#include "models/compute.hpp"
#include "sim/fabric.hpp"
#include "sim/units.hpp"

namespace snsim::workloads::replay {

/// A send / recv: NCCL's point-to-point transfer, matched in issue order with the other end's of the same sender,
/// receiver and tag (replay.cpp).
struct PointToPoint {
  int sender = 0;
  int receiver = 0;
  int tag = 0;  // Chakra's comm_tag; 0 in Kineto traces, which have none
};

/// A collective as the framework issued it (record_param_comms, a Chakra communication node): what one rank gives
/// and gets, so that its size follows the group when the replay widens it. A send / recv is one too: a broadcast of
/// its bytes over {sender, receiver} rooted at the sender, as the training workload replays NCCL's send / recv
/// (workloads/training/training.cpp).
struct TraceCollective {
  std::optional<models::CollectiveKind> kind;  // none: a barrier
  Bytes in_bytes;                              // this rank's input
  Bytes out_bytes;                             // this rank's output
  std::vector<int> group;                      // global ranks, sorted
  int root = 0;                                // broadcast
  std::string dtype;                           // as the trace names it ("Float", "BFloat16")
  std::optional<PointToPoint> p2p{};           // a send / recv: its group is {sender, receiver}, its root the sender
};

/// One thing a rank did, on one lane: the host thread or a GPU stream. Nodes of a lane run in order; `deps` are
/// nodes of other lanes that must end first (a launch, a synchronisation, a cross-stream wait).
struct TraceNode {
  enum class Kind {
    host,        // CPU time of the host thread, held as recorded
    sync,        // the host waits for its `deps` (cudaDeviceSynchronize, a blocking copy); takes no time itself
    kernel,      // GPU work, costed from its recorded time or its shape
    memory,      // memset, device-local memcpy: costed as a memory-bound kernel
    host_copy,   // memcpy to or from the host: re-simulated over the target's links
    collective,  // re-simulated on the target fabric
  };
  Kind kind = Kind::host;
  std::size_t lane = 0;
  std::string name;
  Seconds duration{0};  // as recorded
  /// Time the lane waited before the node started beyond what its lane and deps explain: the launch latency or the
  /// GPU's gap between queued kernels, held as recorded.
  Seconds delay{0};
  Bytes bytes{0};                                // copies, memsets
  bool to_host = false;                          // host_copy: device -> host
  std::optional<TraceCollective> collective{};   // collective
  std::optional<Flops> flops{};                  // kernel: its work, where the trace has its operator's shapes
  std::optional<models::Gemm> gemm{};            // kernel: a matrix multiply's shape (timed by the GEMM model)
  std::optional<models::Attention> attention{};  // kernel: cuDNN's fused attention's shape (the attention model)
  Bytes hbm_bytes{0};                            // kernel: its operands' bytes, with flops
  Dtype dtype = Dtype::bf16;                     // kernel: the number format of its flops
  std::vector<std::size_t> deps{};
  int step = 0;  // the profiler step it belongs to, from 0
};

/// One rank's trace.
struct RankTrace {
  std::string file;
  int rank = 0;                    // from the trace, else the file's position on the command line
  std::optional<int> world_size;   // when the trace says
  std::string gpu;                 // the GPU that ran it, as the trace names it ("NVIDIA H200"); empty: unknown
  std::vector<std::string> lanes;  // "host", "stream 7", ...
  std::vector<TraceNode> nodes;    // in the order each lane ran them
  int steps = 1;                   // profiler steps in the replayed window
  std::vector<std::string> notes;  // assumptions made while reading it, for the user
};

}  // namespace snsim::workloads::replay
