// GB200 NVL36x2: two NVL36 racks of 36 Blackwell GPUs each, joined by their NVLink switch trays into one 72-GPU
// NVLink domain.
//
//   rack 0: gpu0..gpu35  -- 1 link each -> nvswitch0..17      every switch chip gives 36 ports to its rack's GPUs and
//   rack 1: gpu36..gpu71 -- 1 link each -> nvswitch18..35     36 to its twin in the other rack (36-lane trunk):
//            nvswitch p  <== 36 lanes ==>  nvswitch 18+p        one hop within a rack, two across, non-blocking
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry nvl36x2_entry();

}  // namespace snsim::topologies
