// A baseline without NVLink: 2-8 GPUs and the host on one PCIe Gen5 switch; peer traffic crosses the switch.
//
//   gpu0  gpu1 ... gpu7   host
//     \    |        |    /        every device has one x16 Gen5 link to the switch
//          pcie_switch
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry pcie_entry();

}  // namespace snsim::topologies
