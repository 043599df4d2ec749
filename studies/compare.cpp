#include "studies/compare.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "runtime/waits.hpp"
#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/files.hpp"
#include "sim/isolated.hpp"
#include "sim/statistics.hpp"
#include "studies/inputs.hpp"
#include "studies/python.hpp"
#include "workloads/training/training.hpp"

namespace snsim::studies {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view SCHEDULES[] = {"bsp", "pgas"};

std::shared_ptr<ConfigDocument> document(const CompareOptions& o) {
  auto doc = ConfigDocument::load_file(o.scenario);
  apply_overrides(*doc, o.sets, o.seed, o.params);
  return doc;
}

/// The indices of the scenario's training workloads; none is an input error.
std::vector<int> training_workloads(ConfigDocument& doc) {
  const ConfigNode list = doc.root().child("workloads");
  std::vector<int> found;
  const auto items = list.elements();
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].is_map() && items[i].maybe<std::string>("type") == "training") found.push_back(static_cast<int>(i));
  if (found.empty())
    list.fail("no workload of type training; snsim compare runs a training workload as bsp and as pgas");
  return found;
}

/// Where each GPU's time went over the whole run (the makespan), in seconds: computing (in a kernel), waiting
/// (blocked on another rank, and not computing on another stream), communicating (in any other op: moving data,
/// issuing puts) and idle (in no op). The four add up to the makespan. Needs the report's wait spans, which only the
/// run that made it has: computed in the child.
nlohmann::json time_split(const Report& report) {
  using Spans = std::vector<std::pair<Seconds, Seconds>>;
  const std::size_t n = report.waits.size();
  std::vector<Spans> compute(n), blocked(n), any(n);
  for (const auto& o : report.ops) {
    const auto r = static_cast<std::size_t>(o.rank);
    if (r >= n) continue;
    if (o.kind == "compute") compute[r].emplace_back(o.start, o.end);
    any[r].emplace_back(o.start, o.end);
  }
  for (const auto& w : report.wait_spans) {
    const auto r = static_cast<std::size_t>(w.rank);
    blocked[r].emplace_back(w.start, w.start + w.duration);
    any[r].emplace_back(w.start, w.start + w.duration);
  }
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < n; ++r) {
    Spans compute_or_blocked = compute[r];
    compute_or_blocked.insert(compute_or_blocked.end(), blocked[r].begin(), blocked[r].end());
    const Seconds in_compute = workloads::covered(compute[r]);
    const Seconds in_either = workloads::covered(compute_or_blocked);
    const Seconds in_any = workloads::covered(any[r]);
    out.push_back({{"compute_s", in_compute.count()},
                   {"waiting_s", (in_either - in_compute).count()},
                   {"communication_s", (in_any - in_either).count()},
                   {"idle_s", std::max(0.0, (report.simulated_time - in_any).count())}});
  }
  return out;
}

/// One schedule's run, in its own process: the report, the bytes over the GPUs' links and HBM, where each GPU's
/// time went, and the training summary's rows.
nlohmann::json run_one(const CompareOptions& o, const std::vector<int>& training, std::string_view schedule) {
  const std::string text = run_isolated([&] {
    auto doc = document(o);
    for (int i : training) doc->set(fmt::format("workloads[{}].schedule={}", i, schedule), "snsim compare");
    const auto scenario = workloads::Scenario::load(doc);
    const Report report = scenario.run({}, o.progress ? fmt::format("snsim compare: {}", schedule) : std::string{});
    const GpuLinkBytes bytes = gpu_link_bytes(report.links);
    const Table* summary = find_table(report.tables, workloads::training::SUMMARY_TABLE);
    if (!summary)
      throw std::runtime_error(fmt::format("the run has no '{}' table", workloads::training::SUMMARY_TABLE));
    nlohmann::json out;
    out["report"] = report.to_json();
    out["links"] = {{"bytes_out_of_gpus_wire", bytes.out_of_gpus_wire},
                    {"bytes_out_of_gpus_payload", bytes.out_of_gpus_payload},
                    {"bytes_hbm", bytes.hbm}};
    out["time_split"] = time_split(report);
    out["summary"] = to_json(*summary)["rows"];
    return out.dump();
  });
  return nlohmann::json::parse(text);
}

