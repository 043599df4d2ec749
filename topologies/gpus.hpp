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
// InfiniBand: NDR 400 Gb/s = 50 GB/s per port per direction, NVIDIA Quantum-2 (QM9700) switches with 64 NDR ports
// [spec: QM9700 datasheet, 64 x 400 Gb/s, 51.2 Tb/s]; XDR 800 Gb/s = 100 GB/s, Quantum-X800 (Q3400) with 144 XDR ports
// [spec: NVIDIA Quantum-X800 page]. Port-to-port cut-through latency is quoted between ~150 and ~400 ns by third
// parties for Quantum-2 [anec: router-switch.com, yobitel.com, systemspecbase.com]; NVIDIA publishes none for NDR.
// 300 ns per hop (switch plus cable) is a middle value [unverified].
inline constexpr double IB_NDR_PORT_GBPS = 50.0;
inline constexpr int IB_NDR_SWITCH_PORTS = 64;
inline constexpr double IB_XDR_PORT_GBPS = 100.0;
inline constexpr int IB_XDR_SWITCH_PORTS = 144;
inline constexpr double IB_HOP_NS = 300;

// GB200 (NVL72 and NVL36x2 racks). NVLink5: 50 GB/s per link per direction, 18 links per GPU, one link to each of
// 18 switch chips [spec: nvidia.com/data-center/nvlink; reference/hardware.md §1.1-1.2].
inline constexpr double NVLINK5_LANE_GBPS = 50.0;
// A rack's 18 switch chips sit in 9 NVLink switch trays of 2 chips (144 NVLink ports per tray) [spec:
// nvidia.com/data-center/nvlink, "144 NVLink ports"; docs.nvidia.com Base Command Manager, "9 NVLink switch trays per
// rack"; reference/hardware.md §1.2]. A tray fails as one (scenario/failures.hpp: `tray: N`). Which chips share a tray is
// not published; we pair chips 2t and 2t+1, which changes nothing since every GPU has one lane to each chip.
inline constexpr int NVL_TRAY_CHIPS = 2;
// The NVLink5 switch reduces in the switch (SHARP, NVLS). NCCL models NVLS at nvlsEfficiency = 0.74 of the link
// rate on Blackwell [model: NVIDIA/nccl src/graph/tuning.cc], which fits 8xB300 (NVLS busbw 845 GB/s, NVIDIA/nccl#2140)
// within 1 %. The full 72-GPU rack measures less: busbw 835-847 GB/s at 4-8 GB [meas: coreweave/nccl-tests PR #43],
// which our traffic model (S + S/n each way per GPU) reaches at 0.58. We default to that rack figure, fitted from
// the 8 GB point -- NCCL's 0.74 would predict ~1060 GB/s; NCCL disables NVLS buffer registration across nodes
// (MNNVL, src/init.cc), one plausible cause. Set `nvls_efficiency` to compare.
inline constexpr double RACK_NVLS_EFFICIENCY = 0.58;
// Grace-Blackwell NVLink-C2C: 900 GB/s bidirectional per superchip shared by its 2 GPUs = 225 GB/s per GPU per
// direction [spec; sharing unverified, hardware.md §1.1]; measured H2D 201 / D2H 193 GB/s per GPU [meas: Azure
// ND_GB200_v6_results.md, hardware.md §2.6].
inline constexpr double C2C_GBPS = 225.0;

/// The NVLink5 lanes of a GB200-class rack topology (nvl72, nvl36x2, nvl576): rate and hop latency of one lane, and
/// the share of it at which the switch chips reduce (NVLS).
struct Nvlink5Links {
  BytesPerSecond bandwidth;
  Seconds latency;
  double nvls_efficiency = 0;
};
/// Reads `nvlink_bandwidth`, `nvlink_latency` and `nvls_efficiency` of `node` (defaults: the constants above).
Nvlink5Links parse_nvlink5_links(const ConfigNode& node);
/// Reads `c2c_bandwidth` of `node`: NVLink-C2C to the Grace host, per GPU per direction (default C2C_GBPS).
BytesPerSecond parse_c2c_bandwidth(const ConfigNode& node);

/// The preset for a GPU model name ("h100", "h200", "b200"); fails on `node` with the known names otherwise.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name);
/// Names of the known presets, for docs.
std::vector<std::string> gpu_preset_names();

}  // namespace snsim::topologies
