// CHECK_NVSHMEM: every NVSHMEM host call the probe makes goes through it (see check.h for the CUDA side).
#pragma once

#include <string>

#include "check.h"

#define CHECK_NVSHMEM(call)                                                                   \
  do {                                                                                        \
    const int probe_nvshmem_status_ = static_cast<int>(call);                                 \
    if (probe_nvshmem_status_ != 0)                                                           \
      ::probe::throw_call_failure(__FILE__, __LINE__, #call,                                  \
                                  "NVSHMEM status " + std::to_string(probe_nvshmem_status_)); \
  } while (0)
