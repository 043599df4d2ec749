#include "sim/invariants.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace snsim {
namespace {
// The monitor SimGrid's process-wide signals report to; null when none is alive.
InvariantMonitor* active_monitor = nullptr;
// The platform's links, taken at the first time step (the platform is sealed by then; spare links included).
std::vector<sg4::Link*> links;
bool callbacks_connected = false;

/// Sums of doubles added in different orders differ in their last bits: equal within this share.
constexpr double SUM_TOLERANCE = 1e-9;
}  // namespace

InvariantMonitor::InvariantMonitor() {
  active_monitor = this;
  if (callbacks_connected) return;
  callbacks_connected = true;
  // Every transfer's network action as it ends: mailbox comms (collectives' steps, puts, gets, capped copies,
  // crossbar flows) and host-to-host ones alike. Its cost is the bytes it was started with, its remains what it did
  // not deliver. NetworkAction is only declared in SimGrid's installed headers; it derives from Action alone, so
  // the Action is the same object.
  sg4::Link::on_communication_state_change_cb(
      [](simgrid::kernel::resource::NetworkAction& network, simgrid::kernel::resource::Action::State) {
        if (!active_monitor) return;
        const auto& action = reinterpret_cast<const simgrid::kernel::resource::Action&>(network);
        const auto state = action.get_state();
        if (state == simgrid::kernel::resource::Action::State::FINISHED)
          active_monitor->on_transfer_end(action.get_cost(), action.get_remains_no_update(), true);
        else if (state == simgrid::kernel::resource::Action::State::FAILED)
          active_monitor->on_transfer_end(action.get_cost(), action.get_remains_no_update(), false);
      });
  sg4::Engine::on_time_advance_cb([](double delta) {
    if (active_monitor) active_monitor->on_time_advance(delta);
  });
}

InvariantMonitor::~InvariantMonitor() {
  if (active_monitor == this) active_monitor = nullptr;
}

void InvariantMonitor::on_transfer_end(double bytes, double remaining, bool finished) {
  seen_.bytes_sent += bytes;
  if (!finished) {
    ++seen_.transfers_failed;
    return;
  }
  ++seen_.transfers_finished;
  seen_.bytes_received += bytes - remaining;
  if (remaining > bytes * SUM_TOLERANCE && seen_.violations.size() < 10)
    seen_.violations.push_back(fmt::format("a transfer of {} bytes finished with {} bytes not delivered, at {} s",
                                           bytes, remaining, sg4::Engine::get_clock()));
}

void InvariantMonitor::on_time_advance(double delta) {
  if (delta < 0 && seen_.violations.size() < 10)
    seen_.violations.push_back(fmt::format("the clock went back by {} s at {} s", -delta, sg4::Engine::get_clock()));
  if (links.empty()) links = sg4::Engine::get_instance()->get_all_links();
  // The rates of the step that just ended are still the solver's: sample them against the links' bandwidths.
  if (steps_++ % stride_ != 0) return;
  visited_ += links.size();
  for (const sg4::Link* link : links) {
    if (!link->is_used()) continue;
    const double load = link->get_usage() / link->get_bandwidth();
    ++seen_.link_samples;
    seen_.max_link_load = std::max(seen_.max_link_load, load);
    if (load > 1 + LOAD_TOLERANCE && seen_.violations.size() < 10)
      seen_.violations.push_back(fmt::format("link {} carried {} B/s, above its {} B/s, at {} s", link->get_name(),
                                             link->get_usage(), link->get_bandwidth(), sg4::Engine::get_clock()));
  }
  // Thin out: each time half of what is left of the budget is spent, sample half as many steps.
  if (visited_ >= next_thinning_) {
    stride_ *= 2;
    next_thinning_ += (LINK_SAMPLE_BUDGET - next_thinning_) / 2;
  }
}

Invariants InvariantMonitor::finish(bool completed) const {
  Invariants out = seen_;
  // Conservation in total: every byte of a finished transfer arrived (failed ones only after a lost GPU).
  if (completed && out.transfers_failed > 0)
    out.violations.push_back(fmt::format("{} transfers failed in a run that completed", out.transfers_failed));
  if (completed && std::abs(out.bytes_sent - out.bytes_received) > SUM_TOLERANCE * std::max(1.0, out.bytes_sent))
    out.violations.push_back(
        fmt::format("{} bytes sent but {} received in a run that completed", out.bytes_sent, out.bytes_received));
  return out;
}

}  // namespace snsim
