#include "models/collective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 5> KIND_NAMES{"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                     "broadcast"};
constexpr std::array<std::string_view, 3> PROTOCOL_NAMES{"LL", "LL128", "Simple"};

// NCCL's tuning model for Hopper inside one node [model: NVIDIA/nccl src/graph/tuning.cc, reference/hardware.md
// §2.4]: ring base latency {LL 6.6, LL128 14.0, Simple 8.4} us; NVLink hardware latency per ring step
// {0.6, 1.9, 3.4} us; LL carries 8 data bytes per 16 B line (50 %) and is capped at llMaxBw = 141 GB/s on Hopper;
// LL128 carries 120 of 128 B (NCCL tunes it at 0.92). Recalibrated from our H200 NCCL traces.
struct Default {
  double efficiency, max_gbps, base_us, step_us;
};
constexpr std::array<Default, 3> DEFAULTS{{{0.5, 141.0, 6.6, 0.6}, {0.92, 0.0, 14.0, 1.9}, {1.0, 0.0, 8.4, 3.4}}};
// Device-side barrier across the ranks [unverified default; measured by the probe's nvshmem family].
constexpr double BARRIER_US = 2.0;
// NCCL moves broadcast data in 512 KiB NVLink chunks [src: NVIDIA/nccl src/init.cc P2P_NVL_CHUNKSIZE]; we cap the
// chunk count so a 1 GiB broadcast stays a few hundred transfers.
constexpr std::uint64_t BROADCAST_CHUNK = 512 * 1024;
constexpr int MAX_CHUNKS = 128;

Bytes ceil_div(Bytes size, std::uint64_t parts) {
  return Bytes{(size.count() + parts - 1) / parts};
}

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<CollectiveModel>();
  for (std::size_t i = 0; i < DEFAULTS.size(); ++i) {
    const std::string name(PROTOCOL_NAMES[i]);
    const ConfigNode p = node.section(name);
    auto& out = m->protocols[i];
    out.efficiency = p.optional<double>("efficiency", DEFAULTS[i].efficiency);
    check_between(p, "efficiency", out.efficiency, 0.01, 1.0);
    out.max_bandwidth = p.optional<BytesPerSecond>("max_bandwidth", BytesPerSecond{DEFAULTS[i].max_gbps * 1e9});
    out.base_latency = p.optional<Seconds>("base_latency", Seconds{DEFAULTS[i].base_us * 1e-6});
    out.step_latency = p.optional<Seconds>("step_latency", Seconds{DEFAULTS[i].step_us * 1e-6});
  }
  m->barrier_latency = node.optional<Seconds>("barrier_latency", Seconds{BARRIER_US * 1e-6});
  m->broadcast_chunk = node.optional<Bytes>("broadcast_chunk", Bytes{BROADCAST_CHUNK});
  check_positive(node, "broadcast_chunk", m->broadcast_chunk);
  m->max_chunks = node.optional<int>("max_chunks", MAX_CHUNKS);
  check_between(node, "max_chunks", m->max_chunks, 1, 4096);
  return m;
}
}  // namespace

std::string_view to_string(CollectiveKind kind) {
  return KIND_NAMES[static_cast<std::size_t>(kind)];
}
std::string_view to_string(Protocol protocol) {
  return PROTOCOL_NAMES[static_cast<std::size_t>(protocol)];
}

std::optional<CollectiveKind> collective_kind(std::string_view name) {
  for (std::size_t i = 0; i < KIND_NAMES.size(); ++i)
    if (KIND_NAMES[i] == name) return static_cast<CollectiveKind>(i);
  return std::nullopt;
}

std::optional<Protocol> protocol(std::string_view name) {
  for (std::size_t i = 0; i < PROTOCOL_NAMES.size(); ++i)
    if (PROTOCOL_NAMES[i] == name) return static_cast<Protocol>(i);
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return (n - 1) / n;
    case CollectiveKind::broadcast:
      return 1;
  }
  return 1;
}

