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
// (workloads/uvm_test.cpp) and `snsim calibrate` fits the parameters through them (validation/fits/uvm.cpp).
// Not modelled: access-counter migration (off by default on x86 hosts, so not measurable on the H200 machines),
// oversubscription and eviction (a managed buffer larger than a GPU's memory is an input error), CPU page faults.
#pragma once

#include <array>
#include <cstdint>
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

class UvmModel final : public Model {
 public:
  static constexpr Bytes BLOCK{2ull << 20};  // VA block: the unit of residency and of the prefetcher (uvm_va_block.h)

  std::array<MigrationParams, 3> paths{};  // indexed by UvmPath
  int fault_batch_size = 256;              // faults fetched and serviced together
  Seconds batch_service;                   // fixed cost of one fault batch
  double prefetch_threshold = 0.51;        // density prefetcher: share of a block resident before the rest follows
  bool density_prefetch = true;            // uvm_perf_prefetch_enable
  Seconds kernel_start;                    // a touching or reading kernel's launch and drain

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

Registry<Model>::Entry uvm_model_entry();

}  // namespace snsim::models
