// Trace replay: the captured H200 steps against their unprofiled measurements, the programs a trace becomes, and
// the errors bad traces give.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

/// The replay's step time (its "replay" table) of `paths` on `topology`, run in a child process.
double replayed_step_ms(const std::vector<std::string>& paths, const std::string& topology,
                        const std::string& extra = "") {
  const std::string text = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", paths}};
    const std::string yaml = fmt::format("topology: {}\nmodels: {{params: h200}}\nworkloads: [{}{}]\n", topology,
                                         workload.dump().substr(0, workload.dump().size() - 1), extra + "}");
    const Report r = workloads::testing::load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const Table* t = find_table(r.tables, "replay");
    REQUIRE(t);
    return t->rows.front()[1].dump();
  });
  return std::stod(text);
}

/// As replayed_step_ms, with the scenario's `models:` (and failures) given as YAML text.
double run_isolated_step(const std::vector<std::string>& paths, const std::string& topology, const std::string& extra,
                         const std::string& models) {
  const std::string text = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", paths}};
    const std::string yaml = fmt::format("topology: {}\n{}\nworkloads: [{}{}]\n", topology, models,
                                         workload.dump().substr(0, workload.dump().size() - 1), extra + "}");
    const Report r = workloads::testing::load(yaml).run();
    REQUIRE(r.outcome == "completed");
    return find_table(r.tables, "replay")->rows.front()[1].dump();
  });
  return std::stod(text);
}

/// The median unprofiled step time of `variant` by CUDA events between back-to-back steps (steps.jsonl).
double measured_step_ms(const std::string& variant) {
  std::istringstream lines(read_file(TRACES + "steps.jsonl"));
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
  for (const std::string variant :
       {"gpt-h2048-l2-b2-s2048", "llama-h2048-l2-b2-s2048", "gpt-h4096-l2-b1-s4096", "gpt-h2048-l2-b2-s2048-ddp"}) {
    const double replayed = replayed_step_ms({TRACES + variant + ".kineto.json.gz"}, "{type: hgx, gpu: h200, gpus: 2}");
    const double measured = measured_step_ms(variant);
    INFO(variant << ": replayed " << replayed << " ms, measured " << measured << " ms");
    CHECK(workloads::testing::relative_error(replayed, measured) < 0.05);
  }
}

// ---- synthetic traces: what a replay keeps and what it changes -----------------------------------------------------

