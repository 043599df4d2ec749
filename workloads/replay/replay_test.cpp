// Trace replay: the captured H200 steps against their unprofiled measurements, the programs a trace becomes, and
// the errors bad traces give.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/models.hpp"
#include "models/params.hpp"
#include "scenario/scenario.hpp"
#include "scenario/test_support.hpp"
#include "sim/files.hpp"
#include "sim/isolated.hpp"
#include "studies/test_support.hpp"
#include "tools/test_support.hpp"
#include "workloads/replay/kernels.hpp"
#include "workloads/replay/replay.hpp"

using namespace snsim;
using namespace snsim::workloads;

namespace {

const std::string TRACES = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200-replay/";
const std::string H100_TRACES = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h100-replay/";
const std::vector<std::string> CASES{"gpt-h2048-l2-b2-s2048", "llama-h2048-l2-b2-s2048", "gpt-h4096-l2-b1-s4096",
                                     "gpt-h2048-l2-b2-s2048-ddp"};

/// The replay's step time (its "replay" table) of `paths` on `topology`, run in a child process; `extra` is added to
/// the workload's map, `models` is the scenario's `models:` (and failures) as YAML text.
double replayed_step_ms(const std::vector<std::string>& paths, const std::string& topology,
                        const std::string& extra = "", const std::string& models = "models: {params: h200}") {
  const std::string text = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", paths}};
    const std::string yaml = fmt::format("topology: {}\n{}\nworkloads: [{}{}]\n", topology, models,
                                         workload.dump().substr(0, workload.dump().size() - 1), extra + "}");
    const Report r = workloads::testing::load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const Table* t = find_table(r.tables, "replay");
    REQUIRE(t);
    return t->rows.front()[1].dump();
  });
  return std::stod(text);
}

/// The report of replaying `paths` on a two-GPU HGX with the default models (call it inside run_isolated).
Report replay_on_two_gpus(const std::vector<std::string>& paths) {
  nlohmann::json workload{{"type", "trace"}, {"paths", paths}};
  return workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [" + workload.dump() + "]\n").run();
}

/// The median unprofiled step time of `variant` by CUDA events between back-to-back steps (`traces`' steps.jsonl).
double measured_step_ms(const std::string& variant, const std::string& traces = TRACES) {
  std::istringstream lines(read_file(traces + "steps.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("variant", "") == variant && j.value("method", "") == "events_between_steps")
      return j["median"].get<double>() * 1e3;
  }
  FAIL("no record of " << variant);
  return 0;
}

}  // namespace

TEST_CASE("replay: each captured H200 training step replays within 5 % of its unprofiled step on its own platform") {
  for (const auto& variant : CASES) {
    const double replayed = replayed_step_ms({TRACES + variant + ".kineto.json.gz"}, "{type: hgx, gpu: h200, gpus: 2}");
    const double measured = measured_step_ms(variant);
    INFO(variant << ": replayed " << replayed << " ms, measured " << measured << " ms");
    CHECK(workloads::testing::relative_error(replayed, measured) < 0.05);
  }
}

TEST_CASE("replay: each captured H100 training step replays within 5 % of its unprofiled step on its own platform") {
  for (const auto& variant : CASES) {
    const double replayed = replayed_step_ms({H100_TRACES + variant + ".kineto.json.gz"},
                                             "{type: hgx, gpu: h100, gpus: 2}", "", "models: {params: h100}");
    const double measured = measured_step_ms(variant, H100_TRACES);
    INFO(variant << ": replayed " << replayed << " ms, measured " << measured << " ms");
    CHECK(workloads::testing::relative_error(replayed, measured) < 0.05);
  }
}

TEST_CASE("replay: a step captured on one GPU replays within 6 % of the same step measured on the other") {
  // The H200 captures on an H100 and the H100 captures on an H200, each against the step measured there: the
  // kernels re-timed by the compute model (docs/replay.md#kernel-cost). Measured: 0.1-5.3 %; the peak and HBM
  // ratios of the datasheets gave 5.8-12.0 %.
  for (const auto& variant : CASES) {
    const double on_h100 = replayed_step_ms({TRACES + variant + ".kineto.json.gz"}, "{type: hgx, gpu: h100, gpus: 2}",
                                            "", "models: {params: h100}");
    const double on_h200 =
        replayed_step_ms({H100_TRACES + variant + ".kineto.json.gz"}, "{type: hgx, gpu: h200, gpus: 2}");
    INFO(variant << ": H200 capture on an H100 " << on_h100 << " ms, measured there "
                 << measured_step_ms(variant, H100_TRACES) << " ms; H100 capture on an H200 " << on_h200
                 << " ms, measured there " << measured_step_ms(variant));
    CHECK(workloads::testing::relative_error(on_h100, measured_step_ms(variant, H100_TRACES)) < 0.06);
    CHECK(workloads::testing::relative_error(on_h200, measured_step_ms(variant)) < 0.06);
  }
}

// ---- synthetic traces: what a replay keeps and what it changes -----------------------------------------------------

namespace {

using nlohmann::json;

/// A host thread's cudaLaunchKernel at ts + 1 (2 us) and the kernel it launches on `stream` at ts + 5, joined by
/// `correlation`; `extra` adds to the kernel's args.
void add_launched_kernel(json& events, int correlation, double ts, const std::string& kernel, int stream,
                         double kernel_us, const json& extra = json::object()) {
  events.push_back({{"ph", "X"},
                    {"cat", "cuda_runtime"},
                    {"name", "cudaLaunchKernel"},
                    {"tid", 1},
                    {"ts", ts + 1},
                    {"dur", 2},
                    {"args", {{"correlation", correlation}}}});
  json args{{"correlation", correlation}, {"stream", stream}};
  args.update(extra);
  events.push_back({{"ph", "X"},
                    {"cat", "kernel"},
                    {"name", kernel},
                    {"tid", stream},
                    {"ts", ts + 5},
                    {"dur", kernel_us},
                    {"args", args}});
}

/// A Kineto trace of one profiler step: `kernels` kernels named `name` of `kernel_us` each on stream 7, launched
/// every `launch_every_us` from ts 0 (each running as soon as both its launch and the previous kernel allow).
json kineto_trace(int kernels, double kernel_us, double launch_every_us, const std::string& name,
                  std::optional<std::pair<int, int>> rank_of_world = std::nullopt) {
  json events = json::array();
  double gpu_free = 0;
  for (int k = 0; k < kernels; ++k) {
    const double launch = k * launch_every_us;
    const double start = std::max(gpu_free, launch + 5);
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", launch},
                      {"dur", 3},
                      {"args", {{"correlation", k + 1}}}});
    events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", name},
                      {"pid", 0},
                      {"tid", 7},
                      {"ts", start},
                      {"dur", kernel_us},
                      {"args", {{"correlation", k + 1}, {"stream", 7}}}});
    gpu_free = start + kernel_us;
  }
  events.push_back({{"ph", "X"},
                    {"cat", "user_annotation"},
                    {"name", "ProfilerStep#1"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", 0},
                    {"dur", kernels * launch_every_us}});
  json trace{{"traceEvents", events}, {"deviceProperties", json::array({{{"name", "NVIDIA H200"}}})}};
  if (rank_of_world) trace["distributedInfo"] = {{"rank", rank_of_world->first}, {"world_size", rank_of_world->second}};
  return trace;
}

