#include "models/copy.hpp"

#include <cmath>

namespace snsim::models {
namespace {

// CE peer copies on 8xH100 HGX reach 371-377 GB/s of 450 (83-84 %) [meas: NVIDIA/nccl#1264, reference/hardware.md
// §2.1]. SM copies: NCCL's model uses 20.6 of 25 GB/s per NVLink4 link (82.4 %) [model: NVIDIA/nccl
// src/graph/topo.h SM90_NVLINK_BW]. Both are recalibrated from our H200 traces by `snsim calibrate`.
constexpr double CE_EFFICIENCY = 0.83;
constexpr double SM_EFFICIENCY = 0.824;
// Fixed costs before bytes move: a small P2P copy takes ~2-3 us end to end on NVLink machines
// [meas: p2pBandwidthLatencyTest, NVIDIA/nccl-tests#123, cuda-samples#230], of which the wire is < 1 us; a kernel
// launch costs a few microseconds [unverified default, measured by the probe's `launch` family].
constexpr double CE_SETUP_US = 1.5;
constexpr double SM_LAUNCH_US = 2.5;
// A device-local copy reads and writes HBM: 4.3 TB/s counting both on an H200 of 4.8 TB/s peak (90 %)
// [meas: device-to-device copy through PyTorch, device/KINDS.md].
constexpr double LOCAL_HBM_EFFICIENCY = 0.9;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<CopyModel>();
  m->ce_efficiency = node.optional<double>("ce_efficiency", CE_EFFICIENCY);
  check_between(node, "ce_efficiency", m->ce_efficiency, 0.01, 1.0);
  m->sm_efficiency = node.optional<double>("sm_efficiency", SM_EFFICIENCY);
  check_between(node, "sm_efficiency", m->sm_efficiency, 0.01, 1.0);
  m->ce_setup = node.optional<Seconds>("ce_setup", Seconds{CE_SETUP_US * 1e-6});
  m->sm_launch = node.optional<Seconds>("sm_launch", Seconds{SM_LAUNCH_US * 1e-6});
  m->local_hbm_efficiency = node.optional<double>("local_hbm_efficiency", LOCAL_HBM_EFFICIENCY);
  check_between(node, "local_hbm_efficiency", m->local_hbm_efficiency, 0.01, 1.0);
  return m;
}
}  // namespace

std::string_view to_string(CopyEngine engine) {
  return engine == CopyEngine::ce ? "ce" : "sm";
}

Bytes CopyModel::wire_bytes(Bytes payload, CopyEngine engine) const {
  return Bytes{static_cast<std::uint64_t>(std::ceil(static_cast<double>(payload.count()) / efficiency(engine)))};
}

Registry<Model>::Entry copy_model_entry() {
  return {"copy",
          "copies by copy engine (ce) or SMs (sm): payload efficiency on the wire and fixed cost per copy",
          {
              {"ce_efficiency", "fraction", "0.83", "payload share of line rate, copy engine [meas nccl#1264]"},
              {"sm_efficiency", "fraction", "0.824", "payload share of line rate, SM copies [model NCCL topo.h]"},
              {"ce_setup", "time", "1.5us", "fixed cost of a copy-engine copy"},
              {"sm_launch", "time", "2.5us", "fixed cost of an SM copy kernel"},
              {"local_hbm_efficiency", "fraction", "0.9", "share of HBM bandwidth for a device-local copy"},
          },
          make};
}

}  // namespace snsim::models
