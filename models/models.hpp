// The set of models one simulation uses, read from the scenario's `models:` section (every model has defaults).
#pragma once

#include <memory>

#include "models/collective.hpp"
#include "models/compute.hpp"
#include "models/copy.hpp"
#include "models/fabric.hpp"
#include "models/jitter.hpp"
#include "models/pgas.hpp"
#include "models/stream.hpp"
#include "models/uvm.hpp"

namespace snsim::models {

/// Every built-in model, listed on one screen.
void register_models(Registry<Model>& registry);

struct Models {
  std::shared_ptr<const CopyModel> copy;
  std::shared_ptr<const ComputeModel> compute;
  std::shared_ptr<const CollectiveModel> collective;
  std::shared_ptr<const StreamModel> stream;
  std::shared_ptr<const JitterModel> jitter;
  std::shared_ptr<const VariationModel> variation;
  std::shared_ptr<const SlowModel> slow;  // check(gpus) once the fabric is known
  std::shared_ptr<const PgasModel> pgas;
  std::shared_ptr<const UvmModel> uvm;
  std::shared_ptr<const FabricModel> fabric;

  /// Builds every model from `models.<name>` (absent sections take the defaults).
  static Models load(const ConfigNode& section);
};

}  // namespace snsim::models
