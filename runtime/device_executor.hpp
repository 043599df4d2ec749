// A GPU's kernels and copies (program/device_ops.hpp): a kernel's time from the compute model's roofline at the
// GPU's (varied, power-capped) clock; a copy as one transfer over the route, or one per NVMe drive, sharing links
// max-min with all other traffic.
#pragma once

#include <map>

#include "program/program.hpp"
#include "runtime/context.hpp"

namespace snsim::workloads {

class DeviceExecutor : Executor {
 public:
  explicit DeviceExecutor(RunContext& context) : Executor{context} {}
  void run(int rank, const ComputeOp& op);
  void run(int rank, const CopyOp& op);

 private:
  std::map<DeviceId, models::TensorDuty> tensor_duty_;  // per GPU, for power-capped clocks (models/compute.hpp)
};

}  // namespace snsim::workloads
