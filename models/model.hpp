// The model plugin interface. A model turns ops into time; each is configured under `models.<name>` in a scenario
// and registered by name (models/models.cpp), so `snsim info` lists every parameter with its default and source.
// Each model declares its parameters once, in a ParamTable (sim/parameters.hpp) next to the code that uses them.
#pragma once

#include "sim/registry.hpp"

namespace snsim::models {

class Model {
 public:
  virtual ~Model() = default;
};

/// The registry entry of a model read entirely from its parameter table (a static that outlives the registry).
template <class M>
Registry<Model>::Entry model_entry(std::string name, std::string summary, const ParamTable<M>& params) {
  return {std::move(name), std::move(summary), params.docs(),
          [&params](const ConfigNode& node) -> std::unique_ptr<Model> {
            auto m = std::make_unique<M>();
            params.read(node, *m);
            return m;
          }};
}

}  // namespace snsim::models
