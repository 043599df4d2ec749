// GPU presets shared by topology builders: what a GPU model can do, with sources.
#pragma once

#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/fabric.hpp"

namespace snsim::topologies {

/// The preset for a GPU model name ("h100", "h200", "b200"); fails on `node` with the known names otherwise.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name);
/// Names of the known presets, for docs.
std::vector<std::string> gpu_preset_names();

}  // namespace snsim::topologies
