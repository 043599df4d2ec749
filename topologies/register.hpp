// Every built-in topology, listed on one screen.
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

void register_topologies(Registry<Topology>& registry);

}  // namespace snsim::topologies
