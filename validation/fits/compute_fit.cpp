// Fits of the compute model's tensor rate and power-capped clocks (models/compute.hpp) from the probe's `step`
// family: bursts of 20 cuBLAS bf16 GEMMs of 4096^3, each burst followed by an idle gap of 0 - 2 ms
// (tools/probe/src/families/step.cu, test gemm, variants duty_gap_<us>, extra `duty`: the measured share of time in
// GEMMs). Kernels are queued back to back, so the model's time per GEMM is
//   t = queue_gap + gemm_time(shape, rate),  rate = min(1, (power_duty / duty)^(1/k))
// with queue_gap fitted before (fits::launches) and the GEMM model by shape before (fits::gemms).
//   1. The bursts with the longest gaps run at boost clock (their GEMMs take the least time, and the two longest
//      gaps agree): the roofline's flop_efficiency (2 m n k / (peak_bf16 x efficiency), for kernels of unknown
//      shape) from them.
//   2. The others are throttled: -ln rate = (ln duty - ln power_duty) / k, rate the one at which the GEMM model
//      takes a burst's kernel time t - queue_gap, a line in ln duty: k and the bursts' power_duty from its slope and
//      intercept (least squares).
//   3. The bursts' operands are low-entropy (k/1024 - 1: few mantissa bits), which draw less power than a training
//      job's data. compute/gemm_sustained ran 25 s of GEMMs on normal-distributed operands at a duty of 1: the rate r
//      at which the GEMM model (fits::gemms, run before) takes their time gives power_duty = r^k for normal data,
//      and the bursts' duty over it low_entropy_power (a duty d of low-entropy data draws what d x
//      low_entropy_power of normal data does). Their time, not the clock read during them: under the power cap the
//      reported clock is not the tensor rate (ComputeModel::clock_elasticity).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "validation/fit.hpp"
#include "validation/twins.hpp"

