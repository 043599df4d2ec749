// The toolkit of `snsim calibrate`'s fits (validation/fits/*.cpp, one file per model family): the calibration
// records, the platform the traces ran on, and how a fit records a parameter with its provenance.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/models.hpp"
#include "sim/fabric.hpp"
#include "validation/calibrate.hpp"
#include "validation/validate.hpp"

namespace snsim::validation {

/// The platform of the traces, from the same presets and model defaults the simulator uses.
struct FitPlatform {
  Fabric fabric;
  models::Models defaults;
  RouteCost peer;  // GPU 0 -> GPU 1
  GpuSpec gpu;
};

class Fit {
 public:
  Fit(std::vector<TracedRecord> calibration, FitPlatform platform, Calibration& out);

  const FitPlatform& platform() const { return platform_; }

  /// Calibration records of `family` whose test is one of `tests` and whose variant is `variant` (any: nullopt), and
  /// `also`, timed by `method` (timing_method(): snsim-probe's records unless a fit asks for another program's).
  std::vector<TracedRecord> select(Family family, const std::vector<std::string>& tests,
                                   std::optional<std::string_view> variant,
                                   const std::function<bool(const TraceRecord&)>& also = {},
                                   std::string_view method = "probe") const;
  /// False, with a note, when fewer than `needed` records are there to fit `what`.
  bool enough(const std::vector<TracedRecord>& records, std::size_t needed, std::string_view what);

  /// Records a fitted parameter under `models.<key>`. Times and numbers are also kept for later fits (value()).
  void add_time(const std::string& key, Seconds value, std::string method, const std::vector<TracedRecord>& from);
  void add_number(const std::string& key, double value, std::string method, const std::vector<TracedRecord>& from);
  void add_yaml(const std::string& key, std::string yaml, std::string method, const std::vector<TracedRecord>& from);
  /// A value fitted earlier (seconds for times), if any.
  std::optional<double> value(const std::string& key) const;
  /// A fitted value, else the model default `fallback`.
  double value_or(const std::string& key, double fallback) const { return value(key).value_or(fallback); }

  /// A negative time becomes 0, with a note: a fixed cost cannot be negative.
  Seconds non_negative(Seconds value, const std::string& key);
  void note(std::string text) { out_.notes.push_back(std::move(text)); }

  /// The weighted mean of `residual(record)`, weights 1/median^2: the intercept of a line whose slope is known,
  /// fitted on relative errors.
  static double intercept(const std::vector<TracedRecord>& records,
                          const std::function<double(const TraceRecord&)>& residual);
  /// Weighted least squares on relative errors: rows . x ~ median of each record.
  static std::vector<double> relative_least_squares(const std::vector<TracedRecord>& records,
                                                    const std::function<std::vector<double>(const TraceRecord&)>& row,
                                                    const std::function<double(const TraceRecord&)>& target = {});

 private:
  std::vector<TracedRecord> calibration_;
  FitPlatform platform_;
  Calibration& out_;
  std::map<std::string, double> values_;
};

namespace fits {
/// The step family's bursts of GEMMs with idle gaps (duty_gap_*: the power cap's records): those whose GEMMs ran at
/// the fastest kernel time (within 1 %: never throttled) and the others. `gap`: compute.queue_gap, the part of a
/// sample that is not the kernel.
struct GemmBursts {
  std::vector<TracedRecord> all, boost, throttled;
  double gap = 0;
  double kernel(const TraceRecord& r) const { return r.median - gap; }
};
GemmBursts gemm_bursts(const Fit& fit);

/// A lone device-local copy's own cost (ce_local or sm_local: copy.{ce,sm}.local_setup and its memory time at the
/// fitted local rates), or an empty function before the local copy fit has run.
std::function<double(const TraceRecord&)> local_copy_cost(const Fit& fit);

// One function per model family, in the order calibrate() runs them (later fits may use earlier values).
void copies(Fit& fit);
void launches(Fit& fit);
void jitter(Fit& fit);
void collectives(Fit& fit);
void pgas(Fit& fit);
void uvm(Fit& fit);
void compute(Fit& fit);
void gemms(Fit& fit);
void memory_kernels(Fit& fit);
void attention(Fit& fit);
}  // namespace fits

}  // namespace snsim::validation
