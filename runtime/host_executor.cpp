#include "runtime/host_executor.hpp"

#include <simgrid/s4u.hpp>

namespace snsim::workloads {

void HostExecutor::run(int /*rank*/, const HostOp& op) {
  if (op.time > Seconds{0}) simgrid::s4u::this_actor::sleep_for(op.time.count());
}

}  // namespace snsim::workloads
