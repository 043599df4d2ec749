// The measurement families and their registry.
#pragma once

#include <string>
#include <vector>

#include "../common/process.h"

namespace probe {

struct Family {
  std::string name;
  std::string summary;
  bool one_process_per_gpu;  // NCCL and NVSHMEM families: forked as one rank per visible GPU
  int min_gpus;
  // The test/variant names it emits (for --list; README.md documents what each one times).
  std::vector<std::string> tests;
  void (*run)(RankContext&);
};

// Every family built into this binary, in the default run order.
const std::vector<Family>& all_families();
const Family* find_family(const std::string& name);

void run_copy_family(RankContext& context);
void run_latency_family(RankContext& context);
void run_jitter_family(RankContext& context);
void run_launch_family(RankContext& context);
#ifdef PROBE_HAVE_NCCL
void run_collective_family(RankContext& context);
void run_step_family(RankContext& context);
#endif
#ifdef PROBE_HAVE_NVSHMEM
void run_nvshmem_family(RankContext& context);
void run_nvshmem_bidir_family(RankContext& context);
#endif
void run_uvm_family(RankContext& context);
void run_compute_family(RankContext& context);

}  // namespace probe
