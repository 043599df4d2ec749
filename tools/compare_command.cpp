#include "tools/compare_command.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/waits.hpp"
#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "sim/report.hpp"
#include "tools/command_io.hpp"
#include "tools/python.hpp"

namespace snsim::tools {
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

/// One schedule's run, in its own process: the report, the bytes over the GPUs' links and HBM, and where each
/// GPU's time went.
nlohmann::json run_one(const CompareOptions& o, const std::vector<int>& training, std::string_view schedule) {
  const std::string text = run_isolated([&] {
    auto doc = document(o);
    for (int i : training) doc->set(fmt::format("workloads[{}].schedule={}", i, schedule), "snsim compare");
    const auto scenario = workloads::Scenario::load(doc);
    const Report report = scenario.run();
    double wire = 0, payload = 0, hbm = 0;
    for (const auto& l : report.links) {
      if (l.name.starts_with("hbm:"))
        hbm += static_cast<double>(l.wire_bytes.count());
      else if (l.name.starts_with("gpu") && l.name.find("->") != std::string::npos) {  // leaving a GPU
        wire += static_cast<double>(l.wire_bytes.count());
        payload += static_cast<double>(l.payload_bytes.count());
      }
    }
    nlohmann::json out;
    out["report"] = report.to_json();
    out["links"] = {{"bytes_out_of_gpus_wire", wire}, {"bytes_out_of_gpus_payload", payload}, {"bytes_hbm", hbm}};
    out["time_split"] = time_split(report);
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
    for (std::size_t j = 0; j < waits.on.size(); ++j)
      if (waits.on[j] > Seconds{0}) on.push_back({{"rank", j}, {"waiting_ms", waits.on[j].count() * 1e3}});
    rows.push_back({{"rank", waits.rank},
                    {"compute_ms", t["compute_s"].get<double>() * 1e3},
                    {"communication_ms", t["communication_s"].get<double>() * 1e3},
                    {"waiting_ms", t["waiting_s"].get<double>() * 1e3},
                    {"idle_ms", t["idle_s"].get<double>() * 1e3},
                    {"blocked_ms", waits.waiting.count() * 1e3},
                    {"most_waited_on", most ? nlohmann::json(*most) : nlohmann::json(nullptr)},
                    {"on_it_ms", most ? waits.on[static_cast<std::size_t>(*most)].count() * 1e3 : 0.0},
                    {"on", std::move(on)}});
  }
  return rows;
}

/// "gpu3 0.52" (the rank most waited on and the time waited on it, ms), or "-".
std::string waited_on(const nlohmann::json& row) {
  if (row["most_waited_on"].is_null()) return "-";
  return fmt::format("gpu{} {:.2f}", row["most_waited_on"].get<int>(), row["on_it_ms"].get<double>());
}

/// The rows of the first table whose title starts with `prefix`.
const nlohmann::json& table(const nlohmann::json& side, std::string_view prefix) {
  for (const auto& t : side["report"]["tables"])
    if (t["title"].get<std::string>().starts_with(prefix)) return t["rows"];
  throw std::runtime_error(fmt::format("the run has no '{}' table", prefix));
}

/// compare.md: what ran, the two tables and how to read them, and the picture when there is one.
std::string markdown_report(const workloads::Scenario& scenario, const Fabric& fabric, const Table& side_by_side,
                            const Table& split, bool plotted) {
  std::string md = fmt::format("# BSP vs PGAS: {}\n\n", scenario.name());
  md += fmt::format(
      "The scenario's training workload on {} x {} (seed {}), once as BSP (NCCL collectives, barriers) and once as "
      "PGAS (one-sided puts with signals), each in its own simulation with the same seed (`snsim compare`).\n\n",
      fabric.gpus().size(), fabric.device(fabric.gpus().front()).gpu->model, scenario.seed());
  if (plotted)
    md += "![step time, and per GPU compute, communication, waiting and idle time of both schedules](compare.png)\n\n";
  md += "## Side by side\n\n" + format_markdown(side_by_side);
  md +=
      "\nMFU: model FLOPs per step / (step time x GPUs x the GPUs' dense peak). `waiting_ms_per_gpu`: time blocked on "
      "another rank while not computing; `blocked_ms_per_gpu`: all time blocked (also while another stream "
      "computes). pgas/bsp is left out against (nearly) nothing.\n";
  md += "\n## Per GPU\n\n" + format_markdown(split);
  md +=
      "\nTimes in ms over the whole run; compute + comm + waiting + idle is the run's length. A GPU waits (from the "
      "report's `waits` table, workloads/waits.hpp) in a collective or barrier from its arrival until the last member "
      "arrives, blamed on that member; in a signal_wait until the put that made the signal hold, blamed on its "
      "issuer; in a get for the whole get, blamed on the PE read from. `waited_on`: the GPU it waited on longest and "
      "for how long in all. Both reports (`bsp/report.json`, `pgas/report.json`) have every op and the full waits "
      "table.\n";
  return md;
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options) {
  auto* cmd = app.add_subcommand("compare", "run a scenario's training workload as BSP and as PGAS, side by side");
  cmd->add_option("scenario", options.scenario, "scenario YAML file with a `training` workload")->required();
  cmd->add_option("--out", options.out,
                  "write compare.json, compare.md, compare.png (with matplotlib), bsp/report.json and pgas/report.json "
                  "here");
  cmd->add_option("--seed", options.seed, "override the scenario's seed");
  cmd->add_option("--params", options.params, "calibrated parameters: a file or a preset (h200, h100, gb200)");
  cmd->add_option("--set", options.sets, "override one value: key.path=value (YAML scalar), repeatable");
  return cmd;
}

int compare_command(const CompareOptions& options) {
  // Checked here first, so that bad input fails before anything forks.
  auto doc = document(options);
  const auto training = training_workloads(*doc);
  const auto scenario = workloads::Scenario::load(doc);
  const auto& fabric = scenario.fabric();
  fmt::print("# snsim compare {}: {} x {}, seed {}: the training workload as BSP and as PGAS\n", scenario.name(),
             fabric.gpus().size(), fabric.device(fabric.gpus().front()).gpu->model, scenario.seed());

  nlohmann::json sides;
  for (auto schedule : SCHEDULES) sides[std::string(schedule)] = run_one(options, training, schedule);
  const auto& bsp = sides["bsp"];
  const auto& pgas = sides["pgas"];

  Table side_by_side{"step time, utilisation, time per GPU and bytes moved", {"metric", "bsp", "pgas", "pgas/bsp"}, {}};
  auto add_row = [&](const std::string& metric, const nlohmann::json& a, const nlohmann::json& b) {
    nlohmann::json ratio = "-";
    // No ratio against (nearly) nothing: 0.00 ms of BSP idle time would give a ratio in the millions.
    if (a.is_number() && b.is_number() &&
        std::abs(a.get<double>()) > 1e-3 * std::max(std::abs(a.get<double>()), std::abs(b.get<double>())))
      ratio = b.get<double>() / a.get<double>();
    side_by_side.rows.push_back({metric, a, b, ratio});
  };
  const auto& sum_bsp = table(bsp, "training summary");
  const auto& sum_pgas = table(pgas, "training summary");
  for (std::size_t i = 0; i < sum_bsp.size() && i < sum_pgas.size(); ++i)
    if (sum_bsp[i]["metric"] != "schedule") add_row(sum_bsp[i]["metric"], sum_bsp[i]["value"], sum_pgas[i]["value"]);
  for (const auto& [key, value] : bsp["links"].items()) add_row(key, value, pgas["links"][key]);

  const nlohmann::json gpus_bsp = per_gpu(bsp), gpus_pgas = per_gpu(pgas);
  auto mean_of = [](const nlohmann::json& rows, const char* key) {
    double sum = 0;
    for (const auto& r : rows) sum += r[key].get<double>();
    return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
  };
  add_row("waiting_ms_per_gpu", mean_of(gpus_bsp, "waiting_ms"), mean_of(gpus_pgas, "waiting_ms"));
  add_row("blocked_ms_per_gpu", mean_of(gpus_bsp, "blocked_ms"), mean_of(gpus_pgas, "blocked_ms"));
  fmt::print("{}\n", format_table(side_by_side));

  Table split{
      "per GPU over the run (ms): compute, communication, waiting on other ranks, idle; the GPU waited on "
      "most and how long (all its waits on it)",
      {"rank", "bsp_compute", "bsp_comm", "bsp_waiting", "bsp_idle", "bsp_waited_on", "pgas_compute", "pgas_comm",
       "pgas_waiting", "pgas_idle", "pgas_waited_on"},
      {}};
  for (std::size_t r = 0; r < gpus_bsp.size() && r < gpus_pgas.size(); ++r) {
    const auto &b = gpus_bsp[r], &p = gpus_pgas[r];
    split.rows.push_back({fmt::format("gpu{}", r), b["compute_ms"], b["communication_ms"], b["waiting_ms"],
                          b["idle_ms"], waited_on(b), p["compute_ms"], p["communication_ms"], p["waiting_ms"],
                          p["idle_ms"], waited_on(p)});
  }
  fmt::print("{}\n", format_table(split));

  const std::string outcome_bsp = bsp["report"]["outcome"], outcome_pgas = pgas["report"]["outcome"];
  fmt::print("# outcome: bsp {}, pgas {}\n", outcome_bsp, outcome_pgas);
  if (!options.out.empty()) {
    const fs::path out = options.out;
    for (auto schedule : SCHEDULES) make_output_dir((out / std::string(schedule)).string());
    nlohmann::json summary = {{"scenario", scenario.name()}, {"seed", scenario.seed()}};
    for (auto schedule : SCHEDULES) {
      const auto& side = sides[std::string(schedule)];
      write_file(out / std::string(schedule) / "report.json", side["report"].dump(1) + "\n");
      summary[std::string(schedule)] = {{"outcome", side["report"]["outcome"]},
                                        {"summary", table(side, "training summary")},
                                        {"per_gpu", schedule == "bsp" ? gpus_bsp : gpus_pgas},
                                        {"links", side["links"]}};
    }
    summary["comparison"] = side_by_side.rows;
    write_file(out / "compare.json", summary.dump(1) + "\n");
    // The picture is for looking: without matplotlib, one line says why there is none.
    const auto drawn = run_python_script(SNSIM_COMPARE_PLOT_SCRIPT, {(out / "compare.json").string(), "--out",
                                                                     (out / "compare.png").string(), "--quiet"});
    const bool plotted = drawn.status == 0;
    if (!plotted)
      fmt::print("# no plot: {}\n",
                 drawn.status ? fmt::format("plot_compare.py exited with {}", *drawn.status) : drawn.problem);
    write_file(out / "compare.md", markdown_report(scenario, fabric, side_by_side, split, plotted));
    fmt::print("# wrote {}/compare.json, compare.md{}, bsp/report.json, pgas/report.json\n", options.out,
               plotted ? ", compare.png" : "");
  }
  return outcome_bsp == "completed" && outcome_pgas == "completed" ? 0 : 3;
}

}  // namespace snsim::tools
