// NCCL helpers of the multi-process families: CHECK_NCCL, through which every NCCL call goes (check.h has the CUDA
// side), and the reduction of per-rank timings to the slowest rank.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "check.h"
#include "cuda_util.h"

#define CHECK_NCCL(call)                                                                                 \
  do {                                                                                                   \
    const ncclResult_t probe_nccl_status_ = (call);                                                      \
    if (probe_nccl_status_ != ncclSuccess)                                                               \
      ::probe::throw_call_failure(                                                                       \
          __FILE__, __LINE__, #call,                                                                     \
          std::string(ncclGetErrorString(probe_nccl_status_)) + " (" + ncclGetLastError(nullptr) + ")"); \
  } while (0)

namespace probe {

// Replaces each entry of `times` with the largest over all ranks of `comm` (an operation ends when its last rank
// does). Every rank calls it with as many entries.
inline void slowest_rank(std::vector<double>& times, ncclComm_t comm, const Stream& stream) {
  DeviceBuffer on_gpu(stream.device(), times.size() * sizeof(double));
  CHECK_CUDA(cudaMemcpy(on_gpu.get(), times.data(), times.size() * sizeof(double), cudaMemcpyHostToDevice));
  CHECK_NCCL(ncclAllReduce(on_gpu.get(), on_gpu.get(), times.size(), ncclFloat64, ncclMax, comm, stream));
  stream.synchronize();
  CHECK_CUDA(cudaMemcpy(times.data(), on_gpu.get(), times.size() * sizeof(double), cudaMemcpyDeviceToHost));
}

}  // namespace probe
