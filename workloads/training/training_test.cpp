// Training steps end to end: each TEST_CASE runs at most one simulation in this process (SimGrid 3.32: one per
// process); the determinism test runs its simulations in forked children (sim/isolated.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "scenario/test_support.hpp"
#include "sim/isolated.hpp"
#include "workloads/training/training.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::training;
using snsim::workloads::testing::load;
using snsim::workloads::testing::metric;
using snsim::workloads::testing::table;

namespace {

/// The training workload of a scenario's text, built again to decode its records' tags.
std::unique_ptr<Training> decoder(const std::string& yaml) {
  auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  const auto scenario = Scenario::load(ConfigDocument::load_string(yaml, "t.yaml"));
  return make_training(doc->root().child("workloads").elements().front(), scenario.fabric());
}

/// Two pipeline stages on two GPUs, GPipe, 4 micro-batches; GPU 1 three times slower.
std::string pipeline_scenario(const std::string& schedule) {
  return "topology: {type: hgx, gpus: 2}\n"
         "models: {slow: [{gpu: 1, compute: 3, hbm: 3}]}\n"
         "workloads:\n"
         "  - type: training\n"
         "    schedule: " +
         schedule +
         "\n"
         "    steps: 1\n"
         "    model: {layers: 4, hidden: 2048, heads: 16, sequence: 2048, micro_batches: 4}\n"
         "    parallel: {pp: 2, pipeline: gpipe}\n";
}

/// When rank `rank` starts the forward of micro-batch `mb` (its first op) and ends it (its last op).
std::pair<double, double> forward_span(const Report& r, const Training& t, int rank, int mb) {
  double first = 1e300, last = 0;
  for (const auto& o : r.ops)
    if (o.rank == rank && o.tag >= 0 && o.kind == "compute") {
      const OpInfo i = t.info(o.tag);
      if (i.pass == OpInfo::forward && i.micro_batch == mb) {
        first = std::min(first, o.start.count());
        last = std::max(last, o.end.count());
      }
    }
  REQUIRE(last > 0);
  return {first, last};
}

/// Compute ops of `ops` (into streams and repeats): those that open their op list, and the others, by `pipelined`.
struct Kernels {
  int opening_launched = 0, opening_queued = 0, later_launched = 0, later_queued = 0;
};
void count_kernels(const std::vector<Op>& ops, Kernels& k) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (const auto* c = std::get_if<ComputeOp>(&ops[i].what))
      ++(i == 0 ? (c->pipelined ? k.opening_queued : k.opening_launched)
                : (c->pipelined ? k.later_queued : k.later_launched));
    if (const auto* s = std::get_if<StreamsOp>(&ops[i].what))
      for (const auto& stream : s->streams) count_kernels(stream, k);
    if (const auto* r = std::get_if<RepeatOp>(&ops[i].what)) count_kernels(r->body, k);
  }
}

}  // namespace

TEST_CASE("training: kernels queued behind work of their stream are pipelined, each step's first pays the launch") {
  for (const char* schedule : {"bsp", "pgas"}) {
    CAPTURE(schedule);
    const std::string yaml = std::string("topology: {type: hgx, gpus: 2}\n") +
                             "workloads:\n"
                             "  - type: training\n"
                             "    schedule: " +
                             schedule +
                             "\n"
                             "    steps: 3\n"
                             "    model: {layers: 2, hidden: 1024, heads: 8, sequence: 1024}\n"
                             "    parallel: {dp: 2}\n";
    const auto t = decoder(yaml);
    std::vector<Program> programs(2);
    t->emit(programs, 0, {});
    for (const auto& program : programs) {
      Kernels k;
      count_kernels(program.ops, k);
      // Each step's main stream opens with its first kernel (launched by a host that synchronised at the step's
      // end); the gradient stream opens with an event wait; everything else waits in its stream's queue.
      CHECK(k.opening_launched == 3);
      CHECK(k.opening_queued == 0);
      CHECK(k.later_launched == 0);
      CHECK(k.later_queued > 3 * 2 * 4);  // at least a handful of kernels per layer, pass and step
    }
  }
}

