// GPU presets shared by topology builders: what a GPU model can do, with sources.
#pragma once

#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/fabric.hpp"

namespace snsim::topologies {

// Link presets shared by the builders.
// PCIe Gen5 x16: 32 GT/s x 16 lanes with 128b/130b encoding = 63.0 GB/s per direction [spec: PCI-SIG].
inline constexpr double PCIE5_X16_GBPS = 63.0;
// Wire plus switch traversal per hop. Not measured directly in public sources (reference/hardware.md §2.2 lists
// only end-to-end numbers that include software); recalibrated from our latency traces.
inline constexpr double NVLINK_HOP_NS = 350;
inline constexpr double PCIE_HOP_NS = 500;

/// The preset for a GPU model name ("h100", "h200", "b200"); fails on `node` with the known names otherwise.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name);
/// Names of the known presets, for docs.
std::vector<std::string> gpu_preset_names();

}  // namespace snsim::topologies
