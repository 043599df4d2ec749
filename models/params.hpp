// Calibrated parameter sets: `models.params` in a scenario names a file written by `snsim calibrate` (or a shipped
// preset: h200, from our traces; h100 and gb200, from published numbers) whose `models:` values fill in whatever
// the scenario does not set itself.
//
//   models:
//     params: h200                       # a preset, or a path relative to the scenario file
//     copy: {ce: {efficiency: 0.9}}      # still wins over the preset
//     jitter: {latency: {dist: constant, value: 1}}   # a distribution replaces the preset's whole
#pragma once

#include <string>
#include <vector>

#include "sim/config.hpp"

namespace snsim::models {

/// A shipped parameter set, compiled in from validation/params/<name>.yaml.
struct ParamsPreset {
  std::string name;
  std::string file;  // path in the repository, used in messages
  std::string text;
};
const std::vector<ParamsPreset>& params_presets();

/// Reads `models.params` of `document` (if present) and overlays that parameter file onto `models:`. Call before
/// anything reads the models section. A file's keys other than `models` and `calibration` are errors.
void apply_params(ConfigDocument& document);

/// Checks a parameter file already parsed (a map with `models:` and optional free-form `calibration:`, nothing else)
/// and overlays its `models:` onto `document`. apply_params calls it; so does the parameter-file fuzz target.
void overlay_params(ConfigDocument& document, ConfigDocument& params);

}  // namespace snsim::models