TEST_CASE("training: a BSP step on 4 GPUs with one GPU slowed takes at least the slow GPU's compute") {
  const std::string yaml =
      "topology: {type: hgx, gpus: 4}\n"
      "models: {slow: [{gpu: 2, compute: 1.3, hbm: 1.3}]}\n"
      "workloads:\n"
      "  - type: training\n"
      "    steps: 2\n"
      "    model: {layers: 4, hidden: 2048, heads: 16, sequence: 2048, micro_batches: 2}\n"
      "    parallel: {tp: 2, dp: 2}\n";
  const auto s = load(yaml);
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const auto t = decoder(yaml);
  // Per step: the slow GPU's kernel time, and the step's end on every rank.
  std::map<int, double> slow_compute, step_end;
  std::map<std::pair<int, int>, double> collective_time;  // (rank, step)
  for (const auto& o : r.ops) {
    if (o.tag < 0) continue;
    const int step = t->info(o.tag).step;
    step_end[step] = std::max(step_end[step], o.end.count());
    if (o.rank == 2 && o.kind == "compute") slow_compute[step] += (o.end - o.start).count();
    if (o.kind == "collective") collective_time[{o.rank, step}] += (o.end - o.start).count();
  }
  const auto& steps = table(r, "training steps").rows;
  REQUIRE(steps.size() == 2);
  for (int step = 0; step < 2; ++step) {
    CAPTURE(step);
    CHECK(steps[static_cast<std::size_t>(step)][2].get<double>() * 1e-3 >= slow_compute[step]);
    // The fast GPUs wait for the slow one inside their collectives.
    for (int fast : {0, 1, 3}) CHECK(collective_time[{fast, step}] > collective_time[{2, step}]);
  }
  CHECK(metric(r, "mfu_pct") > 0);
  CHECK(metric(r, "mfu_pct") < 100);
}

TEST_CASE("training: under PGAS a stage runs ahead of a slow stage that consumes its activations") {
  const std::string yaml = pipeline_scenario("pgas");
  const Report r = load(yaml).run();
  REQUIRE(r.outcome == "completed");
  const auto t = decoder(yaml);
  // Stage 0's inputs are always ready: its puts do not wait for stage 1, so it starts its last forward before the
  // slow stage 1 has finished its second one.
  CHECK(forward_span(r, *t, 0, 3).first < forward_span(r, *t, 1, 1).second);
}

TEST_CASE("training: under BSP a stage waits for the slow stage's receive before it sends on") {
  const std::string yaml = pipeline_scenario("bsp");
  const Report r = load(yaml).run();
  REQUIRE(r.outcome == "completed");
  const auto t = decoder(yaml);
  // NCCL's send completes only when the slow stage posts its receive, after its previous forward: the contrast
  // to the PGAS case above, same scenario.
  CHECK(forward_span(r, *t, 0, 3).first >= forward_span(r, *t, 1, 1).second);
}

TEST_CASE("training: the same seed gives identical records, another seed other routing") {
  auto run = [](int seed) {
    return run_isolated([seed] {
      const auto s =
          load(fmt::format("seed: {}\n"
                           "topology: {{type: hgx, gpus: 8}}\n"
                           "workloads:\n"
                           "  - type: training\n"
                           "    schedule: pgas\n"
                           "    steps: 2\n"
                           "    model: {{layers: 2, hidden: 1024, heads: 8, sequence: 1024, micro_batches: 2,\n"
                           "            moe: {{experts: 8, top_k: 2, skew: 1.5}}}}\n"
                           "    parallel: {{dp: 8, ep: 4}}\n",
                           seed));
      return s.run().to_json().dump();
    });
  };
  const std::string a = run(3);
  CHECK(a == run(3));
  CHECK(a != run(4));
  CHECK(nlohmann::json::parse(a)["outcome"] == "completed");
}

namespace {
/// The GEMMs of `ops` (into streams and repeats), and the other compute ops' memory kinds ("layernorm_backward").
void collect_gemms(const std::vector<Op>& ops, std::vector<models::Gemm>& gemms, std::multiset<std::string>& others) {
  for (const auto& op : ops) {
    if (const auto* c = std::get_if<ComputeOp>(&op.what)) {
      if (c->gemm()) {
        CHECK(c->flops.count() == doctest::Approx(c->gemm()->flops().count()));
        gemms.push_back(*c->gemm());
      } else {
        others.insert(std::string(models::to_string(c->memory.kernel)) +
                      (c->memory.backward && models::has_backward(c->memory.kernel) ? "_backward" : ""));
      }
    }
    if (const auto* s = std::get_if<StreamsOp>(&op.what))
      for (const auto& stream : s->streams) collect_gemms(stream, gemms, others);
    if (const auto* r = std::get_if<RepeatOp>(&op.what)) collect_gemms(r->body, gemms, others);
  }
}
}  // namespace

