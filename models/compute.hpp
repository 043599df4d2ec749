// GPU compute as a roofline: an op of F flops touching B bytes of HBM takes the longer of F / (peak x efficiency)
// and B / (HBM bandwidth x efficiency), plus a kernel launch. Peaks come from the GPU in the Fabric.
#pragma once

#include "models/model.hpp"
#include "sim/fabric.hpp"

namespace snsim::models {

class ComputeModel final : public Model {
 public:
  double flop_efficiency = 0;  // achieved share of the peak tensor rate on large GEMMs
  double hbm_efficiency = 0;   // achieved share of peak HBM bandwidth on streaming kernels
  Seconds launch;              // kernel launch overhead per compute op

  Seconds time(const GpuSpec& gpu, Flops flops, Bytes bytes) const;
};

Registry<Model>::Entry compute_model_entry();

}  // namespace snsim::models
