#include "families.h"

namespace probe {

const std::vector<Family>& all_families() {
  static const std::vector<Family> families = {
      {"copy",
       "copy-engine and SM copies: every ordered GPU pair (--pairs) and each GPU locally, 4 B - 1 GiB; "
       "1, 2, 4, 8 pairs and all-to-all copying at once, 4 KiB - 1 GiB",
       false,
       1,
       {"ce_peer/{single,pipelined}", "ce_peer_bidir/{single,pipelined}", "ce_local/{single,pipelined}",
        "sm_push/{single,pipelined}", "sm_pull/{single,pipelined}", "sm_local/{single,pipelined}",
        "ce_sm_shared/{ce,sm,both}", "ce_concurrent/{pairs1,pairs2,pairs4,pairs8,a2a}",
        "sm_concurrent/{pairs1,pairs2,pairs4,pairs8,a2a}"},
       run_copy_family},
      {"latency",
       "dependent-load latency by pointer chasing, local and peer memory, 4 MiB and 1 GiB spans",
       false,
       1,
       {"local_load/chase", "peer_load/chase"},
       run_latency_family},
      {"jitter",
       "2,000 single-shot copies at 4 KiB, 1 MiB and 64 MiB, every sample kept",
       false,
       1,
       {"ce_local/single", "ce_peer/single", "sm_push/single"},
       run_jitter_family},
      {"launch",
       "empty-kernel launch overhead",
       false,
       1,
       {"empty_kernel/{host_enqueue,launch_to_completion,back_to_back,back_to_back_gated,graph_back_to_back}"},
       run_launch_family},
#ifdef PROBE_HAVE_NCCL
      {"collective",
       "NCCL collectives, one process per GPU, 8 B - 1 GiB, timed like nccl-tests",
       true,
       2,
       {"all_reduce/{out_of_place,graph}", "all_gather/{out_of_place,graph}", "reduce_scatter/{out_of_place,graph}",
        "all_to_all/{out_of_place,graph}", "broadcast/{out_of_place,graph}"},
       run_collective_family},
      {"step",
       "a data-parallel step: 20 bf16 GEMMs then the gradient averaged by NCCL (bsp) or NVSHMEM puts (pgas), "
       "GPU 1 slowed by 0-20 % extra GEMMs; and lone cuBLAS bf16 GEMMs",
       true,
       2,
       {"gemm/bf16", "bsp/{slow_0,slow_5,slow_10,slow_20}", "pgas/{slow_0,slow_5,slow_10,slow_20} (with NVSHMEM)"},
       run_step_family},
#endif
#ifdef PROBE_HAVE_NVSHMEM
      {"nvshmem",
       "NVSHMEM device-initiated put/get/signal between PE 0 and each PE (rates with PE 1), barrier and "
       "all-to-all puts over every PE, one process per GPU",
       true,
       2,
       {"put_signal_pingpong/round_trip", "put_latency/thread", "get_latency/thread", "put_rate/{thread,warp,block}",
        "put_rate_blocks/block", "barrier/{thread,block}", "put_rate_bidir/block", "put_rate_bidir_blocks/block",
        "put_rate_self/block", "exchange/{alone,after_flush}", "put_rate_all/block"},
       run_nvshmem_family},
      {"nvshmem-bidir",
       "the nvshmem family's two-PE tests alone: both PEs putting to each other at once, PE 0 putting to itself, "
       "the step family's PGAS exchange without GEMMs",
       true,
       2,
       {"put_rate_bidir/block", "put_rate_bidir_blocks/block", "put_rate_self/block", "exchange/{alone,after_flush}"},
       run_nvshmem_bidir_family},
#endif
      {"uvm",
       "managed memory 2 MiB - 4 GiB: fault-driven migration, prefetch, remote reads, round robin over every GPU",
       false,
       1,
       {"first_touch/{host_to_gpu,gpu_to_gpu}", "prefetch/{host_to_gpu,gpu_to_host,gpu_to_gpu}",
        "read/{local,peer_mapped,host_mapped}", "round_robin/{prefetch,touch}"},
       run_uvm_family},
      {"compute",
       "GPU 0's kernels: cuBLASLt GEMMs by shape and format (bf16, fp16, tf32, fp8 e4m3), batched and grouped "
       "GEMMs, timing methods, sustained GEMMs (clocks and power), operand data, per-kernel jitter, launch costs",
       false,
       1,
       {"gemm/{bf16,fp16,tf32,fp8_e4m3}", "gemm_batched/bf16", "gemm_grouped/bf16",
        "gemm_method/{batch_events,graph_replay,single_shot_events,single_shot_host}", "gemm_sustained/bf16",
        "gemm_data/{normal,zeros,uniform,ones,small_int,normal_again}", "kernel_jitter/<kernel>",
        "launch_cost/<kernel>"},
       run_compute_family},
  };
  return families;
}

const Family* find_family(const std::string& name) {
  for (const Family& family : all_families())
    if (family.name == name) return &family;
  return nullptr;
}

}  // namespace probe
