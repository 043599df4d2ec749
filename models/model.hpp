// The model plugin interface. A model turns ops into time; each is configured under `models.<name>` in a scenario
// and registered by name (models/register.cpp), so `snsim info` lists every parameter with its default and source.
#pragma once

#include "sim/registry.hpp"

namespace snsim::models {

class Model {
 public:
  virtual ~Model() = default;
};

}  // namespace snsim::models