namespace {

using nlohmann::json;

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
std::string error_of(Read read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string write(const snsim::testing::TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = (dir.path() / name).string();
  write_file(path, text);
  return path;
}

}  // namespace

TEST_CASE("replay: a host-bound step stays host-bound on a faster GPU, a GPU-bound one speeds up by the peak ratio") {
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
  const double ratio = 989.0 / 2500.0;
  CHECK(host_gb200 == doctest::Approx(0.950 + 0.010 * ratio).epsilon(1e-9));
  CHECK(gpu_gb200 == doctest::Approx(2.0 * ratio).epsilon(1e-9));
}

TEST_CASE("replay: a kernel of no known class is scaled as memory-bound") {
  using namespace snsim::workloads::replay;
  CHECK(classify("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTN") == KernelClass::gemm);
  CHECK(classify("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>") == KernelClass::attention);
  CHECK(classify("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>") ==
        KernelClass::memory);
  CHECK(classify("my_custom_fused_thing") == KernelClass::unknown);
  GpuSpec h200{"h200", FlopsPerSecond{989e12}, BytesPerSecond{4.8e12}, Bytes{1}};
  GpuSpec gb200{"gb200", FlopsPerSecond{2.5e15}, BytesPerSecond{8e12}, Bytes{1}};
  CHECK(slowdown(KernelClass::unknown, h200, gb200) == doctest::Approx(0.6));
  CHECK(slowdown(KernelClass::memory, h200, gb200) == doctest::Approx(0.6));
  CHECK(slowdown(KernelClass::gemm, h200, gb200) == doctest::Approx(989.0 / 2500.0));

  snsim::testing::TempDir dir;
  const auto path = write(dir, "unknown.json", kineto_trace(4, 10, 5, "my_custom_fused_thing").dump());
  const std::string notes = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", {path}}};
    const Report r =
        workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [" + workload.dump() + "]\n").run();
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
  CHECK(error_of([&] { build_programs(traces, scenario.fabric(), {.ranks = 9}, 0, "t"); }) ==
        "t: ranks: 9 ranks to replay and the topology has 8 GPUs");
}

TEST_CASE("replay: bad traces are one error line naming the file and what was expected") {
  using namespace snsim::workloads::replay;
  snsim::testing::TempDir dir;
  const std::string gz = read_file(TRACES + "gpt-h2048-l2-b2-s2048.kineto.json.gz");
  const auto truncated = write(dir, "truncated.json.gz", gz.substr(0, gz.size() / 2));
  CHECK(contains(error_of([&] { read_traces({truncated}); }),
                 truncated + ": truncated or corrupt gzip data (the file ends after"));
  std::string flipped = gz;
  for (std::size_t i = 1000; i < 1100; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  const auto corrupt = write(dir, "corrupt.json.gz", flipped);
  CHECK(contains(error_of([&] { read_traces({corrupt}); }), corrupt + ": truncated or corrupt gzip data ("));
  const auto cut = write(dir, "cut.json", kineto_trace(2, 10, 5, "gemm").dump().substr(0, 100));
  CHECK(contains(error_of([&] { read_traces({cut}); }), cut + ": not a complete JSON trace (byte 101 of 100)"));
  const auto garbage = write(dir, "garbage.et", std::string("\x05\xff\xff\xff\xff\xff", 6));
  CHECK(error_of([&] { read_traces({garbage}); }) ==
        garbage +
            ": expected a PyTorch profiler (Kineto) JSON trace or a Chakra execution trace (a "
            "protobuf stream starting with GlobalMetadata)");

  // Ranks: from the traces' distributedInfo; each once, none missing.
  const auto r0 = write(dir, "r0.json", kineto_trace(2, 10, 5, "gemm", std::pair{0, 4}).dump());
  const auto r2 = write(dir, "r2.json", kineto_trace(2, 10, 5, "gemm", std::pair{2, 4}).dump());
  CHECK(error_of([&] {
          read_traces({r0, r2});
        }) == r0 + ": the job has 4 ranks and no trace was given for ranks 1, 3: give one trace per rank");
  CHECK(error_of([&] { read_traces({r0, r0}); }) == r0 + ": rank 0 again: " + r0 + " is rank 0 too");

  // Collectives: alike on every member, in order; members must have traces.
  auto a = kineto_trace(2, 10, 5, "gemm", std::pair{0, 2}), b = kineto_trace(2, 10, 5, "gemm", std::pair{1, 2});
  add_all_reduce(a, 1, 1 << 20, "[0, 1]");
  add_all_reduce(b, 1, 1 << 21, "[0, 1]");
  const auto a_path = write(dir, "a.json", a.dump()), b_path = write(dir, "b.json", b.dump());
  CHECK(error_of([&] {
          read_traces({a_path, b_path});
        }) == b_path + ": collective #1 on ranks [0, 1] is a all_reduce of 8 MiB in, 8 MiB out, but rank 0's (" +
                  a_path + ") is a all_reduce of 4 MiB in, 4 MiB out: the traces are not of one job");
  auto c = kineto_trace(2, 10, 5, "gemm");
  add_all_reduce(c, 1, 1 << 20, "[0, 1, 2]");
  const auto c_path = write(dir, "c.json", c.dump());
  CHECK(error_of([&] { read_traces({c_path}); }) ==
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
  const std::string outcome = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", {a_path, b_path}}};
    return workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [" + workload.dump() + "]\n")
        .run()
        .outcome;
  });
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
    nlohmann::json workload{{"type", "trace"}, {"paths", {file}}};
    const Report r =
        workloads::testing::load("topology: {type: hgx, gpus: 2}\nworkloads: [" + workload.dump() + "]\n").run();
    REQUIRE(r.outcome == "completed");
    return std::to_string(std::ranges::count(r.ops, std::string("host"), &OpRecord::kind));
  });
  CHECK(hosts == "3629");
}

TEST_CASE("replay: cost derived takes each GEMM's FLOPs from its operator's shapes") {
  using namespace snsim::workloads::replay;
  const auto traces = read_traces({TRACES + "gpt-h2048-l2-b2-s2048.shapes.kineto.json.gz"});
  // Counted from the trace by hand (a script over its events): in the 3 profiled steps, 81 kernels launched by
  // aten::mm / aten::addmm with shapes, 2mkn each, 15,017,353,150,464 FLOPs in all.
  int gemms = 0;
  double flops = 0;
  for (const auto& n : traces.front().nodes)
    if (n.flops && n.step >= 0) {
      ++gemms;
      flops += n.flops->count();
      CHECK(classify(n.name) == KernelClass::gemm);
    }
  CHECK(gemms == 81);
  CHECK(flops == 15'017'353'150'464.0);
  const auto scenario = workloads::testing::load(
      "topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: "
      "[barrier: {}]}]\n");
  const auto programs = build_programs(traces, scenario.fabric(), {.cost = KernelCost::derived}, 0, "t");
  int roofline = 0;
  for (const auto& lane : std::get<StreamsOp>(programs[0].ops.front().what).streams)
    for (const auto& op : lane)
      if (const auto* c = std::get_if<ComputeOp>(&op.what); c && !c->duration && op.tag >= 0) ++roofline;
  CHECK(roofline == 81);
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
      run_isolated_step(ddp, hgx, ", ranks: 2", "models: {params: h200, slow: [{gpu: 1, compute: 1.1}]}");
  // GPU 1 keeps 2 of its 18 NVLink lanes from the start: the 1.2 GB of all-reduces per step crawl.
  const double cut = run_isolated_step(ddp, hgx, ", ranks: 2",
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
