#include "models/uvm.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 3> PATH_NAMES{"host_to_gpu", "gpu_to_host", "gpu_to_gpu"};

// Defaults from our H200 x2 capture (validation/traces/h200/h200x2-uvm.jsonl, medians), solved with the formulas in
// uvm.hpp and the hgx preset's routes (host <-> GPU: one PCIe hop of 500 ns at 63 GB/s; GPU <-> GPU: 354 ns at
// 450 GB/s). `snsim calibrate` refits them from the calibration records.
struct PathDefault {
  double bandwidth_gbps, prefetch_setup_us, fault_service_us;
};
constexpr std::array<PathDefault, 3> PATH_DEFAULTS{{
    // host_to_gpu: rate = 4 GiB / 89.63 ms [uvm/prefetch/host_to_gpu/0/4294967296]; setup = 121.6 us - 0.5 us
    // - 2 MiB / rate [.../2097152]; fault service = (351.1 us - kernel_start - 2 batches x (batch_service + 0.5 us
    // + 1 MiB / rate)) / 512 faults [uvm/first_touch/host_to_gpu/0/2097152].
    {47.92, 77.3, 0.507},
    // gpu_to_host: rate = 4 GiB / 423.6 ms [uvm/prefetch/gpu_to_host/0/4294967296]; setup = 302.8 us - 0.5 us
    // - 2 MiB / rate [.../2097152]. GPU -> host faults are CPU faults: not modelled.
    {10.14, 95.5, 0},
    // gpu_to_gpu: rate = 4 GiB / 39.24 ms [uvm/prefetch/gpu_to_gpu/1-0/4294967296]; setup = 64.48 us - 0.354 us
    // - 2 MiB / rate; fault service as above from 329.3 us [uvm/first_touch/gpu_to_gpu/1-0/2097152].
    {109.45, 45.0, 0.513},
}};
// uvm_perf_fault_batch_count = 256 faults per batch [src: NVIDIA open-gpu-kernel-modules,
// kernel-open/nvidia-uvm/uvm_gpu_replayable_faults.c].
constexpr int FAULT_BATCH = 256;
// uvm_perf_prefetch_threshold = 51 % [src: kernel-open/nvidia-uvm/uvm_perf_prefetch.c].
constexpr double PREFETCH_THRESHOLD = 0.51;
// The per-batch fixed cost cannot be told apart from the per-fault one on our records (every batch of the probe's
// first touch is full); tens of microseconds per batch is the order Allen & Ge (SC'21, "In-Depth Analyses of
// Unified Virtual Memory System for GPU Accelerated Computing") report for the driver's batch overheads
// [unverified for Hopper].
constexpr double BATCH_SERVICE_US = 20;
// A kernel reading a 2 MiB region of its own HBM: 7.424 us = kernel_start + an L2 load latency (141.5 ns) +
// 2 MiB / (4.8 TB/s x 0.804) [uvm/read/local/0/2097152].
constexpr double KERNEL_START_US = 6.74;
// Access counters [src: kernel-open/nvidia-uvm/uvm_gpu_access_counters.c]: UVM_PERF_ACCESS_COUNTER_THRESHOLD_DEFAULT
// 256, UVM_PERF_ACCESS_COUNTER_GRANULARITY 2M; the hardware's other granularities are 64K, 16M and 16G.
constexpr std::uint64_t ACCESS_THRESHOLD = 256;
constexpr std::array<Bytes, 4> ACCESS_GRANULARITIES{Bytes{64ull << 10}, Bytes{2ull << 20}, Bytes{16ull << 20},
                                                    Bytes{16ull << 30}};
