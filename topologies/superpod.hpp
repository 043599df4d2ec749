// A superpod: N HGX or NVL72 nodes joined by InfiniBand (NDR or XDR), one NIC per GPU, rail-optimised fat tree.
//
//   node n: gpu (n, i) -- NVLink --> the node's NVSwitch planes (as hgx / nvl72)
//           gpu (n, i) -- PCIe --> nic (n, i) -- IB --> leaf (rail i, n / (radix/2))     NIC i of every node on rail i
//   leaf -- 1 lane to each of radix/2 spine positions                                   half the leaf ports up
//
// Hops: same node 2 (NVLink); same rail and leaf 4; otherwise 6 (up to a spine). Traffic between nodes does not
// cross NVLink first (no PXN): GPU i talks to GPU j of another node over NIC i, leaf, spine, leaf and NIC j.
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry superpod_entry();

}  // namespace snsim::topologies
