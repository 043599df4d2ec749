// Failure what-ifs (issue 6): at a given simulated time a GPU loses NVLink lanes, a switch plane goes down, a link
// down-trains, or a GPU is lost and the job ends.
//
//   failures:
//     - {at: 1ms, link: {gpu: 3, lanes: 1}}          # GPU 3 loses 1 of its NVLinks, both directions
//     - {at: 0s, plane: 2}                           # NVSwitch chip 2 down: every GPU loses that plane's lanes
//     - {at: 2ms, degraded: {gpu: 5, factor: 0.5}}   # GPU 5's NVLink bandwidth x 0.5 (a down-trained link)
//     - {at: 3ms, gpu_lost: 4}                       # the job fails: outcome "failed: GPU 4 lost at 3 ms"
//
// The platform aggregates a hop's parallel channels into one link of their summed bandwidth (sim/simulation.hpp),
// and traffic is striped over the lanes that remain, so a failure is a bandwidth change of the links that carry the
// lost lanes: Simulation::scale_channels, called by a daemon actor that sleeps until the failure time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/simulation.hpp"

namespace snsim {

struct Failure {
  enum class Kind { link, plane, degraded, gpu_lost };
  Seconds at;
  Kind kind = Kind::link;
  int gpu = -1;       // rank: link, degraded, gpu_lost
  int plane = -1;     // switch chip index: plane
  int lanes = 0;      // lanes lost: link
  double factor = 1;  // bandwidth left: degraded
  std::string what;   // "gpu3 loses 1 of 18 NVLink lanes"
};

/// One failure as it happened during the run.
struct AppliedFailure {
  Seconds at;
  std::string what;
  std::vector<std::string> links;  // the platform links whose bandwidth changed
};

/// Parses and checks the `failures` list (absent: none). Every mistake fails with file:line:col.
std::vector<Failure> parse_failures(const std::optional<ConfigNode>& list, const Fabric& fabric);

/// What the failures did to the run. Filled while the engine runs.
struct FailureLog {
  std::vector<AppliedFailure> applied;
  std::optional<std::string> outcome;  // "failed: GPU 4 lost at 3 ms" once a GPU is lost
};

/// Applies failures at 0 s now and spawns the daemon actor that applies the others at their times (call before
/// Simulation::run() and before the ranks' actors). A daemon, so that a
/// failure after the job's end neither happens nor prolongs the run. A lost GPU kills every other actor: the engine
/// stops and `log.outcome` says why. `log` must outlive the run.
void schedule_failures(Simulation& simulation, std::vector<Failure> failures, FailureLog& log);

}  // namespace snsim