// Thrashing detection [src: kernel-open/nvidia-uvm/uvm_perf_thrashing.c]: uvm_perf_thrashing_enable 1,
// UVM_PERF_THRASHING_THRESHOLD_DEFAULT 3 events, UVM_PERF_THRASHING_LAPSE_USEC_DEFAULT 500 us, epoch
// UVM_PERF_THRASHING_EPOCH_DEFAULT 2000 lapses = 1 s.
constexpr int THRASHING_THRESHOLD = 3;
constexpr double THRASHING_LAPSE_US = 500;
constexpr double THRASHING_EPOCH_S = 2000 * THRASHING_LAPSE_US * 1e-6;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<UvmModel>();
  for (std::size_t i = 0; i < PATH_NAMES.size(); ++i) {
    const ConfigNode s = node.section(PATH_NAMES[i]);
    const auto& d = PATH_DEFAULTS[i];
    auto& p = m->paths[i];
    p.bandwidth = s.optional<BytesPerSecond>("bandwidth", BytesPerSecond{d.bandwidth_gbps * 1e9});
    check_positive(s, "bandwidth", p.bandwidth);
    p.prefetch_setup = s.optional<Seconds>("prefetch_setup", Seconds{d.prefetch_setup_us * 1e-6});
    check_between(s, "prefetch_setup", p.prefetch_setup, Seconds{0}, Seconds{1});
    if (static_cast<UvmPath>(i) != UvmPath::gpu_to_host) {
      p.fault_service = s.optional<Seconds>("fault_service", Seconds{d.fault_service_us * 1e-6});
      check_between(s, "fault_service", p.fault_service, Seconds{0}, Seconds{1});
    }
  }
  m->fault_batch_size = node.optional<int>("fault_batch_size", FAULT_BATCH);
  check_between(node, "fault_batch_size", m->fault_batch_size, 1, 65536);
  m->batch_service = node.optional<Seconds>("batch_service", Seconds{BATCH_SERVICE_US * 1e-6});
  check_between(node, "batch_service", m->batch_service, Seconds{0}, Seconds{1});
  m->prefetch_threshold = node.optional<double>("prefetch_threshold", PREFETCH_THRESHOLD);
  check_between(node, "prefetch_threshold", m->prefetch_threshold, 0.0, 1.0);
  m->density_prefetch = node.optional<bool>("density_prefetch", true);
  m->kernel_start = node.optional<Seconds>("kernel_start", Seconds{KERNEL_START_US * 1e-6});
  check_between(node, "kernel_start", m->kernel_start, Seconds{0}, Seconds{1});
  if (node.has("gpu_memory_limit")) {
    m->gpu_memory_limit = node.required<Bytes>("gpu_memory_limit");
    check_positive(node, "gpu_memory_limit", *m->gpu_memory_limit);
  }
  const ConfigNode ac = node.section("access_counters");
  m->access_counters.enabled = ac.optional<bool>("enabled", false);
  m->access_counters.threshold = ac.optional<std::uint64_t>("threshold", ACCESS_THRESHOLD);
  check_between(ac, "threshold", m->access_counters.threshold, std::uint64_t{1}, std::uint64_t{65535});
  m->access_counters.granularity = ac.optional<Bytes>("granularity", Bytes{2ull << 20});
  if (std::ranges::find(ACCESS_GRANULARITIES, m->access_counters.granularity) == ACCESS_GRANULARITIES.end())
    ac.fail_key("granularity",
                fmt::format("expected 64KiB, 2MiB, 16MiB or 16GiB, found {}", m->access_counters.granularity));
  const ConfigNode th = node.section("thrashing");
  m->thrashing.enabled = th.optional<bool>("enabled", true);
  m->thrashing.threshold = th.optional<int>("threshold", THRASHING_THRESHOLD);
  check_between(th, "threshold", m->thrashing.threshold, 1, 1000);
  m->thrashing.lapse = th.optional<Seconds>("lapse", Seconds{THRASHING_LAPSE_US * 1e-6});
  check_between(th, "lapse", m->thrashing.lapse, Seconds{0}, Seconds{3600});
  m->thrashing.epoch = th.optional<Seconds>("epoch", Seconds{THRASHING_EPOCH_S});
  check_between(th, "epoch", m->thrashing.epoch, Seconds{0}, Seconds{3600});
  return m;
}
}  // namespace

std::string_view to_string(UvmPath path) {
  return PATH_NAMES[static_cast<std::size_t>(path)];
}

BytesPerSecond UvmModel::migration_rate(UvmPath path, BytesPerSecond line) const {
  return std::min(params(path).bandwidth, line);
}

Seconds UvmModel::batch_time(UvmPath path, std::uint64_t faults, Bytes bytes, Seconds latency,
                             BytesPerSecond line) const {
  const Seconds service = batch_service + params(path).fault_service * static_cast<double>(faults);
  if (bytes.count() == 0) return service;
  return service + latency + bytes / migration_rate(path, line);
}