/// Per GPU: the time split of one side and its row of the report's waits table (who it waited on, and how long in
/// all: also while computing on another stream), in milliseconds.
nlohmann::json per_gpu(const nlohmann::json& side) {
  nlohmann::json rows = nlohmann::json::array();
  const auto& split = side["time_split"];
  for (const auto& w : side["report"]["waits"]) {
    const RankWaits waits = rank_waits_from_json(w);
    const auto& t = split.at(static_cast<std::size_t>(waits.rank));
    const auto most = waits.most_waited_on();
    nlohmann::json on = nlohmann::json::array();
    for (const auto& [j, time] : waits.on)
      if (time > Seconds{0}) on.push_back({{"rank", j}, {"waiting_ms", time.count() * 1e3}});
    rows.push_back({{"rank", waits.rank},
                    {"compute_ms", t["compute_s"].get<double>() * 1e3},
                    {"communication_ms", t["communication_s"].get<double>() * 1e3},
                    {"waiting_ms", t["waiting_s"].get<double>() * 1e3},
                    {"idle_ms", t["idle_s"].get<double>() * 1e3},
                    {"blocked_ms", waits.waiting.count() * 1e3},
                    {"most_waited_on", most ? nlohmann::json(*most) : nlohmann::json(nullptr)},
                    {"on_it_ms", most ? waits.on.at(*most).count() * 1e3 : 0.0},
                    {"on", std::move(on)}});
  }
  return rows;
}

/// "gpu3 0.52" (the rank most waited on and the time waited on it, ms), or "-".
std::string waited_on(const nlohmann::json& row) {
  if (row["most_waited_on"].is_null()) return "-";
  return fmt::format("gpu{} {:.2f}", row["most_waited_on"].get<int>(), row["on_it_ms"].get<double>());
}

/// compare.md: what ran, the two tables and how to read them, and the picture when there is one.
std::string markdown_report(const Comparison& c, bool plotted) {
  std::string md = fmt::format("# BSP vs PGAS: {}\n\n", c.scenario);
  md += fmt::format(
      "The scenario's training workload on {} x {} (seed {}), once as BSP (NCCL collectives, barriers) and once as "
      "PGAS (one-sided puts with signals), each in its own simulation with the same seed (`snsim compare`).\n\n",
      c.gpus, c.gpu_model, c.seed);
  if (plotted)
    md += "![step time, and per GPU compute, communication, waiting and idle time of both schedules](compare.png)\n\n";
  md += "## Side by side\n\n" + format_markdown(c.side_by_side);
  md +=
      "\nMFU: model FLOPs per step / (step time x GPUs x the GPUs' dense peak). `waiting_ms_per_gpu`: time blocked on "
      "another rank while not computing; `blocked_ms_per_gpu`: all time blocked (also while another stream "
      "computes). pgas/bsp is left out against (nearly) nothing.\n";
  md += "\n## Per GPU\n\n" + format_markdown(c.split);
  md +=
      "\nTimes in ms over the whole run; compute + comm + waiting + idle is the run's length. A GPU waits (from the "
      "report's `waits` table, runtime/waits.hpp) in a collective or barrier from its arrival until the last member "
      "arrives, blamed on that member; in a signal_wait until the put that made the signal hold, blamed on its "
      "issuer; in a get for the whole get, blamed on the PE read from. `waited_on`: the GPU it waited on longest and "
      "for how long in all. Both reports (`bsp/report.json`, `pgas/report.json`) have every op and the full waits "
      "table.\n";
  return md;
}

}  // namespace

GpuLinkBytes gpu_link_bytes(const std::vector<LinkUsage>& links) {
  GpuLinkBytes bytes;
  for (const auto& l : links) {
    if (l.kind == LinkKind::hbm) {
      bytes.hbm += static_cast<double>(l.wire_bytes.count());
    } else if (l.kind == LinkKind::gpu_egress) {
      bytes.out_of_gpus_wire += static_cast<double>(l.wire_bytes.count());
      bytes.out_of_gpus_payload += static_cast<double>(l.payload_bytes.count());
    }
  }
  return bytes;
}

Comparison prepare_comparison(const CompareOptions& options) {
  auto doc = document(options);
  Comparison c;
  c.training = training_workloads(*doc);
  const auto scenario = workloads::Scenario::load(doc);
  const auto& fabric = scenario.fabric();
  c.scenario = scenario.name();
  c.seed = scenario.seed();
  c.notes = scenario.notes();
  c.gpus = fabric.gpus().size();
  c.gpu_model = fabric.device(fabric.gpus().front()).gpu->model;
  return c;
}

