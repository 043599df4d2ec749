// NVL576: 8 racks of 72 Blackwell GPUs in one NVLink domain through a two-tier NVLink switch fat tree.
//
//   gpu g (rack r, half h)  -- link p (of 18) -->  L1 chip (r, h, plane p)      72-port chips: 36 ports down, 36 up
//   L1 chip (r, h, p)       -- 4 lanes each  -->   L2 chips (plane p, 0..8)     9 L2 chips per plane, 64 ports used
//
// Same half-rack: one switch hop (2 channel hops); otherwise up to L2 and down (4 channel hops). NVIDIA has not
// published the NVL576 wiring: this is a non-blocking two-tier Clos of the NVL72 switch chip, our assumption
// (docs/hardware.md#nvl576).
#pragma once

#include "sim/registry.hpp"
#include "sim/topology.hpp"

namespace snsim::topologies {

Registry<Topology>::Entry nvl576_entry();

}  // namespace snsim::topologies
