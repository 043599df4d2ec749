// Validation: simulate the twin of every trace record and compare predicted with measured (docs/design.md#validation).
// Calibration and validation records are disjoint: split_records() says which is which, and
// `snsim calibrate` fits only on calibration records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/config.hpp"
#include "sim/statistics.hpp"
#include "validation/trace.hpp"

namespace snsim::validation {

enum class Use { calibration, validation };
std::string_view to_string(Use use);

/// A record and the trace it came from.
struct TracedRecord {
  const Trace* trace = nullptr;
  const TraceRecord* record = nullptr;
};

/// Which records calibrate and which validate. Along each curve (one trace, family, test, variant and ranks,
/// ordered by size) sizes alternate, the smallest calibrating; a curve of one point calibrates (a launch overhead,
/// a barrier); the jitter family only validates (its distributions are fitted from single copies at other sizes), and
/// so do training steps (family `step`, tests bsp and pgas: what the models compose to), while the step family's lone
/// GEMMs only calibrate (they are the compute model's rate, as launch records are the launch costs).
std::vector<Use> split_records(const std::vector<TracedRecord>& records);

/// What the user says of the platform where a trace does not say it, or says otherwise (`snsim validate` and
/// `snsim calibrate`: --platform, --set).
struct PlatformChoice {
  /// A scenario file whose `topology:` section is the platform, instead of the one built from the trace.
  std::optional<std::string> scenario_file;
  /// "gpu=h100", "nodes=12", "gpus_per_node=8" complete or override what the trace says; "topology.KEY=VALUE" is set
  /// on the platform's scenario (e.g. topology.ib=xdr).
  std::vector<std::string> sets;
};

/// The simulated platform of a trace: a scenario topology and where the trace's ranks run on it. From the trace's
/// own words (an imported trace's header `platform`, validation/traces/README.md; a probe trace's GPU names),
/// completed or overridden by the user's PlatformChoice: one node of 2-8 GPUs is an HGX (type hgx), more nodes a
/// superpod of 8-GPU HGX nodes (a node's ranks on its first GPUs), GB200 ranks NVL72 racks. Throws InputError naming
/// the file for a GPU snsim has no preset for (listing the presets) and for a spread over nodes it cannot tell.
struct Platform {
  std::string gpu;                // the GPU preset; empty for a scenario file's topology
  std::string topology;           // YAML flow map of the scenario's topology section; empty: the scenario file's
  std::string scenario_file;      // PlatformChoice::scenario_file
  std::vector<std::string> sets;  // the user's topology.* assignments
  std::vector<int> gpu_of_rank;   // the trace's rank r runs on simulated GPU gpu_of_rank[r]
  std::string description;        // "superpod of 2 HGX H100 nodes (16 GPUs)"
  friend auto operator<=>(const Platform&, const Platform&) = default;
};
Platform platform_of(const Trace& trace, const PlatformChoice& choice = {});

/// A document whose `topology:` section is the platform's (the user's topology.* settings applied).
std::shared_ptr<ConfigDocument> platform_document(const Platform& platform);

/// Simulated values of one record: samples in the record's unit, or why it was not simulated.
struct Simulated {
  std::vector<double> samples;
  std::string skipped;
};

struct TwinOptions {
  std::optional<std::string> params;  // a parameter file or preset for models.params
  int max_samples = 5;                // per record; the jitter family gets its records' full sample counts
  std::uint64_t seed = 1;
  PlatformChoice platform;
  std::string progress;  // heads a progress line per simulation on stderr (sim/progress.hpp); empty: none
};

/// Simulates the twins of `records` (all on `platform`) in one simulation, in a child process.
std::vector<Simulated> simulate_twins(const Platform& platform, const std::vector<TracedRecord>& records,
                                      const TwinOptions& options);

/// One compared quantity of one record: the median, or for jitter records also p99 and p99.9.
struct Comparison {
  std::string trace;
  std::string id;
  std::string family;
  std::string test;
  std::string variant;
  Bytes bytes;
  Use use = Use::validation;
  std::string statistic;  // "median", "p99", "p99.9"
  std::string unit;       // "s" or "B/s"
  double measured = 0;
  double predicted = 0;
  double error = 0;                    // predicted / measured - 1
  std::string source = "snsim-probe";  // the tool that measured it: snsim-probe, nccl-tests, nvbandwidth, ...
  std::string method;                  // how it was timed (timing_method()): "probe", "gate", "events_single", ...
};

struct FamilyBound {
  std::optional<double> median;  // bound on the median |error| over the family's validation comparisons
  std::optional<double> max;     // bound on the largest |error|
};

/// Comparisons known to cross their family's bound, with the reason: reported as misses, left out of the check.
struct KnownMiss {
  std::string family;
  std::string test;
  std::string variant;    // empty: any
  std::string statistic;  // empty: any
  Bytes from{0};          // sizes from..to (inclusive)
  Bytes to{~0ull};
  std::string why;
  bool matches(const Comparison& c) const;
};

struct Bounds {
  std::map<std::string, FamilyBound> families;
  std::vector<KnownMiss> known_misses;
  bool judge_imported = false;  // also judge imported traces (the user's --bounds); else only snsim-probe traces
};

struct FamilySummary {
  std::string family;
  bool imported = false;  // the family's records of other tools' output (a row apart from the probe's)
  int validation_count = 0;
  int calibration_count = 0;
  int skipped = 0;
  std::map<std::string, int> skipped_reasons;  // why records have no twin, counted
  double median_abs_error = 0;
  double max_abs_error = 0;
  FamilyBound bound;
  bool has_bound = false;
  int known_misses = 0;          // validation comparisons left out of the check (Bounds::known_misses)
  double max_abs_error_all = 0;  // the largest |error| with them
  bool pass = true;
  std::string note;  // why a family is not validated, or its lag-1 autocorrelations
};

/// One test of one tool's imported output (all_reduce_perf, device_to_device_memcpy_write_ce, ...).
struct TestSummary {
  std::string source;
  std::string family;
  std::string test;
  int records = 0;  // compared
  int skipped = 0;  // no twin
  double median_abs_error = 0;
  double max_abs_error = 0;
  std::vector<std::string> worst;  // "trace:id +12.3 %", largest |error| first
};

/// One family's validation comparisons timed one way: a fixed cost must not depend on how it is measured.
struct MethodSummary {
  std::string family;
  std::string method;
  int validation_count = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
};

struct ValidationResult {
  std::vector<Comparison> comparisons;
  std::vector<FamilySummary> families;
  std::vector<MethodSummary> methods;  // per family and timing method, known misses included
  std::vector<TestSummary> tests;      // imported traces only
  std::vector<std::string> skipped;    // "trace:id: reason"
  bool pass = true;
  nlohmann::json to_json() const;
  std::string to_csv() const;
};

/// Reads bounds from YAML (`copy: {median: 0.05, max: 0.15}`, `known_misses: [{family, test, variant, statistic,
/// why}]`), errors naming file:line:col.
Bounds load_bounds(const std::string& yaml, const std::string& file_name);

/// Validates every record of `traces`: simulates the twins, compares, summarises per family against `bounds`, and
/// per test for imported traces. Throws InputError for an imported trace none of whose records can be compared
/// (the reasons counted).
ValidationResult validate(const std::vector<Trace>& traces, const Bounds& bounds, const TwinOptions& options);

/// Lag-1 autocorrelation of a series in capture order; 0 when undefined.
double lag1_autocorrelation(const std::vector<double>& series);

}  // namespace snsim::validation
