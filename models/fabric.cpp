#include "models/fabric.hpp"

namespace snsim::models {

std::string_view to_string(FabricPath path) {
  switch (path) {
    case FabricPath::automatic:
      return "auto";
    case FabricPath::exact:
      return "exact";
    case FabricPath::fast:
      return "fast";
  }
  return "?";
}

const ParamTable<FabricModel>& fabric_params() {
  static const ParamTable<FabricModel> table = [] {
    ParamTable<FabricModel> params;
    params.add(
        {.key = "path",
         .fallback = FabricPath::automatic,
         .doc = "exact: every transfer its own flow; fast: all-peers collectives (all_to_all, one_shot, two_shot) "
                "inside one crossbar domain aggregated per port and round, and rings without transfer jitter or "
                "fabric failures as one flow per rank; auto: fast for 3 or more ranks",
         .choices = {{"auto", FabricPath::automatic}, {"exact", FabricPath::exact}, {"fast", FabricPath::fast}}},
        [](FabricModel& m) { return &m.path; });
    return params;
  }();
  return table;
}

Registry<Model>::Entry fabric_model_entry() {
  return model_entry("fabric",
                     "how collective traffic is timed: each transfer its own max-min flow (exact), or aggregated "
                     "flows: one per GPU port and round inside a non-blocking switch domain (crossbar fast path), one "
                     "per rank and ring collective (ring fast path)",
                     fabric_params());
}

}  // namespace snsim::models
