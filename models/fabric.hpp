// How traffic inside one non-blocking switch domain is timed (`models.fabric`).
//
// The exact path gives every transfer its own SimGrid flow, shared max-min: a round of a jittered all-to-all on 72
// GPUs is 5,112 coupled flows that end at distinct times, and every end re-solves them (reference/simgrid-3.32.md §6:
// seconds per round at 72 GPUs, O(flows^2)). Inside a crossbar domain (Fabric::crossbar_domains: every member reaches
// every other through the same switch planes, which the platform does not model as links) only the members' ports
// can bind, so the crossbar fast path moves a GPU's transfers of one round as two flows: everything it sends, over
// its HBM and up-link, and everything it receives, over its down-link and HBM (Simulation::crossbar_flow). A port
// then drains at its own rate, as a Birkhoff-von Neumann schedule of the round would (its time is the larger of its
// egress and ingress totals over the port's bandwidth); max-min per transfer can leave a port idle when its peers'
// ports bind instead, which the fast path does not see. Rate caps per transfer (fewer channels than links, protocol
// caps) become one cap per port that lets the port's largest transfer end when it would alone. Jitter draws, byte
// accounting and latencies are those of the exact path, transfer by transfer; tests measure the error against it.
//
//   models:
//     fabric: {path: auto}   # auto | exact | fast
#pragma once

#include <string_view>

#include "models/model.hpp"

namespace snsim::models {

enum class FabricPath {
  automatic,  // fast where it applies and changes anything: all-peers collectives of 3 or more ranks in one domain
  exact,      // every transfer its own flow
  fast,       // fast for every all-peers collective inside one crossbar domain, 2 ranks included
};

std::string_view to_string(FabricPath path);

class FabricModel final : public Model {
 public:
  FabricPath path = FabricPath::automatic;
};

Registry<Model>::Entry fabric_model_entry();

}  // namespace snsim::models
