// One copy, timed several ways (tools/crosscheck/README.md, "The timing methods"): the copy model holds the copy's
// own cost and each twin adds its method's mechanics (validation/twins/copy_twin.cpp); the copy fit splits the
// probe's single-copy cost into the copy's own and its gate's hand-off (validation/fits/copy_fit.cpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "topologies/gpus.hpp"
#include "validation/calibrate.hpp"
#include "validation/calibration_test_support.hpp"
#include "validation/twins.hpp"
#include "validation/validate.hpp"

namespace snsim::validation {
namespace {

using workloads::HostOp;

/// A one-GPU H200 trace timed by `method` (empty: snsim-probe's, which names none).
Trace trace_timed_by(const std::string& method) {
  Trace t;
  t.source = method.empty() ? "probe.jsonl" : method + ".jsonl";
  t.header.gpus.push_back({0, "NVIDIA H200", "", Json::object()});
  if (!method.empty()) t.header.extra["method"] = method;
  t.complete = true;
  return t;
}

TraceRecord local_copy(const std::string& test, const std::string& variant, std::uint64_t bytes, double median,
                       int depth = 1) {
  TraceRecord r;
  r.family = Family::copy;
  r.test = test;
  r.variant = variant;
  r.ranks = {0};
  r.bytes = Bytes{bytes};
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median, median};
  if (depth > 1) r.extra["depth"] = depth;
  r.id = fmt::format("copy/{}/{}/0/{}", test, variant, bytes);
  return r;
}

/// The per-repetition times `snsim validate` simulates for `record` timed by `method`, with default parameters
/// (no variability).
double simulated(const std::string& method, const TraceRecord& record, const std::optional<std::string>& params = {}) {
  auto trace = trace_timed_by(method);
  trace.records = {record};
  Platform platform;
  platform.gpu = "h200";
  platform.topology = "{type: hgx, gpu: h200, gpus: 2}";
  platform.gpu_of_rank = {0};
  TwinOptions options;
  options.params = params;
  const auto out = simulate_twins(platform, {{&trace, &trace.records.front()}}, options);
  REQUIRE(out.size() == 1);
  REQUIRE_MESSAGE(out.front().skipped.empty(), out.front().skipped);
  REQUIRE(!out.front().samples.empty());
  return out.front().samples.front();
}

}  // namespace

TEST_CASE("copy twins: each timing method adds its own mechanics around the copy's own cost") {
  const auto models = snsim::models::testing::load();
  const auto& stream = *models.stream;
  auto ops_of = [&](const std::string& method, const TraceRecord& r) {
    auto trace = trace_timed_by(method);
    const auto made = make_twin(trace, r, 2, models);
    if (const auto* reason = std::get_if<std::string>(&made)) FAIL(*reason);
    return std::get<Twin>(made).sample.front();
  };
  auto host_waits = [](const std::vector<workloads::Op>& ops) {
    std::vector<std::pair<std::string, double>> waits;
    for (const auto& o : ops)
      if (const auto* h = std::get_if<HostOp>(&o.what)) waits.emplace_back(h->label, h->time.count());
    return waits;
  };
  const auto single = local_copy("ce_local", "single", 4, 3e-6);
  // Released by a stream wait (or the crosscheck's gate, which measures the same): the copy alone.
  CHECK(ops_of("wait_value", single).size() == 1);
  CHECK(ops_of("gate", single).size() == 1);
  using Waits = std::vector<std::pair<std::string, double>>;
  const double handed_over = (stream.host_copy * stream.host_submit_share).count();
  CHECK(host_waits(ops_of("events_single", single)) == Waits{{"host call", handed_over}});
  // Synchronised by the host: its call beside the copy, then the synchronising call's wake-up.
  const auto synced = ops_of("host_sync", single);
  REQUIRE(synced.size() == 3);
  CHECK(std::holds_alternative<workloads::StreamsOp>(synced[1].what));
  CHECK(host_waits(synced) == Waits{{"host call", handed_over}, {"sync wake-up", stream.sync_wakeup.count()}});
  CHECK(host_waits(ops_of("", single)) == Waits{{"gate hand-off", stream.gate_handoff.count()}});
  CHECK(host_waits(ops_of("event_from_other_stream", single)) ==
        Waits{{"event release", stream.event_release.count()}});
  // Back to back from the host: the host's calls and the GPU's copies run at once.
  const auto queued = ops_of("events_b2b", local_copy("ce_local", "pipelined", 4, 3e-6, 50));
  REQUIRE(queued.size() == 1);
  const auto& both = std::get<workloads::StreamsOp>(queued.front().what);
  REQUIRE(both.streams.size() == 2);
  CHECK(std::get<workloads::RepeatOp>(both.streams[0].front().what).count == 50);
  // Queued behind a stream wait, nothing but the copies.
  CHECK(host_waits(ops_of("wait_value", local_copy("ce_local", "pipelined", 4, 3e-6, 50))).empty());
}

