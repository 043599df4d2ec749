#include "runtime/host_executor.hpp"

namespace snsim::workloads {

void HostExecutor::run(int /*rank*/, const HostOp& op) {
  sleep_for(op.time);
}

}  // namespace snsim::workloads