CollectivePlan CollectiveModel::plan(CollectiveKind kind, Bytes size, int ranks, BytesPerSecond rate,
                                     Seconds hop_latency, std::optional<Protocol> forced) const {
  auto make_plan = [&](Protocol p) {
    const auto& params = this->params(p);
    CollectivePlan plan{
        p, 0, Bytes{0}, 1, params.base_latency, params.step_latency, params.efficiency, params.max_bandwidth};
    const auto n = static_cast<std::uint64_t>(ranks);
    switch (kind) {
      case CollectiveKind::all_reduce:
        plan.steps = 2 * (ranks - 1);
        plan.step_bytes = ceil_div(size, n);
        break;
      case CollectiveKind::all_gather:
      case CollectiveKind::reduce_scatter:
        plan.steps = ranks - 1;
        plan.step_bytes = ceil_div(size, n);
        break;
      case CollectiveKind::all_to_all:
        plan.steps = 1;  // every peer at once
        plan.step_bytes = ceil_div(size, n);
        break;
      case CollectiveKind::broadcast: {
        const auto chunks = std::clamp<std::uint64_t>(ceil_div(size, broadcast_chunk.count()).count(), 1,
                                                      static_cast<std::uint64_t>(max_chunks));
        plan.chunks = static_cast<int>(chunks);
        plan.step_bytes = ceil_div(size, chunks);
        plan.steps = ranks - 1 + plan.chunks - 1;
        break;
      }
    }
    return plan;
  };
  if (forced) return make_plan(*forced);
  CollectivePlan best = make_plan(Protocol::simple);
  Seconds best_time = predict(best, rate, hop_latency);
  for (Protocol p : {Protocol::ll, Protocol::ll128}) {
    auto candidate = make_plan(p);
    if (auto t = predict(candidate, rate, hop_latency); t < best_time) {
      best = candidate;
      best_time = t;
    }
  }
  return best;
}

Seconds CollectiveModel::predict(const CollectivePlan& plan, BytesPerSecond rate, Seconds hop_latency) const {
  BytesPerSecond effective = rate * plan.efficiency;
  if (plan.max_bandwidth.count() > 0) effective = std::min(effective, plan.max_bandwidth);
  return plan.base_latency + (plan.step_latency + hop_latency + plan.step_bytes / effective) * plan.steps;
}

Registry<Model>::Entry collective_model_entry() {
  return {"collective",
          "NCCL-like BSP collectives: ring algorithm, LL/LL128/Simple protocols chosen by size, one transfer per step",
          {
              {"LL.efficiency", "fraction", "0.5", "payload share of an LL line [src NCCL device.h]"},
              {"LL.max_bandwidth", "bytes/s", "141GBps", "LL per-rank cap on Hopper [model NCCL tuning.cc]"},
              {"LL.base_latency", "time", "6.6us", "per collective [model NCCL tuning.cc]"},
              {"LL.step_latency", "time", "0.6us", "per ring step [model NCCL tuning.cc]"},
              {"LL128.efficiency", "fraction", "0.92", "payload share of an LL128 line"},
              {"LL128.max_bandwidth", "bytes/s", "0 (none)", "per-rank cap"},
              {"LL128.base_latency", "time", "14us", "per collective"},
              {"LL128.step_latency", "time", "1.9us", "per ring step"},
              {"Simple.efficiency", "fraction", "1.0", "payload share"},
              {"Simple.max_bandwidth", "bytes/s", "0 (none)", "per-rank cap"},
              {"Simple.base_latency", "time", "8.4us", "per collective"},
              {"Simple.step_latency", "time", "3.4us", "per ring step"},
              {"barrier_latency", "time", "2us", "device-side barrier across the ranks"},
              {"broadcast_chunk", "bytes", "512KiB", "broadcast pipeline chunk [src NCCL init.cc]"},
              {"max_chunks", "count", "128", "most chunks per broadcast"},
          },
          make};
}

}  // namespace snsim::models