TEST_CASE("copy twins: a single copy between host-recorded events starts a share of its call's CPU time later") {
  const auto stream = snsim::models::testing::load().stream;
  const auto file = std::filesystem::temp_directory_path() / fmt::format("snsim-host-calls-{}.yaml", getpid());
  {
    std::ofstream out(file);
    out << "models: {stream: {host_launch: 4us, host_copy: 6us, host_submit_share: 0.75}}\ncalibration: {}\n";
  }
  // A copy engine's copy is a cudaMemcpyAsync (6 us of CPU), an SM copy a kernel launch (4 us): the GPU holds
  // either three quarters into its call.
  for (const auto& [name, call] : {std::pair{"ce_local", 6e-6}, {"sm_local", 4e-6}}) {
    const std::string test = name;  // clang 14 cannot capture a structured binding in CAPTURE's lambda
    CAPTURE(test);
    const auto record = local_copy(test, "single", 4, 3e-6);
    const double released = simulated("wait_value", record, file.string());
    CHECK(simulated("events_single", record, file.string()) - released == doctest::Approx(0.75 * call).epsilon(1e-6));
    CHECK(simulated("host_sync", record, file.string()) - released ==
          doctest::Approx(0.75 * call + stream->sync_wakeup.count()).epsilon(1e-6));
    // Back to back, tiny copies are host bound: one whole call each.
    CHECK(simulated("events_b2b", local_copy(test, "pipelined", 4, 4e-6, 100), file.string()) ==
          doctest::Approx(call).epsilon(1e-6));
  }
  std::filesystem::remove(file);
}

TEST_CASE("copy twins: the host's jitter stretches the host's calls only, not the copy behind a stream wait") {
  const auto stream = snsim::models::testing::load().stream;
  const auto file = std::filesystem::temp_directory_path() / fmt::format("snsim-host-jitter-{}.yaml", getpid());
  {
    std::ofstream out(file);
    out << "models: {jitter: {host: {dist: constant, value: 3}}}\ncalibration: {}\n";
  }
  const auto record = local_copy("ce_local", "single", 4, 3e-6);
  const double released = simulated("wait_value", record);
  CHECK(simulated("wait_value", record, file.string()) == doctest::Approx(released).epsilon(1e-9));
  CHECK(simulated("events_single", record, file.string()) - released ==
        doctest::Approx(3 * (stream->host_copy * stream->host_submit_share).count()).epsilon(1e-6));
  std::filesystem::remove(file);
}

TEST_CASE("copy twins: tiny copies issued back to back from the host take one copy call each (host bound)") {
  const auto models = snsim::models::testing::load();
  // 4 B copies: the GPU's per-copy gap (copy.ce.local_queue_gap, 2 us by default) is below a copy call (4 us).
  REQUIRE(models.copy->local_fixed_cost(models::CopyEngine::ce, true) < models.stream->host_copy);
  const double per_copy = simulated("events_b2b", local_copy("ce_local", "pipelined", 4, 4e-6, 100));
  CHECK(per_copy == doctest::Approx(models.stream->host_copy.count()).epsilon(1e-6));
  // 64 MiB copies: the GPU is the slower one, the host's calls are hidden behind the copies.
  const auto big = local_copy("ce_local", "pipelined", 64ull << 20, 40e-6, 100);
  CHECK(simulated("events_b2b", big) == doctest::Approx(simulated("wait_value", big)).epsilon(1e-6));
}

