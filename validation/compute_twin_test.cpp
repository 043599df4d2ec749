// The `compute` family's GEMM twins (validation/twins/compute_twin.cpp) and their split by shape (validate.cpp).
#include <doctest/doctest.h>

#include <set>
#include <tuple>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "validation/twins.hpp"
#include "validation/validate.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

TraceRecord gemm(int m, int n, int k, const std::string& method = "events_back_to_back", double clock_mhz = 1500,
                 const std::string& test = "gemm") {
  TraceRecord r;
  r.id = fmt::format("compute/{}/bf16/0/0/TN_m{}_n{}_k{}_{}", test, m, n, k, method);
  r.family = Family::compute;
  r.test = test;
  r.variant = test == "gemm_method" ? method : "bf16";
  r.ranks = {0};
  r.median = r.p01 = r.p99 = r.min = r.max = 1e-4;
  r.samples = {1e-4};
  r.extra = {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}, {"layout", "TN"}, {"method", method}};
  if (clock_mhz > 0) r.extra["sm_clock_mhz"] = clock_mhz;
  return r;
}

Trace trace_of_records(std::vector<TraceRecord> records) {
  Trace t;
  t.source = "synthetic.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}};
  t.records = std::move(records);
  t.complete = true;
  return t;
}

}  // namespace

TEST_CASE("compute twins: a GEMM at its read clock, behind the event between two GEMMs or none, or in a graph") {
  const auto models = snsim::models::testing::load();
  const auto ops_of = [&](const TraceRecord& r) {
    const auto made = make_twin(trace_of_records({r}), r, 1, models);
    REQUIRE(std::holds_alternative<Twin>(made));
    return std::get<Twin>(made);
  };
  const Twin events = ops_of(gemm(4096, 4096, 4096));
  REQUIRE(events.sample[0].size() == 2);
  const auto& event = std::get<workloads::ComputeOp>(events.sample[0][0].what);
  CHECK(event.duration == models.stream->event_record);
  const auto& kernel = std::get<workloads::ComputeOp>(events.sample[0][1].what);
  REQUIRE(kernel.gemm());
  CHECK(kernel.gemm()->m == 4096);
  CHECK(kernel.pipelined);
  CHECK(kernel.clock_mhz == 1500);
  CHECK(kernel.clock_reported);  // read under load: the rate such a reading means, not a locked clock
  CHECK(events.warmup == 0);     // the clock is the record's: no warm-up to settle it
  // Batched between two events: the GEMM alone; replayed from a graph: a graph node.
  const Twin batched = ops_of(gemm(4096, 4096, 4096, "batch_events", 1500, "gemm_method"));
  REQUIRE(batched.sample[0].size() == 1);
  const Twin graph = ops_of(gemm(4096, 4096, 4096, "graph_replay", 1500, "gemm_method"));
  REQUIRE(graph.sample[0].size() == 1);
  CHECK(std::get<workloads::ComputeOp>(graph.sample[0][0].what).launch == models::Launch::graph);
  // No clock read: warm-up GEMMs first, so that the power model's clock settles (five windows of its duty).
  const Twin unread = ops_of(gemm(4096, 4096, 4096, "events_back_to_back", 0));
  CHECK_FALSE(std::get<workloads::ComputeOp>(unread.sample[0][1].what).clock_mhz);
  CHECK(unread.warmup == static_cast<int>(std::ceil(5 * models.compute->power_window.count() / 1e-4)));
  // What the model cannot time is said, not guessed.
  const auto single =
      make_twin(trace_of_records({}), gemm(64, 64, 64, "single_shot_host", 1500, "gemm_method"), 1, models);
  REQUIRE(std::holds_alternative<std::string>(single));
  CHECK(std::get<std::string>(single) ==
        "compute/gemm_method timed by single_shot_host: a lone GEMM's launch and host side are not modelled");
}