void run_comparison(const CompareOptions& options, Comparison& c) {
  for (auto schedule : SCHEDULES) c.sides[std::string(schedule)] = run_one(options, c.training, schedule);
  const auto& bsp = c.sides["bsp"];
  const auto& pgas = c.sides["pgas"];

  c.side_by_side = {"step time, utilisation, time per GPU and bytes moved", {"metric", "bsp", "pgas", "pgas/bsp"}, {}};
  auto add_row = [&](const std::string& metric, const nlohmann::json& a, const nlohmann::json& b) {
    nlohmann::json ratio = "-";
    // No ratio against (nearly) nothing: 0.00 ms of BSP idle time would give a ratio in the millions.
    if (a.is_number() && b.is_number() &&
        std::abs(a.get<double>()) > 1e-3 * std::max(std::abs(a.get<double>()), std::abs(b.get<double>())))
      ratio = b.get<double>() / a.get<double>();
    c.side_by_side.rows.push_back({metric, a, b, ratio});
  };
  const auto& sum_bsp = bsp["summary"];
  const auto& sum_pgas = pgas["summary"];
  for (std::size_t i = 0; i < sum_bsp.size() && i < sum_pgas.size(); ++i)
    if (sum_bsp[i]["metric"] != "schedule") add_row(sum_bsp[i]["metric"], sum_bsp[i]["value"], sum_pgas[i]["value"]);
  for (const auto& [key, value] : bsp["links"].items()) add_row(key, value, pgas["links"][key]);

  c.per_gpu_bsp = per_gpu(bsp);
  c.per_gpu_pgas = per_gpu(pgas);
  auto mean_of = [](const nlohmann::json& rows, const char* key) {
    std::vector<double> values;
    for (const auto& r : rows) values.push_back(r[key].get<double>());
    return mean(values);
  };
  add_row("waiting_ms_per_gpu", mean_of(c.per_gpu_bsp, "waiting_ms"), mean_of(c.per_gpu_pgas, "waiting_ms"));
  add_row("blocked_ms_per_gpu", mean_of(c.per_gpu_bsp, "blocked_ms"), mean_of(c.per_gpu_pgas, "blocked_ms"));

  c.split = {
      "per GPU over the run (ms): compute, communication, waiting on other ranks, idle; the GPU waited on "
      "most and how long (all its waits on it)",
      {"rank", "bsp_compute", "bsp_comm", "bsp_waiting", "bsp_idle", "bsp_waited_on", "pgas_compute", "pgas_comm",
       "pgas_waiting", "pgas_idle", "pgas_waited_on"},
      {}};
  for (std::size_t r = 0; r < c.per_gpu_bsp.size() && r < c.per_gpu_pgas.size(); ++r) {
    const auto &b = c.per_gpu_bsp[r], &p = c.per_gpu_pgas[r];
    c.split.rows.push_back({fmt::format("gpu{}", r), b["compute_ms"], b["communication_ms"], b["waiting_ms"],
                            b["idle_ms"], waited_on(b), p["compute_ms"], p["communication_ms"], p["waiting_ms"],
                            p["idle_ms"], waited_on(p)});
  }
  c.outcome_bsp = bsp["report"]["outcome"];
  c.outcome_pgas = pgas["report"]["outcome"];
}

ComparisonFiles write_comparison(const fs::path& out, const Comparison& c) {
  for (auto schedule : SCHEDULES) make_output_dir((out / std::string(schedule)).string());
  nlohmann::json summary = {{"scenario", c.scenario}, {"seed", c.seed}};
  for (auto schedule : SCHEDULES) {
    const auto& side = c.sides[std::string(schedule)];
    write_file(out / std::string(schedule) / "report.json", side["report"].dump(1) + "\n");
    summary[std::string(schedule)] = {{"outcome", side["report"]["outcome"]},
                                      {"summary", side["summary"]},
                                      {"per_gpu", schedule == "bsp" ? c.per_gpu_bsp : c.per_gpu_pgas},
                                      {"links", side["links"]}};
  }
  summary["comparison"] = c.side_by_side.rows;
  write_file(out / "compare.json", summary.dump(1) + "\n");
  // The picture is for looking: without matplotlib, one line says why there is none.
  const auto drawn = run_plot_script(
      "plot_compare.py", {(out / "compare.json").string(), "--out", (out / "compare.png").string(), "--quiet"});
  ComparisonFiles files;
  files.plotted = drawn.status == 0;
  if (!files.plotted)
    files.plot_problem = drawn.status ? fmt::format("plot_compare.py exited with {}", *drawn.status) : drawn.problem;
  write_file(out / "compare.md", markdown_report(c, files.plotted));
  return files;
}

}  // namespace snsim::studies
