// Twins of the probe's `step` family (tools/probe/src/families/step.cu): a data-parallel training step on every
// GPU of the record -- bf16 GEMMs, then the gradient averaged -- and lone GEMMs.
//
// The probe times steps back to back (steady state): the host is far ahead of the GPUs, so every kernel is queued
// behind the previous one (`pipelined`: the device's queue gap, not the host's launch) and the all-reduce is
// launched like a graph-replayed collective (its device-side cost only; the host's per-call cost is hidden behind
// the GEMMs). A sample is one step: from the common start of the GEMMs to the end of the last rank's reduction,
// which is what the probe's slowest-rank step time is in steady state (every step ends with an exchange between
// all ranks, so they leave it together).
//
//   gemm      the GEMMs of one sample, each an NN GEMM by shape (cublasGemmEx) over the A, B and C operands (the
//             record's bytes), then the idle gap of duty_gap_* records; the value is the time per GEMM
//   bsp       gemms_per_step GEMMs (the slow rank: slow_rank_gemms), then all_reduce of the gradient
//   pgas      the same GEMMs, then per peer a put of its gradient chunk by put_blocks blocks with a signal each,
//             a wait for every peer's chunk, the averaging kernel (its 2-byte scalar loads bind it: pgas.reduce_time),
//             a put of the averaged chunk to every peer (signalled the same way), and a wait for every peer's chunk
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation {

models::Gemm step_gemm(std::int64_t n) {
  return models::Gemm{.m = n, .n = n, .k = n, .layout = models::GemmLayout::nn};
}

namespace twins {
namespace {

using workloads::CollectiveOp;
using workloads::Compare;
using workloads::ComputeOp;
using workloads::Op;
using workloads::PutOp;
using workloads::SignalWaitOp;

constexpr int SCATTERED = 0;  // the probe's signals: chunks scattered to their owner, averaged chunks gathered back
constexpr int GATHERED = 1;

ComputeOp gemm(double n, models::OperandData operands) {
  ComputeOp c;
  c.shape = step_gemm(static_cast<std::int64_t>(n));
  c.operands = operands;
  c.flops = Flops{2 * n * n * n};
  c.bytes = Bytes{static_cast<std::uint64_t>(3 * n * n * 2)};  // A, B and C in bf16
  c.dtype = Dtype::bf16;
  c.pipelined = true;
  return c;
}

std::variant<Twin, std::string> layout(const TraceRecord& r, int gpus, const models::Models& models,
                                       models::OperandData operands);

}  // namespace

int power_warmup(double sample, const models::Models& models) {
  constexpr double WINDOWS = 5, MOST = 2000;
  return static_cast<int>(std::min(MOST, std::ceil(WINDOWS * models.compute->power_window.count() / sample)));
}

std::variant<Twin, std::string> step(const TraceRecord& r, int gpus, const models::Models& models) {
  if (r.extra.value("method", std::string()) == "events_single")
    return std::string("one GEMM per host synchronisation: the host's time between samples is not recorded");
  // snsim-probe's step family fills its operands with k/1024 - 1 (few mantissa bits); other programs say theirs.
  const auto operands = recorded_operands(r, models::OperandData::low_entropy);
  if (!operands) return fmt::format("operand data '{}' is not modelled", r.extra.value("data", std::string()));
  auto made = layout(r, gpus, models, *operands);
  if (auto* twin = std::get_if<Twin>(&made)) {
    // Warm-up samples, as the probe ran warm-up iterations: enough for the power-capped clock to settle.
    const double sample = r.median * twin->repetitions;
    if (sample > 0) twin->warmup = power_warmup(sample, models);
  }
  return made;
}

namespace {

std::variant<Twin, std::string> layout(const TraceRecord& r, int gpus, const models::Models& models,
                                       models::OperandData operands) {
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  if (r.test == "gemm") {
    // A sample: the GEMMs the probe timed together (then, in duty_gap_* records, the idle gap after them).
    const double n = extra_number(r, "n", 0);
    if (n <= 0 || extra_number(r, "m", 0) != n || extra_number(r, "k", 0) != n)
      return std::string("gemm record without square m, n, k extras");
    const int count =
        std::max(1, static_cast<int>(extra_number(r, r.variant == "bf16" ? "gemms_per_sample" : "gemms_per_burst", 1)));
    ComputeOp c = gemm(n, operands);
    c.bytes = r.bytes;
    auto& ops = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
    for (int i = 0; i < count; ++i) ops.push_back(op(c));
    if (const double gap = extra_number(r, "gap", 0); gap > 0) {
      ComputeOp idle;  // the probe's one-thread sleeping kernel: no tensor work
      idle.duration = Seconds{gap};
      idle.pipelined = true;
      ops.push_back(op(idle));
      twin.measured_label = to_string(Dtype::bf16);  // the GEMMs' labels name their dtype, the idle one's does not
    }
    twin.repetitions = count;
    return twin;
  }
  if (r.test != "bsp" && r.test != "pgas") return fmt::format("step test '{}' is not modelled", r.test);
  const int ranks = static_cast<int>(r.ranks.size());
  const int gemms = static_cast<int>(extra_number(r, "gemms_per_step", 0));
  const int slow_rank = static_cast<int>(extra_number(r, "slow_rank", -1));
  const int slow_gemms = static_cast<int>(extra_number(r, "slow_rank_gemms", gemms));
  const double n = extra_number(r, "gemm_n", 0);
  if (ranks < 2 || gemms < 1 || n <= 0) return std::string("step record without ranks, gemms_per_step or gemm_n");

  auto group = std::make_shared<std::vector<int>>(r.ranks.begin(), r.ranks.end());
  const int blocks = static_cast<int>(extra_number(r, "put_blocks", 32));
  for (int i = 0; i < ranks; ++i) {
    const int rank = r.ranks[static_cast<std::size_t>(i)];
    auto& ops = twin.sample[static_cast<std::size_t>(rank)];
    for (int g = 0; g < (rank == slow_rank ? slow_gemms : gemms); ++g) ops.push_back(op(gemm(n, operands)));
    if (r.test == "bsp") {
      CollectiveOp all_reduce;
      all_reduce.kind = models::CollectiveKind::all_reduce;
      all_reduce.bytes = r.bytes;
      all_reduce.group = group;
      all_reduce.launch = models::Launch::graph;
      ops.push_back(op(all_reduce));
      continue;
    }
    append_pgas_average(ops, r, static_cast<std::size_t>(i), r.bytes, blocks, *models.pgas);
  }
  return twin;
}

}  // namespace

void append_pgas_average(std::vector<Op>& ops, const TraceRecord& r, std::size_t index, Bytes bytes, int blocks,
                         const models::PgasModel& pgas) {
  const std::size_t ranks = r.ranks.size();
  const std::uint64_t chunk = bytes.count() / ranks;
  const auto exchange = [&](int signal) {
    for (std::size_t k = 1; k < ranks; ++k) {
      PutOp put;
      put.to = r.ranks[(index + k) % ranks];
      put.bytes = Bytes{chunk / static_cast<std::uint64_t>(blocks)};
      put.scope = models::Scope::block;
      put.issuers = blocks;
      put.signal = signal;
      ops.push_back(op(put));
    }
    SignalWaitOp wait;
    wait.signal = signal;
    wait.value = static_cast<std::uint64_t>(blocks) * (ranks - 1);
    wait.cmp = Compare::ge;
    wait.consume = true;
    ops.push_back(op(wait));
  };
  exchange(SCATTERED);
  ComputeOp average;  // reads its chunk and every peer's copy of it, writes its chunk, at the kernel's own rate
  average.duration = pgas.reduce_time(Bytes{chunk}, static_cast<int>(ranks) - 1);
  ops.push_back(op(average));
  exchange(GATHERED);
}

}  // namespace twins
}  // namespace snsim::validation
