#include "topologies/register.hpp"

#include "topologies/file.hpp"
#include "topologies/hgx.hpp"
#include "topologies/nvidia_smi.hpp"
#include "topologies/nvl36x2.hpp"
#include "topologies/nvl576.hpp"
#include "topologies/nvl72.hpp"
#include "topologies/pcie.hpp"
#include "topologies/superpod.hpp"

namespace snsim::topologies {

void register_topologies(Registry<Topology>& registry) {
  registry.add(file_entry());
  registry.add(hgx_entry());
  registry.add(nvidia_smi_entry());
  registry.add(nvl36x2_entry());
  registry.add(nvl576_entry());
  registry.add(nvl72_entry());
  registry.add(pcie_entry());
  registry.add(superpod_entry());
}

}  // namespace snsim::topologies