TEST_CASE("copy twins: copies queued in a CUDA graph follow each other copy.graph_saving sooner than from a stream") {
  const auto models = snsim::models::testing::load();
  const auto& copy = *models.copy;
  REQUIRE(copy.graph_saving.count() > 0);
  for (const auto engine : {models::CopyEngine::ce, models::CopyEngine::sm}) {
    CAPTURE(models::to_string(engine));
    CHECK(copy.local_fixed_cost(engine, true, models::Launch::graph) ==
          copy.local_fixed_cost(engine, true) - copy.graph_saving);
    CHECK(copy.fixed_cost(engine, true, true, models::Launch::graph) ==
          copy.fixed_cost(engine, true, true) - copy.graph_saving);
    // a lone copy has no queue gap to save
    CHECK(copy.local_fixed_cost(engine, false, models::Launch::graph) == copy.local_fixed_cost(engine, false));
  }
  // The twin of crosscheck's graph method: each of the 50 queued 4 B copies takes the shorter gap.
  const auto record = local_copy("ce_local", "pipelined", 4, 1e-6, 50);
  CHECK(simulated("wait_value", record) - simulated("graph", record) ==
        doctest::Approx(copy.graph_saving.count()).epsilon(1e-6));
}

TEST_CASE(
    "copy twins: copies through PyTorch add the framework's dispatch to each host call, and its graphs queue them") {
  const auto stream = snsim::models::testing::load().stream;
  const auto file = std::filesystem::temp_directory_path() / fmt::format("snsim-framework-{}.yaml", getpid());
  {
    std::ofstream out(file);
    out << "models: {stream: {framework_op: 5us}}\ncalibration: {}\n";
  }
  // Tiny copies back to back from PyTorch are host bound: dispatch and copy call per copy.
  const auto tiny = local_copy("ce_local", "pipelined", 4, 10e-6, 100);
  CHECK(simulated("torch_events", tiny, file.string()) ==
        doctest::Approx(5e-6 + stream->host_copy.count()).epsilon(1e-6));
  // A single one waits for the dispatch before its call (without a framework, as between the events alone).
  const auto single = local_copy("ce_local", "single", 4, 20e-6);
  CHECK(simulated("torch_events", single, file.string()) - simulated("events_single", single, file.string()) ==
        doctest::Approx(5e-6).epsilon(1e-6));
  CHECK(simulated("torch_events", single) == doctest::Approx(simulated("events_single", single)).epsilon(1e-9));
  // Large ones hide the host behind the copies.
  const auto big = local_copy("ce_local", "pipelined", 64ull << 20, 40e-6, 100);
  CHECK(simulated("torch_events", big, file.string()) == doctest::Approx(simulated("wait_value", big)).epsilon(1e-6));
  // torch.cuda.CUDAGraph replays its copies as crosscheck's own graphs do, once PyTorch's replay() has handed the
  // graph over (its dispatch, then a share of the graph launch call).
  const auto record = local_copy("ce_local", "pipelined", 4, 1e-6, 50);
  CHECK(simulated("torch_graph", record, file.string()) - simulated("graph", record, file.string()) ==
        doctest::Approx((5e-6 + (stream->host_graph_launch * stream->host_submit_share).count()) / 50).epsilon(1e-6));
  std::filesystem::remove(file);
}

