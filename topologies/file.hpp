// A custom fabric written as a graph: devices and duplex links, inline under `topology:` or in a YAML file of its
// own (`path:`, relative to the scenario file).
//
//   topology:
//     type: file
//     devices:
//       - {name: gpu0, kind: gpu, gpu: h200}             # GPUs take ranks in the order they are listed
//       - {name: gpu1, kind: gpu, gpu: h200}
//       - {name: sw0, kind: nvswitch, ports: 64, reduction: 0.85}
//     links:                                            # each link is both directions, lanes x lane_bandwidth
//       - {between: [gpu0, sw0], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps, latency: 177ns}
//       - {between: [gpu1, sw0], kind: nvlink, lanes: 18, lane_bandwidth: 25GBps}
//
// Kinds: gpu, host (endpoints); nvswitch, pcie_switch, ib_switch, nic (they forward). Link kinds: nvlink, pcie, ib.
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry file_entry();

}  // namespace snsim::topologies
