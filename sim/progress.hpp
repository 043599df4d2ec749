// Progress lines on stderr for commands that run long: one line rewritten in place on a terminal, a line at a
// time in a log (issue 25). Sweeps and studies count runs; a simulation counts its ops and simulated time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace snsim {

/// "1:05", or "1:02:05" past the hour.
std::string format_eta(double seconds);

/// Whether stderr is a terminal: commands show progress there unless quiet, elsewhere only when asked (--progress).
bool stderr_is_terminal();

/// The progress line of one command on stderr.
class ProgressLine {
 public:
  explicit ProgressLine(bool terminal = stderr_is_terminal()) : terminal_{terminal} {}
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool terminal() const { return terminal_; }
  /// Shows `text`: on a terminal in place of the line shown before, in a log on a line of its own.
  void show(std::string_view text);
  /// A line of its own (a failure), below the progress line on a terminal, which the next show() draws again.
  void message(std::string_view text);
  /// Ends the line on a terminal, so that what is printed next starts on a fresh line.
  void close();

 private:
  bool terminal_;
  bool open_ = false;      // a line shown on the terminal and not ended
  std::size_t shown_ = 0;  // its length, to blank what a shorter line leaves
};

/// A simulation's progress (simulated time, ops done of all, ETA), from SimGrid's time-advance signal: it adds no
/// actor and no event, so the run and its report are the same with it or without it. A line each `period` of wall
/// time (0.5 s on a terminal, 10 s in a log) and one at finish(). One at a time per process, like the engine.
class SimulationProgress {
 public:
  /// `what` heads each line ("snsim run"); `ops_done` counts the ops ended so far, of `total_ops`.
  SimulationProgress(std::string what, std::uint64_t total_ops, std::function<std::uint64_t()> ops_done);
  ~SimulationProgress();
  SimulationProgress(const SimulationProgress&) = delete;
  SimulationProgress& operator=(const SimulationProgress&) = delete;

  /// The last line, after Simulation::run(): what the run did in how much wall time.
  void finish(Seconds simulated);

 private:
  void on_time_advance();
  std::string line(Seconds simulated, double wall_s, bool last) const;

  std::string what_;
  std::uint64_t total_;
  std::function<std::uint64_t()> ops_done_;
  ProgressLine line_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_;
  std::chrono::steady_clock::duration period_;
};

}  // namespace snsim
