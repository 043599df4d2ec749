#include "models/copy.hpp"

#include <cmath>

namespace snsim::models {
namespace {

// Engine rates alone, as a share of the NVLink4 line rate (450 GB/s per GPU per direction): CE peer copies on
// 8xH100 HGX reach 371-377 GB/s (83-84 %) [meas: NVIDIA/nccl#1264, reference/hardware.md §2.1]; SM copies: NCCL's
// model uses 20.6 of 25 GB/s per link (82.4 %) [model: NVIDIA/nccl src/graph/topo.h SM90_NVLINK_BW]. Calibrated
// values for H200 ship in validation/params/h200.yaml (`snsim calibrate`).
constexpr double CE_EFFICIENCY = 0.83;
constexpr double SM_EFFICIENCY = 0.824;
// Packets: 16 B header, 256 B payload for copy engines, 128 B for SMs [maint.: NVIDIA/nccl-tests#149, #258].
constexpr std::uint64_t PACKET_HEADER = 16;
constexpr std::uint64_t CE_PAYLOAD = 256;
constexpr std::uint64_t SM_PAYLOAD = 128;
// Fixed costs: a small P2P copy takes ~2-3 us end to end on NVLink machines [meas: p2pBandwidthLatencyTest,
// NVIDIA/nccl-tests#123], of which the wire is < 1 us; a kernel launch costs a few microseconds. Queued copies and
// local copies: [unverified defaults]; all are calibrated from the probe's copy family.
constexpr double CE_SETUP_US = 1.5;
constexpr double SM_LAUNCH_US = 2.5;
constexpr double QUEUE_GAP_US = 2.0;
constexpr double LOCAL_SETUP_US = 2.0;
// A device-local copy reads and writes HBM: 4.3 TB/s counting both on an H200 of 4.8 TB/s peak (90 %)
// [meas: device-to-device copy through PyTorch, device/KINDS.md]. From L2 it is faster [unverified default 1.0 =
// no L2 effect; calibrated from the probe's local copies].
constexpr double LOCAL_HBM_EFFICIENCY = 0.9;
constexpr double LOCAL_L2_SPEEDUP = 1.0;

EngineParams read_engine(const ConfigNode& node, double efficiency, std::uint64_t payload, double setup_us) {
  EngineParams e;
  e.efficiency = node.optional<double>("efficiency", efficiency);
  check_between(node, "efficiency", e.efficiency, 0.01, 1.0);
  e.packet_payload = node.optional<Bytes>("packet_payload", Bytes{payload});
  check_positive(node, "packet_payload", e.packet_payload);
  e.setup = node.optional<Seconds>("setup", Seconds{setup_us * 1e-6});
  e.queue_gap = node.optional<Seconds>("queue_gap", Seconds{QUEUE_GAP_US * 1e-6});
  e.local_setup = node.optional<Seconds>("local_setup", Seconds{LOCAL_SETUP_US * 1e-6});
  e.local_queue_gap = node.optional<Seconds>("local_queue_gap", Seconds{QUEUE_GAP_US * 1e-6});
  e.pull_setup = node.optional<Seconds>("pull_setup", Seconds{setup_us * 1e-6});
  e.pull_queue_gap = node.optional<Seconds>("pull_queue_gap", Seconds{QUEUE_GAP_US * 1e-6});
  for (auto [key, value] : {std::pair{"setup", e.setup},
                            {"queue_gap", e.queue_gap},
                            {"local_setup", e.local_setup},
                            {"local_queue_gap", e.local_queue_gap},
                            {"pull_setup", e.pull_setup},
                            {"pull_queue_gap", e.pull_queue_gap}})
    if (value < Seconds{0}) node.fail_key(key, fmt::format("must be >= 0, got {}", value));
  return e;
}

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<CopyModel>();
  m->ce = read_engine(node.section("ce"), CE_EFFICIENCY, CE_PAYLOAD, CE_SETUP_US);
  m->sm = read_engine(node.section("sm"), SM_EFFICIENCY, SM_PAYLOAD, SM_LAUNCH_US);
  m->packet_header = node.optional<Bytes>("packet_header", Bytes{PACKET_HEADER});
  m->local_hbm_efficiency = node.optional<double>("local_hbm_efficiency", LOCAL_HBM_EFFICIENCY);
  check_between(node, "local_hbm_efficiency", m->local_hbm_efficiency, 0.01, 1.0);
  m->local_l2_speedup = node.optional<double>("local_l2_speedup", LOCAL_L2_SPEEDUP);
  check_between(node, "local_l2_speedup", m->local_l2_speedup, 1.0, 10.0);
  return m;
}
}  // namespace

