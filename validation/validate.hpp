// Validation: simulate the twin of every trace record and compare predicted with measured (docs/design.md#validation).
// Calibration and validation records are disjoint: split_records() says which is which, and
// `snsim calibrate` fits only on calibration records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

/// The simulated platform of a trace: its GPU model as a snsim preset name and how many GPUs (at least 2, the
/// smallest HGX). Throws InputError for a GPU snsim has no preset for.
struct Platform {
  std::string gpu;
  int gpus = 2;
  friend auto operator<=>(const Platform&, const Platform&) = default;
};
Platform platform_of(const Trace& trace);

/// Simulated values of one record: samples in the record's unit, or why it was not simulated.
struct Simulated {
  std::vector<double> samples;
  std::string skipped;
};

struct TwinOptions {
  std::optional<std::string> params;  // a parameter file or preset for models.params
  int max_samples = 5;                // per record; the jitter family gets its records' full sample counts
  std::uint64_t seed = 1;
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
  double error = 0;  // predicted / measured - 1
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
};

struct FamilySummary {
  std::string family;
  int validation_count = 0;
  int calibration_count = 0;
  int skipped = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  FamilyBound bound;
  bool has_bound = false;
  int known_misses = 0;          // validation comparisons left out of the check (Bounds::known_misses)
  double max_abs_error_all = 0;  // the largest |error| with them
  bool pass = true;
  std::string note;  // why a family is not validated, or its lag-1 autocorrelations
};

struct ValidationResult {
  std::vector<Comparison> comparisons;
  std::vector<FamilySummary> families;
  std::vector<std::string> skipped;  // "trace:id: reason"
  bool pass = true;
  nlohmann::json to_json() const;
  std::string to_csv() const;
};

/// Reads bounds from YAML (`copy: {median: 0.05, max: 0.15}`, `known_misses: [{family, test, variant, statistic,
/// why}]`), errors naming file:line:col.
Bounds load_bounds(const std::string& yaml, const std::string& file_name);

/// Validates every record of `traces`: simulates the twins, compares, summarises per family against `bounds`.
ValidationResult validate(const std::vector<Trace>& traces, const Bounds& bounds, const TwinOptions& options);

/// Lag-1 autocorrelation of a series in capture order; 0 when undefined.
double lag1_autocorrelation(const std::vector<double>& series);

}  // namespace snsim::validation
