// The host thread's CPU time (program/host_ops.hpp): a sleep of the rank's actor, holding no GPU resource. It goes
// through the context's fixed-cost wait, so that a scenario's latency jitter stretches host time as it stretches
// launch costs (models/jitter.hpp).
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
