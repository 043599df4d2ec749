// What the probe's put_rate kernels put (tools/probe/src/families/nvshmem.cu), for the nvshmem twins and the PGAS
// fit (validation/fits/pgas_fit.cpp), which must read a rate record the same way.
#pragma once

#include <optional>

#include "models/pgas.hpp"
#include "validation/trace.hpp"

namespace snsim::validation::twins {

/// put_rate_kernel's split of a record's bytes over the granules (threads, warps or blocks) of its launch: one
/// slice of ceil(bytes / granules), at least 8 bytes, per granule, the last one shorter; granules past the end put
/// nothing. Every issuer puts its slice `count` times, then the kernel quiets.
struct PutRateLayout {
  models::Scope scope = models::Scope::thread;
  int issuers = 0;     // granules with a full slice
  Bytes slice;         // bytes each of them puts per iteration
  Bytes remainder{0};  // the last granule's shorter slice, if any
  int count = 1;       // iterations (iters_per_sample)
};

/// The layout of a put_rate or put_rate_blocks record, or nullopt when it lacks the scope (variant), blocks,
/// threads or iters_per_sample.
std::optional<PutRateLayout> put_rate_layout(const TraceRecord& record);

}  // namespace snsim::validation::twins
