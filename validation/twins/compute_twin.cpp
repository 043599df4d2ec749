// Twins of the probe's `compute` GEMMs (tools/probe/src/families/compute.cu): cuBLASLt GEMMs of one shape and
// format timed back to back, each sample one GEMM queued behind the previous one (the device's queue gap, then the
// kernel; an event recorded between two GEMMs adds stream.event_record, a graph's node the graph's per-node launch
// instead of the queue gap). A record without a clock reading runs after warm-up GEMMs, at the power model's clock. A
// record with one (sm_clock_mhz) runs at the rate such a reading means (reported_clock_mhz,
// ComputeModel::rate_at_reported_clock): the capture ran for minutes under its power cap, and which clock a record
// found depends on what ran before it, which the twin does not replay; the power model is checked on its own records
// (gemm_sustained and gemm_data, below).
//
//   gemm, gemm_batched      one (batched) GEMM per sample, events around a run of them
//   gemm_method             the same GEMMs timed other ways: batch_events (a batch of calls between two events: no
//                           event between GEMMs) and graph_replay (the calls captured in a CUDA graph)
//   attention               PyTorch's SDPA on cuDNN's fused kernels, forward or backward (compute_kernels.py,
//                           events_queued): one kernel of its shape at the rate its clock reading means
//   memory_bound, adamw     PyTorch's memory-bound kernels (tools/probe/torch/compute_kernels.py, events_queued: an
//                           event between calls queued behind each other), a call the kernels of its op
//                           (memory_calls_of): one of its kind over the record's bytes, or eager RoPE's
//   gemm_sustained,         8192^3 GEMMs back to back for seconds, a sample the time per GEMM of a chunk of
//   gemm_data               gemms_per_sample between two events (events_per_chunk), on normal-distributed operands
//                           or (gemm_data) each `pattern` in turn: these run at the power model's clock, not the
//                           clock read, with the power their operands draw -- the power model's own check
#include <algorithm>

#include <fmt/format.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation {

std::variant<RecordedGemm, std::string> recorded_gemm(const TraceRecord& r) {
  const auto dtype_name = r.extra.value("dtype", std::string());
  const auto dtype = dtype_from_string(dtype_name == "fp8_e4m3" ? "fp8" : dtype_name);
  if (!dtype || *dtype == Dtype::fp32 || *dtype == Dtype::fp64)
    return fmt::format("compute/{}: GEMM format '{}' is not modelled", r.test, dtype_name);
  const auto layout_name = r.extra.value("layout", std::string("TN"));
  const auto layout = models::gemm_layout(layout_name);
  if (!layout) return fmt::format("compute/{}: GEMM layout '{}' is not modelled", r.test, layout_name);
  RecordedGemm out;
  out.dtype = *dtype;
  auto& g = out.gemm;
  g.m = static_cast<std::int64_t>(extra_number(r, "m"));
  g.n = static_cast<std::int64_t>(extra_number(r, "n"));
  g.k = static_cast<std::int64_t>(extra_number(r, "k"));
  g.batch = std::max<std::int64_t>(1, static_cast<std::int64_t>(extra_number(r, "batch", 1)));
  g.layout = *layout;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return std::string("GEMM record without m, n and k");
  out.clock_mhz = extra_number(r, "sm_clock_mhz");
  return out;
}

std::variant<RecordedAttention, std::string> recorded_attention(const TraceRecord& r) {
  const auto backend = r.extra.value("backend", std::string());
  if (backend != "cudnn")
    return fmt::format(
        "compute/attention: the {} backend is not modelled (snsim times fused attention as cuDNN's "
        "SDPA kernels, PyTorch's choice on Hopper)",
        backend.empty() ? "unnamed" : backend);
  RecordedAttention out;
  auto& a = out.attention;
  a.batch = static_cast<std::int64_t>(extra_number(r, "batch"));
  a.heads = static_cast<std::int64_t>(extra_number(r, "heads"));
  a.seq = static_cast<std::int64_t>(extra_number(r, "seq"));
  a.head_dim = static_cast<std::int64_t>(extra_number(r, "head_dim"));
  a.kv_heads = static_cast<std::int64_t>(extra_number(r, "kv_heads", static_cast<double>(a.heads)));
  a.causal = r.extra.value("causal", true);
  a.backward = r.variant.ends_with("_bwd");
  if (a.batch <= 0 || a.heads <= 0 || a.seq <= 0 || a.head_dim <= 0)
    return std::string("attention record without batch, heads, seq and head_dim");
  out.clock_mhz = extra_number(r, "sm_clock_mhz");
  return out;
}