TEST_CASE(
    "training: linear layers run as GEMMs by shape on Hopper, memory-bound kernels by kind, forward and backward") {
  // One GPT layer (h 1024, 8 heads, MLP 4h), TP 2, 2,048 tokens, vocabulary 50,257: per micro-batch QKV, projection,
  // MLP up and down and the logits forward, and the same five shapes backward.
  const auto gemms_of = [](const std::string& gpu) {
    const std::string yaml = "topology: {type: " + std::string(gpu == "gb200" ? "nvl72" : "hgx") + ", gpu: " + gpu +
                             ", gpus: 2}\n"
                             "workloads:\n"
                             "  - type: training\n"
                             "    steps: 1\n"
                             "    model: {layers: 1, hidden: 1024, heads: 8, sequence: 2048, vocabulary: 50257}\n"
                             "    parallel: {tp: 2}\n";
    std::vector<Program> programs(2);
    decoder(yaml)->emit(programs, 0, {});
    std::vector<models::Gemm> gemms;
    std::multiset<std::string> others;
    collect_gemms(programs[0].ops, gemms, others);
    return std::pair{gemms, others};
  };
  const auto shaped = gemms_of("h200");
  const std::vector<models::Gemm>& gemms = shaped.first;
  const std::multiset<std::string>& others = shaped.second;
  REQUIRE(gemms.size() == 10);
  const auto count = [&](std::int64_t m, std::int64_t n, std::int64_t k, bool backward) {
    return std::ranges::count_if(gemms, [&](const models::Gemm& g) {
      return g.m == m && g.n == n && g.k == k && g.backward == backward && g.layout == models::GemmLayout::tn;
    });
  };
  for (const bool backward : {false, true}) {
    CAPTURE(backward);
    CHECK(count(3 * 1024 / 2, 2048, 1024, backward) == 1);  // QKV: 3h / tp output features of 2,048 tokens
    CHECK(count(1024, 2048, 1024 / 2, backward) == 1);      // projection
    CHECK(count(4096 / 2, 2048, 1024, backward) == 1);      // MLP up
    CHECK(count(1024, 2048, 4096 / 2, backward) == 1);      // MLP down
    CHECK(count(50432 / 2, 2048, 1024, backward) == 1);     // logits: 50,257 padded to 128 x tp = 256's multiple
  }
  // The memory-bound kernels by kind, forward and backward: the layer's two norms and the final one (a kernel
  // each), the activation, the loss, the embedding's gradient and AdamW once; residual adds and the QKV split
  // stream; attention is a roofline kernel (a stream here).
  for (const char* kind : {"layernorm", "layernorm_backward"}) {
    CAPTURE(kind);
    CHECK(others.count(kind) == 3);
  }
  for (const char* kind :
       {"gelu", "gelu_backward", "cross_entropy", "cross_entropy_backward", "embedding_grad", "adamw"}) {
    CAPTURE(kind);
    CHECK(others.count(kind) == 1);
  }
  CHECK(others.count("stream") > 0);
  // Blackwell presets publish no boost clock and run other tiles: every kernel on the roofline.
  CHECK(gemms_of("gb200").first.empty());
}

