// `snsim run --timeline`: the Perfetto / Chrome trace checked against the Trace Event Format (JSON object form:
// traceEvents; phases X complete, M metadata, s/f flow start and end, C counter; ts and dur in microseconds) and
// against the report of the same run.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/test_support.hpp"

using namespace snsim::testing;
using nlohmann::json;

namespace {

/// 4 GPUs, two steps of everything a timeline shows: a kernel, a collective and two copies on concurrent streams
/// (the copies overlap: two threads of copies), a put with a signal that another rank waits for, gets, and a phase
/// barrier before a second workload. output.timeline is not set: --timeline alone asks for the file.
const std::string SCENARIO =
    "name: timeline-test\n"
    "seed: 3\n"
    "topology: {type: hgx, gpu: h200, gpus: 4}\n"
    "workloads:\n"
    "  - type: program\n"
    "    ops:\n"
    "      - repeat: 2\n"
    "        ops:\n"
    "          - compute: {flops: 1TFLOP, bytes: 64MiB}\n"
    "          - streams:\n"
    "              - [{collective: {op: all_reduce, bytes: 64MiB}}]\n"
    "              - [{copy: {to: next, bytes: 16MiB}}]\n"
    "              - [{copy: {to: prev, bytes: 16MiB}}]\n"
    "          - {ranks: 0, ops: [{compute: {time: 20us}}, {put: {to: 1, bytes: 1MiB, signal: 1}}]}\n"
    "          - {ranks: 1, ops: [{signal_wait: {signal: 1, value: 1, consume: true}}]}\n"
    "          - get: {from: next, bytes: 1MiB}\n"
    "  - type: program\n"
    "    ops: [{compute: {time: 5us}}]\n";

bool is_number(const json& e, const char* key) {
  return e.contains(key) && e[key].is_number();
}

}  // namespace

