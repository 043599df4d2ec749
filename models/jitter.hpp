// Variability: per-transfer and per-kernel jitter, per-GPU variation drawn once per run, and explicit slow GPUs.
//
//   models:
//     jitter:
//       latency:   {dist: empirical, samples: [0.97, 1.0, 1.12]}  # factor on each transfer's fixed costs
//       bandwidth: {dist: lognormal, sigma: 0.004}                # factor on each transfer's achievable rate
//       compute:   {dist: normal, sigma: 0.002}                   # factor on each kernel's duration
//       host:      {dist: empirical, samples: [0.9, 1.0, 3.0]}    # factor on each host runtime call's CPU time
//     variation:                                                  # drawn once per GPU per run
//       clock: {dist: normal, sigma: 0.005}                       # factor on the GPU's FLOP rate
//       hbm:   {dist: normal, sigma: 0.02}                        # factor on the GPU's HBM bandwidth
//     slow: [{gpu: 3, compute: 1.05, hbm: 1.02}]                  # compute time x1.05, HBM time x1.02 on GPU 3
//
// Every factor is drawn from its own seeded stream (sim/random.hpp): "jitter.latency.gpu3" is GPU 3's stream of
// latency factors, drawn by the actor running on GPU 3 in its program's order, so one GPU's draws do not depend on
// what the others do. `snsim calibrate` writes these sections from traces (an empirical distribution of quantile
// factors with median 1), so their syntax is part of the interface. By default nothing varies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "sim/fabric.hpp"
#include "sim/random.hpp"

namespace snsim::models {

/// The distribution of a positive factor (1 = nominal):
///   {dist: none}                              always 1 (draws nothing)
///   {dist: constant, value: 0.5}              always `value`
///   {dist: normal, sigma: 0.01, mean: 1}      N(mean, sigma), a draw <= 0 is drawn again (sigma <= mean / 3)
///   {dist: lognormal, sigma: 0.004, median: 1}  median x exp(sigma Z): skewed, always > 0, mean median x e^(s^2/2)
///   {dist: empirical, samples: [0.97, 1.0]}   one of the samples, each equally likely (a bootstrap)
class Distribution {
 public:
  enum class Kind { none, constant, normal, lognormal, empirical };

  /// `none`.
  Distribution() = default;
  /// Reads `{dist: ..., ...}`; errors name the key and list the known distributions.
  static Distribution parse(const ConfigNode& node);
  static Distribution constant(double value);
  static Distribution normal(double mean, double sigma);
  static Distribution lognormal(double sigma, double median = 1);
  static Distribution empirical(std::vector<double> samples);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::none; }
  /// One factor; `none` returns 1 without touching the stream.
  double draw(RandomStream& rng) const;
  double median() const { return quantile(0.5); }
  /// The q-quantile, 0 <= q <= 1 (empirical: linear between order statistics; normal: not truncated).
  double quantile(double q) const;

 private:
  Kind kind_ = Kind::none;
  double center_ = 1;            // constant value, normal mean, lognormal median
  double sigma_ = 0;             // normal: absolute; lognormal: of the log
  std::vector<double> samples_;  // empirical, sorted
};

std::string_view to_string(Distribution::Kind kind);
/// A distribution in the reference's default column: its kind ("none").
std::string param_text(const Distribution& d);

/// Factors drawn per transfer and per kernel (models.jitter).
class JitterModel final : public Model {
 public:
  Distribution latency;    // on a transfer's fixed costs: route latency, engine setup, launch, protocol step latency
  Distribution bandwidth;  // on a transfer's achievable rate
  Distribution compute;    // on a kernel's duration
  Distribution host;       // on the CPU time of a host's runtime call (a launch, a synchronisation): its tail is
                           // heavy (the crosscheck's p99.9 of a copy between host-recorded events is 3.5 x its median)
};

/// Factors drawn once per GPU per run (models.variation).
class VariationModel final : public Model {
 public:
  Distribution clock;  // on the GPU's FLOP rate
  Distribution hbm;    // on the GPU's HBM bandwidth
};

/// The range of a slow GPU's factors: beyond 1,000 a GPU is lost rather than slow (a failure's what-if), and a factor
/// near a double's limit would make its kernels' times infinite; below 1/1,000 it would be a different GPU.
inline constexpr double MIN_SLOW_FACTOR = 1e-3;
inline constexpr double MAX_SLOW_FACTOR = 1'000;

/// One explicitly slowed (or, with factors < 1, sped-up) GPU.
struct SlowGpu {
  int gpu = 0;
  double compute = 1;  // multiplies the FLOP part of its kernels' time
  double hbm = 1;      // multiplies the HBM part of its kernels' and local copies' time
};

/// Explicit slow GPUs (models.slow, a list).
class SlowModel final : public Model {
 public:
  std::vector<SlowGpu> gpus;
  /// Fails on the entry's `gpu` key if it names a GPU the topology lacks (needs the fabric: Scenario::load).
  void check(int gpu_count) const;
  /// The entry of a GPU, if it has one.
  const SlowGpu* find(int gpu) const;

 private:
  friend std::unique_ptr<Model> make_slow(const ConfigNode& node);
  std::vector<ConfigNode> gpu_keys_;  // where each entry's `gpu` is written, for check()
};

/// The parameters of models.jitter, models.variation and of one element of models.slow, declared once.
const ParamTable<JitterModel>& jitter_params();
const ParamTable<VariationModel>& variation_params();
const ParamTable<SlowGpu>& slow_gpu_params();
Registry<Model>::Entry jitter_model_entry();
Registry<Model>::Entry variation_model_entry();
Registry<Model>::Entry slow_model_entry();

/// The run-time side of the three models for one run: the streams and the per-GPU draws.
class Variability {
 public:
  Variability(const JitterModel& jitter, const VariationModel& variation, const SlowModel& slow, const Fabric& fabric,
              std::uint64_t seed);

  /// Per-transfer factors, drawn from `issuer`'s streams (the device whose actor issues the transfer).
  double latency_factor(DeviceId issuer);
  double bandwidth_factor(DeviceId issuer);
  /// Per-kernel duration factor, from the GPU's stream.
  double compute_factor(DeviceId gpu);
  /// Per host runtime call factor, from the stream of the GPU whose actor makes the call.
  double host_factor(DeviceId gpu);
  /// The GPU's rate factors for the whole run: variation / slow (1 for devices that are not GPUs).
  double flop_rate(DeviceId gpu) const { return flop_rate_.at(gpu); }
  double hbm_rate(DeviceId gpu) const { return hbm_rate_.at(gpu); }
  /// Slows a GPU from now on (a `slowed` failure, scenario/failures.hpp): kernels that read its rates later take
  /// `compute` times longer on the FLOP side and `hbm` times on the HBM side, on top of models.slow.
  void slow(DeviceId gpu, double compute, double hbm);

 private:
  /// Streams by DeviceId, created only for distributions that draw.
  struct Streams {
    Distribution dist;
    std::vector<std::optional<RandomStream>> by_device;
    double draw(DeviceId device);
  };
  Streams latency_, bandwidth_, compute_, host_;
  std::vector<double> flop_rate_, hbm_rate_;  // by DeviceId
};

}  // namespace snsim::models