TEST_CASE("compute split: a GEMM shape calibrates or validates in every timing method alike, half and half") {
  // Split by shape, not along a size curve: the same shape timed twice lands on the same side, and about half
  // of many shapes calibrate.
  std::vector<TraceRecord> records;
  for (int m = 128; m <= 128 * 64; m += 128) {
    records.push_back(gemm(m, 4096, 4096));
    records.push_back(gemm(m, 4096, 4096, "events_back_to_back", 1700));
  }
  const Trace trace = trace_of_records(records);
  std::vector<TracedRecord> all;
  for (const auto& r : trace.records) all.push_back({&trace, &r});
  const auto uses = split_records(all);
  int calibration = 0;
  for (std::size_t i = 0; i < uses.size(); i += 2) {
    CHECK(uses[i] == uses[i + 1]);
    calibration += uses[i] == Use::calibration;
  }
  CHECK(calibration > 20);
  CHECK(calibration < 44);
  // GEMMs batched between two events calibrate (with the event-per-GEMM records they tell the event's cost from
  // the kernel's); the other methods validate.
  const auto batch = gemm(1024, 1024, 1024, "batch_events", 1500, "gemm_method");
  const auto replay = gemm(1024, 1024, 1024, "graph_replay", 1500, "gemm_method");
  const Trace methods = trace_of_records({batch, replay});
  const auto method_uses = split_records({{&methods, &methods.records[0]}, {&methods, &methods.records[1]}});
  CHECK(method_uses[0] == Use::calibration);
  CHECK(method_uses[1] == Use::validation);
}

TEST_CASE("compute twins: sustained GEMMs run at the power model's clock with the power their operands draw") {
  const auto models = snsim::models::testing::load();
  auto data = [](const std::string& pattern) {
    TraceRecord r = gemm(8192, 8192, 8192, "events_per_chunk", 1486, "gemm_data");
    r.variant = pattern;
    r.extra["pattern"] = pattern == "normal_again" ? "normal" : pattern;
    r.extra["gemms_per_sample"] = 8;
    r.extra.erase("layout");  // the probe's gemm_data records name no layout: TN
    return r;
  };
  const auto twin_of = [&](const TraceRecord& r) {
    const auto made = make_twin(trace_of_records({r}), r, 1, models);
    REQUIRE(std::holds_alternative<Twin>(made));
    return std::get<Twin>(made);
  };
  for (const auto& [pattern, operands] :
       {std::pair{"normal", models::OperandData::normal}, std::pair{"uniform", models::OperandData::normal},
        std::pair{"small_int", models::OperandData::low_entropy},
        std::pair{"zeros", models::OperandData::low_entropy}}) {
    const std::string pattern_name = pattern;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(pattern_name);
    const Twin t = twin_of(data(pattern));
    REQUIRE(t.sample[0].size() == 8);  // a chunk: gemms_per_sample GEMMs queued back to back
    CHECK(t.repetitions == 8);
    const auto& kernel = std::get<workloads::ComputeOp>(t.sample[0][0].what);
    CHECK(kernel.operands == operands);
    CHECK_FALSE(kernel.clock_mhz);  // the clock read is what the power model must predict, not an input
    REQUIRE(kernel.gemm());
    CHECK(kernel.gemm()->layout == models::GemmLayout::tn);
    CHECK(t.warmup > 0);
  }
  const auto unknown = make_twin(trace_of_records({}), data("checkerboard"), 1, models);
  REQUIRE(std::holds_alternative<std::string>(unknown));
  CHECK(std::get<std::string>(unknown) == "compute/gemm_data: operand pattern 'checkerboard' is not modelled");
  // The sustained record fits the power cap; the patterns check it.
  const Trace uses =
      trace_of_records({gemm(8192, 8192, 8192, "events_per_chunk", 1489, "gemm_sustained"), data("normal")});
  const auto split = split_records({{&uses, &uses.records[0]}, {&uses, &uses.records[1]}});
  CHECK(split[0] == Use::calibration);
  CHECK(split[1] == Use::validation);
}

