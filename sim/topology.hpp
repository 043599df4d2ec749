// The topology plugin interface: a builder from scenario parameters to a Fabric (topologies/ holds one per file).
#pragma once

#include "sim/fabric.hpp"

namespace snsim {

class Topology {
 public:
  virtual ~Topology() = default;
  /// Builds the fabric. Parameters were read and checked by the factory, before this is called.
  virtual Fabric build() const = 0;
};

}  // namespace snsim