namespace {

std::optional<models::MemoryKind> memory_kind_of(const TraceRecord& r) {
  if (r.test == "adamw") return models::MemoryKind{models::MemoryKernel::adamw, false};
  const std::string name = r.extra.value("op", std::string());
  // Streams: element-wise kernels of one format in and out (vectorised), narrowing casts, fills, concatenations.
  if (name == "add" || name == "copy" || name == "cast_fp32_bf16" || name == "cast_bf16_fp8" ||
      name == "cast_fp32_fp8" || name == "add_fp32" || name == "fill_fp32" || name == "cat3")
    return models::MemoryKind{models::MemoryKernel::stream, false};
  // PyTorch's unrolled kernel for a bf16 operand in fp32 arithmetic: widening casts, and autocast's residual add.
  if (name == "cast_bf16_fp32") return models::MemoryKind{models::MemoryKernel::widen, false};
  if (name == "add_fp32_bf16") return models::MemoryKind{models::MemoryKernel::mixed_add, false};
  if (name == "bias_grad") return models::MemoryKind{models::MemoryKernel::bias_grad, false};
  if (name == "embedding_bwd") return models::MemoryKind{models::MemoryKernel::embedding_grad, false};
  const auto kernel = models::memory_kernel(name);
  if (!kernel || !models::has_backward(*kernel)) return std::nullopt;
  return models::MemoryKind{*kernel, r.variant.ends_with("_bwd")};
}

/// Eager RoPE's kernels on the record's tensor: `elements` of `dtype`, with cos and sin tables of one head's
/// positions (`rows` of them on a [rows, heads, d] tensor; a sequence's, tokens / batch, on a heads view).
std::vector<models::MemoryCall> rotary_calls(const TraceRecord& r) {
  const double elements = extra_number(r, "elements"), head = extra_number(r, "head_dim");
  const bool heads = r.extra.value("layout", std::string()) == "heads_view";
  const double positions =
      heads ? extra_number(r, "tokens") / std::max(1.0, extra_number(r, "batch", 1)) : extra_number(r, "rows");
  const auto dtype = dtype_from_string(r.extra.value("dtype", std::string("bf16")));
  if (!(elements > 0) || !(head > 0) || !(positions > 0) || !dtype) return {};
  return models::eager_rope(elements, positions * head, models::element_size(*dtype), r.variant.ends_with("_bwd"),
                            !heads);
}

/// A gated MLP's eager activation on the record's `elements` outputs: on a 1-d x chunked in two (contiguous halves)
/// or, with layout `chunk_last_dim`, on a [tokens, 2 f] x chunked along its last dimension as a fused GEMM's output
/// is; the backward's gradient with respect to x adds the chunk's concatenation of the two halves' gradients.
std::vector<models::MemoryCall> gated_calls(const TraceRecord& r) {
  const double elements = extra_number(r, "elements");
  const auto dtype = dtype_from_string(r.extra.value("dtype", std::string("bf16")));
  if (!(elements > 0) || !dtype) return {};
  const double e = models::element_size(*dtype);
  const bool backward = r.variant.ends_with("_bwd");
  auto calls = models::eager_gated(elements, e, backward, r.extra.value("layout", std::string()) != "chunk_last_dim");
  if (backward)
    calls.push_back(
        {{models::MemoryKernel::stream, false}, Bytes{static_cast<std::uint64_t>(std::llround(4 * elements * e))}});
  return calls;
}

}  // namespace

std::vector<models::MemoryCall> memory_calls_of(const TraceRecord& r) {
  const std::string op = r.test == "adamw" ? std::string() : r.extra.value("op", std::string());
  if (op == "rotary") return rotary_calls(r);
  if (op == "swiglu") return gated_calls(r);
  const auto kind = memory_kind_of(r);
  if (!kind) return {};
  return {{*kind, r.bytes}};
}

