// The host thread's CPU time (program/host_ops.hpp): a sleep of the rank's actor, holding no GPU resource. It is
// not drawn through the latency jitter of fixed costs (models/jitter.hpp): that jitter is fitted on GPU transfers,
// and a replayed host interval is already a sample of the real host (docs/replay.md). A runtime call (a launch, a
// synchronisation) varies by models.jitter.host, fitted on the host's own calls.
#pragma once

#include "program/program.hpp"
#include "runtime/context.hpp"

namespace snsim::workloads {

class HostExecutor : Executor {
 public:
  explicit HostExecutor(RunContext& context) : Executor{context} {}
  void run(int rank, const HostOp& op);
};

}  // namespace snsim::workloads
