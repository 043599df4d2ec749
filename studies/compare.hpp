// BSP vs PGAS: a scenario's training workload run once as each, side by side (issue 7; `snsim compare`).
//
// Each schedule runs in its own forked simulation (sim/isolated.hpp) with the same seed; the tables give step time
// (mean and last), MFU, per-GPU compute, communication and idle time, bytes moved by op kind and over the GPUs'
// links, and the PGAS / BSP ratio. A scenario without a `training` workload is an input error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report.hpp"

namespace snsim::studies {

struct CompareOptions {
  std::string scenario;
  std::string out;                    // writes compare.json, bsp/report.json and pgas/report.json here
  std::optional<std::string> seed;    // overrides the scenario's seed
  std::optional<std::string> params;  // a parameter set (preset or file)
  std::vector<std::string> sets;      // --set key.path=value
  bool progress = false;              // each side's progress line on stderr (sim/progress.hpp)
};

/// Bytes a run moved over the GPUs' own links, from its links' kinds (LinkKind): what left the GPUs over the
/// fabric, on the wire and as payload, and what crossed their HBM.
struct GpuLinkBytes {
  double out_of_gpus_wire = 0;
  double out_of_gpus_payload = 0;
  double hbm = 0;
};
GpuLinkBytes gpu_link_bytes(const std::vector<LinkUsage>& links);

/// The two runs and what the comparison says about them.
struct Comparison {
  std::string scenario;  // its name
  std::uint64_t seed = 0;
  std::size_t gpus = 0;
  std::string gpu_model;
  std::vector<int> training;       // the indices of its training workloads
  std::vector<std::string> notes;  // what the runs assume that the scenario does not show (Report::notes)
  /// Per schedule ("bsp", "pgas"): the report, the link bytes, the time split and the training summary's rows.
  nlohmann::json sides;
  nlohmann::json per_gpu_bsp, per_gpu_pgas;  // per GPU: the time split and whom it waited on, in ms
  Table side_by_side, split;
  std::string outcome_bsp, outcome_pgas;

  bool completed() const { return outcome_bsp == "completed" && outcome_pgas == "completed"; }
};

/// Loads and checks the scenario (bad input fails here, before anything forks): what the comparison will run.
Comparison prepare_comparison(const CompareOptions& options);

/// Runs both schedules and fills the comparison's tables.
void run_comparison(const CompareOptions& options, Comparison& comparison);

/// The comparison's files, as written.
struct ComparisonFiles {
  bool plotted = false;
  std::string plot_problem;  // why compare.png is missing; empty when it was drawn
};
/// Writes compare.json, compare.md, compare.png (with matplotlib), bsp/report.json and pgas/report.json into `out`.
ComparisonFiles write_comparison(const std::filesystem::path& out, const Comparison& comparison);

}  // namespace snsim::studies