TEST_CASE("training: autocast casts each linear layer's fp32 weight before its forward and its gradient after") {
  // One GPT layer on one GPU: five linear layers (QKV, projection, MLP up and down, logits), each forward behind a
  // 6 B-per-weight cast (fp32 read, bf16 written) and each backward before a widening one (bf16 read, fp32 written).
  const auto ops_of = [](bool autocast) {
    const std::string yaml = std::string(
                                 "topology: {type: pcie, gpu: h200, gpus: 1}\nworkloads:\n  - type: training\n"
                                 "    steps: 1\n"
                                 "    model: {layers: 1, hidden: 1024, heads: 8, sequence: 1024, vocabulary: "
                                 "50304, autocast: ") +
                             (autocast ? "true" : "false") + "}\n";
    std::vector<Program> programs(1);
    decoder(yaml)->emit(programs, 0, {});
    return programs[0].ops;
  };
  const auto with = ops_of(true), without = ops_of(false);
  // Ten weight casts, and the fp32 residual stream's: the norms' outputs cast for QKV, MLP-up and the logits, their
  // gradients cast back, the residual gradient cast for the projection's and MLP-down's backward, the logits widened
  // for the loss and their gradient narrowed.
  CHECK(with.size() == without.size() + 10 + 3 + 3 + 2 + 2);
  double cast = 0, widen = 0, weights = 0;
  for (std::size_t i = 0; i < with.size(); ++i) {
    const auto* c = std::get_if<ComputeOp>(&with[i].what);
    if (!c || !c->gemm()) continue;
    const double elements = static_cast<double>(c->gemm()->m) * static_cast<double>(c->gemm()->k);
    weights += elements;
    if (!c->gemm()->backward) {  // the cast just before it
      const auto& before = std::get<ComputeOp>(with[i - 1].what);
      CHECK(before.memory.kernel == models::MemoryKernel::stream);
      CHECK(static_cast<double>(before.bytes.count()) == doctest::Approx(6 * elements));
      cast += static_cast<double>(before.bytes.count());
    } else {  // the widening cast just after it
      const auto& after = std::get<ComputeOp>(with[i + 1].what);
      CHECK(after.memory.kernel == models::MemoryKernel::widen);
      widen += static_cast<double>(after.bytes.count());
    }
  }
  CHECK(cast == doctest::Approx(3 * weights));  // every weight counted in its forward and its backward GEMMs: 6 B / 2
  CHECK(widen == doctest::Approx(cast));
}

TEST_CASE("training: the step's compute time by kernel adds up to its compute time, GEMM by GEMM") {
  // One GPT layer on one GPU, one step, no overlap: every kernel is in one row of the table, so the rows add up to
  // the step's compute time; the five linear layers (QKV, projection, MLP up and down, logits) are one GEMM each in
  // the forward and one (both gradients) in the backward.
  const auto s = Scenario::load(ConfigDocument::load_string(
      "topology: {type: pcie, gpu: h200, gpus: 1}\nworkloads:\n  - type: training\n    steps: 1\n"
      "    model: {layers: 1, hidden: 1024, heads: 8, sequence: 1024, vocabulary: 50304, linear_bias: true}\n",
      "t.yaml"));
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  const Table& kernels = table(r, "training: compute time per GPU and step by kernel");
  REQUIRE(kernels.columns ==
          std::vector<std::string>{"kernel", "pass", "launches", "time_ms", "pct_of_compute", "tb_per_s"});
  double total_ms = 0, pct = 0;
  std::map<std::pair<std::string, std::string>, double> launches;
  for (const auto& row : kernels.rows) {
    total_ms += row[3].get<double>();
    pct += row[4].get<double>();
    launches[{row[0].get<std::string>(), row[1].get<std::string>()}] = row[2].get<double>();
  }
  CHECK(total_ms == doctest::Approx(metric(r, "compute_ms_per_gpu")).epsilon(1e-9));
  CHECK(pct == doctest::Approx(100));
  CHECK(launches[{"gemm", "forward"}] == 5);
  CHECK(launches[{"gemm", "backward"}] == 5);
  CHECK(launches[{"attention", "forward"}] == 1);
  CHECK(launches[{"attention", "backward"}] == 1);
  CHECK(launches[{"adamw", "step"}] == 1);
  // Two norms a layer and the final one; a bias gradient after each block's linear layer's backward (the logits have
  // none); one concatenation of dq, dk and dv.
  CHECK(launches[{"layernorm", "forward"}] == 3);
  CHECK(launches[{"layernorm", "backward"}] == 3);
  CHECK(launches[{"bias_grad", "backward"}] == 4);
  CHECK(launches[{"qkv_split", "backward"}] == 1);
  for (const auto& entry : launches) CHECK(entry.first.first != "other");  // every kernel the workload emits is named
}

