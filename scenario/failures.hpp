// Failure what-ifs (issue 6): at a given simulated time a GPU loses NVLink lanes, a switch chip (plane) or a whole
// switch tray goes down, a link down-trains, a GPU slows down, or a GPU is lost and the job ends.
//
//   failures:
//     - {at: 1ms, link: {gpu: 3, lanes: 1}}                  # GPU 3 loses 1 of its NVLinks, both directions
//     - {at: 0s, plane: 2}                                   # NVSwitch chip 2 down: every GPU loses that plane's lanes
//     - {at: 0s, tray: 4}                                    # NVL72 switch tray 4 down: its 2 chips (planes 8, 9)
//     - {at: 2ms, degraded: {gpu: 5, factor: 0.5}}           # GPU 5's NVLink bandwidth x 0.5 (a down-trained link)
//     - {at: 1ms, slowed: {gpu: 2, compute: 1.2, hbm: 1.1}}  # GPU 2's kernels starting from then on: FLOP time
//                                                            # x 1.2, HBM time x 1.1 (keys as in models.slow)
//     - {at: 3ms, gpu_lost: 4}                               # the job fails: outcome "failed: GPU 4 lost at 3 ms"
//
// The platform aggregates a hop's parallel channels into one link of their summed bandwidth (sim/simulation.hpp),
// and traffic is striped over the lanes that remain, so a fabric failure is a bandwidth change of the links that
// carry the lost lanes: Simulation::scale_channels, called by a daemon actor that sleeps until the failure time.
// Transfers in flight keep the bytes they moved and go on at their new max-min share; copy-engine rate caps (a share
// of the line) follow the lanes left. A slowed GPU is the compute model's business (models/jitter.hpp): the daemon
// calls FailureHooks::slow_gpu, and kernels that start later on that GPU take longer; a kernel already running at
// that time keeps the rate it started with.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/simulation.hpp"

namespace snsim {

struct Failure {
  enum class Kind { link, plane, tray, degraded, slowed, gpu_lost };
  Seconds at;
  Kind kind = Kind::link;
  int gpu = -1;                 // rank: link, degraded, slowed, gpu_lost
  std::vector<DeviceId> chips;  // the switch chips that go down: plane (one), tray (the tray's)
  int lanes = 0;                // lanes lost: link
  double factor = 1;            // bandwidth left: degraded
  double compute = 1, hbm = 1;  // time factors on kernels starting later: slowed
  std::string what;             // "gpu3 loses 1 of 18 NVLink lanes"
};

/// One failure as it happened during the run.
struct AppliedFailure {
  Seconds at;
  std::string what;
  std::vector<std::string> links;  // the platform links whose bandwidth changed
};

/// Parses and checks the `failures` list (absent: none). Every mistake fails with file:line:col, the key, what was
/// found and what was expected. Fabric failures that would cut a GPU off from every switch are refused: that is
/// gpu_lost.
std::vector<Failure> parse_failures(const std::optional<ConfigNode>& list, const Fabric& fabric);

/// What the failures did to the run. Filled while the engine runs.
struct FailureLog {
  std::vector<AppliedFailure> applied;
  std::optional<std::string> outcome;  // "failed: GPU 4 lost at 3 ms" once a GPU is lost
};

/// What the run does for failures outside the fabric; sim/ knows no compute model.
struct FailureHooks {
  /// Kernels that start on GPU `rank` from now on take `compute` times longer on their FLOP side and `hbm` times on
  /// their HBM side (on top of models.slow and earlier slowed entries). Needed when the list has a slowed entry.
  std::function<void(int rank, double compute, double hbm)> slow_gpu;
};

/// Applies failures at 0 s now and spawns the daemon actor that applies the others at their times (call before
/// Simulation::run() and before the ranks' actors, with the hooks' targets already built). A daemon, so that a
/// failure after the job's end neither happens nor prolongs the run. A lost GPU kills every other actor: the engine
/// stops and `log.outcome` says why. `log` must outlive the run. Throws std::logic_error for a slowed entry without
/// hooks.slow_gpu.
void schedule_failures(Simulation& simulation, std::vector<Failure> failures, FailureLog& log, FailureHooks hooks = {});

}  // namespace snsim