TEST_CASE("copy twins: an SM copy timed by its own kernel's clock is its in-kernel cost and memory time, no launch") {
  const auto models = snsim::models::testing::load();
  const auto& copy = *models.copy;
  REQUIRE(copy.sm.local_in_kernel < copy.sm.local_setup);
  const auto& presets = topologies::gpu_presets();
  const GpuSpec h200 = *std::ranges::find_if(presets, [](const GpuSpec& g) { return g.model == "h200"; });
  for (const std::uint64_t bytes : {4ull, 1ull << 20, 256ull << 20}) {
    CAPTURE(bytes);
    const auto record = local_copy("sm_local", "single", bytes, 1e-6);
    const double memory = copy.local_memory_time(h200, Bytes{bytes}, models::CopyEngine::sm).count();
    CHECK(simulated("kernel_clock", record) == doctest::Approx(copy.sm.local_in_kernel.count() + memory).epsilon(1e-6));
    // Released by a stream wait, the same copy pays its launch and completion too.
    CHECK(simulated("wait_value", record) - simulated("kernel_clock", record) ==
          doctest::Approx((copy.sm.local_setup - copy.sm.local_in_kernel).count()).epsilon(1e-6));
  }
  // Copy engines have no kernel, and queued copies no span of their own: no twin, and it says why.
  auto trace = trace_timed_by("kernel_clock");
  for (const auto& record :
       {local_copy("ce_local", "single", 4, 1e-6), local_copy("sm_local", "pipelined", 4, 1e-6, 50)}) {
    const auto made = make_twin(trace, record, 2, models);
    REQUIRE(std::holds_alternative<std::string>(made));
    CHECK(std::get<std::string>(made) ==
          fmt::format("copy/{}/{} (kernel_clock): only a lone device-local SM copy is modelled inside its kernel",
                      record.test, record.variant));
  }
}

TEST_CASE("copy twins: a lone op between PyTorch's events is host bound, the end event waits for its Python") {
  const auto stream = snsim::models::testing::load().stream;
  const auto file = std::filesystem::temp_directory_path() / fmt::format("snsim-torch-events-{}.yaml", getpid());
  {
    std::ofstream out(file);
    out << "models: {stream: {framework_op: 5us, host_copy: 6us, host_graph_launch: 2us, framework_event: 15us}}\n"
           "calibration: {}\n";
  }
  // A 4 B copy (3 us on the GPU) is done long before the host records the end event: dispatch, the copy call,
  // the events' Python.
  const auto tiny = local_copy("ce_local", "single", 4, 20e-6);
  CHECK(simulated("torch_events", tiny, file.string()) == doctest::Approx(5e-6 + 6e-6 + 15e-6).epsilon(1e-6));
  // The same from a graph: dispatch, the graph launch call, the events.
  CHECK(simulated("torch_graph", tiny, file.string()) == doctest::Approx(5e-6 + 2e-6 + 15e-6).epsilon(1e-6));
  // 1 GiB copies outlast the host: the copy's own time after its hand-over.
  const auto big = local_copy("ce_local", "single", 1ull << 30, 500e-6);
  CHECK(simulated("torch_events", big, file.string()) ==
        doctest::Approx(simulated("wait_value", big, file.string()) + 5e-6 + 6e-6 * stream->host_submit_share)
            .epsilon(1e-6));
  std::filesystem::remove(file);
}

