#include "topologies/register.hpp"

#include "topologies/hgx.hpp"
#include "topologies/nvl72.hpp"
#include "topologies/pcie.hpp"

namespace snsim::topologies {

void register_topologies(Registry<Topology>& registry) {
  registry.add(hgx_entry());
  registry.add(nvl72_entry());
  registry.add(pcie_entry());
}

}  // namespace snsim::topologies
