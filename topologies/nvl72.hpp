// GB200 NVL72: up to 72 Blackwell GPUs in one NVLink domain, each with 18 NVLink5 links, one to each of 18 NVLink
// switch chips (9 switch trays x 2 chips), and NVLink-C2C to its Grace CPU (the host).
//
//   gpu0 ... gpu71          every GPU reaches every other GPU in one switch hop, striping its traffic over
//    |  1 link -> nvswitch0   its 18 links (18 planes of one link each): 18 x 50 GB/s = 900 GB/s per direction;
//    |  1 link -> nvswitch1   the switches reduce in the switch (NVLS)
//    |  ...
//    |  1 link -> nvswitch17
//    +- C2C -> host
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry nvl72_entry();

}  // namespace snsim::topologies
