// The built-in workloads: an explicit program, and the sweeps that imitate the usual microbenchmarks.
#pragma once

#include "workloads/workload.hpp"

namespace snsim::workloads {

WorkloadRegistry::Entry program_entry();
WorkloadRegistry::Entry p2p_sweep_entry();
WorkloadRegistry::Entry collective_sweep_entry();

}  // namespace snsim::workloads