Seconds UvmModel::prefetch_time(UvmPath path, Bytes bytes, Seconds latency, BytesPerSecond line) const {
  return params(path).prefetch_setup + latency + bytes / migration_rate(path, line);
}

Seconds UvmModel::first_touch_time(UvmPath path, Bytes region, Bytes page, Seconds latency, BytesPerSecond line) const {
  const std::uint64_t pages = (region.count() + page.count() - 1) / page.count();
  const auto batch = static_cast<std::uint64_t>(fault_batch_size);
  Seconds total = kernel_start;
  const std::uint64_t full = pages / batch, rest = pages % batch;
  total += batch_time(path, batch, Bytes{batch * page.count()}, latency, line) * static_cast<double>(full);
  if (rest > 0) total += batch_time(path, rest, Bytes{rest * page.count()}, latency, line);
  return total;
}

Registry<Model>::Entry uvm_model_entry() {
  return {
      "uvm",
      "Unified memory: fault batches, migration per path, density prefetcher, prefetch and advice (validated); "
      "oversubscription with LRU eviction, access-counter migration and thrashing pins (from the driver's source, "
      "unvalidated)",
      {
          {"host_to_gpu.bandwidth", "bytes/s", "47.92GBps", "migration rate host -> GPU [meas uvm/prefetch 4GiB]"},
          {"host_to_gpu.prefetch_setup", "time", "77.3us", "fixed cost of a prefetch host -> GPU [meas 2MiB]"},
          {"host_to_gpu.fault_service", "time", "0.507us", "driver time per fault host -> GPU [meas first_touch]"},
          {"gpu_to_host.bandwidth", "bytes/s", "10.14GBps", "migration rate GPU -> host [meas uvm/prefetch 4GiB]"},
          {"gpu_to_host.prefetch_setup", "time", "95.5us", "fixed cost of a prefetch GPU -> host [meas 2MiB]"},
          {"gpu_to_gpu.bandwidth", "bytes/s", "109.45GBps", "migration rate GPU -> GPU [meas uvm/prefetch 4GiB]"},
          {"gpu_to_gpu.prefetch_setup", "time", "45us", "fixed cost of a prefetch GPU -> GPU [meas 2MiB]"},
          {"gpu_to_gpu.fault_service", "time", "0.513us", "driver time per fault GPU -> GPU [meas first_touch]"},
          {"fault_batch_size", "faults", "256", "faults per batch [src uvm_perf_fault_batch_count]"},
          {"batch_service", "time", "20us", "fixed cost per fault batch [unverified: Allen & Ge SC'21 order]"},
          {"prefetch_threshold", "fraction", "0.51", "density prefetcher threshold [src uvm_perf_prefetch_threshold]"},
          {"density_prefetch", "bool", "true", "density prefetcher on [src uvm_perf_prefetch_enable]"},
          {"kernel_start", "time", "6.74us", "launch and drain of a touching kernel [meas uvm/read/local 2MiB]"},
          {"gpu_memory_limit", "bytes", "GPU memory",
           "managed bytes a GPU holds before evicting LRU 2 MiB blocks [src uvm_pmm_gpu.c; unvalidated]"},
          {"access_counters.enabled", "bool", "false",
           "migrate regions after remote accesses [src off by default on x86; unvalidated]"},
          {"access_counters.threshold", "accesses", "256",
           "remote 128 B accesses before a region migrates [src UVM_PERF_ACCESS_COUNTER_THRESHOLD_DEFAULT]"},
          {"access_counters.granularity", "bytes", "2MiB",
           "counted region: 64KiB, 2MiB, 16MiB or 16GiB [src UVM_PERF_ACCESS_COUNTER_GRANULARITY]"},
          {"thrashing.enabled", "bool", "true", "pin thrashing blocks [src uvm_perf_thrashing_enable; unvalidated]"},
          {"thrashing.threshold", "events", "3",
           "consecutive thrashing events before a pin [src UVM_PERF_THRASHING_THRESHOLD_DEFAULT]"},
          {"thrashing.lapse", "time", "500us",
           "migrations this close are a thrashing event [src UVM_PERF_THRASHING_LAPSE_USEC_DEFAULT]"},
          {"thrashing.epoch", "time", "1s", "how long a pin lasts [src UVM_PERF_THRASHING_EPOCH_DEFAULT x lapse]"},
      },
      make};
}

}  // namespace snsim::models
