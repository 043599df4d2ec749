// Unified virtual memory (cudaMallocManaged): demand paging by GPU faults, migration, prefetch and advice.
//
// A managed buffer is split into pages (4 KiB, 64 KiB or 2 MiB) inside 2 MiB VA blocks, the driver's unit of
// residency (uvm_va_block.c). A GPU touching a page that is neither resident there nor mapped faults; the driver
// fetches faults in batches of up to `fault_batch_size`, and services each batch in one go:
//
//   batch      = batch_service + sum over faults of fault_service[path]        (driver work: CPU unmap, DMA map,
//                                                                                PTE updates, replay)
//              + for each source location: route latency + bytes / min(bandwidth[path], route line rate)
//                                                                              (the migration, a copy-engine
//                                                                                transfer that shares the links)
// `path` is where the page comes from: host_to_gpu (over PCIe) or gpu_to_gpu (over NVLink). After each batch the
// density prefetcher looks at every VA block a migrating fault hit: once more than `prefetch_threshold` of its pages
// are resident at the faulting GPU, the rest of the block migrates with the batch, without faults
// (uvm_perf_prefetch.c: a tree over the block, simplified here to the whole block).
//
// cudaMemPrefetchAsync moves every page of a range that is not resident at the target, one migration per source:
//   prefetch   = prefetch_setup[path] + route latency + bytes / min(bandwidth[path], route line rate)
// A kernel that touches or reads managed memory pays `kernel_start` once (its launch and drain, as a stream's
// events see them). Streaming reads of mapped pages (advice: accessed_by, or a fault served by mapping a page kept
// at its preferred location) are the PGAS model's streaming loads (models/pgas.hpp): local HBM, or the route to
// the page's location.
//
// The *_time functions are these formulas for an op alone on an idle fabric; the simulation reproduces them
// (runtime/uvm_executor_test.cpp) and `snsim calibrate` fits the parameters through them (validation/fits/uvm_fit.cpp).
//
// Modelled from the driver's source, unvalidated (not measurable on the H200 machines: access counters are off by
// default on x86 hosts and oversubscription is not allowed there):
// * Oversubscription: a GPU holds at most `gpu_memory_limit` of managed pages (default: its memory). A migration
//   that would exceed it first evicts whole 2 MiB VA blocks to the host, least recently migrated in first (the
//   driver's root chunks sit on an LRU list ordered by allocation, not by access: uvm_pmm_gpu.c), as a GPU -> host
//   migration over the route, before the batch's own.
// * Access counters: remote reads (of pages mapped where they are) count per `granularity` region per GPU, one
//   access per 128 B line; when a region reaches `threshold` the driver migrates it to the reader (cost as a
//   prefetch on its path) and clears the counter (uvm_gpu_access_counters.c).
// * Thrashing: a block migrating again within `lapse` of its previous migration is a thrashing event; at
//   `threshold` consecutive events the block is pinned where it is for `epoch`: faults map it remotely instead of
//   migrating it (uvm_perf_thrashing.c; the driver first throttles CPU <-> GPU thrashing, pinned here at once).
// Not modelled: CPU page faults.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "models/model.hpp"
#include "sim/units.hpp"

namespace snsim::models {

/// Where a migration's pages come from and go to.
enum class UvmPath { host_to_gpu, gpu_to_host, gpu_to_gpu };
std::string_view to_string(UvmPath path);

struct MigrationParams {
  BytesPerSecond bandwidth;  // payload rate of the driver's copies on this path (capped by the links)
  Seconds prefetch_setup;    // fixed cost of one cudaMemPrefetchAsync migration on this path
  Seconds fault_service;     // driver time per fault whose page comes this way (unused for gpu_to_host)
};

/// Every parameter is set by uvm_params(), where its default, range and source are declared.
class UvmModel final : public Model {
 public:
  static constexpr Bytes BLOCK = 2_MiB;  // VA block: the unit of residency and of the prefetcher (uvm_va_block.h)

  std::array<MigrationParams, 3> paths{};  // indexed by UvmPath
  int fault_batch_size = 0;                // faults fetched and serviced together
  Seconds batch_service;                   // fixed cost of one fault batch
  double prefetch_threshold = 0;           // density prefetcher: share of a block resident before the rest follows
  bool density_prefetch = false;           // uvm_perf_prefetch_enable
  Seconds kernel_start;                    // a touching or reading kernel's launch and drain
  std::optional<Bytes> gpu_memory_limit;   // managed pages a GPU holds before evicting; unset: its memory

  struct AccessCounters {
    bool enabled = false;
    std::uint64_t threshold = 0;  // remote accesses to a region before it migrates
    Bytes granularity;            // the counted region
  } access_counters;
  static constexpr Bytes ACCESS_BYTES = 128_B;  // one counted access: a 128 B line (an SM's NVLink read payload)

  struct Thrashing {
    bool enabled = false;
    int threshold = 0;  // consecutive thrashing events before the block is pinned
    Seconds lapse;      // two migrations of a block this close are a thrashing event
    Seconds epoch;      // how long a pin lasts
  } thrashing;

  const MigrationParams& params(UvmPath p) const { return paths[static_cast<std::size_t>(p)]; }

  /// The payload rate of a migration on `path` over a route whose bottleneck is `line`.
  BytesPerSecond migration_rate(UvmPath path, BytesPerSecond line) const;
  /// One fault batch of `faults` faults on `path` that migrates `bytes` over a route (`latency`, `line`).
  Seconds batch_time(UvmPath path, std::uint64_t faults, Bytes bytes, Seconds latency, BytesPerSecond line) const;
  /// A prefetch of `bytes` on `path`.
  Seconds prefetch_time(UvmPath path, Bytes bytes, Seconds latency, BytesPerSecond line) const;
  /// A kernel touching every `page` of a `region` that sits wholly at the other end of `path`, in address order
  /// (the probe's first_touch): full batches, each migrating its own pages. Exact while a batch covers at most
  /// `prefetch_threshold` of a block (256 x 4 KiB = half a block), so that the prefetcher never fires.
  Seconds first_touch_time(UvmPath path, Bytes region, Bytes page, Seconds latency, BytesPerSecond line) const;
};

/// The parameters of models.uvm, declared once.
const ParamTable<UvmModel>& uvm_params();
Registry<Model>::Entry uvm_model_entry();

}  // namespace snsim::models