TEST_CASE("timeline: snsim run --timeline writes a Chrome trace that matches the report") {
  TempDir dir;
  dir.write("s.yaml", SCENARIO);
  const Result r = run_snsim(dir, {"run", "s.yaml", "--out", "o", "--timeline", "--quiet"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json report = json::parse(read_file(dir.path() / "o" / "report.json"));
  const json trace = json::parse(read_file(dir.path() / "o" / "timeline.json"));
  REQUIRE(trace["traceEvents"].is_array());
  CHECK(trace["otherData"]["scenario"] == "timeline-test");
  CHECK(trace["otherData"]["seed"] == 3);

  // Every event has the fields its phase requires.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;  // (pid, tid) -> (ts, end)
  std::map<int, std::string> processes;                                          // pid -> name
  std::map<int, std::multiset<std::string>> op_names;                            // pid -> names of op slices
  std::map<int, double> waited_us;                                               // pid -> sum of wait slices
  std::map<std::pair<int, int>, std::set<std::string>> thread_names;
  std::map<std::uint64_t, std::vector<json>> flows;
  int counters = 0, wait_slices = 0;
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e.is_object());
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("name"));
    REQUIRE(is_number(e, "pid"));
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    CHECK(pid >= 1);  // pid 0 is special to Perfetto
    if (ph == "M") {
      REQUIRE(e["args"].is_object());
      if (e["name"] == "process_name") processes[pid] = e["args"]["name"];
      if (e["name"] == "thread_name")
        thread_names[{pid, e["tid"].get<int>()}].insert(e["args"]["name"].get<std::string>());
      continue;
    }
    REQUIRE(is_number(e, "ts"));
    CHECK(e["ts"].get<double>() >= 0);
    if (ph == "X") {
      REQUIRE(is_number(e, "tid"));
      REQUIRE(is_number(e, "dur"));
      REQUIRE(e["cat"].is_string());
      CHECK(e["dur"].get<double>() >= 0);
      // In whole nanoseconds, as Perfetto reads them: ts + dur in microseconds would round differently.
      const double ts = e["ts"];
      const auto ns = [](double us) { return static_cast<double>(std::llround(us * 1e3)); };
      slices[{pid, e["tid"].get<int>()}].emplace_back(ns(ts), ns(ts) + ns(e["dur"].get<double>()));
      if (e["cat"] == "wait") {
        ++wait_slices;
        waited_us[pid] += e["dur"].get<double>();
        CHECK(e["args"]["on"].get<std::string>().starts_with("gpu"));
        CHECK(e["args"].contains("in"));
      } else {
        op_names[pid].insert(e["name"].get<std::string>());
        CHECK(e["args"]["bytes"].is_number());
      }
    } else if (ph == "s" || ph == "f") {
      REQUIRE(is_number(e, "tid"));
      REQUIRE(e.contains("id"));
      if (ph == "f") CHECK(e["bp"] == "e");
      flows[e["id"].get<std::uint64_t>()].push_back(e);
    } else if (ph == "C") {
      ++counters;
      REQUIRE(e["args"].is_object());
      CHECK(e["args"]["GBps"].get<double>() >= 0);
    } else {
      FAIL("unexpected phase ", ph);
    }
  }

  // One process per GPU, named after it; slices on one thread never overlap (they would not nest in Perfetto).
  CHECK(processes == std::map<int, std::string>{{1, "gpu0"}, {2, "gpu1"}, {3, "gpu2"}, {4, "gpu3"}});
  for (auto& [thread, spans] : slices) {
    CHECK(thread_names.contains(thread));
    std::ranges::sort(spans);
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second);
  }
  // The streams overlap, so a GPU has a thread for collectives and one for copies.
  CHECK(thread_names.at({1, 1001}) == std::set<std::string>{"copies"});
  CHECK(thread_names.at({1, 1002}) == std::set<std::string>{"copies 2"});
  CHECK(thread_names.at({1, 2001}) == std::set<std::string>{"collectives"});

  // Per GPU, one slice per op of the report, with its label; wait slices add up to at least the waits table's
  // waiting time (overlapping waits count once there).
  std::map<int, std::multiset<std::string>> labels;
  for (const auto& o : report["ops"]) labels[o["rank"].get<int>() + 1].insert(o["label"].get<std::string>());
  CHECK(op_names == labels);
  CHECK(labels.at(1).size() == 2 * 7 + 1);  // compute, collective, 2 copies, compute, put, get per step; 1 compute
  for (const auto& w : report["waits"])
    CHECK(waited_us[w["rank"].get<int>() + 1] >= w["waiting_s"].get<double>() * 1e6 - 0.01);
  CHECK(wait_slices > 0);

  // Flows pair up: one start on gpu0's put, one end on gpu1's signal_wait, per step.
  CHECK(flows.size() == 2);
  for (const auto& [id, ends] : flows) {
    REQUIRE(ends.size() == 2);
    const auto& s = ends[0]["ph"] == "s" ? ends[0] : ends[1];
    const auto& f = ends[0]["ph"] == "s" ? ends[1] : ends[0];
    CHECK(s["ph"] == "s");
    CHECK(f["ph"] == "f");
    CHECK(s["name"] == f["name"]);
    CHECK(s["cat"] == f["cat"]);
    CHECK(s["pid"] == 1);
    CHECK(f["pid"] == 2);
    CHECK(s["ts"].get<double>() <= f["ts"].get<double>());
    // Each end lies in its slice: the start in the put, the end inside the signal_wait it satisfied.
    auto in = [&](const json& flow, const char* cat) {
      return std::ranges::any_of(trace["traceEvents"], [&](const json& e) {
        return e["ph"] == "X" && e["cat"] == cat && e["pid"] == flow["pid"] && e["tid"] == flow["tid"] &&
               e["ts"].get<double>() <= flow["ts"].get<double>() &&
               flow["ts"].get<double>() < e["ts"].get<double>() + e["dur"].get<double>();
      });
    };
    CHECK(in(s, "put"));
    CHECK(in(f, "signal_wait"));
  }
  CHECK(counters > 0);
}

TEST_CASE("timeline: snsim run --timeline without --out is bad input") {
  TempDir dir;
  dir.write("s.yaml", SCENARIO);
  const Result r = run_snsim(dir, {"run", "s.yaml", "--timeline"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--timeline requires --out") != std::string::npos);
}

TEST_CASE("timeline: output.timeline_gpus writes some GPUs only, and flows between them") {
  TempDir dir;
  dir.write("s.yaml", SCENARIO + "output: {timeline: true, timeline_gpus: \"0-1\"}\n");
  const Result r = run_snsim(dir, {"run", "s.yaml", "--out", "o", "--quiet"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json trace = json::parse(read_file(dir.path() / "o" / "timeline.json"));
  std::set<int> pids;
  int flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "s" || e["ph"] == "f") ++flows;
  }
  CHECK(pids == std::set<int>{1, 2});
  CHECK(flows == 4);  // gpu0's two puts to gpu1's signal_waits
  CHECK(trace["otherData"]["gpus"] == 4);
  CHECK(trace["otherData"]["gpus_written"] == json::array({0, 1}));
}
