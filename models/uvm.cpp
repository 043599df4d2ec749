#include "models/uvm.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace snsim::models {
namespace {

constexpr std::array<std::string_view, 3> PATH_NAMES{"host_to_gpu", "gpu_to_host", "gpu_to_gpu"};

}  // namespace

const ParamTable<UvmModel>& uvm_params() {
  using M = UvmModel;
  constexpr std::size_t H2D = 0, D2H = 1, D2D = 2;
  // Defaults from our H200 x2 capture (validation/traces/h200/h200x2-uvm.jsonl, medians), solved with the formulas
  // in uvm.hpp and the hgx preset's routes (host <-> GPU: one PCIe hop of 500 ns at 63 GB/s; GPU <-> GPU: 354 ns at
  // 450 GB/s). `snsim calibrate` refits them from the calibration records.
  static const ParamTable<M> table = [] {
    ParamTable<M> params;
    // host_to_gpu: rate = 4 GiB / 89.63 ms [uvm/prefetch/host_to_gpu/0/4294967296]; setup = 121.6 us - 0.5 us
    // - 2 MiB / rate [.../2097152]; fault service = (351.1 us - kernel_start - 2 batches x (batch_service +
    // 0.5 us + 1 MiB / rate)) / 512 faults [uvm/first_touch/host_to_gpu/0/2097152].
    params.add({.key = "host_to_gpu.bandwidth",
                .fallback = 47.92_GBps,
                .check = positive,
                .doc = "migration rate host -> GPU",
                .source = "meas uvm/prefetch 4GiB"},
               [](M& m) { return &m.paths[H2D].bandwidth; });
    params.add({.key = "host_to_gpu.prefetch_setup",
                .fallback = 77.3_us,
                .check = between(0_s, 1_s),
                .doc = "fixed cost of a prefetch host -> GPU",
                .source = "meas 2MiB"},
               [](M& m) { return &m.paths[H2D].prefetch_setup; });
    params.add({.key = "host_to_gpu.fault_service",
                .fallback = 0.507_us,
                .check = between(0_s, 1_s),
                .doc = "driver time per fault host -> GPU",
                .source = "meas first_touch"},
               [](M& m) { return &m.paths[H2D].fault_service; });
    // gpu_to_host: rate = 4 GiB / 423.6 ms [uvm/prefetch/gpu_to_host/0/4294967296]; setup = 302.8 us - 0.5 us
    // - 2 MiB / rate [.../2097152]. GPU -> host faults are CPU faults: not modelled (no fault_service).
    params.add({.key = "gpu_to_host.bandwidth",
                .fallback = 10.14_GBps,
                .check = positive,
                .doc = "migration rate GPU -> host",
                .source = "meas uvm/prefetch 4GiB"},
               [](M& m) { return &m.paths[D2H].bandwidth; });
    params.add({.key = "gpu_to_host.prefetch_setup",
                .fallback = 95.5_us,
                .check = between(0_s, 1_s),
                .doc = "fixed cost of a prefetch GPU -> host",
                .source = "meas 2MiB"},
               [](M& m) { return &m.paths[D2H].prefetch_setup; });
    // gpu_to_gpu: rate = 4 GiB / 39.24 ms [uvm/prefetch/gpu_to_gpu/1-0/4294967296]; setup = 64.48 us - 0.354 us
    // - 2 MiB / rate; fault service as above from 329.3 us [uvm/first_touch/gpu_to_gpu/1-0/2097152].
    params.add({.key = "gpu_to_gpu.bandwidth",
                .fallback = 109.45_GBps,
                .check = positive,
                .doc = "migration rate GPU -> GPU",
                .source = "meas uvm/prefetch 4GiB"},
               [](M& m) { return &m.paths[D2D].bandwidth; });
    params.add({.key = "gpu_to_gpu.prefetch_setup",
                .fallback = 45_us,
                .check = between(0_s, 1_s),
                .doc = "fixed cost of a prefetch GPU -> GPU",
                .source = "meas 2MiB"},
               [](M& m) { return &m.paths[D2D].prefetch_setup; });
    params.add({.key = "gpu_to_gpu.fault_service",
                .fallback = 0.513_us,
                .check = between(0_s, 1_s),
                .doc = "driver time per fault GPU -> GPU",
                .source = "meas first_touch"},
               [](M& m) { return &m.paths[D2D].fault_service; });
    // uvm_perf_fault_batch_count = 256 faults per batch [src: NVIDIA open-gpu-kernel-modules,
    // kernel-open/nvidia-uvm/uvm_gpu_replayable_faults.c].
    params.add({.key = "fault_batch_size",
                .unit = "faults",
                .fallback = 256,
                .check = between(1, 65536),
                .doc = "faults per batch",
                .source = "src uvm_perf_fault_batch_count"},
               [](M& m) { return &m.fault_batch_size; });
    // The per-batch fixed cost cannot be told apart from the per-fault one on our records (every batch of the
    // probe's first touch is full); tens of microseconds per batch is the order Allen & Ge (SC'21, "In-Depth
    // Analyses of Unified Virtual Memory System for GPU Accelerated Computing") report for the driver's batch
    // overheads [unverified for Hopper].
    params.add({.key = "batch_service",
                .fallback = 20_us,
                .check = between(0_s, 1_s),
                .doc = "fixed cost per fault batch",
                .source = "unverified: Allen & Ge SC'21 order"},
               [](M& m) { return &m.batch_service; });
    // uvm_perf_prefetch_threshold = 51 % [src: kernel-open/nvidia-uvm/uvm_perf_prefetch.c].
    params.add({.key = "prefetch_threshold",
                .unit = "fraction",
                .fallback = 0.51,
                .check = between(0.0, 1.0),
                .doc = "density prefetcher threshold",
                .source = "src uvm_perf_prefetch_threshold"},
               [](M& m) { return &m.prefetch_threshold; });
    params.add({.key = "density_prefetch",
                .fallback = true,
                .doc = "density prefetcher on",
                .source = "src uvm_perf_prefetch_enable"},
               [](M& m) { return &m.density_prefetch; });
    // A kernel reading a 2 MiB region of its own HBM: 7.424 us = kernel_start + an L2 load latency (141.5 ns)
    // + 2 MiB / (4.8 TB/s x 0.804) [uvm/read/local/0/2097152].
    params.add({.key = "kernel_start",
                .fallback = 6.74_us,
                .check = between(0_s, 1_s),
                .doc = "launch and drain of a touching kernel",
                .source = "meas uvm/read/local 2MiB"},
               [](M& m) { return &m.kernel_start; });
    params.add({.key = "gpu_memory_limit",
                .check = positive,
                .doc = "managed bytes a GPU holds before evicting LRU 2 MiB blocks",
                .source = "src uvm_pmm_gpu.c; unvalidated",
                .unset = "GPU memory"},
               [](M& m) { return &m.gpu_memory_limit; });
    // Access counters [src: kernel-open/nvidia-uvm/uvm_gpu_access_counters.c]:
    // UVM_PERF_ACCESS_COUNTER_THRESHOLD_DEFAULT 256, UVM_PERF_ACCESS_COUNTER_GRANULARITY 2M; the hardware's
    // other granularities are 64K, 16M and 16G.
    params.add({.key = "access_counters.enabled",
                .fallback = false,
                .doc = "migrate regions after remote accesses",
                .source = "src off by default on x86; unvalidated"},
               [](M& m) { return &m.access_counters.enabled; });
    params.add({.key = "access_counters.threshold",
                .unit = "accesses",
                .fallback = std::uint64_t{256},
                .check = between(std::uint64_t{1}, std::uint64_t{65535}),
                .doc = "remote 128 B accesses before a region migrates",
                .source = "src UVM_PERF_ACCESS_COUNTER_THRESHOLD_DEFAULT"},
               [](M& m) { return &m.access_counters.threshold; });
    params.add({.key = "access_counters.granularity",
                .fallback = 2_MiB,
                .check = one_of({64_KiB, 2_MiB, 16_MiB, 16_GiB}),
                .doc = "counted region",
                .source = "src UVM_PERF_ACCESS_COUNTER_GRANULARITY"},
               [](M& m) { return &m.access_counters.granularity; });
    // Thrashing detection [src: kernel-open/nvidia-uvm/uvm_perf_thrashing.c]: uvm_perf_thrashing_enable 1,
    // UVM_PERF_THRASHING_THRESHOLD_DEFAULT 3 events, UVM_PERF_THRASHING_LAPSE_USEC_DEFAULT 500 us, epoch
    // UVM_PERF_THRASHING_EPOCH_DEFAULT 2000 lapses = 1 s.
    params.add({.key = "thrashing.enabled",
                .fallback = true,
                .doc = "pin thrashing blocks",
                .source = "src uvm_perf_thrashing_enable; unvalidated"},
               [](M& m) { return &m.thrashing.enabled; });
    params.add({.key = "thrashing.threshold",
                .unit = "events",
                .fallback = 3,
                .check = between(1, 1000),
                .doc = "consecutive thrashing events before a pin",
                .source = "src UVM_PERF_THRASHING_THRESHOLD_DEFAULT"},
               [](M& m) { return &m.thrashing.threshold; });
    params.add({.key = "thrashing.lapse",
                .fallback = 500_us,
                .check = between(0_s, 3600_s),
                .doc = "migrations this close are a thrashing event",
                .source = "src UVM_PERF_THRASHING_LAPSE_USEC_DEFAULT"},
               [](M& m) { return &m.thrashing.lapse; });
    params.add({.key = "thrashing.epoch",
                .fallback = 500_us * 2000,
                .check = between(0_s, 3600_s),
                .doc = "how long a pin lasts",
                .source = "src UVM_PERF_THRASHING_EPOCH_DEFAULT x lapse"},
               [](M& m) { return &m.thrashing.epoch; });
    return params;
  }();
  return table;
}

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
  const std::uint64_t pages = pieces(region, page);
  const auto batch = static_cast<std::uint64_t>(fault_batch_size);
  Seconds total = kernel_start;
  const std::uint64_t full = pages / batch, rest = pages % batch;
  total += batch_time(path, batch, page * batch, latency, line) * static_cast<double>(full);
  if (rest > 0) total += batch_time(path, rest, page * rest, latency, line);
  return total;
}

Registry<Model>::Entry uvm_model_entry() {
  return model_entry("uvm",
                     "Unified memory: fault batches, migration per path, density prefetcher, prefetch and advice "
                     "(validated); oversubscription with LRU eviction, access-counter migration and thrashing pins "
                     "(from the driver's source, unvalidated)",
                     uvm_params());
}

}  // namespace snsim::models
