// How long a copy takes: the NVLink/PCIe line rate is in the Fabric; this model adds what the engine doing the copy
// costs on top. Copy engines (CE) carry 256 B payloads and SM-driven copies 128 B, so they reach different shares of
// the line rate; both pay a fixed cost before the first byte moves (copy-engine setup, kernel launch).
//
// Payload efficiency is applied by putting payload/efficiency bytes on the wire: headers take real link capacity,
// so a CE copy and an SM copy sharing a link are shared max-min on what they really put on the wire.
#pragma once

#include <string>

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

enum class CopyEngine { ce, sm };
std::string_view to_string(CopyEngine engine);

class CopyModel final : public Model {
 public:
  double ce_efficiency = 0;         // payload share of the line rate reached by copy engines
  double sm_efficiency = 0;         // same for SM-driven loads/stores
  Seconds ce_setup;                 // fixed cost of one copy-engine copy before bytes move
  Seconds sm_launch;                // fixed cost of an SM copy kernel before bytes move
  double local_hbm_efficiency = 0;  // share of HBM bandwidth a device-local copy reaches (reads + writes)

  double efficiency(CopyEngine engine) const { return engine == CopyEngine::ce ? ce_efficiency : sm_efficiency; }
  Seconds fixed_cost(CopyEngine engine) const { return engine == CopyEngine::ce ? ce_setup : sm_launch; }
  /// Bytes on the wire for `payload` bytes moved by `engine`.
  Bytes wire_bytes(Bytes payload, CopyEngine engine) const;
};

Registry<Model>::Entry copy_model_entry();

}  // namespace snsim::models