TEST_CASE("compute twins: PyTorch's memory-bound kernels run as the kernels of their op behind an event") {
  const auto models = snsim::models::testing::load();
  const auto record = [](const std::string& test, const std::string& variant, const std::string& op) {
    TraceRecord r;
    r.id = fmt::format("compute/{}/{}/0/67108864/x", test, variant);
    r.family = Family::compute;
    r.test = test;
    r.variant = variant;
    r.ranks = {0};
    r.bytes = Bytes{64ull << 20};
    r.median = r.p01 = r.p99 = r.min = r.max = 3e-5;
    r.samples = {3e-5};
    r.extra = {{"op", op}, {"method", "events_queued"}};
    return r;
  };
  for (const auto& [variant, op, kernel, backward] :
       {std::tuple{"layernorm_bwd", "layernorm", models::MemoryKernel::layernorm, true},
        std::tuple{"rmsnorm_fwd", "rmsnorm", models::MemoryKernel::rmsnorm, false},
        std::tuple{"add", "add", models::MemoryKernel::stream, false},
        std::tuple{"cast_fp32_bf16", "cast_fp32_bf16", models::MemoryKernel::stream, false},
        std::tuple{"cast_bf16_fp32", "cast_bf16_fp32", models::MemoryKernel::widen, false},
        std::tuple{"cross_entropy_bwd", "cross_entropy", models::MemoryKernel::cross_entropy, true},
        std::tuple{"layernorm_fp32_fwd", "layernorm", models::MemoryKernel::layernorm, false},
        std::tuple{"add_fp32_bf16", "add_fp32_bf16", models::MemoryKernel::mixed_add, false},
        std::tuple{"add_fp32", "add_fp32", models::MemoryKernel::stream, false},
        std::tuple{"fill_fp32", "fill_fp32", models::MemoryKernel::stream, false},
        std::tuple{"cat3", "cat3", models::MemoryKernel::stream, false},
        std::tuple{"bias_grad", "bias_grad", models::MemoryKernel::bias_grad, false},
        std::tuple{"embedding_bwd", "embedding_bwd", models::MemoryKernel::embedding_grad, false}}) {
    const std::string variant_name = variant;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(variant_name);
    const auto r = record("memory_bound", variant, op);
    const auto made = make_twin(trace_of_records({r}), r, 1, models);
    REQUIRE(std::holds_alternative<Twin>(made));
    const auto& ops = std::get<Twin>(made).sample[0];
    REQUIRE(ops.size() == 2);
    CHECK(std::get<workloads::ComputeOp>(ops[0].what).duration == models.stream->event_record);
    const auto& kernel_op = std::get<workloads::ComputeOp>(ops[1].what);
    CHECK(kernel_op.memory.kernel == kernel);
    CHECK(kernel_op.memory.backward == backward);
    CHECK(kernel_op.bytes == r.bytes);
    CHECK(kernel_op.pipelined);
  }
  const auto adam = record("adamw", "fused_fp32", "adamw");
  REQUIRE_FALSE(memory_calls_of(adam).empty());
  CHECK(memory_calls_of(adam).front().kind.kernel == models::MemoryKernel::adamw);
  // Eager RoPE: its kernels on the record's tensor, with tables of its positions -- a sequence's on a heads view.
  auto rope = record("memory_bound", "rotary_heads_bwd", "rotary");
  rope.extra.update({{"layout", "heads_view"},
                     {"elements", 8 << 20},
                     {"head_dim", 128},
                     {"tokens", 4096},
                     {"batch", 2},
                     {"dtype", "bf16"}});
  const auto made = make_twin(trace_of_records({rope}), rope, 1, models);
  REQUIRE(std::holds_alternative<Twin>(made));
  const auto& ops = std::get<Twin>(made).sample[0];
  const auto calls = models::eager_rope(8 << 20, 2048 * 128, 2, true, false);
  REQUIRE(ops.size() == 1 + calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& kernel_op = std::get<workloads::ComputeOp>(ops[i + 1].what);
    CHECK(kernel_op.bytes == calls[i].bytes);
    CHECK(kernel_op.memory.kernel == calls[i].kind.kernel);
    CHECK(kernel_op.pipelined);
  }
  // On a contiguous [rows, heads, d] tensor the tables are one per row; without the tensor's size, no twin.
  auto rows = record("memory_bound", "rotary_fwd", "rotary");
  rows.extra.update({{"elements", 1 << 20}, {"head_dim", 128}, {"rows", 512}, {"dtype", "bf16"}});
  const auto row_calls = memory_calls_of(rows);
  REQUIRE_FALSE(row_calls.empty());
  CHECK(row_calls.front().bytes == models::eager_rope(1 << 20, 512 * 128, 2, false, true).front().bytes);
  CHECK(row_calls.back().kind.kernel == models::MemoryKernel::stream);  // the sum of two contiguous products
  const auto bare = record("memory_bound", "rotary_fwd", "rotary");
  CHECK(memory_calls_of(bare).empty());
  const auto dropout = record("memory_bound", "dropout_fwd", "dropout");
  const auto none = make_twin(trace_of_records({dropout}), dropout, 1, models);
  REQUIRE(std::holds_alternative<std::string>(none));
  CHECK(std::get<std::string>(none) == "compute/memory_bound: kernel 'dropout_fwd' is not modelled");
}

