// CHECK_NCCL: every NCCL call the probe makes goes through it (see check.h for the CUDA side).
#pragma once

#include <nccl.h>

#include <string>

#include "check.h"

#define CHECK_NCCL(call)                                                                                 \
  do {                                                                                                   \
    const ncclResult_t probe_nccl_status_ = (call);                                                      \
    if (probe_nccl_status_ != ncclSuccess)                                                               \
      ::probe::throw_call_failure(                                                                       \
          __FILE__, __LINE__, #call,                                                                     \
          std::string(ncclGetErrorString(probe_nccl_status_)) + " (" + ncclGetLastError(nullptr) + ")"); \
  } while (0)