namespace twins {
namespace {

/// The recorded GEMM as a kernel queued behind the previous one (flops and bytes its shape's).
workloads::ComputeOp queued_gemm(const RecordedGemm& g) {
  workloads::ComputeOp c;
  c.shape = g.gemm;
  c.dtype = g.dtype;
  c.flops = g.gemm.flops();
  c.bytes = g.gemm.operand_bytes(models::element_size(g.dtype));
  c.pipelined = true;
  return c;
}

/// The event a timing method records between two calls, on the stream's time.
workloads::ComputeOp event(const models::Models& models) {
  return workloads::ComputeOp{Flops{0}, Bytes{0}, models.stream->event_record};
}

/// The GEMMs of one chunk, queued back to back at the power model's clock.
std::variant<Twin, std::string> sustained(const TraceRecord& r, int gpus, const models::Models& models) {
  auto recorded = recorded_gemm(r);
  if (auto* reason = std::get_if<std::string>(&recorded)) return *reason;
  const auto operands = recorded_operands(r, models::OperandData::normal);
  if (!operands) return fmt::format("compute/{}: operand pattern '{}' is not modelled", r.test, r.variant);
  workloads::ComputeOp c = queued_gemm(std::get<RecordedGemm>(recorded));
  c.operands = *operands;
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  const int count = std::max(1, static_cast<int>(extra_number(r, "gemms_per_sample", 1)));
  auto& ops = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
  for (int i = 0; i < count; ++i) ops.push_back(op(c));
  twin.repetitions = count;
  if (r.median > 0) twin.warmup = power_warmup(r.median * count, models);
  return twin;
}

}  // namespace

std::variant<Twin, std::string> compute(const TraceRecord& r, int gpus, const models::Models& models,
                                        const std::string& method) {
  if (r.test == "gemm_sustained" || r.test == "gemm_data") return sustained(r, gpus, models);
  if (r.test == "memory_bound" || r.test == "adamw") {
    const auto calls = memory_calls_of(r);
    if (calls.empty()) return fmt::format("compute/{}: kernel '{}' is not modelled", r.test, r.variant);
    Twin twin;
    twin.sample.resize(static_cast<std::size_t>(gpus));
    auto& ops = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
    ops.push_back(op(event(models)));
    for (const auto& call : calls) {
      workloads::ComputeOp c;
      c.bytes = call.bytes;
      c.pipelined = true;
      c.memory = call.kind;
      ops.push_back(op(c));
    }
    return twin;
  }
  if (r.test == "attention") {
    auto recorded = recorded_attention(r);
    if (auto* reason = std::get_if<std::string>(&recorded)) return *reason;
    const auto& a = std::get<RecordedAttention>(recorded);
    Twin twin;
    twin.sample.resize(static_cast<std::size_t>(gpus));
    auto& ops = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
    ops.push_back(op(event(models)));
    workloads::ComputeOp c;
    c.shape = a.attention;
    c.flops = a.attention.flops();
    c.bytes = r.bytes;  // Q, K, V read and O written (backward: with dO, and dQ, dK, dV written)
    c.pipelined = true;
    if (a.clock_mhz > 0) {
      c.clock_mhz = a.clock_mhz;
      c.clock_reported = true;
    }
    ops.push_back(op(c));
    return twin;
  }
  if (r.test != "gemm" && r.test != "gemm_batched" && r.test != "gemm_method")
    return fmt::format("compute/{}: only GEMMs are modelled by kernel yet", r.test);
  if (method != "events_back_to_back" && method != "batch_events" && method != "graph_replay")
    return fmt::format("compute/{} timed by {}: a lone GEMM's launch and host side are not modelled", r.test, method);
  auto recorded = recorded_gemm(r);
  if (auto* reason = std::get_if<std::string>(&recorded)) return *reason;
  const double clock_mhz = std::get<RecordedGemm>(recorded).clock_mhz;
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  workloads::ComputeOp c = queued_gemm(std::get<RecordedGemm>(recorded));
  if (clock_mhz > 0) {
    c.clock_mhz = clock_mhz;
    c.clock_reported = true;
  }
  auto& ops = twin.sample[static_cast<std::size_t>(rank_at(r, 0))];
  if (method == "events_back_to_back")  // the event between this GEMM and the next, on the stream's time
    ops.push_back(op(event(models)));
  if (method == "graph_replay") c.launch = models::Launch::graph;
  ops.push_back(op(c));
  // No clock read: the GEMMs ran back to back long enough for the power cap to settle; so do the twin's.
  if (clock_mhz <= 0 && r.median > 0) twin.warmup = power_warmup(r.median, models);
  return twin;
}

}  // namespace twins
}  // namespace snsim::validation
