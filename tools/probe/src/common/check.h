// Error checking for every CUDA, NCCL and NVSHMEM call the probe makes.
//
// A failed call throws ProbeError carrying "file:line: call: reason". The rank's top-level handler prints it and
// exits non-zero; records written before the failure are already flushed, so the trace stays valid up to that
// point and simply lacks its closing `complete` line.
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

namespace probe {

class ProbeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_call_failure(const char* file, int line, const char* call, const std::string& reason);

// Throws unless `condition` holds; for checks that are not library calls (verification, preconditions).
#define PROBE_REQUIRE(condition, message)                                                     \
  do {                                                                                        \
    if (!(condition)) ::probe::throw_call_failure(__FILE__, __LINE__, #condition, (message)); \
  } while (0)

#define CHECK_CUDA(call)                                                                            \
  do {                                                                                              \
    const cudaError_t probe_status_ = (call);                                                       \
    if (probe_status_ != cudaSuccess)                                                               \
      ::probe::throw_call_failure(                                                                  \
          __FILE__, __LINE__, #call,                                                                \
          std::string(cudaGetErrorName(probe_status_)) + ": " + cudaGetErrorString(probe_status_)); \
  } while (0)

// After a kernel launch: catches bad launch configurations at once and, because the probe synchronises
// before reading any timing, asynchronous faults surface at the next checked call.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

}  // namespace probe
