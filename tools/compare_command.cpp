#include "tools/compare_command.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"
#include "sim/report.hpp"
#include "tools/command_io.hpp"
#include "workloads/scenario.hpp"

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

/// One schedule's run, in its own process: the report, and the bytes over the GPUs' links and HBM.
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
    return out.dump();
  });
  return nlohmann::json::parse(text);
}

/// The rows of the first table whose title starts with `prefix`.
const nlohmann::json& table(const nlohmann::json& side, std::string_view prefix) {
  for (const auto& t : side["report"]["tables"])
    if (t["title"].get<std::string>().starts_with(prefix)) return t["rows"];
  throw std::runtime_error(fmt::format("the run has no '{}' table", prefix));
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options) {
  auto* cmd = app.add_subcommand("compare", "run a scenario's training workload as BSP and as PGAS, side by side");
  cmd->add_option("scenario", options.scenario, "scenario YAML file with a `training` workload")->required();
  cmd->add_option("--out", options.out, "write compare.json, bsp/report.json and pgas/report.json here");
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
  fmt::print("{}\n", format_table(side_by_side));

  Table per_gpu{"per GPU over all steps: compute, communication only, idle (ms)",
                {"rank", "bsp_compute", "bsp_comm", "bsp_idle", "pgas_compute", "pgas_comm", "pgas_idle"},
                {}};
  const auto& gpus_bsp = table(bsp, "training: time per GPU");
  const auto& gpus_pgas = table(pgas, "training: time per GPU");
  for (std::size_t r = 0; r < gpus_bsp.size() && r < gpus_pgas.size(); ++r)
    per_gpu.rows.push_back({gpus_bsp[r]["rank"], gpus_bsp[r]["compute_ms"], gpus_bsp[r]["comm_only_ms"],
                            gpus_bsp[r]["idle_ms"], gpus_pgas[r]["compute_ms"], gpus_pgas[r]["comm_only_ms"],
                            gpus_pgas[r]["idle_ms"]});
  fmt::print("{}\n", format_table(per_gpu));

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
                                        {"per_gpu", table(side, "training: time per GPU")},
                                        {"links", side["links"]}};
    }
    summary["comparison"] = side_by_side.rows;
    write_file(out / "compare.json", summary.dump(1) + "\n");
  }
  return outcome_bsp == "completed" && outcome_pgas == "completed" ? 0 : 3;
}

}  // namespace snsim::tools
