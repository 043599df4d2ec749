#include "models/compute.hpp"

#include <algorithm>

namespace snsim::models {
namespace {

// 788 TFLOP/s on an 8192^3 bf16 GEMM on our H200s, of 989 peak (80 %) [meas: device/KINDS.md, 2026-10-28].
constexpr double FLOP_EFFICIENCY = 0.8;
// 4.3 TB/s device-to-device copy counting reads and writes, of 4.8 TB/s (90 %) [meas: device/KINDS.md].
constexpr double HBM_EFFICIENCY = 0.9;
// Kernel launch overhead [unverified default; the probe's `launch` family measures it].
constexpr double LAUNCH_US = 2.5;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<ComputeModel>();
  m->flop_efficiency = node.optional<double>("flop_efficiency", FLOP_EFFICIENCY);
  check_between(node, "flop_efficiency", m->flop_efficiency, 0.01, 1.0);
  m->hbm_efficiency = node.optional<double>("hbm_efficiency", HBM_EFFICIENCY);
  check_between(node, "hbm_efficiency", m->hbm_efficiency, 0.01, 1.0);
  m->launch = node.optional<Seconds>("launch", Seconds{LAUNCH_US * 1e-6});
  return m;
}
}  // namespace

Seconds ComputeModel::time(const GpuSpec& gpu, Flops flops, Bytes bytes) const {
  const Seconds math = flops / (gpu.dense_bf16 * flop_efficiency);
  const Seconds memory = bytes / (gpu.hbm_bandwidth * hbm_efficiency);
  return launch + std::max(math, memory);
}

Registry<Model>::Entry compute_model_entry() {
  return {"compute",
          "roofline GPU compute: max(flops / achieved peak, bytes / achieved HBM bandwidth) + launch",
          {
              {"flop_efficiency", "fraction", "0.8", "share of peak bf16 rate reached [meas 788/989 TFLOP/s H200]"},
              {"hbm_efficiency", "fraction", "0.9", "share of HBM bandwidth reached [meas 4.3/4.8 TB/s H200]"},
              {"launch", "time", "2.5us", "kernel launch overhead per compute op"},
          },
          make};
}

}  // namespace snsim::models
