// Calibration: model parameters fitted from the calibration records of traces (split_records), written as a
// parameter file that `models.params` / `--params` overlay onto the defaults, with provenance: for every parameter,
// how it was fitted and from which records.
//
// Fits are weighted least squares on the same formulas the simulator runs for a lone op (time = fixed costs +
// bytes / rate), weighted by 1/measured so that every size counts by its relative error; distributions are the
// empirical quantiles of samples normalised by their record's median.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "validation/trace.hpp"
#include "validation/validate.hpp"

namespace snsim::validation {

struct FittedParameter {
  std::string key;                   // under models:, dotted: "copy.ce.efficiency"
  std::string value;                 // YAML: "0.879", "9.1us", "{dist: empirical, samples: [...]}"
  std::string method;                // how it was fitted
  std::vector<std::string> records;  // "trace.jsonl:record-id" of every record it was fitted on
};

struct Calibration {
  std::vector<std::string> traces;
  std::vector<std::string> imported;  // those of them that are other tools' output: every record calibrates
  std::vector<FittedParameter> parameters;
  std::vector<std::string> notes;  // fits skipped for lack of records, clamped values

  /// The parameter file: `models:` nested by key, then `calibration:` with the provenance.
  std::string to_yaml(const std::string& command) const;
};

/// Fits every parameter the traces' calibration records determine. Throws InputError when the traces span more
/// than one platform (a parameter file describes one GPU model).
Calibration calibrate(const std::vector<Trace>& traces, const PlatformChoice& choice = {});

/// Checks that `yaml` is a parameter file the models accept (every key known, every value in range); InputError
/// naming `file_name` otherwise.
void check_params(const std::string& yaml, const std::string& file_name);

/// Weighted linear least squares: the x minimising sum_i w_i (rows_i . x - y_i)^2. Throws std::invalid_argument
/// for a singular system.
std::vector<double> least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                                  const std::vector<double>& weights);
/// The point near `start` where `cost` is least: Nelder and Mead's simplex search, first steps `step` along each
/// axis, stopped after `evaluations` calls of `cost` or when the simplex's costs agree within `tolerance`. For the
/// fits whose model is no sum of known columns (a GEMM's time is a max over tiles and waves).
std::vector<double> minimize(const std::function<double(const std::vector<double>&)>& cost, std::vector<double> start,
                             const std::vector<double>& step, int evaluations, double tolerance = 1e-9);

}  // namespace snsim::validation
