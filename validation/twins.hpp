// Twins: for a trace record, the program that repeats on the simulator the experiment the probe ran on the GPUs.
//
// A twin is one sample of the experiment as per-rank ops (a pipelined copy record is 100 queued copies, a NCCL
// record one collective, ...), how many samples to draw, and how a sample's simulated span becomes the record's
// value: a time per repetition, or bytes per second. Twins are built from plain ops, so what a twin measures can
// always be written as a scenario too.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "models/models.hpp"
#include "program/program.hpp"
#include "validation/trace.hpp"

namespace snsim::validation {

struct Twin {
  std::vector<std::vector<workloads::Op>> sample;  // one sample's ops, per rank
  int samples = 1;                                 // samples to simulate (capped by the caller)
  int warmup = 0;  // samples simulated before them and dropped, as the probe's warm-up (power-capped clocks settle)
  double repetitions = 1;      // measured repetitions inside one sample
  std::string measured_label;  // when set, only ops whose label contains it end the sample (a concurrent test's part)
  std::optional<Bytes> rate_bytes;  // B/s records: payload bytes of one repetition
};

/// The twin of `record` from `trace` on a platform of `gpus` GPUs, or why there is none (a family snsim does not
/// model yet, a test it does not know). `models` gives the costs of the probe's own mechanics (event waits). The
/// record's ranks are GPUs of the platform; `run_gpus` are every GPU of the run that the record comes from (an
/// imported nvbandwidth all_to_host record is one GPU's share of a copy by all of them). A twin's value is in the
/// record's unit: a record in B/s whose twin would give a time is refused, not compared.
std::variant<Twin, std::string> make_twin(const Trace& trace, const TraceRecord& record, int gpus,
                                          const models::Models& models, const std::vector<int>& run_gpus = {});

/// An imported record as the snsim-probe record of the same experiment (nvbandwidth's one-way peer copy is the
/// probe's copy ce_peer/single, a time; nccl-tests' all_reduce_perf on N ranks its collective all_reduce), for the
/// calibration fits, which read the probe's records; nullopt where the tool ran no experiment of the probe's.
std::optional<TraceRecord> probe_equivalent(const Trace& trace, const TraceRecord& record);
/// The capture environment the probe's records of an imported trace run under (NCCL_ALGO, NCCL_PROTO, ... as the
/// log printed them).
Json probe_environment(const Trace& trace);

/// The GEMM a compute record timed (its m, n, k, batch, layout and format) and the SM clock read during it (0 when
/// the record has none), or why the record is no GEMM the model can time.
struct RecordedGemm {
  models::Gemm gemm;
  Dtype dtype = Dtype::bf16;
  double clock_mhz = 0;
};
std::variant<RecordedGemm, std::string> recorded_gemm(const TraceRecord& record);
/// The GEMM of snsim-probe's step family (tools/probe/src/families/step.cu: cublasGemmEx without transposes, bf16),
/// n x n x n.
models::Gemm step_gemm(std::int64_t n);
/// The fused attention a compute/attention record timed (PyTorch's SDPA on cuDNN's kernels: its batch, query heads,
/// sequence, head dimension, causality and pass) and the SM clock read during it, or why the record is none the
/// model times (another backend: FlashAttention-2's and the memory-efficient kernels run at rates of their own).
struct RecordedAttention {
  models::Attention attention;
  double clock_mhz = 0;
};
std::variant<RecordedAttention, std::string> recorded_attention(const TraceRecord& record);
/// The kernels one call of a PyTorch memory-bound record's op launches (compute/memory_bound: its `op`, `_bwd`
/// variants backward; compute/adamw), each of its kind and bytes: one kernel over the record's bytes, or eager
/// RoPE's (models::eager_rope, from the record's `elements` and table shape); none for an op the model has no
/// kind for.
std::vector<models::MemoryCall> memory_calls_of(const TraceRecord& record);

/// How a record was timed: its `method` field, else its trace header's (snsim-crosscheck writes both: gate,
/// events_single, graph, host_clock, ...); "probe" for snsim-probe's records (copies behind its gate kernel,
/// latency loops on the GPU clock), the tool's name for other tools' output.
std::string timing_method(const Trace& trace, const TraceRecord& record);

/// The tool an imported trace comes from (its header's `source`: "nccl-tests", "nvbandwidth", ...); empty for the
/// probe's own traces.
std::string imported_source(const Trace& trace);

}  // namespace snsim::validation
