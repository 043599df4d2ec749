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
// Wire plus switch traversal per hop, from our H200 pointer chases: a dependent load from the peer GPU takes 850.2 ns
// against 141.5 ns from local L2 (validation/traces/h200/h200x2-latency-jitter.jsonl, latency/peer_load and
// local_load), so the request and the data cross GPU -> NVSwitch -> GPU once each: (850.2 - 141.5) / 2 = 354 ns one
// way, 177 ns per hop. Public sources give only end-to-end numbers that include software (hardware.md §2.2).
inline constexpr double NVLINK_HOP_NS = 177;
inline constexpr double PCIE_HOP_NS = 500;

/// The preset for a GPU model name ("h100", "h200", "b200"); fails on `node` with the known names otherwise.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name);
/// Names of the known presets, for docs.
std::vector<std::string> gpu_preset_names();

}  // namespace snsim::topologies