namespace snsim::validation::fits {
namespace {

constexpr std::string_view DUTY_PREFIX = "duty_gap_";
// GEMMs within this share of the fastest run at the same clock (the probe's run-to-run spread is ~0.3 %).
constexpr double SAME_CLOCK = 0.01;

/// The GEMM model as fits::gemms left it: its fitted values, else the defaults.
models::ComputeModel fitted_gemm_model(const Fit& fit) {
  models::ComputeModel m = *fit.platform().defaults.compute;
  const auto number = [&](const char* key, double& field) {
    field = fit.value_or(std::string("compute.") + key, field);
  };
  const auto time = [&](const char* key, Seconds& field) {
    field = Seconds{fit.value_or(std::string("compute.") + key, field.count())};
  };
  number("gemm_efficiency", m.gemm_efficiency);
  number("gemm_efficiency_fp8", m.gemm_efficiency_fp8);
  number("gemm_efficiency_tf32", m.gemm_efficiency_tf32);
  number("gemm_efficiency_tf32_one_transpose", m.gemm_efficiency_tf32_one_transpose);
  number("gemm_efficiency_tf32_two_transposes", m.gemm_efficiency_tf32_two_transposes);
  number("gemm_efficiency_unaligned", m.gemm_efficiency_unaligned);
  time("gemm_tile_overhead", m.gemm_tile_overhead);
  time("gemm_ramp", m.gemm_ramp);
  number("clock_elasticity", m.clock_elasticity);
  number("boost_reading_rate", m.boost_reading_rate);
  return m;
}

/// The rate factor (share of the boost clock's) at which `model` runs `gemm` in `time`, by bisection (a GEMM's time
/// falls with the rate, not quite as 1/rate: part of it is its ramp).
double rate_for(const models::ComputeModel& model, const GpuSpec& gpu, const models::Gemm& gemm, Dtype dtype,
                double time) {
  double low = 0.05, high = 2.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (low + high);
    (model.gemm_time(gpu, gemm, dtype, mid).count() > time ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

/// Step 3: power_duty on normal data, from the rate at which sustained GEMMs ran (their time against `model`, the GEMM
/// model fits::gemms left), and low_entropy_power from the throttled `bursts`' duty
/// (`bursts_duty`, on low-entropy data) over it. Without sustained records, the bursts' duty stands for both.
void normal_data_power(Fit& fit, const models::ComputeModel& model, double exponent, double bursts_duty,
                       const std::vector<TracedRecord>& bursts) {
  const auto sustained = fit.select(
      Family::compute, {"gemm_sustained"}, std::nullopt,
      [](const TraceRecord& r) { return std::holds_alternative<RecordedGemm>(recorded_gemm(r)) && r.median > 0; },
      "events_per_chunk");
  if (sustained.empty()) {
    fit.note("compute.power_duty: no sustained GEMMs on normal data: the low-entropy bursts' duty stands for it");
    fit.add_number(
        "compute.power_duty", bursts_duty,
        "ln(t / t_boost) = (ln duty - ln power_duty) / exponent, least squares over the throttled GEMM bursts", bursts);
    return;
  }
  const auto& gpu = fit.platform().gpu;
  const double gap = fit.value_or("compute.queue_gap", fit.platform().defaults.compute->queue_gap.count());
  double log_rate = 0;  // the mean of ln rate over the records, each weighted by its seconds
  double seconds = 0;
  for (const auto& t : sustained) {
    const auto gemm = std::get<RecordedGemm>(recorded_gemm(*t.record));
    const double rate = std::min(1.0, rate_for(model, gpu, gemm.gemm, gemm.dtype, t.record->median - gap));
    const double w = std::max(1.0, extra_number(*t.record, "seconds", 1));
    log_rate += w * std::log(rate);
    seconds += w;
  }
  const double duty = std::min(1.0, std::exp(exponent * log_rate / seconds));
  fit.add_number(
      "compute.power_duty", duty,
      fmt::format("r^exponent, r the rate (share of boost) at which normal-data GEMMs ran back to back "
                  "(duty 1): queue_gap + gemm_time at r = their time; exponent from the GEMM bursts ({:.3g})",
                  exponent),
      sustained);
  fit.add_number("compute.low_entropy_power", std::clamp(duty / bursts_duty, 0.05, 1.0),
                 fmt::format("power_duty on normal data over the low-entropy GEMM bursts' power_duty ({:.3g}): "
                             "the bursts throttle at a duty that many times higher",
                             bursts_duty),
                 [&] {
                   auto both = sustained;
                   both.insert(both.end(), bursts.begin(), bursts.end());
                   return both;
                 }());
}

}  // namespace

GemmBursts gemm_bursts(const Fit& fit) {
  GemmBursts out;
  out.all = fit.select(Family::step, {"gemm"}, std::nullopt, [](const TraceRecord& r) {
    return r.variant.starts_with(DUTY_PREFIX) && extra_number(r, "flops") > 0 && extra_number(r, "duty") > 0;
  });
  out.gap = fit.value_or("compute.queue_gap", fit.platform().defaults.compute->queue_gap.count());
  if (out.all.empty()) return out;
  const double fastest =
      std::ranges::min(out.all, {}, [](const TracedRecord& t) { return t.record->median; }).record->median - out.gap;
  for (const auto& t : out.all)
    (out.kernel(*t.record) <= fastest * (1 + SAME_CLOCK) ? out.boost : out.throttled).push_back(t);
  return out;
}

void compute(Fit& fit) {
  const auto bursts = gemm_bursts(fit);
  const auto& records = bursts.all;
  if (!fit.enough(records, 3, "compute.flop_efficiency and the power-capped clock")) return;
  const auto& gpu = fit.platform().gpu;
  const double peak = gpu.peak(Dtype::bf16).value_or(gpu.dense_bf16).count();
  const auto kernel = [&](const TraceRecord& r) { return bursts.kernel(r); };
  const auto& boost = bursts.boost;
  const auto& throttled = bursts.throttled;
  const auto x = Fit::relative_least_squares(
      boost, [&](const TraceRecord& r) { return std::vector<double>{extra_number(r, "flops") / peak}; }, kernel);
  if (x.empty() || !(x[0] > 1)) {
    fit.note("compute.flop_efficiency: the GEMMs at boost clock do not give an efficiency below 1: kept the default");
    return;
  }
  fit.add_number("compute.flop_efficiency", 1 / x[0],
                 "least squares on relative errors of queue_gap + 2mnk / (peak bf16 x efficiency), bf16 GEMM bursts "
                 "at boost clock (the longest idle gaps)",
                 boost);

  if (throttled.size() < 2) {
    fit.note("compute.power_duty: fewer than two GEMM bursts are throttled: clocks kept uncapped");
    return;
  }
  // The throttled bursts' rate: at which the GEMM model takes their kernels' time (what the power model's clock
  // factor sets), or, for bursts without a shape, their time against the roofline just fitted.
  const auto model = fitted_gemm_model(fit);
  const bool shaped = gpu.sms > 0 && gpu.boost_mhz > 0;
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& t : throttled) {
    const auto n = static_cast<std::int64_t>(extra_number(*t.record, "n"));
    const double rate = shaped && n > 0 ? rate_for(model, gpu, step_gemm(n), Dtype::bf16, kernel(*t.record))
                                        : extra_number(*t.record, "flops") / (peak / x[0]) / kernel(*t.record);
    rows.push_back({std::log(extra_number(*t.record, "duty")), 1.0});
    y.push_back(-std::log(rate));
    w.push_back(1);
  }
  const auto line = least_squares(rows, y, w);  // -ln rate = ln(duty) / k - ln(power_duty) / k
  if (line.size() != 2 || !(line[0] > 0)) {
    fit.note("compute.power_duty: throttled GEMMs do not slow down with the duty cycle: clocks kept uncapped");
    return;
  }
  const double exponent = 1 / line[0];
  const double bursts_duty = std::min(1.0, std::exp(-line[1] * exponent));
  fit.add_number("compute.power_exponent", exponent,
                 "ln(t / t_boost) = (ln duty - ln power_duty) / exponent, least squares over the throttled GEMM bursts",
                 throttled);
  normal_data_power(fit, model, exponent, bursts_duty, throttled);
}

}  // namespace snsim::validation::fits

// GEMMs by shape (ComputeModel::gemm_time) on the calibration half of the probe's compute/gemm records (split by
// shape, validate.cpp) and its GEMMs batched between two events (gemm_method/batch_events): each is a GEMM queued
// behind the previous one, so the model's time is
//   t = queue_gap + [stream.event_record, when an event sits between two GEMMs] + gemm_time(shape, format, clock)
// at the SM clock read during the record. The two timing methods tell the event's cost from the kernel's ramp.
// A GEMM's time is a max over tiles, split-K and operand feed, no sum of known columns: the parameters are found by
// a simplex search on the relative errors, through a soft-L1 loss (errors beyond ~5 % count linearly, so that a few
// shapes cuBLAS runs unlike any tile the model knows do not drag the rest). A parameter is fitted only where at
// least MIN_RECORDS records depend on it; the others keep their defaults.
namespace snsim::validation::fits {
namespace {

constexpr std::size_t MIN_RECORDS = 3;
constexpr double LOSS_SCALE = 0.05;
constexpr int EVALUATIONS = 4000;
// Where the search starts, the same whatever the model's defaults are (they are this fit's last result): round
// figures of the right order, so that the fit is reproducible and does not chase its own defaults.
constexpr double START_EFFICIENCY = 0.9, START_UNALIGNED = 0.2, START_FEED = 20e12, START_US = 1,
                 START_ELASTICITY = 0.5;
constexpr int ROUNDS = 3;

struct GemmRecord {
  const TraceRecord* record;
  models::Gemm gemm;
  Dtype dtype;
  double clock;  // share of boost
  bool events;   // timed an event each (events_back_to_back), else batched between two events
};

/// One fitted parameter: where it sits in the model, how the search moves it (efficiencies and times directly,
/// rates in log), and which records depend on it.
struct Free {
  std::string key;
  double start;
  double step;
  bool log;
  std::function<void(models::ComputeModel&, double)> set;
  std::function<bool(const GemmRecord&)> uses;
};

bool aligned(const GemmRecord& r) {
  return r.gemm.tma_aligned(r.dtype);
}

}  // namespace

void gemms(Fit& fit) {
  auto traced = fit.select(Family::compute, {"gemm", "gemm_batched"}, std::nullopt, {}, "events_back_to_back");
  const auto batched = fit.select(Family::compute, {"gemm_method"}, "batch_events", {}, "batch_events");
  traced.insert(traced.end(), batched.begin(), batched.end());
  const auto& gpu = fit.platform().gpu;
  if (gpu.sms <= 0 || gpu.boost_mhz <= 0) {
    fit.note("compute.gemm_*: the GPU preset has no SM count or boost clock: GEMM parameters kept");
    return;
  }
  std::vector<GemmRecord> records;
  std::vector<TracedRecord> used;
  for (const auto& t : traced) {
    const auto recorded = recorded_gemm(*t.record);
    const auto* g = std::get_if<RecordedGemm>(&recorded);
    if (!g || g->clock_mhz <= 0) continue;
    records.push_back({t.record, g->gemm, g->dtype, g->clock_mhz / gpu.boost_mhz, t.record->test != "gemm_method"});
    used.push_back(t);
  }
  if (!fit.enough(used, 10, "the GEMM kernel model (compute.gemm_*)")) return;
  const double gap = fit.value_or("compute.queue_gap", fit.platform().defaults.compute->queue_gap.count());
  models::ComputeModel model = *fit.platform().defaults.compute;
  model.boost_reading_rate = 1;    // the search's frame: a reading's (below: the unthrottled GPU's)
  double event_record = START_US;  // us, moved by the search

  using M = models::ComputeModel;
  const auto efficiency = [](std::string key, double M::*field, double start,
                             std::function<bool(const GemmRecord&)> uses) {
    return Free{std::move(key), start, 0.05, false, [field](M& m, double v) { m.*field = v; }, std::move(uses)};
  };
  const auto tf32 = [](const GemmRecord& r) { return r.dtype == Dtype::tf32; };
  std::vector<Free> all{
      efficiency("gemm_efficiency", &M::gemm_efficiency, START_EFFICIENCY,
                 [](const GemmRecord& r) { return aligned(r) && (r.dtype == Dtype::bf16 || r.dtype == Dtype::fp16); }),
      efficiency("gemm_efficiency_fp8", &M::gemm_efficiency_fp8, START_EFFICIENCY,
                 [](const GemmRecord& r) { return aligned(r) && r.dtype == Dtype::fp8; }),
      efficiency("gemm_efficiency_tf32", &M::gemm_efficiency_tf32, START_EFFICIENCY,
                 [&](const GemmRecord& r) { return aligned(r) && tf32(r) && r.gemm.layout == models::GemmLayout::tn; }),
      efficiency("gemm_efficiency_tf32_one_transpose", &M::gemm_efficiency_tf32_one_transpose, START_EFFICIENCY,
                 [&](const GemmRecord& r) {
                   return aligned(r) && tf32(r) &&
                          (r.gemm.layout == models::GemmLayout::nn || r.gemm.layout == models::GemmLayout::tt);
                 }),
      efficiency("gemm_efficiency_tf32_two_transposes", &M::gemm_efficiency_tf32_two_transposes, START_EFFICIENCY,
                 [&](const GemmRecord& r) { return aligned(r) && tf32(r) && r.gemm.layout == models::GemmLayout::nt; }),
      efficiency("gemm_efficiency_unaligned", &M::gemm_efficiency_unaligned, START_UNALIGNED,
                 [](const GemmRecord& r) { return !aligned(r); }),
      Free{"gemm_operand_feed_tf32", std::log(START_FEED), 0.3, true,
           [](M& m, double v) { m.gemm_operand_feed_tf32 = BytesPerSecond{std::exp(v)}; }, tf32},
      Free{"gemm_tile_overhead", START_US, 0.5, false,
           [](M& m, double v) { m.gemm_tile_overhead = Seconds{std::max(0.0, v) * 1e-6}; },
           [](const GemmRecord&) { return true; }},
      Free{"gemm_ramp", START_US, 0.5, false, [](M& m, double v) { m.gemm_ramp = Seconds{std::max(0.0, v) * 1e-6}; },
           [](const GemmRecord&) { return true; }},
      Free{"clock_elasticity", START_ELASTICITY, 0.2, false,
           [](M& m, double v) { m.clock_elasticity = std::clamp(v, 0.0, 1.0); },
           [](const GemmRecord&) { return true; }},
  };
  // The event between two GEMMs: the search moves it with the model's parameters (a member of no model of compute).
  all.push_back(Free{"stream.event_record", START_US, 0.5, false,
                     [&event_record](M&, double v) { event_record = std::max(0.0, v); },
                     [](const GemmRecord& r) { return !r.events; }});
  std::vector<Free> free;
  for (auto& f : all) {
    const auto n = static_cast<std::size_t>(std::ranges::count_if(records, f.uses));
    if (n >= MIN_RECORDS)
      free.push_back(std::move(f));
    else
      fit.note(fmt::format("compute.{}: {} calibration GEMM records depend on it: kept the default", f.key, n));
  }
  const auto apply = [&](const std::vector<double>& x) {
    models::ComputeModel m = model;
    for (std::size_t i = 0; i < free.size(); ++i) free[i].set(m, x[i]);
    return m;
  };
  const auto cost = [&](const std::vector<double>& x) {
    const auto m = apply(x);
    double sum = 0;
    for (const auto& r : records) {
      const double predicted = gap + (r.events ? event_record * 1e-6 : 0) +
                               m.gemm_time(gpu, r.gemm, r.dtype, m.rate_at_reported_clock(r.clock)).count();
      const double z = (predicted / r.record->median - 1) / LOSS_SCALE;
      sum += 2 * (std::sqrt(1 + z * z) - 1);
    }
    return sum;
  };
  std::vector<double> start, step;
  for (const auto& f : free) {
    start.push_back(f.start);
    step.push_back(f.step);
  }
  // Restarted where it stopped: a fresh simplex escapes the collapse that ends a long search early.
  auto x = start;
  for (int round = 0; round < ROUNDS; ++round) x = minimize(cost, x, step, EVALUATIONS);
  const std::string method = fmt::format(
      "simplex search on soft-L1 relative errors of queue_gap + gemm_time at the rate the record's SM clock reading "
      "gives (clock_elasticity, fitted with the rest), {} GEMMs",
      used.size());
  // The search's rates are those of a clock reading (boost_reading_rate 1). The model's are those of the unthrottled
  // GPU, which the GEMM bursts at boost clock show (the power model's fit): where the GEMM model at a reported boost
  // clock is h times slower than they are, a reading of boost means 1/h of the unthrottled rate, and the model's
  // efficiencies are h times higher, its tile overhead h times shorter (the same times at every reading).
  double h = 1;
  const auto bursts = gemm_bursts(fit);
  std::vector<double> ratios;
  for (const auto& t : bursts.boost)
    if (const auto n = static_cast<std::int64_t>(extra_number(*t.record, "n")); n > 0)
      ratios.push_back(apply(x).gemm_time(gpu, step_gemm(n), Dtype::bf16).count() / bursts.kernel(*t.record));
  if (ratios.empty()) {
    h = 1 / fit.platform().defaults.compute->boost_reading_rate;
    fit.note(
        fmt::format("compute.boost_reading_rate: no GEMM bursts at boost clock (step family): the default's "
                    "({:.3g}) stands for the rate at a reported boost clock",
                    1 / h));
  } else if (const double mean = std::accumulate(ratios.begin(), ratios.end(), 0.0) / ratios.size(); mean < 1)
    fit.note(
        fmt::format("compute.boost_reading_rate: the GEMM model at a reported boost clock is faster than the GEMM "
                    "bursts at boost ({:.3g}): kept 1",
                    mean));
  else
    h = mean;
  if (!ratios.empty() && h > 1)
    fit.add_number("compute.boost_reading_rate", 1 / h,
                   fmt::format("the GEMM bursts' time at boost clock over the GEMM model's at a reported boost clock "
                               "({} bursts)",
                               bursts.boost.size()),
                   bursts.boost);
  // The records are listed once, under the first parameter: every parameter of the search is fitted on all of them.
  const std::vector<TracedRecord> none;
  for (std::size_t i = 0; i < free.size(); ++i) {
    const auto& f = free[i];
    const std::string key = f.key.starts_with("stream.") ? f.key : "compute." + f.key;
    const auto& from = i == 0 ? used : none;
    const std::string how = i == 0 ? method : fmt::format("{} (the records of compute.{})", method, free[0].key);
    if (f.log)
      fit.add_yaml(key, fmt::format("{:.4g}TBps", std::exp(x[i]) / 1e12), how, from);
    else if (f.key == "gemm_tile_overhead")
      fit.add_time(key, Seconds{std::max(0.0, x[i]) * 1e-6 / h}, how, from);
    else if (f.key == "gemm_ramp" || f.key == "stream.event_record")
      fit.add_time(key, Seconds{std::max(0.0, x[i]) * 1e-6}, how, from);
    else if (f.key == "clock_elasticity")
      fit.add_number(key, std::clamp(x[i], 0.0, 1.0), how, from);
    else  // an efficiency
      fit.add_number(key, x[i] * h, how, from);
  }
}

}  // namespace snsim::validation::fits

// Memory-bound kernels by kind (ComputeModel::efficiency, memory_ramp) on the calibration half of PyTorch's kernels
// (compute/memory_bound and compute/adamw, tools/probe/torch/compute_kernels.py: every other size of each kernel).
// A sample is one call queued behind the previous one with an event between them, so the model's time is
//   t = stream.event_record + sum over the call's kernels of
//       (queue_gap + memory_ramp + bytes / (HBM bandwidth x efficiency of the kernel's kind))
// (one kernel for most ops, eager RoPE's five or nine: memory_calls_of) linear in memory_ramp and in the
// 1 / efficiency of each kind: least squares on relative errors. Streaming kernels
// (adds, copies, narrowing casts) keep compute.hbm_efficiency (their bytes' time is known) and help fix the ramp.
namespace snsim::validation::fits {

void memory_kernels(Fit& fit) {
  const auto records = fit.select(
      Family::compute, {"memory_bound", "adamw"}, std::nullopt,
      [](const TraceRecord& r) { return !memory_calls_of(r).empty() && r.bytes.count() > 0; }, "events_queued");
  if (!fit.enough(records, 4, "compute.memory_efficiency and memory_ramp")) return;
  const auto& defaults = *fit.platform().defaults.compute;
  const double hbm = fit.platform().gpu.hbm_bandwidth.count();
  const double event = fit.value_or("stream.event_record", fit.platform().defaults.stream->event_record.count());
  const double gap = fit.value_or("compute.queue_gap", defaults.queue_gap.count());
  // One column per kind and pass with records (at least MIN_RECORDS), after the ramp's; a record whose call launches
  // several kernels (eager RoPE) counts in each of their kinds.
  const auto index_of = [](models::MemoryKind k) {
    return 2 * static_cast<std::size_t>(k.kernel) + (k.backward ? 1 : 0);
  };
  const auto stream = [](const models::MemoryCall& c) { return c.kind.kernel == models::MemoryKernel::stream; };
  std::map<std::size_t, std::vector<TracedRecord>> by_kind;
  for (const auto& t : records) {
    std::set<std::size_t> kinds;
    for (const auto& call : memory_calls_of(*t.record))
      if (!stream(call)) kinds.insert(index_of(call.kind));
    for (const auto index : kinds) by_kind[index].push_back(t);
  }
  std::map<std::size_t, std::size_t> column;  // kind's index -> column of x
  for (const auto& [index, kind_records] : by_kind)
    if (kind_records.size() >= MIN_RECORDS) column.emplace(index, column.size() + 1);
  std::vector<TracedRecord> used;
  for (const auto& t : records) {
    if (std::ranges::all_of(memory_calls_of(*t.record),
                            [&](const auto& c) { return stream(c) || column.contains(index_of(c.kind)); }))
      used.push_back(t);
  }
  const auto x = Fit::relative_least_squares(
      used,
      [&](const TraceRecord& r) {
        std::vector<double> row(column.size() + 1, 0.0);
        for (const auto& call : memory_calls_of(r)) {
          row[0] += 1;
          if (!stream(call)) row[column.at(index_of(call.kind))] += static_cast<double>(call.bytes.count()) / hbm;
        }
        return row;
      },
      [&](const TraceRecord& r) {
        double known = event;
        for (const auto& call : memory_calls_of(r))
          known += gap + (stream(call) ? static_cast<double>(call.bytes.count()) / (hbm * defaults.hbm_efficiency) : 0);
        return r.median - known;
      });
  if (x.size() != column.size() + 1) {
    fit.note("compute.memory_efficiency: the least squares did not solve: defaults kept");
    return;
  }
  const std::string method =
      "event + per kernel (queue_gap + memory_ramp + bytes / (HBM x efficiency)), least squares on relative errors "
      "over PyTorch's memory-bound kernels of every kind";
  fit.add_time("compute.memory_ramp", fit.non_negative(Seconds{x[0]}, "compute.memory_ramp"), method, used);
  for (const auto& [index, col] : column) {
    const models::MemoryKind kind{static_cast<models::MemoryKernel>(index / 2), index % 2 == 1};
    const std::string key =
        fmt::format("compute.memory_efficiency.{}{}", models::to_string(kind.kernel), kind.backward ? "_backward" : "");
    if (!(x[col] > 1)) {
      fit.note(fmt::format("{}: the fit gives an efficiency of at least 1: default kept", key));
      continue;
    }
    fit.add_number(key, 1 / x[col], method, by_kind[index]);
  }
}

}  // namespace snsim::validation::fits

// Fused attention by shape (ComputeModel::attention_time) on the calibration half of PyTorch's cuDNN SDPA records
// (compute/attention, every other sequence length of each curve), forward and backward apart. A sample is one call
// queued behind the previous one with an event between them:
//   t = stream.event_record + queue_gap + ramp + per_sm_blocks x max(4 B^2 d p / (SM peak x clock x efficiency),
//                                                                    block / clock)
//                + per_sm_ctas x cta / clock [+ the backward's helpers]
// (B the 128-wide block, p 2.5 for the backward's recomputing passes, else 1; per_sm_blocks and per_sm_ctas those of
// the SM that finishes last when the CTAs are handed out in grid order, the masked diagonal's extra block times
// included; clock the rate the record's reading means).
// The max makes it no sum of known columns: a simplex search on the relative errors, from round starting values.
namespace snsim::validation::fits {

void attention(Fit& fit) {
  const auto& gpu = fit.platform().gpu;
  const auto& defaults = *fit.platform().defaults.compute;
  const double fixed = fit.value_or("stream.event_record", fit.platform().defaults.stream->event_record.count()) +
                       fit.value_or("compute.queue_gap", defaults.queue_gap.count());
  if (gpu.sms <= 0 || gpu.boost_mhz <= 0) {
    fit.note("compute.attention_*: the GPU preset has no SM count or boost clock: attention parameters kept");
    return;
  }
  for (const bool backward : {false, true}) {
    std::vector<TracedRecord> records;
    std::vector<std::pair<RecordedAttention, double>> shapes;  // the attention and the record's median
    for (const auto& t : fit.select(Family::compute, {"attention"}, std::nullopt, {}, "events_queued")) {
      auto recorded = recorded_attention(*t.record);
      const auto* a = std::get_if<RecordedAttention>(&recorded);
      if (!a || a->attention.backward != backward || a->clock_mhz <= 0) continue;
      records.push_back(t);
      shapes.emplace_back(*a, t.record->median);
    }
    const std::string pass = backward ? "_backward" : "";
    if (!fit.enough(records, 4, "compute.attention_*" + pass)) continue;
    const double elasticity = fit.value_or("compute.clock_elasticity", defaults.clock_elasticity);
    const double boost_reading = fit.value_or("compute.boost_reading_rate", defaults.boost_reading_rate);
    const auto apply = [&](const std::vector<double>& x) {
      models::ComputeModel m = defaults;
      m.clock_elasticity = elasticity;
      m.boost_reading_rate = boost_reading;
      m.attention[backward] = {.efficiency = x[0],
                               .block = Seconds{std::max(0.0, x[1]) * 1e-6},
                               .diagonal = std::max(0.0, x[3]),
                               .cta = Seconds{std::max(0.0, x[4]) * 1e-6},
                               .ramp = Seconds{std::max(0.0, x[2]) * 1e-6}};
      return m;
    };
    const auto cost = [&](const std::vector<double>& x) {
      if (!(x[0] > 0)) return std::numeric_limits<double>::infinity();
      const auto m = apply(x);
      double sum = 0;
      for (const auto& [a, median] : shapes) {
        const double predicted =
            fixed + m.attention_time(gpu, a.attention, m.rate_at_reported_clock(a.clock_mhz / gpu.boost_mhz)).count();
        sum += std::pow(predicted / median - 1, 2);
      }
      return sum;
    };
    // Efficiency, block (us), ramp (us), diagonal (block times), CTA (us), from round starting values: the max
    // leaves local minima (MMA-bound or softmax-bound blocks), so the search starts from each side and keeps the best.
    std::vector<double> x;
    for (const double block : {0.5, 1.0, 2.0, 4.0}) {
      auto start = std::vector<double>{0.7, block, 5.0, 1.0, 1.0};
      for (int round = 0; round < 3; ++round) start = minimize(cost, start, {0.05, 0.2, 2.0, 0.5, 0.5}, 4000);
      if (x.empty() || cost(start) < cost(x)) x = start;
    }
    if (!(x[0] > 0.01 && x[0] <= 1.2)) {  // beyond the peak: the records' shapes do not fit the model
      fit.note(
          fmt::format("compute.attention_efficiency{}: the search ends at {:.3g} of the peak, which no kernel "
                      "reaches (shapes the block model does not explain): defaults kept",
                      pass, x[0]));
      continue;
    }
    const std::string method = fmt::format(
        "simplex search on relative errors of event + queue_gap + ramp + busiest SM's score blocks x max(MMA at peak x "
        "efficiency, block), {} PyTorch cuDNN SDPA records at the clock read during each",
        records.size());
    fit.add_number("compute.attention_efficiency" + pass, x[0], method, records);
    fit.add_time("compute.attention_block" + pass, Seconds{std::max(0.0, x[1]) * 1e-6}, method, records);
    fit.add_time("compute.attention_ramp" + pass, Seconds{std::max(0.0, x[2]) * 1e-6}, method, records);
    fit.add_number("compute.attention_diagonal" + pass, std::max(0.0, x[3]), method, records);
    fit.add_time("compute.attention_cta" + pass, Seconds{std::max(0.0, x[4]) * 1e-6}, method, records);
  }
}

}  // namespace snsim::validation::fits
