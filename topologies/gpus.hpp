// GPU presets shared by topology builders: what a GPU model can do, with sources.
#pragma once

#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/fabric.hpp"
#include "sim/parameters.hpp"

namespace snsim::topologies {

// Link and switch presets shared by the builders (the one home of these numbers).
// PCIe Gen5 x16: 32 GT/s x 16 lanes with 128b/130b encoding = 63.0 GB/s per direction [spec: PCI-SIG].
inline constexpr BytesPerSecond PCIE5_X16 = 63_GBps;
// Wire plus switch traversal per hop, from our H200 pointer chases: a dependent load from the peer GPU takes 850.2 ns
// against 141.5 ns from local L2 (validation/traces/h200/h200x2-latency-jitter.jsonl, latency/peer_load and
// local_load), so the request and the data cross GPU -> NVSwitch -> GPU once each: (850.2 - 141.5) / 2 = 354 ns one
// way, 177 ns per hop. Public sources give only end-to-end numbers that include software (docs/hardware.md#latency).
inline constexpr Seconds NVLINK_HOP = 177_ns;
inline constexpr Seconds PCIE_HOP = 500_ns;
// InfiniBand: NDR 400 Gb/s = 50 GB/s per port per direction, NVIDIA Quantum-2 (QM9700) switches with 64 NDR ports
// [spec: QM9700 datasheet, 64 x 400 Gb/s, 51.2 Tb/s]; XDR 800 Gb/s = 100 GB/s, Quantum-X800 (Q3400) with 144 XDR ports
// [spec: NVIDIA Quantum-X800 page]. Port-to-port cut-through latency is quoted between ~150 and ~400 ns by third
// parties for Quantum-2 [anec: router-switch.com, yobitel.com, systemspecbase.com]; NVIDIA publishes none for NDR.
// 300 ns per hop (switch plus cable) is a middle value [unverified].
inline constexpr BytesPerSecond IB_NDR_PORT = 50_GBps;
inline constexpr int IB_NDR_SWITCH_PORTS = 64;
inline constexpr BytesPerSecond IB_XDR_PORT = 100_GBps;
inline constexpr int IB_XDR_SWITCH_PORTS = 144;
inline constexpr Seconds IB_HOP = 300_ns;

// H100/H200 (HGX and the nvidia_smi topology). NVLink4: 25 GB/s per link per direction, 18 links per GPU, 450 GB/s
// per GPU per direction [spec: NVIDIA NVLink page; docs/hardware.md#nvlink]; nvidia-smi on HGX shows NV18 between
// every pair (NVIDIA/nccl#1264).
inline constexpr BytesPerSecond NVLINK4_LANE = 25_GBps;
inline constexpr int NVLINK4_LINKS_PER_GPU = 18;
// NVSwitch3 reduces in the switch (NVLink SHARP, NVLS) [spec: docs/hardware.md#nvswitch]; NCCL enables NVLS on Hopper
// HGX and models its rate at nvlsEfficiency = 0.85 of the link rate [model: NVIDIA/nccl src/graph/tuning.cc].
inline constexpr double NVSWITCH3_REDUCTION = 0.85;
// NVSwitch3: 64 NVLink4 ports per chip [spec: docs/hardware.md#nvswitch]; HGX uses at most 8 x 5 = 40 of them.
inline constexpr int NVSWITCH3_PORTS = 64;
// L2 of an H200: 60 MiB on our machines (the probe's trace headers, cudaDeviceProp::l2CacheSize = 62914560). The
// h200 preset's L2, and the span up to which the PGAS model's loads hit L2 by default (models/pgas.cpp).
inline constexpr Bytes H200_L2 = 60_MiB;

// GB200 (NVL72 and NVL36x2 racks). NVLink5: 50 GB/s per link per direction, 18 links per GPU, one link to each of
// 18 switch chips [spec: nvidia.com/data-center/nvlink; docs/hardware.md#nvswitch].
inline constexpr BytesPerSecond NVLINK5_LANE = 50_GBps;
inline constexpr int NVLINK5_LINKS_PER_GPU = 18;
// 72 NVLink5 ports per switch chip (144 per tray of 2, 9 trays: NVL_TRAY_CHIPS) [spec: docs/hardware.md#nvswitch].
inline constexpr int NVLINK5_SWITCH_PORTS = 72;
// A rack's 18 switch chips sit in 9 NVLink switch trays of 2 chips (144 NVLink ports per tray) [spec:
// nvidia.com/data-center/nvlink, "144 NVLink ports"; docs.nvidia.com Base Command Manager, "9 NVLink switch trays per
// rack"; docs/hardware.md#nvswitch]. A tray fails as one (scenario/failures.hpp: `tray: N`). Which chips share a tray
// is not published; we pair chips 2t and 2t+1, which changes nothing since every GPU has one lane to each chip.
inline constexpr int NVL_TRAY_CHIPS = 2;
// The NVLink5 switch reduces in the switch (SHARP, NVLS). NCCL models NVLS at nvlsEfficiency = 0.74 of the link
// rate on Blackwell [model: NVIDIA/nccl src/graph/tuning.cc], which fits 8xB300 (NVLS busbw 845 GB/s, NVIDIA/nccl#2140)
// within 1 %. The full 72-GPU rack measures less: busbw 835-847 GB/s at 4-8 GB [meas: coreweave/nccl-tests PR #43],
// which our traffic model (S + S/n each way per GPU) reaches at 0.58. We default to that rack figure, fitted from
// the 8 GB point -- NCCL's 0.74 would predict ~1060 GB/s; NCCL disables NVLS buffer registration across nodes
// (MNNVL, src/init.cc), one plausible cause. Set `nvls_efficiency` to compare.
inline constexpr double RACK_NVLS_EFFICIENCY = 0.58;
// Grace-Blackwell NVLink-C2C: 900 GB/s bidirectional per superchip shared by its 2 GPUs = 225 GB/s per GPU per
// direction [spec; sharing unverified, docs/hardware.md#nvlink]; measured H2D 201 / D2H 193 GB/s per GPU [meas: Azure
// ND_GB200_v6_results.md, docs/hardware.md#uvm].
inline constexpr BytesPerSecond C2C = 225_GBps;

/// The NVLink5 lanes of a GB200-class rack topology (nvl72, nvl36x2, nvl576): rate and hop latency of one lane, and
/// the share of it at which the switch chips reduce (NVLS).
struct Nvlink5Links {
  BytesPerSecond bandwidth;
  Seconds latency;
  double nvls_efficiency = 0;
};
/// `nvlink_bandwidth`, `nvlink_latency` and `nvls_efficiency` of the rack topologies (defaults: the constants above).
const ParamTable<Nvlink5Links>& nvlink5_params();
/// `c2c_bandwidth`: NVLink-C2C to the Grace host, per GPU per direction (default C2C).
const ParamTable<BytesPerSecond>& c2c_params();

/// The preset for a GPU model name ("h100", "h200", "b200"); fails on `node` with the known names otherwise.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name);

/// The GPUs each kind of system is built of: an HGX baseboard (and a PCIe box) holds Hopper GPUs on NVLink 4, the
/// NVL72 racks (NVL36x2, NVL576) Blackwell GPUs on NVLink 5 (docs/hardware.md).
inline const std::vector<std::string> HOPPER_GPUS{"h100", "h200"};
inline const std::vector<std::string> BLACKWELL_GPUS{"gb200", "b200"};

/// As gpu_preset, and fails on `node` when `name` is not one of `fits`, the GPUs `system` is built of: "gpu: an nvl72
/// is built of gb200 or b200 GPUs, not h200", followed by `hint` when given.
GpuSpec gpu_preset(const ConfigNode& node, const std::string& name, const std::vector<std::string>& fits,
                   std::string_view system, std::string_view hint = "");

/// The GPU of a rack topology (nvl72, nvl36x2, nvl576): a Blackwell one, unless `nvlink_bandwidth` is set, which
/// models another GPU's NVLink switch fabric on purpose (Hopper's NVLink Switch System: NVLink 4 lanes, 25GBps).
GpuSpec rack_gpu(const ConfigNode& node, const std::string& name, std::string_view system);
/// Names of the known presets, for docs.
std::vector<std::string> gpu_preset_names();
/// Every preset, in name order: the GPU properties the topologies use (the reference lists them).
const std::vector<GpuSpec>& gpu_presets();

}  // namespace snsim::topologies