TEST_CASE("copy fit: the probe's single copies are the copy's own cost plus its gate's hand-off") {
  // Noiseless local copies by the model's formula: own fixed cost + 2 bytes / (HBM x efficiency), an SM copy
  // kernel's at sm_rate of that, from L2 faster (either engine).
  const double hbm = 4.8e12, efficiency = 0.86, speedup = 1.6, sm_rate = 0.92, l2 = 60.0 * 1024 * 1024;
  const double own_ce = 3.1e-6, own_sm = 3.3e-6, handoff = 1.5e-6, release = 0.3e-6;
  auto memory = [&](std::uint64_t bytes, const std::string& test = "ce_local") {
    const double traffic = 2.0 * static_cast<double>(bytes);
    if (traffic <= l2) return traffic / (hbm * efficiency * speedup);
    return traffic / (hbm * efficiency * (test == "sm_local" ? sm_rate : 1.0));
  };
  // The host: a launch call takes 4.5 us of CPU, a copy call 5.6 us; the GPU holds the work 0.78 into either.
  const double in_kernel = 0.7e-6, launch_call = 4.5e-6, copy_call = 5.6e-6, share = 0.78;
  std::vector<Trace> traces{trace_timed_by(""),
                            trace_timed_by("wait_value"),
                            trace_timed_by("event_from_other_stream"),
                            trace_timed_by("kernel_clock"),
                            trace_timed_by("events_single"),
                            trace_timed_by("events_b2b"),
                            trace_timed_by("host_clock")};
  for (std::uint64_t bytes = 4; bytes <= (1ull << 30); bytes *= 4) {
    for (const auto& [test, own, call] :
         {std::tuple{"ce_local", own_ce, copy_call}, std::tuple{"sm_local", own_sm, launch_call}}) {
      const double copy = own + memory(bytes, test);
      traces[0].records.push_back(local_copy(test, "single", bytes, handoff + copy));
      traces[1].records.push_back(local_copy(test, "single", bytes, copy));
      traces[2].records.push_back(local_copy(test, "single", bytes, release + copy));
      traces[4].records.push_back(local_copy(test, "single", bytes, share * call + copy));
    }
    traces[3].records.push_back(local_copy("sm_local", "single", bytes, in_kernel + memory(bytes, "sm_local")));
    if (bytes <= 65536) traces[5].records.push_back(local_copy("ce_local", "pipelined", bytes, copy_call, 100));
  }
  // The host's clock around a launch call and PyTorch's add_; a lone copy between PyTorch's
  // events is host bound (dispatch, copy call, the events' Python).
  const double framework = 4.8e-6, event = 15e-6;
  for (const auto& [test, variant, value] : {std::tuple{"empty_kernel", "host_enqueue", launch_call},

                                             std::tuple{"torch_add_", "dispatch", framework + launch_call}}) {
    TraceRecord call;
    call.family = Family::launch;
    call.test = test;
    call.variant = variant;
    call.ranks = {0};
    call.median = call.p01 = call.p99 = call.min = call.max = value;
    call.samples = {value, value, value};
    call.id = fmt::format("launch/{}/{}/0/0/host_clock", test, variant);
    traces[6].records.push_back(call);
  }
  traces.push_back(trace_timed_by("torch_events"));
  for (std::uint64_t bytes = 4; bytes <= 65536; bytes *= 4)
    traces.back().records.push_back(local_copy("ce_local", "single", bytes, framework + copy_call + event));
  const auto fitted = testing::fitted_values(calibrate(traces, {}));
  testing::check_fitted(fitted, {{"stream.gate_handoff", handoff},
                                 {"copy.ce.local_setup", own_ce},
                                 {"copy.sm.local_setup", own_sm},
                                 {"copy.sm.local_in_kernel", in_kernel},
                                 {"stream.event_release", release},
                                 {"copy.local_hbm_efficiency", efficiency},
                                 {"copy.local_l2_speedup", speedup},
                                 {"copy.sm.local_rate", sm_rate},
                                 {"stream.host_launch", launch_call},
                                 {"stream.host_copy", copy_call},
                                 {"stream.host_submit_share", share},
                                 {"stream.framework_op", framework},
                                 {"stream.framework_event", event}});

  // Queued copies from a stream (the probe) and replayed from a graph (crosscheck's `graph`) give the saving.
  const double gap_ce = 1.8e-6, gap_sm = 1.9e-6, saving = 0.7e-6;
  std::vector<Trace> queued{traces[0], traces[1], trace_timed_by("graph")};
  for (std::uint64_t bytes = 4; bytes <= (1ull << 30); bytes *= 4)
    for (const auto& [test, gap] : {std::pair{"ce_local", gap_ce}, {"sm_local", gap_sm}}) {
      queued[0].records.push_back(local_copy(test, "pipelined", bytes, gap + memory(bytes, test), 50));
      queued[2].records.push_back(local_copy(test, "pipelined", bytes, gap - saving + memory(bytes, test), 50));
    }
  testing::check_fitted(
      testing::fitted_values(calibrate(queued, {})),
      {{"copy.ce.local_queue_gap", gap_ce}, {"copy.sm.local_queue_gap", gap_sm}, {"copy.graph_saving", saving}});

  // The probe's traces alone cannot tell the two apart: the copies' fixed cost keeps the hand-off.
  const auto alone = testing::fitted_values(calibrate({traces[0]}, {}));
  CHECK(!alone.contains("stream.gate_handoff"));
  testing::check_fitted(alone, {{"copy.ce.local_setup", own_ce + handoff}, {"copy.sm.local_setup", own_sm + handoff}});
}

}  // namespace snsim::validation