/// Appends an all_reduce of `elements` floats over `group` at host time `ts` (record_param_comms, no NCCL kernel).
void add_all_reduce(json& trace, double ts, std::uint64_t elements, const std::string& group) {
  trace["traceEvents"].push_back({{"ph", "X"},
                                  {"cat", "cpu_op"},
                                  {"name", "record_param_comms"},
                                  {"pid", 1},
                                  {"tid", 1},
                                  {"ts", ts},
                                  {"dur", 2},
                                  {"args",
                                   {{"Collective name", "allreduce"},
                                    {"dtype", "Float"},
                                    {"In msg nelems", elements},
                                    {"Out msg nelems", elements},
                                    {"Process Group Ranks", group}}}});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The message of the InputError `read` throws ("" when it throws none).
template <class Read>
std::string thrown_by(Read read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// A GPU preset as a fabric holds it (with its SMs and clocks).
GpuSpec gpu_of(const std::string& model) {
  const auto s = workloads::testing::load(
      fmt::format("topology: {{type: hgx, gpu: {}, gpus: 2}}\nworkloads: [{{type: program, ops: [{{compute: {{time: "
                  "1us}}}}]}}]\n",
                  model));
  return *s.fabric().device(s.fabric().gpus().front()).gpu;
}

/// The compute model of a parameter preset.
std::shared_ptr<const models::ComputeModel> preset_compute(const std::string& preset) {
  auto doc = ConfigDocument::load_string(fmt::format("models: {{params: {}}}\n", preset), "t.yaml");
  models::apply_params(*doc);
  return models::Models::load(doc->root().section("models")).compute;
}

std::string write(const snsim::testing::TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = (dir.path() / name).string();
  write_file(path, text);
  return path;
}

}  // namespace

TEST_CASE(
    "replay: a host-bound step stays host-bound on a faster GPU, a GPU-bound one speeds up by the achieved peak "
    "ratio") {
  snsim::testing::TempDir dir;
  // 20 GEMMs of 10 us launched every 50 us: the GPU idles between them. 20 of 100 us launched every 5 us: the queue
  // is never empty.
  const auto host_bound = write(dir, "host.json", kineto_trace(20, 10, 50, "sm90_xmma_gemm_bf16").dump());
  const auto gpu_bound = write(dir, "gpu.json", kineto_trace(20, 100, 5, "sm90_xmma_gemm_bf16").dump());
  const std::string h200 = "{type: hgx, gpu: h200, gpus: 2}", gb200 = "{type: nvl72, gpus: 2}";
  const double host_h200 = replayed_step_ms({host_bound}, h200), host_gb200 = replayed_step_ms({host_bound}, gb200);
  const double gpu_h200 = replayed_step_ms({gpu_bound}, h200), gpu_gb200 = replayed_step_ms({gpu_bound}, gb200);
  // On its own GPU the replay is the recorded timeline, timed from the first kernel's start (5 us after its launch):
  // the last kernel starts 5 us after its launch at 950 us, or the GPU runs the 20 kernels back to back.
  CHECK(host_h200 == doctest::Approx(0.960).epsilon(1e-9));
  CHECK(gpu_h200 == doctest::Approx(2.000).epsilon(1e-9));
  // GB200's dense BF16 peak is 2.5 PFLOP/s against H200's 989 TFLOP/s (topologies/gpus.cpp): the GEMMs take 0.3956
  // of their time. Only the last kernel of the host-bound step is on its critical path.
  // Each at its preset's achieved share of the peak (flop_efficiency): GB200 is a Blackwell, whose GEMM tiles the
  // model does not know, so its kernels are re-timed by the roofline's FLOP rate.
  const double ratio =
      989.0 * preset_compute("h200")->flop_efficiency / (2500.0 * preset_compute("gb200")->flop_efficiency);
  CHECK(host_gb200 == doctest::Approx(0.950 + 0.010 * ratio).epsilon(1e-9));
  CHECK(gpu_gb200 == doctest::Approx(2.0 * ratio).epsilon(1e-9));
}

TEST_CASE("replay: a recorded kernel is re-timed on another GPU by the compute model, each GPU with its own preset") {
  using namespace snsim::workloads::replay;
  const GpuSpec h200 = gpu_of("h200"), h100 = gpu_of("h100");
  const auto on_h200 = preset_compute("h200"), on_h100 = preset_compute("h100");
  const KernelRetiming to_h100(h200, h100), same(h200, h200);
  const Seconds us{1e-6};
  // On the GPU that ran it, a kernel keeps its time.
  CHECK(same.time(KernelClass::gemm, "nvjet_sm90_tst_256x128", 123 * us) == 123 * us);
  CHECK(same.time(KernelClass::memory, "elementwise", 7 * us) == 7 * us);
  // A GEMM that took the 8192^3 GEMM's time on the H200 takes the 8192^3 GEMM's time on the H100.
  const models::Gemm big{8192, 8192, 8192};
  CHECK(to_h100.time(KernelClass::gemm, "nvjet", on_h200->gemm_time(h200, big, Dtype::bf16)).count() ==
        doctest::Approx(on_h100->gemm_time(h100, big, Dtype::bf16).count()).epsilon(0.005));
  // Attention likewise, forward and backward told apart by the name.
  const models::Attention fwd{.batch = 2, .heads = 16, .seq = 4096, .head_dim = 128, .causal = true};
  auto bwd = fwd;
  bwd.backward = true;
  CHECK(to_h100.time(KernelClass::attention, "sdpa_flash_fprop", on_h200->attention_time(h200, fwd)).count() ==
        doctest::Approx(on_h100->attention_time(h100, fwd).count()).epsilon(0.005));
  CHECK(to_h100.time(KernelClass::attention, "sdpa_flash_bprop", on_h200->attention_time(h200, bwd)).count() ==
        doctest::Approx(on_h100->attention_time(h100, bwd).count()).epsilon(0.005));
  // A memory-bound kernel moves the bytes its time moved on the source, at the target's share of its HBM bandwidth
  // for the kernel's kind (after the ramp): PyTorch's fused AdamW reaches another share than a stream.
  for (const auto& [name, kind] : std::vector<std::pair<std::string, models::MemoryKind>>{
           {"void at::native::vectorized_elementwise_kernel<4>", {}},
           {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::", {models::MemoryKernel::adamw}},
           {"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel",
            {models::MemoryKernel::layernorm, true}},
           {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)",
            {models::MemoryKernel::widen}},
           {"void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>",
            {models::MemoryKernel::mixed_add}},
           {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor",
            {models::MemoryKernel::strided}}}) {
    CHECK(memory_kind(name).kernel == kind.kernel);
    CHECK(memory_kind(name).backward == kind.backward);
    const Bytes bytes{256 << 20};
    CHECK(to_h100.time(KernelClass::memory, name, on_h200->memory_time(h200, bytes, 1, kind)).count() ==
          doctest::Approx(on_h100->memory_time(h100, bytes, 1, kind).count()).epsilon(1e-6));
  }
  // A kernel shorter than its ramp is all fixed cost: it scales as the two ramps.
  CHECK(to_h100.time(KernelClass::memory, "fill", on_h200->memory_ramp * 0.5).count() ==
        doctest::Approx((on_h100->memory_ramp * 0.5).count()));
}

TEST_CASE("replay: a kernel of no known class is scaled as memory-bound") {
  using namespace snsim::workloads::replay;
  CHECK(classify("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTN") == KernelClass::gemm);
  CHECK(classify("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>") == KernelClass::attention);
  CHECK(classify("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>") ==
        KernelClass::memory);
  CHECK(classify("my_custom_fused_thing") == KernelClass::unknown);
  // cuDNN's helpers beside its attention kernels stream through HBM, "fmha" in their names or not.
  CHECK(classify("void cudnn::fusion::fmha_reduce_head<true>(void const*, void*, unsigned int)") ==
        KernelClass::memory);
  const GpuSpec h200 = gpu_of("h200"), h100 = gpu_of("h100");
  const KernelRetiming retiming(h200, h100);
  const Seconds us{1e-6};
  CHECK(retiming.time(KernelClass::unknown, "my_custom_fused_thing", 100 * us) ==
        retiming.time(KernelClass::memory, "void at::native::vectorized_elementwise_kernel<4>", 100 * us));

  snsim::testing::TempDir dir;
  const auto path = write(dir, "unknown.json", kineto_trace(4, 10, 5, "my_custom_fused_thing").dump());
  const std::string notes = run_isolated([&] {
    const Report r = replay_on_two_gpus({path});
    const Table* t = find_table(r.tables, "replay notes");
    REQUIRE(t);
    return t->rows.back()[0].get<std::string>();
  });
  CHECK(notes ==
        "4 kernels of 1 names are of no known class and are scaled as memory-bound, e.g. "
        "my_custom_fused_thing");
}

TEST_CASE("replay: more ranks replicate the captured job and widen its data-parallel collectives") {
  using namespace snsim::workloads::replay;
  const auto traces = read_traces({TRACES + "gpt-h2048-l2-b2-s2048-ddp.kineto.json.gz"});
  const auto scenario =
      workloads::testing::load("topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [barrier: {}]}]\n");
  const auto programs = build_programs(traces, scenario.fabric(), {.ranks = 4}, 0, "t");
  REQUIRE(programs.size() == 8);
  // The DDP step issues, per profiler step, 1 broadcast of the buffers (1 MiB) and 8 bucket all-reduces
  // (the trace's record_param_comms); with 4 ranks each becomes a collective over ranks 0-3.
  for (std::size_t r = 0; r < 8; ++r) {
    int broadcasts = 0, all_reduces = 0;
    Bytes reduced{0};
    for (const auto& op : programs[r].ops)
      for (const auto& lane : std::get<StreamsOp>(op.what).streams)
        for (const auto& inner : lane)
          if (const auto* c = std::get_if<CollectiveOp>(&inner.what)) {
            CHECK(*c->group == std::vector<int>{0, 1, 2, 3});
            if (c->kind == models::CollectiveKind::broadcast) ++broadcasts;
            if (c->kind == models::CollectiveKind::all_reduce) {
              ++all_reduces;
              reduced = reduced + c->bytes;
            }
          }
    CAPTURE(r);
    CHECK(broadcasts == (r < 4 ? 3 : 0));
    CHECK(all_reduces == (r < 4 ? 24 : 0));
    // Every gradient once per step: 310,960,128 parameters in fp32 (steps.jsonl), in 3 steps.
    if (r < 4) CHECK(reduced == Bytes{3 * 310'960'128ull * 4});
  }
  CHECK(thrown_by([&] { build_programs(traces, scenario.fabric(), {.ranks = 9}, 0, "t"); }) ==
        "t: ranks: 9 ranks to replay and the topology has 8 GPUs");
}

TEST_CASE("replay: bad traces are one error line naming the file and what was expected") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const std::string gz = read_file(TRACES + "gpt-h2048-l2-b2-s2048.kineto.json.gz");
  const auto truncated = write(dir, "truncated.json.gz", gz.substr(0, gz.size() / 2));
  CHECK(contains(thrown_by([&] { read_traces({truncated}); }),
                 truncated + ": truncated or corrupt gzip data (the file ends after"));
  std::string flipped = gz;
  for (std::size_t i = 1000; i < 1100; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  const auto corrupt = write(dir, "corrupt.json.gz", flipped);
  CHECK(contains(thrown_by([&] { read_traces({corrupt}); }), corrupt + ": truncated or corrupt gzip data ("));
  const auto cut = write(dir, "cut.json", kineto_trace(2, 10, 5, "gemm").dump().substr(0, 100));
  CHECK(contains(thrown_by([&] { read_traces({cut}); }), cut + ": not a complete JSON trace (byte 101 of 100)"));
  const auto garbage = write(dir, "garbage.et", std::string("\x05\xff\xff\xff\xff\xff", 6));
  CHECK(thrown_by([&] { read_traces({garbage}); }) ==
        garbage +
            ": expected a PyTorch profiler (Kineto) JSON trace or a Chakra execution trace (a "
            "protobuf stream starting with GlobalMetadata)");

  // Ranks: from the traces' distributedInfo; each once, none missing.
  const auto r0 = write(dir, "r0.json", kineto_trace(2, 10, 5, "gemm", std::pair{0, 4}).dump());
  const auto r2 = write(dir, "r2.json", kineto_trace(2, 10, 5, "gemm", std::pair{2, 4}).dump());
  CHECK(thrown_by([&] {
          read_traces({r0, r2});
        }) == r0 + ": the job has 4 ranks and no trace was given for ranks 1, 3: give one trace per rank");
  CHECK(thrown_by([&] { read_traces({r0, r0}); }) == r0 + ": rank 0 again: " + r0 + " is rank 0 too");

  // Collectives: alike on every member, in order; members must have traces.
  auto a = kineto_trace(2, 10, 5, "gemm", std::pair{0, 2}), b = kineto_trace(2, 10, 5, "gemm", std::pair{1, 2});
  add_all_reduce(a, 1, 1 << 20, "[0, 1]");
  add_all_reduce(b, 1, 1 << 21, "[0, 1]");
  const auto a_path = write(dir, "a.json", a.dump()), b_path = write(dir, "b.json", b.dump());
  CHECK(thrown_by([&] {
          read_traces({a_path, b_path});
        }) == b_path + ": collective #1 on ranks [0, 1] is a all_reduce of 8 MiB in, 8 MiB out, but rank 0's (" +
                  a_path + ") is a all_reduce of 4 MiB in, 4 MiB out: the traces are not of one job");
  auto c = kineto_trace(2, 10, 5, "gemm");
  add_all_reduce(c, 1, 1 << 20, "[0, 1, 2]");
  const auto c_path = write(dir, "c.json", c.dump());
  CHECK(thrown_by([&] { read_traces({c_path}); }) ==
        c_path +
            ": a all_reduce of 4 MiB in, 4 MiB out on ranks [0, 1, 2] names rank 1, but traces "
            "were given for ranks 0-0 only");
}

TEST_CASE("replay: a rank that never joins a collective is a deadlock naming the ranks and the op") {
  snsim::testing::TempDir dir;
  auto a = kineto_trace(2, 10, 5, "gemm", std::pair{0, 2}), b = kineto_trace(2, 10, 5, "gemm", std::pair{1, 2});
  add_all_reduce(a, 1, 1 << 20, "[0, 1]");
  add_all_reduce(b, 1, 1 << 20, "[0, 1]");
  add_all_reduce(a, 6, 1 << 20, "[0, 1]");  // rank 1 never issues this one
  const auto a_path = write(dir, "a.json", a.dump()), b_path = write(dir, "b.json", b.dump());
  const std::string outcome = run_isolated([&] { return replay_on_two_gpus({a_path, b_path}).outcome; });
  CAPTURE(outcome);
  CHECK(outcome.starts_with("deadlock:"));
  CHECK(outcome.find("rank 0") != std::string::npos);
  CHECK(outcome.find("all_reduce 4 MiB") != std::string::npos);
}

TEST_CASE("replay: the Chakra trace of the DDP step has the node types a hand count finds, and replays") {
  using namespace snsim::workloads::replay;
  const std::string file = TRACES + "gpt-h2048-l2-b2-s2048-ddp.chakra.et";
  const auto traces = read_traces({file});
  REQUIRE(traces.size() == 1);
  // Counted by walking the file's protobuf wire format by hand (field 3 of each Node): 1 METADATA_NODE and 3,629
  // COMP_NODEs, all CPU operators, every duration_micros 0 (the converter ran without the Kineto linker).
  std::map<TraceNode::Kind, int> kinds;
  std::map<std::string, int> names;
  for (const auto& n : traces.front().nodes) {
    ++kinds[n.kind];
    ++names[n.name];
    CHECK(n.duration == Seconds{0});
  }
  CHECK(kinds[TraceNode::Kind::host] == 3629);
  CHECK(kinds[TraceNode::Kind::sync] == 1);
  CHECK(kinds.size() == 2);
  CHECK(names["aten::as_strided"] == 312);
  CHECK(names["aten::view"] == 249);
  CHECK(names["torch::autograd::AccumulateGrad"] == 87);
  const std::string hosts = run_isolated([&] {
    const Report r = replay_on_two_gpus({file});
    REQUIRE(r.outcome == "completed");
    return std::to_string(std::ranges::count(r.ops, std::string("host"), &OpRecord::kind));
  });
  CHECK(hosts == "3629");
}

TEST_CASE("replay: cost derived takes GEMM and attention FLOPs and elementwise bytes from a captured step's shapes") {
  using namespace snsim::workloads::replay;
  const auto traces = read_traces({TRACES + "gpt-h2048-l2-b2-s2048.shapes.kineto.json.gz"});
  // Counted from the trace by hand (a script over its events), in the profiled steps: 81 kernels launched by
  // aten::mm / aten::addmm with shapes, 2mkn each, 15,017,353,150,464 FLOPs in all; 12 cuDNN attention kernels
  // (6 forward, 6 backward; q and k [2, 16, 2048, 128], causal): 6 x (4 x 8,388,608 x 2048 / 2) x (1 + 2.5) =
  // 721,554,505,728 FLOPs; 216 kernels that are the only one of an elementwise operator (150 copy_, 15 add, 15
  // native_layer_norm, 12 fill_, 12 add_, 6 gelu, 6 gelu_backward), 26,111,115,276 bytes read and written; and
  // the 12 cuDNN helpers (cudnn::fusion) beside the 6 backward attention kernels, whose work the attention model's
  // backward holds: no FLOPs, no bytes of their own.
  std::map<KernelClass, int> derived;
  std::map<KernelClass, double> flops, bytes;
  int absorbed = 0;
  for (const auto& n : traces.front().nodes)
    if (n.flops && n.step >= 0) {
      if (n.name.find("cudnn::fusion") != std::string::npos) {
        ++absorbed;
        CHECK(n.flops == Flops{0});
        CHECK(n.hbm_bytes == Bytes{0});
        continue;
      }
      const KernelClass kind = classify(n.name);
      ++derived[kind];
      flops[kind] += n.flops->count();
      bytes[kind] += static_cast<double>(n.hbm_bytes.count());
    }
  CHECK(derived[KernelClass::gemm] == 81);
  CHECK(flops[KernelClass::gemm] == 15'017'353'150'464.0);
  CHECK(derived[KernelClass::attention] == 12);
  CHECK(flops[KernelClass::attention] == 721'554'505'728.0);
  CHECK(derived[KernelClass::memory] == 216);
  CHECK(flops[KernelClass::memory] == 0);
  CHECK(bytes[KernelClass::memory] == doctest::Approx(26'111'115'276.0).epsilon(1e-9));
  CHECK(derived.size() == 3);  // no kernel of unknown class is derived
  CHECK(absorbed == 12);
  const auto scenario = workloads::testing::load(
      "topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: "
      "[barrier: {}]}]\n");
  const auto programs = build_programs(traces, scenario.fabric(), {.cost = KernelCost::derived}, 0, "t");
  int roofline = 0, shaped = 0;
  for (const auto& lane : std::get<StreamsOp>(programs[0].ops.front().what).streams)
    for (const auto& op : lane)
      if (const auto* c = std::get_if<ComputeOp>(&op.what); c && !c->duration && op.tag >= 0) {
        ++roofline;
        if (c->gemm()) {  // a GEMM keeps its shape, for the GEMM model: its FLOPs are its shape's
          ++shaped;
          CHECK(c->gemm()->flops().count() == doctest::Approx(c->flops.count()).epsilon(1e-12));
        }
      }
  CHECK(roofline == 81 + 12 + 216 + 12);
  CHECK(shaped == 81);
}

TEST_CASE("replay: a light profile takes its kernels' shapes from a profile with shapes, over the run that matches") {
  using namespace snsim::workloads::replay;
  const auto trace = [](const std::string& file, const std::vector<std::string>& kernels) {
    RankTrace t;
    t.file = file;
    t.lanes = {"host", "stream 7"};
    t.nodes.push_back({.kind = TraceNode::Kind::host, .lane = 0, .name = "aten::mm"});
    for (const auto& k : kernels) t.nodes.push_back({.kind = TraceNode::Kind::kernel, .lane = 1, .name = k});
    return t;
  };
  // The shapes profile's window starts one kernel earlier and ends one kernel earlier.
  auto light = trace("light.json", {"gemm", "elementwise", "gemm", "reduce"});
  auto shaped = trace("shapes.json", {"fill", "gemm", "elementwise", "gemm"});
  for (std::size_t i = 2; i < shaped.nodes.size(); ++i) shaped.nodes[i].flops = Flops{static_cast<double>(i)};
  shaped.nodes[2].gemm = models::Gemm{64, 64, 64};
  take_shapes(light, shaped);
  CHECK(light.nodes[1].flops == Flops{2});  // light's first gemm is shaped's second kernel
  CHECK(light.nodes[1].gemm);
  CHECK(light.nodes[2].flops == Flops{3});
  CHECK(light.nodes[3].flops == Flops{4});
  CHECK(!light.nodes[4].flops);  // outside the overlap: its recorded time
  CHECK(!light.nodes[0].flops);  // host time stays the light profile's
  // Not a profile of the same steps.
  auto other = trace("light.json", {"gemm", "gemm", "gemm", "gemm"});
  CHECK(thrown_by([&] { take_shapes(other, shaped); }) ==
        "light.json: its shapes trace shapes.json is not a profile of the same steps: stream 7 has 4 kernels here and "
        "4 there, and no run of half of these is a run of those");
  // One shapes trace per trace.
  const nlohmann::json paths{TRACES + "gpt-h2048-l2-b2-s2048.kineto.json.gz"};
  const nlohmann::json two{TRACES + "gpt-h2048-l2-b2-s2048.shapes.kineto.json.gz",
                           TRACES + "gpt-h2048-l2-b2-s2048.shapes.kineto.json.gz"};
  const std::string message = thrown_by([&] {
    workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [{type: trace, paths: " + paths.dump() +
                             ", shapes: " + two.dump() + "}]\n");
  });
  CHECK(contains(message, "workloads[0].shapes: expected one shapes trace per trace (1), found 2"));
}

TEST_CASE("replay: cost derived on the light profile's host times each captured step within 6 %, on either GPU") {
  // The kernels that have shapes run on the compute model (docs/replay.md#kernel-cost), the host keeps the light
  // profile's timing: on its own GPU and on the other one, against the step measured there. Measured: 0.8-5.1 %,
  // median 2.1 %.
  struct Capture {
    std::string traces, gpu;
  };
  const std::vector<Capture> captures{{TRACES, "h200"}, {H100_TRACES, "h100"}};
  for (const auto& variant : CASES)
    for (const Capture& from : captures)
      for (const Capture& on : captures) {
        const nlohmann::json shapes{from.traces + variant + ".shapes.kineto.json.gz"};
        const double replayed = replayed_step_ms(
            {from.traces + variant + ".kineto.json.gz"}, fmt::format("{{type: hgx, gpu: {}, gpus: 2}}", on.gpu),
            ", cost: derived, shapes: " + shapes.dump(), fmt::format("models: {{params: {}}}", on.gpu));
        const double measured = measured_step_ms(variant, on.traces);
        INFO(variant << " captured on " << from.gpu << ", replayed on " << on.gpu << ": " << replayed
                     << " ms, measured " << measured << " ms");
        CHECK(workloads::testing::relative_error(replayed, measured) < 0.06);
      }
}

TEST_CASE("replay: snsim replay runs a trace on its captured platform and on a platform scenario") {
  snsim::testing::TempDir dir;
  const std::string trace = TRACES + "gpt-h2048-l2-b2-s2048.kineto.json.gz";
  const auto own = snsim::testing::run_snsim(dir, {"replay", trace});
  CHECK(own.code == 0);
  CHECK(own.err.empty());
  CHECK(contains(own.out, "# snsim replay: 2 x h200"));
  CHECK(contains(own.out, "step_time_ms 14.32"));
  const auto platform = dir.write("nvl72.yaml", "topology: {type: nvl72}\nmodels: {params: gb200}\nworkloads: []\n");
  const auto nvl72 = snsim::testing::run_snsim(dir, {"replay", trace, "--platform", platform, "--ranks", "2"});
  CHECK(nvl72.code == 0);
  CHECK(contains(nvl72.out, "72 x gb200"));
  const auto missing = snsim::testing::run_snsim(dir, {"replay", "missing.json"});
  CHECK(missing.code == 2);
  CHECK(missing.err == "missing.json: cannot open the file\n");
}

TEST_CASE("replay: a scenario's what-ifs apply to a replayed job: a slow GPU, a failed link") {
  const std::vector<std::string> ddp{TRACES + "gpt-h2048-l2-b2-s2048-ddp.kineto.json.gz"};
  const std::string hgx = "{type: hgx, gpu: h200, gpus: 2}";
  const double base = replayed_step_ms(ddp, hgx, ", ranks: 2");
  // Every kernel of GPU 1 takes 10 % longer; the all-reduces make GPU 0 wait for it.
  const double slow =
      replayed_step_ms(ddp, hgx, ", ranks: 2", "models: {params: h200, slow: [{gpu: 1, compute: 1.1}]}");
  // GPU 1 keeps 2 of its 18 NVLink lanes from the start: the 1.2 GB of all-reduces per step crawl.
  const double cut = replayed_step_ms(ddp, hgx, ", ranks: 2",
                                      "models: {params: h200}\nfailures: [{at: 0ms, link: {gpu: 1, lanes: 16}}]");
  CAPTURE(base);
  CAPTURE(slow);
  CAPTURE(cut);
  CHECK(slow > base * 1.05);
  CHECK(slow < base * 1.11);
  CHECK(cut > base * 1.5);
}

TEST_CASE("host op: CPU time beside a kernel holds no GPU, and before it delays it") {
  auto span_of = [](const std::string& ops) {
    return std::stod(run_isolated([&] {
      const Report r = workloads::testing::load(
                           "topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ranks: "
                           "0, ops: " +
                           ops + "}]\n")
                           .run();
      return fmt::format("{}", workloads::testing::span(r));
    }));
  };
  CHECK(span_of("[{streams: [[{host: {time: 1ms}}], [{compute: {time: 1ms}}]]}]") ==
        doctest::Approx(1e-3).epsilon(1e-9));
  CHECK(span_of("[{host: {time: 1ms}}, {compute: {time: 1ms}}]") == doctest::Approx(2e-3).epsilon(1e-9));
}

// ---- send / recv ----------------------------------------------------------------------------------------------------

namespace {

struct P2pCall {
  std::string name;  // send, recv
  int peer;
  std::uint64_t floats;
};

/// A Kineto trace of rank `rank` of 2 whose one profiler step makes `calls`, 100 us apart from ts 10: each a
/// record_param_comms with the NCCL kernel it launches on stream 20, as PyTorch's ProcessGroupNCCL records them.
json p2p_trace(int rank, const std::vector<P2pCall>& calls) {
  json events = json::array();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const double ts = 10 + 100.0 * static_cast<double>(i);
    const int correlation = static_cast<int>(i) + 1;
    json args{{"Collective name", calls[i].name},
              {"dtype", "Float"},
              {"In msg nelems", calls[i].floats},
              {"Out msg nelems", calls[i].floats},
              {"Process Group Ranks", "[0, 1]"}};
    args[calls[i].name == "send" ? "Dst Rank" : "Src Rank"] = calls[i].peer;
    events.push_back({{"ph", "X"},
                      {"cat", "cpu_op"},
                      {"name", "record_param_comms"},
                      {"tid", 1},
                      {"ts", ts},
                      {"dur", 5},
                      {"args", args}});
    add_launched_kernel(events, correlation, ts, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, 50);
  }
  events.push_back({{"ph", "X"},
                    {"cat", "user_annotation"},
                    {"name", "ProfilerStep#1"},
                    {"tid", 1},
                    {"ts", 0},
                    {"dur", 100.0 * static_cast<double>(calls.size()) + 100}});
  return {{"traceEvents", events},
          {"deviceProperties", json::array({{{"name", "NVIDIA H200"}}})},
          {"distributedInfo", {{"rank", rank}, {"world_size", 2}}}};
}

// The collective model's broadcast with its latencies taken out but the wire's (runtime/collective_executor_test.cpp):
// a one-hop chain of chunks takes the hop latency + size / the SM copy rate.
const std::string P2P_MODELS =
    "models: {collective: {Simple: {base_latency: 0us, step_latency: 0us}, broadcast_chunk: 16MiB, "
    "stream_launch: 0us}, copy: {sm: {efficiency: 0.5}}}";
constexpr double NVLINK_HOP = 0.354e-6;       // s: the hgx preset's NVLink hop, as that test has it
constexpr double SM_COPY_RATE = 450e9 * 0.5;  // B/s: one direction of an H200's 18 NVLink4 lanes, at efficiency 0.5

/// Minimal protobuf wire format for the Chakra tests: varints and length-delimited fields (protobuf's encoding).
std::string varint(std::uint64_t v) {
  std::string out;
  do {
    auto byte = static_cast<unsigned char>(v & 0x7f);
    v >>= 7;
    if (v != 0) byte |= 0x80;
    out += static_cast<char>(byte);
  } while (v != 0);
  return out;
}
std::string pb_varint(int field, std::uint64_t v) {
  return varint(static_cast<std::uint64_t>(field) << 3) + varint(v);
}
std::string pb_bytes(int field, const std::string& bytes) {
  return varint((static_cast<std::uint64_t>(field) << 3) | 2) + varint(bytes.size()) + bytes;
}
/// A Chakra Node's attribute (field 10) of an int64 value (AttributeProto field 9) or a bool (27).
std::string pb_int_attr(const std::string& name, std::uint64_t v) {
  return pb_bytes(10, pb_bytes(1, name) + pb_varint(9, v));
}
std::string pb_bool_attr(const std::string& name, bool v) {
  return pb_bytes(10, pb_bytes(1, name) + pb_varint(27, v ? 1 : 0));
}
/// A Chakra trace: GlobalMetadata, then `nodes` (each a serialised Node), each framed by its varint length.
std::string chakra_file(const std::vector<std::string>& nodes) {
  std::string out;
  const std::string metadata = pb_bytes(1, "0.0.4");
  out += varint(metadata.size()) + metadata;
  for (const auto& n : nodes) out += varint(n.size()) + n;
  return out;
}
/// A send (type 5) or recv (6) node of `bytes` between `src` and `dst`, after `deps` (data_deps, field 5).
std::string chakra_p2p(std::uint64_t id, bool send, int src, int dst, std::uint64_t bytes,
                       const std::vector<std::uint64_t>& deps = {}) {
  std::string n = pb_varint(1, id) + pb_bytes(2, send ? "send" : "recv") + pb_varint(3, send ? 5 : 6);
  for (auto d : deps) n += pb_varint(5, d);
  return n + pb_bool_attr("is_cpu_op", false) + pb_int_attr("comm_src", static_cast<std::uint64_t>(src)) +
         pb_int_attr("comm_dst", static_cast<std::uint64_t>(dst)) + pb_int_attr("comm_size", bytes);
}

}  // namespace

TEST_CASE("replay: a Kineto send / recv pair is one transfer between its ranks: hop latency + size / bandwidth") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const std::uint64_t floats = 64ull << 20;  // 256 MiB
  const auto r0 = write(dir, "r0.json", p2p_trace(0, {{"send", 1, floats}}).dump());
  const auto r1 = write(dir, "r1.json", p2p_trace(1, {{"recv", 0, floats}}).dump());
  const auto traces = read_traces({r0, r1});
  REQUIRE(traces.size() == 2);
  // The op each end becomes: a broadcast over {0, 1} rooted at the sender, in the NCCL kernel's place on stream 20.
  const auto scenario =
      workloads::testing::load("topology: {type: hgx, gpus: 4}\nworkloads: [{type: program, ops: [barrier: {}]}]\n");
  const auto programs = build_programs(traces, scenario.fabric(), {.ranks = 4}, 0, "t");
  std::vector<Group> groups;
  for (int r = 0; r < 4; ++r) {
    std::vector<const CollectiveOp*> found;
    for (const auto& lane : std::get<StreamsOp>(programs[static_cast<std::size_t>(r)].ops.front().what).streams)
      for (const auto& op : lane)
        if (const auto* c = std::get_if<CollectiveOp>(&op.what)) found.push_back(c);
    CAPTURE(r);
    REQUIRE(found.size() == 1);
    CHECK(found[0]->kind == models::CollectiveKind::broadcast);
    CHECK(found[0]->bytes == Bytes{floats * 4});
    // A replica's pair stays inside the replica: ranks 2 and 3 are the second copy of 0 and 1.
    CHECK(*found[0]->group == (r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}));
    CHECK(found[0]->root == (r < 2 ? 0 : 2));
    groups.push_back(found[0]->group);
  }
  CHECK(groups[0] == groups[1]);  // the two ends of one transfer meet in one group
  CHECK(groups[2] == groups[3]);

  const double step_ms = replayed_step_ms({r0, r1}, "{type: hgx, gpu: h200, gpus: 2}", "", P2P_MODELS);
  CHECK(step_ms * 1e-3 == doctest::Approx(NVLINK_HOP + static_cast<double>(floats * 4) / SM_COPY_RATE).epsilon(1e-6));
}

TEST_CASE("replay: a send without its recv, or of another size, is an error naming both ranks and the op") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const auto twice = write(dir, "twice.json", p2p_trace(0, {{"send", 1, 1 << 20}, {"send", 1, 1 << 20}}).dump());
  const auto once = write(dir, "once.json", p2p_trace(1, {{"recv", 0, 1 << 20}}).dump());
  CHECK(thrown_by([&] {
          read_traces({twice, once});
        }) == twice + ": send #2 from rank 0 to rank 1 (4 MiB) has no matching recv: rank 1 (" + once +
                  ") posts 1 recv from rank 0; the job would hang in it");
  const auto big = write(dir, "big.json", p2p_trace(1, {{"recv", 0, 1 << 21}}).dump());
  const auto one = write(dir, "one.json", p2p_trace(0, {{"send", 1, 1 << 20}}).dump());
  CHECK(thrown_by([&] {
          read_traces({one, big});
        }) == big + ": recv #1 of rank 1 from rank 0 is 8 MiB, but its send on rank 0 (" + one +
                  ") is 4 MiB: the traces are not of one job");
  const auto self = write(dir, "self.json", p2p_trace(0, {{"send", 0, 1 << 20}}).dump());
  CHECK(thrown_by([&] {
          read_traces({self, once});
        }) == self + ": record_param_comms 'send': rank 0's peer 0 is itself");
}

TEST_CASE("replay: sends that each wait for the other's recv are a deadlock naming the ranks, not a hang") {
  // Both ranks send first and receive second on one stream: NCCL's blocking send / recv deadlock like this too.
  snsim::testing::TempDir dir;
  const auto r0 = write(dir, "r0.json", p2p_trace(0, {{"send", 1, 1 << 20}, {"recv", 1, 1 << 20}}).dump());
  const auto r1 = write(dir, "r1.json", p2p_trace(1, {{"send", 0, 1 << 20}, {"recv", 0, 1 << 20}}).dump());
  const std::string outcome = run_isolated([&] { return replay_on_two_gpus({r0, r1}).outcome; });
  CAPTURE(outcome);
  CHECK(outcome.starts_with("deadlock:"));
  CHECK(outcome.find("rank 0") != std::string::npos);
  CHECK(outcome.find("rank 1") != std::string::npos);
  CHECK(outcome.find("broadcast 4 MiB") != std::string::npos);
}

TEST_CASE("replay: a Chakra send / recv pair waits for the sender's kernel and moves its bytes once") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const std::uint64_t bytes = 256ull << 20;
  // Rank 0: a 100 us GPU kernel (COMP_NODE, type 4), then the send that depends on it. Rank 1: the recv alone.
  const std::string kernel =
      pb_varint(1, 1) + pb_bytes(2, "gemm") + pb_varint(3, 4) + pb_varint(7, 100) + pb_bool_attr("is_cpu_op", false);
  const auto r0 = write(dir, "r0.et", chakra_file({kernel, chakra_p2p(2, true, 0, 1, bytes, {1})}));
  const auto r1 = write(dir, "r1.et", chakra_file({chakra_p2p(1, false, 0, 1, bytes)}));
  const auto traces = read_traces({r0, r1});
  REQUIRE(traces.size() == 2);
  REQUIRE(traces[0].nodes.size() == 2);
  const auto& send = traces[0].nodes[1];
  REQUIRE(send.collective);
  REQUIRE(send.collective->p2p);
  CHECK(send.collective->p2p->sender == 0);
  CHECK(send.collective->p2p->receiver == 1);
  CHECK(send.collective->in_bytes == Bytes{bytes});
  // The recv cannot start before the send does, 100 us in: the step is the kernel and then the transfer.
  const double step_ms =
      replayed_step_ms({r0, r1}, "{type: hgx, gpu: h200, gpus: 2}", ", source_gpu: h200", P2P_MODELS);
  CHECK(step_ms * 1e-3 ==
        doctest::Approx(100e-6 + NVLINK_HOP + static_cast<double>(bytes) / SM_COPY_RATE).epsilon(1e-6));

  // A recv without its send, and a send that this trace's rank does not make.
  const auto lonely = write(dir, "lonely.et", chakra_file({chakra_p2p(1, false, 0, 1, bytes)}));
  const auto nothing = write(dir, "nothing.et", chakra_file({kernel}));
  CHECK(thrown_by([&] {
          read_traces({nothing, lonely});
        }) == lonely + ": recv #1 of rank 1 from rank 0 (256 MiB) has no matching send: rank 0 (" + nothing +
                  ") posts 0 sends to rank 1; the job would hang in it");
  const auto foreign = write(dir, "foreign.et", chakra_file({chakra_p2p(1, true, 1, 0, bytes)}));
  CHECK(thrown_by([&] {
          read_traces({foreign, lonely});
        }) ==
        foreign + ": send node 1 goes from rank 1 to rank 0, but this trace is rank 0 (its place among the traces)");
}