TEST_CASE("compute twins: cuDNN's SDPA runs as one fused attention kernel of its shape at the clock read") {
  const auto models = snsim::models::testing::load();
  const auto record = [](const std::string& backend, const std::string& pass) {
    TraceRecord r;
    r.id = fmt::format("compute/attention/{}_{}/0/67108864/b2_s2048_h16_kv4_d128_causal", backend, pass);
    r.family = Family::compute;
    r.test = "attention";
    r.variant = backend + "_" + pass;
    r.ranks = {0};
    r.bytes = Bytes{64ull << 20};
    r.median = r.p01 = r.p99 = r.min = r.max = 1e-4;
    r.samples = {1e-4};
    r.extra = {{"op", "sdpa"},        {"backend", backend}, {"batch", 2},
               {"seq", 2048},         {"heads", 16},        {"kv_heads", 4},
               {"head_dim", 128},     {"causal", true},     {"method", "events_queued"},
               {"sm_clock_mhz", 1755}};
    return r;
  };
  const auto r = record("cudnn", "bwd");
  const auto made = make_twin(trace_of_records({r}), r, 1, models);
  REQUIRE(std::holds_alternative<Twin>(made));
  const auto& ops = std::get<Twin>(made).sample[0];
  REQUIRE(ops.size() == 2);
  CHECK(std::get<workloads::ComputeOp>(ops[0].what).duration == models.stream->event_record);
  const auto& kernel = std::get<workloads::ComputeOp>(ops[1].what);
  REQUIRE(kernel.attention());
  CHECK(kernel.attention()->batch == 2);
  CHECK(kernel.attention()->heads == 16);
  CHECK(kernel.attention()->kv_heads == 4);
  CHECK(kernel.attention()->seq == 2048);
  CHECK(kernel.attention()->causal);
  CHECK(kernel.attention()->backward);
  CHECK(kernel.clock_mhz == 1755);
  CHECK(kernel.bytes == r.bytes);
  CHECK(kernel.pipelined);
  // The other backends run at rates of their own: not modelled, said so.
  const auto flash = record("flash", "fwd");
  const auto none = make_twin(trace_of_records({flash}), flash, 1, models);
  REQUIRE(std::holds_alternative<std::string>(none));
  CHECK(std::get<std::string>(none) ==
        "compute/attention: the flash backend is not modelled (snsim times fused attention as cuDNN's SDPA kernels, "
        "PyTorch's choice on Hopper)");
}

TEST_CASE("compute twins: a PyTorch training step is the training workload's step of its model on its GPU") {
  const auto models = snsim::models::testing::load();
  TraceRecord r;
  r.id = "compute/train_step/gpt-h1024-l2/0/0/b1_s1024";
  r.family = Family::compute;
  r.test = "train_step";
  r.variant = "gpt-h1024-l2";
  r.ranks = {0};
  r.median = r.p01 = r.p99 = r.min = r.max = 5e-3;
  r.samples = {5e-3};
  r.extra = {{"arch", "gpt"},
             {"layers", 2},
             {"hidden", 1024},
             {"heads", 8},
             {"kv_heads", 8},
             {"head_dim", 128},
             {"ffn", 4096},
             {"vocab", 50304},
             {"micro_batch", 1},
             {"seq", 1024},
             {"method", "events_between_steps"},
             {"warmup_steps", 3}};
  const auto made = make_twin(trace_of_records({r}), r, 1, models);
  REQUIRE(std::holds_alternative<Twin>(made));
  const Twin& twin = std::get<Twin>(made);
  int gemms = 0, adamw = 0;
  for (const auto& op : twin.sample[0])
    if (const auto* c = std::get_if<workloads::ComputeOp>(&op.what)) {
      gemms += (c->gemm() != nullptr);
      adamw += c->memory.kernel == models::MemoryKernel::adamw;
    }
  CHECK(gemms == 2 * (2 * 4 + 1));  // per layer QKV, projection, MLP up and down, and the logits; forward and backward
  CHECK(adamw == 1);
  CHECK(twin.warmup >= 3);
  r.extra["arch"] = "bert";
  const auto bert = make_twin(trace_of_records({r}), r, 1, models);
  REQUIRE(std::holds_alternative<std::string>(bert));
  CHECK(std::get<std::string>(bert) == "compute/train_step: architecture 'bert' is not modelled");
}
