#include "runtime/host_executor.hpp"

#include <simgrid/s4u.hpp>

namespace snsim::workloads {

void HostExecutor::run(int rank, const HostOp& op) {
  const double factor = op.runtime_call ? variability_.host_factor(device(rank)) : 1.0;
  if (op.time > Seconds{0}) simgrid::s4u::this_actor::sleep_for(op.time.count() * factor);
}

}  // namespace snsim::workloads
