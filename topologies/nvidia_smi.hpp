// A fabric read from `nvidia-smi topo -m` output: the GPU matrix, inline (`text:`), in a file (`path:`), or from
// the header of an snsim trace (`trace:`, its "topo" field).
//
//           GPU0    GPU1    CPU Affinity    NUMA Affinity
//   GPU0     X      NV18    0-31            0
//   GPU1    NV18     X      0-31            0
//
// NV# = # bonded NVLinks. When every NVLink-connected GPU shows the same # to each of its NVLink peers and that is all
// of a GPU's links (`links_per_gpu`), the links go through an NVSwitch (a GPU cannot give all its links to each of
// several peers directly): one switch device, # lanes per GPU. Otherwise each NV# is a direct link of # lanes.
// Every GPU has a PCIe link to the host. Without NVLink, PCIe paths carry peer traffic: GPUs joined by PIX or PXB share
// a PCIe switch; PHB, NODE and SYS all cross the CPU (one root switch: the host bridges and the SMP link are not told
// apart). NIC columns are ignored.
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry nvidia_smi_entry();

}  // namespace snsim::topologies