// ---- cost derived: attention and memory-bound kernels from their shapes
// ----------------------------------------------

namespace {

struct ShapedOp {
  std::string name;
  json dims, types, concrete;
  std::vector<std::string> kernels;  // what it launches
};

/// A Kineto trace of one profiler step recorded with record_shapes: each operator (a cpu_op with its Input Dims,
/// Input type and Concrete Inputs) launches its kernels, which carry its External id, one after the other.
json shaped_trace(const std::vector<ShapedOp>& ops) {
  json events = json::array();
  int correlation = 0;
  double ts = 10;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int id = 100 + static_cast<int>(i);
    events.push_back({{"ph", "X"},
                      {"cat", "cpu_op"},
                      {"name", ops[i].name},
                      {"tid", 1},
                      {"ts", ts},
                      {"dur", 20},
                      {"args",
                       {{"External id", id},
                        {"Input Dims", ops[i].dims},
                        {"Input type", ops[i].types},
                        {"Concrete Inputs", ops[i].concrete}}}});
    for (const auto& kernel : ops[i].kernels) {
      ++correlation;
      add_launched_kernel(events, correlation, ts, kernel, 7, 10, {{"External id", id}});
      ts += 20;
    }
  }
  events.push_back(
      {{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#1"}, {"tid", 1}, {"ts", 0}, {"dur", ts}});
  return {{"traceEvents", events}, {"deviceProperties", json::array({{{"name", "NVIDIA H200"}}})}};
}

}  // namespace

TEST_CASE("replay: cost derived takes attention FLOPs and elementwise bytes from their operators' shapes") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const json bf16x3 = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"};
  const std::vector<ShapedOp> ops{
      // FlashAttention, [batch, seq, heads, dim] = [1, 1024, 8, 64], causal (is_causal: its 9th input).
      {"aten::_flash_attention_forward",
       {{1, 1024, 8, 64}, {1, 1024, 8, 64}, {1, 1024, 8, 64}, {}, {}, {}, {}, {}, {}},
       bf16x3,
       {"", "", "", "", "", "1024", "1024", "0.", "True"},
       {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>"}},
      // cuDNN's backward, [batch, heads, seq, dim] = [2, 4, 512, 128] with keys of 256, not causal; its helper
      // kernel is costed as recorded.
      {"aten::_cudnn_attention_backward",
       {{2, 4, 512, 128}, {2, 4, 512, 128}, {2, 4, 256, 128}, {2, 4, 256, 128}, {2, 4, 512, 128}},
       {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"},
       {"", "", "", "", "", "", "", "", "", "", "", "512", "256", "0.", "False", ""},
       {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16", "void cudnn::fusion::convert_dq_to_16bits"}},
      // An add that broadcasts [1024] over [4, 1024], a bf16 -> fp32 copy, a fill.
      {"aten::add",
       {{4, 1024}, {1024}, {}},
       {"c10::BFloat16", "c10::BFloat16", "Scalar"},
       {"", "", "1"},
       {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"}},
      {"aten::copy_",
       {{1024}, {1024}, {}},
       {"float", "c10::BFloat16", "Scalar"},
       {"", "", "False"},
       {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>"}},
      {"aten::fill_",
       {{256, 256}, {}},
       {"float", "Scalar"},
       {"", "0"},
       {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"}},
      // An elementwise operator that launched two kernels: which bytes are whose is unknown, so both stay as
      // recorded.
      {"aten::mul",
       {{4, 1024}, {4, 1024}},
       {"c10::BFloat16", "c10::BFloat16"},
       {"", ""},
       {"void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor>",
        "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor>"}},
  };
  const auto path = write(dir, "shapes.json", shaped_trace(ops).dump());
  const auto traces = read_traces({path});
  std::vector<const TraceNode*> kernels;
  for (const auto& n : traces.front().nodes)
    if (n.kind == TraceNode::Kind::kernel) kernels.push_back(&n);
  REQUIRE(kernels.size() == 8);
  // By hand. Flash forward: QK^T and PV, 2 x 2 x (1 x 1024 x 8 x 64 = 524,288) x 1024 keys, halved by the mask;
  // reads q, k, v and writes the output, 4 tensors of 1 MiB.
  REQUIRE(kernels[0]->flops);
  CHECK(kernels[0]->flops->count() == 4.0 * 524'288 * 1024 / 2);
  CHECK(kernels[0]->hbm_bytes == Bytes{4 << 20});
  CHECK(kernels[0]->dtype == Dtype::bf16);
  // cuDNN backward: 2.5 x the forward's 4 x (2 x 4 x 512 x 128 = 524,288) x 256 keys; q, the output, its gradient
  // and dq of 1 MiB each, k, v, dk, dv of 512 KiB each.
  REQUIRE(kernels[1]->flops);
  CHECK(kernels[1]->flops->count() == 2.5 * 4 * 524'288 * 256);
  CHECK(kernels[1]->hbm_bytes == Bytes{4 * (1 << 20) + 4 * (1 << 19)});
  CHECK_FALSE(kernels[2]->flops);
  // add: reads 4 x 1024 and 1024 bf16, writes 4 x 1024 bf16. copy_: reads 1024 bf16, writes 1024 fp32. fill_:
  // writes 256 x 256 fp32. No FLOPs: the roofline's memory side alone.
  CHECK(kernels[3]->hbm_bytes == Bytes{(4096 + 1024 + 4096) * 2});
  CHECK(kernels[4]->hbm_bytes == Bytes{1024 * 2 + 1024 * 4});
  CHECK(kernels[5]->hbm_bytes == Bytes{256 * 256 * 4});
  CHECK(kernels[5]->dtype == Dtype::fp32);
  for (std::size_t i = 3; i < 6; ++i) {
    REQUIRE(kernels[i]->flops);
    CHECK(kernels[i]->flops->count() == 0);
  }
  CHECK_FALSE(kernels[6]->flops);
  CHECK_FALSE(kernels[7]->flops);

  // Derived, each becomes a roofline op of the compute model (the one GEMMs use), queued behind its stream.
  const auto scenario =
      workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: [barrier: {}]}]\n");
  const auto programs = build_programs(traces, scenario.fabric(), {.cost = KernelCost::derived}, 0, "t");
  int roofline = 0, fixed = 0;
  for (const auto& lane : std::get<StreamsOp>(programs[0].ops.front().what).streams)
    for (const auto& op : lane)
      if (const auto* c = std::get_if<ComputeOp>(&op.what)) {
        if (c->duration) {
          ++fixed;
        } else {
          ++roofline;
          CHECK(c->pipelined);
        }
      }
  CHECK(roofline == 5);
  CHECK(fixed == 3);
}

TEST_CASE("replay: cost derived runs cuDNN's self-attention by its shape on Hopper, other attention on the roofline") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const json bf16x3 = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"};
  const std::vector<ShapedOp> ops{
      // cuDNN's forward, [batch, heads, seq, dim] = [2, 16, 4096, 128] with 4 KV heads (GQA), causal.
      {"aten::_scaled_dot_product_cudnn_attention",
       {{2, 16, 4096, 128}, {2, 4, 4096, 128}, {2, 4, 4096, 128}, {}, {}, {}, {}},
       bf16x3,
       {"", "", "", "", "", "", "True"},
       {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3"}},
      // The same shape through FlashAttention ([batch, seq, heads, dim]): no shape model of FlashAttention-2.
      {"aten::_flash_attention_forward",
       {{2, 4096, 16, 128}, {2, 4096, 4, 128}, {2, 4096, 4, 128}, {}, {}, {}, {}, {}, {}},
       bf16x3,
       {"", "", "", "", "", "4096", "4096", "0.", "True"},
       {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>"}},
  };
  const auto path = write(dir, "attention.json", shaped_trace(ops).dump());
  const auto traces = read_traces({path});
  std::vector<const TraceNode*> kernels;
  for (const auto& n : traces.front().nodes)
    if (n.kind == TraceNode::Kind::kernel) kernels.push_back(&n);
  REQUIRE(kernels.size() == 2);
  REQUIRE(kernels[0]->attention);
  const auto& a = *kernels[0]->attention;
  CHECK(a.batch == 2);
  CHECK(a.heads == 16);
  CHECK(a.seq == 4096);
  CHECK(a.head_dim == 128);
  CHECK(a.kv_heads == 4);
  CHECK(a.causal);
  CHECK_FALSE(a.backward);
  REQUIRE(kernels[0]->flops);
  CHECK(a.flops().count() == kernels[0]->flops->count());  // the model's work is what the shapes give
  CHECK_FALSE(kernels[1]->attention);
  REQUIRE(kernels[1]->flops);

  // On an H200 the cuDNN kernel keeps its shape for the attention model; on a GB200 (no Hopper tiles or boost clock)
  // both run on the roofline, as the training workload's attention does.
  auto attention_ops = [&](const std::string& topology) {
    const auto scenario =
        workloads::testing::load("topology: " + topology + "\nworkloads: [{type: program, ops: [barrier: {}]}]\n");
    const auto programs = build_programs(traces, scenario.fabric(), {.cost = KernelCost::derived}, 0, "t");
    int shaped = 0, roofline = 0;
    for (const auto& lane : std::get<StreamsOp>(programs[0].ops.front().what).streams)
      for (const auto& op : lane)
        if (const auto* c = std::get_if<ComputeOp>(&op.what); c && !c->duration) ++(c->attention() ? shaped : roofline);
    return std::pair{shaped, roofline};
  };
  CHECK(attention_ops("{type: hgx, gpus: 2, gpu: h200}") == std::pair{1, 1});
  CHECK(attention_ops("{type: nvl72}") == std::pair{0, 2});
}

TEST_CASE("replay: a Kineto field of the wrong type or range is an error naming the event, not a crash") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  auto trace = kineto_trace(2, 10, 5, "gemm");
  trace["traceEvents"][1]["args"]["correlation"] = "1";
  const auto text = write(dir, "text.json", trace.dump());
  CHECK(thrown_by([&] { read_traces({text}); }) ==
        text + ": traceEvents[1]: expected a whole number `args.correlation`, found \"1\"");
  trace = kineto_trace(2, 10, 5, "gemm", std::pair{0, 1});
  trace["distributedInfo"]["world_size"] = 1e300;
  const auto huge = write(dir, "huge.json", trace.dump());
  CHECK(thrown_by([&] { read_traces({huge}); }) ==
        huge + ": distributedInfo: expected `world_size` a whole number from 1 to 1048576, found 1e+300");
  // A number beyond a double: nlohmann reports it as out_of_range, not parse_error (found by fuzz/, replay).
  const auto overflow = write(dir, "overflow.json", R"({"traceEvents": [], "x": 1e999})");
  CHECK(thrown_by([&] { read_traces({overflow}); }) ==
        overflow + ": not a JSON trace snsim can read: number overflow parsing '1e999'");
  // A record_param_comms without arguments is no collective it can name; one of a group beyond int is refused.
  trace = kineto_trace(2, 10, 5, "gemm");
  add_all_reduce(trace, 1, 1 << 20, "[0, 99999999999]");
  const auto wide = write(dir, "wide.json", trace.dump());
  CHECK(thrown_by([&] { read_traces({wide}); }) ==
        wide + ": record_param_comms: a rank of `Process Group Ranks` is beyond 1048575: '[0, 99999999999]'");
  trace["traceEvents"].back().erase("args");
  const auto bare = write(dir, "bare.json", trace.dump());
  CHECK(thrown_by([&] { read_traces({bare}); }) == "");
  // A send in a group of three without `Dst Rank` has no known peer.
  auto three = p2p_trace(0, {{"send", 1, 1 << 20}});
  for (auto& e : three["traceEvents"])
    if (e["name"] == "record_param_comms") {
      e["args"].erase("Dst Rank");
      e["args"]["Process Group Ranks"] = "[0, 1, 2]";
    }
  const auto unknown = write(dir, "unknown.json", three.dump());
  CHECK(thrown_by([&] { read_traces({unknown}); }) ==
        unknown + ": record_param_comms 'send' on ranks [0, 1, 2]: expected its peer in `Dst Rank`");
}