TEST_CASE("training: the dense GPT example on 8 x H200 completes at a plausible MFU") {
  const auto s = Scenario::load(
      ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/training_dense_hgx.yaml"));
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  CHECK(metric(r, "mfu_pct") > 20);
  CHECK(metric(r, "mfu_pct") < 80);
}

TEST_CASE("training: the MoE example on NVL72 completes") {
  const auto s = Scenario::load(
      ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/training_moe_nvl72.yaml"));
  const Report r = s.run();
  REQUIRE(r.outcome == "completed");
  CHECK(metric(r, "mfu_pct") > 0);
  CHECK(metric(r, "bytes_put") > 0);
  CHECK(metric(r, "bytes_get") > 0);
}

namespace {
Report example_report(const std::string& name) {
  return Scenario::load(ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/" + name)).run();
}
}  // namespace

TEST_CASE("training: the Llama 3.1 8B example fits in an H100 as counted by hand") {
  const Report r = example_report("training_llama3_8b_hgx.yaml");
  REQUIRE(r.outcome == "completed");
  CHECK(metric(r, "fits") == 1);
  // Per GPU (tp 2): 32 layers of 218.1M and 2 x 128256 x 4096 embeddings, halved: 4.015e9 parameters, 2 B each as
  // weights and as gradients, 12 B of Adam state over dp 4. Activations of one micro-batch (pp 1), bf16 and halved
  // by TP and SP: per layer 8192 tokens x (3 x 4096 norms' and QKV inputs + 6144 Q K V + 4096 O + 4096 MLP input + 3
  // x 14336 SwiGLU) + the 4-byte log-sum-exp of 16 heads = 570.9 MB, x 32; the logits (2 + 4 B) x 8192 x 128256 / 2
  // and the final norm's input: 3.19 GB.
  const double params = (32 * 218.1e6 + 2 * 128256.0 * 4096) / 2, GiB = 1ull << 30;
  CHECK(metric(r, "weights_gib") * GiB == doctest::Approx(2 * params).epsilon(0.001));
  CHECK(metric(r, "optimizer_gib") * GiB == doctest::Approx(12 * params / 4).epsilon(0.001));
  CHECK(metric(r, "activations_gib") * GiB == doctest::Approx(32 * 570.9e6 + 3.186e9).epsilon(0.001));
}

TEST_CASE("training: the Qwen3-30B-A3B example completes and fits in an H200") {
  const Report r = example_report("training_qwen3_30b_hgx.yaml");
  REQUIRE(r.outcome == "completed");
  CHECK(metric(r, "fits") == 1);
  CHECK(metric(r, "mfu_pct") > 0);
  // Expert parallelism 8 over dp 8 leaves one replica of each expert: its Adam state is not sharded, 12 B for each
  // of the 16 local experts' 48 x 16 x 4.72M parameters.
  CHECK(metric(r, "optimizer_gib") * (1ull << 30) >= 12 * 48 * 16 * 4.72e6);
}

TEST_CASE("training: TP communication overlap hides SP's collectives behind the GEMMs, never beating the compute") {
  // Llama 3.1 8B's shapes, 4 layers, on TP 8 with sequence parallelism (H100 parameters): one step each way, each
  // in a child process (one simulation per process).
  const auto run = [](bool overlap) {
    return run_isolated([overlap] {
      const Report r = load(std::string("topology: {type: hgx, gpu: h100, gpus: 8}\nmodels: {params: h100}\n"
                                        "workloads:\n  - type: training\n    steps: 1\n"
                                        "    model: {preset: llama3.1-8b, layers: 4, global_batch: 2}\n"
                                        "    parallel: {tp: 8, dp: 1, sequence_parallel: true, tp_overlap: ") +
                            (overlap ? "true" : "false") + "}\n")
                           .run();
      const Table& per_gpu = table(r, "training: time per GPU");
      const auto column = std::ranges::find(per_gpu.columns, "compute_ms") - per_gpu.columns.begin();
      return fmt::format("{} {} {}", metric(r, "step_mean_ms"), metric(r, "comm_only_ms_per_gpu"),
                         per_gpu.rows.front()[static_cast<std::size_t>(column)].get<double>());
    });
  };
  double step_plain = 0, comm_plain = 0, compute_plain = 0, step_overlap = 0, comm_overlap = 0, compute_overlap = 0;
  std::istringstream(run(false)) >> step_plain >> comm_plain >> compute_plain;
  std::istringstream(run(true)) >> step_overlap >> comm_overlap >> compute_overlap;
  CAPTURE(step_plain);
  CAPTURE(step_overlap);
  // The collectives no longer stand alone on the critical path...
  CHECK(comm_plain > 0.1 * step_plain);
  CHECK(comm_overlap < 0.05 * comm_plain);
  // ... but the step cannot be shorter than the unchunked compute, and chunked GEMMs beside the exchanges' kernels
  // run slower than whole ones.
  CHECK(step_overlap >= compute_plain);
  CHECK(compute_overlap > compute_plain);
  CHECK(step_overlap < step_plain);
}
