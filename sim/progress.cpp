#include "sim/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

namespace snsim {
namespace {
// The progress SimGrid's process-wide time-advance signal reports to; null when none is alive (SimGrid 3.32 cannot
// disconnect a signal's callback).
SimulationProgress* active_progress = nullptr;
bool connected = false;
}  // namespace

std::string format_eta(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) != 0;
}

ProgressLine::~ProgressLine() {
  close();
}

void ProgressLine::show(std::string_view text) {
  if (!terminal_) {
    fmt::print(stderr, "{}\n", text);
    return;
  }
  // Blanks what a longer line before left on the terminal.
  fmt::print(stderr, "\r{}{}", text, std::string(shown_ > text.size() ? shown_ - text.size() : 0, ' '));
  std::fflush(stderr);
  open_ = true;
  shown_ = text.size();
}

void ProgressLine::message(std::string_view text) {
  close();
  fmt::print(stderr, "{}\n", text);
}

void ProgressLine::close() {
  if (!open_) return;
  fmt::print(stderr, "\n");
  open_ = false;
  shown_ = 0;
}

SimulationProgress::SimulationProgress(std::string what, std::uint64_t total_ops,
                                       std::function<std::uint64_t()> ops_done)
    : what_{std::move(what)},
      total_{total_ops},
      ops_done_{std::move(ops_done)},
      period_{line_.terminal() ? std::chrono::milliseconds(500) : std::chrono::seconds(10)} {
  next_ = started_ + period_;
  active_progress = this;
  if (connected) return;
  connected = true;
  simgrid::s4u::Engine::on_time_advance_cb([](double) {
    if (active_progress) active_progress->on_time_advance();
  });
}

SimulationProgress::~SimulationProgress() {
  if (active_progress == this) active_progress = nullptr;
}

void SimulationProgress::on_time_advance() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + period_;
  line_.show(
      line(Seconds{simgrid::s4u::Engine::get_clock()}, std::chrono::duration<double>(now - started_).count(), false));
}

void SimulationProgress::finish(Seconds simulated) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  line_.show(line(simulated, wall, true));
  line_.close();
  if (active_progress == this) active_progress = nullptr;
}

std::string SimulationProgress::line(Seconds simulated, double wall_s, bool last) const {
  const std::uint64_t done = std::min(ops_done_(), total_);
  std::string text = fmt::format("{}: simulated {}, {} of {} ops", what_, simulated, grouped(done), grouped(total_));
  if (last) return text + fmt::format(", {:.1f} s wall", wall_s);
  const double fraction = total_ == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  text += fmt::format(" ({:.0f}%), {:.0f} s wall", 100 * fraction, wall_s);
  // The ETA assumes the ops left take as long as those done: a rough figure, said as one.
  if (done > 0) text += fmt::format(", ETA ~{}", format_eta(wall_s * (1 - fraction) / fraction));
  return text;
}

}  // namespace snsim
