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

namespace {
std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<FabricModel>();
  const auto path = node.optional<std::string>("path", "auto");
  if (path == "auto")
    m->path = FabricPath::automatic;
  else if (path == "exact")
    m->path = FabricPath::exact;
  else if (path == "fast")
    m->path = FabricPath::fast;
  else
    node.fail_key("path", fmt::format("expected auto, exact or fast, found '{}'", path));
  return m;
}
}  // namespace

Registry<Model>::Entry fabric_model_entry() {
  return {"fabric",
          "how collective traffic is timed: each transfer its own max-min flow (exact), or aggregated flows: one per "
          "GPU port and round inside a non-blocking switch domain (crossbar fast path), one per rank and ring "
          "collective (ring fast path)",
          {
              {"path", "auto|exact|fast", "auto",
               "exact: every transfer its own flow; fast: all-peers collectives (all_to_all, one_shot, two_shot) "
               "inside one crossbar domain aggregated per port and round, and rings without transfer jitter or "
               "fabric failures as one flow per rank; auto: fast for 3 or more ranks"},
          },
          make};
}

}  // namespace snsim::models