std::string_view to_string(CopyEngine engine) {
  return engine == CopyEngine::ce ? "ce" : "sm";
}

Bytes CopyModel::wire_bytes(Bytes payload, CopyEngine engine) const {
  const auto per_packet = params(engine).packet_payload.count();
  const auto packets = (payload.count() + per_packet - 1) / per_packet;
  return payload + Bytes{packets * packet_header.count()};
}

BytesPerSecond CopyModel::wire_rate_cap(BytesPerSecond line_rate, CopyEngine engine) const {
  const auto& e = params(engine);
  const double overhead = static_cast<double>(e.packet_payload.count() + packet_header.count()) /
                          static_cast<double>(e.packet_payload.count());
  return line_rate * (e.efficiency * overhead);
}

Seconds CopyModel::fixed_cost(CopyEngine engine, bool pull, bool pipelined) const {
  const auto& e = params(engine);
  if (pull) return pipelined ? e.pull_queue_gap : e.pull_setup;
  return pipelined ? e.queue_gap : e.setup;
}

Seconds CopyModel::local_fixed_cost(CopyEngine engine, bool pipelined) const {
  const auto& e = params(engine);
  return pipelined ? e.local_queue_gap : e.local_setup;
}

Seconds CopyModel::local_memory_time(const GpuSpec& gpu, Bytes bytes) const {
  const Bytes traffic{2 * bytes.count()};  // read the source, write the destination
  BytesPerSecond rate = gpu.hbm_bandwidth * local_hbm_efficiency;
  if (gpu.l2.count() > 0 && traffic <= gpu.l2) rate = rate * local_l2_speedup;
  return traffic / rate;
}

Registry<Model>::Entry copy_model_entry() {
  return {"copy",
          "copies by copy engine (ce) or SMs (sm): engine rate, packet overhead on the wire, fixed costs per copy",
          {
              {"ce.efficiency", "fraction", "0.83", "rate of a lone CE copy / line rate [meas nccl#1264]"},
              {"ce.packet_payload", "bytes", "256B", "CE payload per packet [maint. nccl-tests#149]"},
              {"ce.setup", "time", "1.5us", "fixed cost of a CE copy, wire latency aside"},
              {"ce.queue_gap", "time", "2us", "per-copy cost of a queued CE copy, wire latency aside"},
              {"ce.pull_setup", "time", "1.5us", "fixed cost of a CE copy issued by the destination"},
              {"ce.pull_queue_gap", "time", "2us", "per-copy cost of a queued CE pull, wire latency aside"},
              {"ce.local_setup", "time", "2us", "fixed cost of a device-local CE copy"},
              {"ce.local_queue_gap", "time", "2us", "per-copy cost of a local CE copy queued behind another"},
              {"sm.efficiency", "fraction", "0.824", "rate of a lone SM copy / line rate [model NCCL topo.h]"},
              {"sm.packet_payload", "bytes", "128B", "SM payload per packet [maint. nccl-tests#149]"},
              {"sm.setup", "time", "2.5us", "fixed cost of an SM copy kernel (launch), wire latency aside"},
              {"sm.queue_gap", "time", "2us", "per-copy cost of a queued SM copy, wire latency aside"},
              {"sm.pull_setup", "time", "2.5us", "fixed cost of an SM copy kernel loading from the peer"},
              {"sm.pull_queue_gap", "time", "2us", "per-copy cost of a queued SM pull, wire latency aside"},
              {"sm.local_setup", "time", "2us", "fixed cost of a device-local SM copy"},
              {"sm.local_queue_gap", "time", "2us", "per-copy cost of a local SM copy queued behind another"},
              {"packet_header", "bytes", "16B", "header per NVLink packet [maint. nccl-tests#258]"},
              {"local_hbm_efficiency", "fraction", "0.9", "share of HBM bandwidth for a device-local copy"},
              {"local_l2_speedup", "factor", "1.0", "local copy rate from L2 / from HBM when both buffers fit"},
          },
          make};
}

}  // namespace snsim::models
