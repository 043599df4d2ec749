// What the per-family twin builders share (validation/twins/*.cpp); not for use outside validation/.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "models/compute.hpp"
#include "models/pgas.hpp"
#include "validation/twins.hpp"

namespace snsim::validation::twins {

/// An op of a twin's sample; the phase and tag are set when the twin is laid out.
inline workloads::Op op(auto what) {
  return workloads::Op{std::move(what), 0, -1};
}

/// Warm-up samples before a twin's measured ones, as the probe's warm-up calls: five moving-average windows of the
/// tensor duty (the power-capped clock then holds > 99 % of its steady value), at most 2,000 samples of `sample`.
int power_warmup(double sample, const models::Models& models);

/// What a record's GEMM operands held (extra `data` or `pattern`: normal, random and uniform have full mantissas;
/// zeros, ones, small_int and low_entropy few), `missing` without either, nullopt for a pattern the model does not
/// know.
std::optional<models::OperandData> recorded_operands(const TraceRecord& record, models::OperandData missing);

/// The record's i-th rank, or 0.
int rank_at(const TraceRecord& record, std::size_t i);
/// An environment variable of the capture, or "".
std::string env(const Trace& trace, const char* name);

// One builder per family: the twin, or why there is none.
/// `method`: the record's timing method (timing_method()), whose mechanics the twin adds around the copies.
std::variant<Twin, std::string> copy(const TraceRecord& record, int gpus, const models::Models& models,
                                     const std::string& method);
std::variant<Twin, std::string> launch(const TraceRecord& record, int gpus, const models::Models& models,
                                       const std::string& method);
std::variant<Twin, std::string> collective(const Trace& trace, const TraceRecord& record, int gpus);
std::variant<Twin, std::string> nvshmem(const TraceRecord& record, int gpus, const models::Models& models);
std::variant<Twin, std::string> latency(const TraceRecord& record, int gpus, const models::Models& models);
std::variant<Twin, std::string> uvm(const TraceRecord& record, int gpus);
std::variant<Twin, std::string> step(const TraceRecord& record, int gpus, const models::Models& models);
/// `method`: the record's timing method (timing_method()).
std::variant<Twin, std::string> compute(const TraceRecord& record, int gpus, const models::Models& models,
                                        const std::string& method);
/// compute/train_step: the training workload's step on one GPU of the record's model.
std::variant<Twin, std::string> train_step(const Trace& trace, const TraceRecord& record, int gpus,
                                           const models::Models& models);
/// Records of other tools' output (twins/imported_twin.cpp); `run_gpus` are the GPUs of the record's run.
std::variant<Twin, std::string> imported(const Trace& trace, const TraceRecord& record, int gpus,
                                         const models::Models& models, const std::vector<int>& run_gpus);

/// The probe's PGAS gradient averaging (tools/probe/src/families/step.cu, and nvshmem.cu's `exchange`) as the ops of
/// the record's `index`-th rank, appended to `ops`: per peer a put of its chunk of `bytes` by `blocks` blocks with a
/// signal each, a wait for every peer's chunk, the averaging kernel (pgas.reduce_time), a put of the averaged chunk
/// to every peer (signalled the same way), and a wait for every peer's chunk.
void append_pgas_average(std::vector<workloads::Op>& ops, const TraceRecord& record, std::size_t index, Bytes bytes,
                         int blocks, const models::PgasModel& pgas);

}  // namespace snsim::validation::twins
