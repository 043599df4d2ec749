// Invariants a run checks about itself while it runs and at its end (issue 9), reported in report.json's
// `invariants` section; `snsim run` exits with 3 (an internal error) when one is violated:
//
//   bytes conserved     every transfer (SimGrid network action) that finished delivered the bytes it was started
//                       with, and in a completed run none failed, so bytes sent = bytes received in total
//   links within        at every time step (sampled: see LINK_SAMPLE_BUDGET) no link's usage, the sum of the rates of
//   capacity            its flows, exceeds its bandwidth (in SimGrid bytes: a transfer whose rate jitter draws a
//                       factor above 1 moves fewer of them, so the report's wire bytes may exceed bandwidth x time)
//   time goes forward   the engine's clock never steps back; every op ends at or after its start (the Runner checks
//                       its records: runtime/runner.hpp)
//   ops end             every op that started ended, or the outcome says why (deadlock, lost GPU)
//
// SimGrid's signals are process-wide and SimGrid 3.32 cannot disconnect a link callback, so one monitor is
// active at a time (one simulation per process): its callbacks do nothing once it is destroyed.
#pragma once

#include <cstdint>

#include "sim/report.hpp"

namespace snsim {

class InvariantMonitor {
 public:
  /// Starts watching transfers, time steps and links. Create after the Simulation, before Simulation::run().
  InvariantMonitor();
  ~InvariantMonitor();
  InvariantMonitor(const InvariantMonitor&) = delete;
  InvariantMonitor& operator=(const InvariantMonitor&) = delete;

  /// Links looked at (used or not), at most: each time half of what is left of it is spent, time steps are sampled
  /// half as often (every 2nd, then every 4th, ...), so that the check costs a bounded time (tens of ms) on any
  /// platform: all steps of a small run, fewer of a long one on thousands of links.
  static constexpr std::uint64_t LINK_SAMPLE_BUDGET = 4'000'000;
  /// How far a sampled usage may exceed the bandwidth before it is a violation: the solver's own precision
  /// (SimGrid's maxmin/precision, 1e-5 by default, on rates in bytes/s).
  static constexpr double LOAD_TOLERANCE = 1e-5;

  /// What was seen so far, with the end-of-run checks; `completed` says whether the run ended normally (then no
  /// transfer may have failed). The Runner adds what it knows of ops (started, ended, unended, time order).
  Invariants finish(bool completed) const;

 private:
  void on_transfer_end(double bytes, double remaining, bool finished);
  void on_time_advance(double delta);

  Invariants seen_;
  std::uint64_t steps_ = 0;
  std::uint64_t stride_ = 1;  // sample links every stride_-th time step
  std::uint64_t next_thinning_ = LINK_SAMPLE_BUDGET / 2;
  std::uint64_t visited_ = 0;  // links looked at
};

}  // namespace snsim
