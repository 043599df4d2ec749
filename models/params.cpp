#include "models/params.hpp"

#include <filesystem>

#include <fmt/ranges.h>

namespace snsim::models {

void apply_params(ConfigDocument& document) {
  const ConfigNode models = document.root().section("models");
  const auto name = models.maybe<std::string>("params");
  if (!name) return;
  std::shared_ptr<ConfigDocument> params;
  for (const auto& preset : params_presets())
    if (preset.name == *name) params = ConfigDocument::load_string(preset.text, preset.file);
  if (!params) {
    // A path: relative to the scenario file, or to the working directory when given on the command line.
    const SourceLocation where = models.child("params").location();
    std::filesystem::path path(*name);
    if (path.is_relative() && where.line > 0) path = std::filesystem::path(where.file).parent_path() / path;
    if (!std::filesystem::is_regular_file(path)) {
      std::vector<std::string> names;
      for (const auto& preset : params_presets()) names.push_back(preset.name);
      models.fail_key("params", fmt::format("no parameter file '{}' (and not a preset: {})", path.string(),
                                            fmt::join(names, ", ")));
    }
    params = ConfigDocument::load_file(path.string());
  }
  overlay_params(document, *params);
}

void overlay_params(ConfigDocument& document, ConfigDocument& params) {
  ConfigNode root = params.root();
  if (!root.is_map()) root.fail("expected a parameter file: a map with `models:`");
  root.child("models");
  // Provenance, free-form, and optional: a hand-written file needs only `models:`.
  if (const auto calibration = root.maybe_child("calibration")) calibration->keys();
  params.reject_unknown_keys();
  document.overlay(params, "models");
}

}  // namespace snsim::models
