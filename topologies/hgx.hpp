// HGX H100/H200: 2-8 Hopper GPUs, each with 18 NVLink4 links spread over 4 NVSwitch chips (5/4/4/5 links), and a
// PCIe Gen5 x16 link to the host.
//
//            host (PCIe Gen5 x16 to every GPU)
//   gpu0 ... gpu7
//    ||  5 links -> nvswitch0      every GPU reaches every other GPU in one switch hop,
//    ||  4 links -> nvswitch1      striping its traffic over all 18 links (4 planes)
//    ||  4 links -> nvswitch2
//    ||  5 links -> nvswitch3
//
// With nvme_drives > 0 the GPUs reach the host through a PCIe tree that also holds the drives (hgx.cpp).
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry hgx_entry();

}  // namespace snsim::topologies
