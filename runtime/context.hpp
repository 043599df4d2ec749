// What every executor shares while the programs run: the simulation, the models and the variability drawn for this
// seed, and the recording of ops and waits. The executors (runtime/*_executor.hpp) get this and nothing else of the
// Runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/models.hpp"
#include "runtime/waits.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace snsim::workloads {

/// The put that changed a signal last: its issuer and when it was issued (its record's start).
struct Signaller {
  int rank = 0;
  Seconds issued;
};

/// What only the run knows about an op, for its record.
struct OpOutcome {
  std::string detail;                // the algorithm and protocol a collective ran: "ring/LL128"
  std::optional<Signaller> cause{};  // signal_wait: the put that made its signal hold (none: it held from the start)
};

class RunContext {
 public:
  /// Jitter, per-GPU variation and slow GPUs (models/jitter.hpp) are drawn from streams seeded by `seed`: every
  /// fixed cost waits through sleep_for(), every transfer's rate goes through Simulation::timed_bytes(), every
  /// kernel through the variability's rates.
  RunContext(Simulation& simulation, const models::Models& models, std::size_t ranks, std::uint64_t seed);
  RunContext(const RunContext&) = delete;  // the simulation's jitter hooks point at this one
  RunContext& operator=(const RunContext&) = delete;

  Simulation& simulation() const { return simulation_; }
  const models::Models& models() const { return models_; }
  models::Variability& variability() { return variability_; }
  std::size_t ranks() const { return records_.size(); }
  /// The GPU of `rank`, or the host for HOST.
  DeviceId device(int rank) const;

  /// Waits a fixed cost (launch, setup, protocol step and wire latency) times a latency-jitter factor drawn for the
  /// calling rank. Every fixed-cost wait of an op goes through here.
  void sleep_for(Seconds t);
  /// Takes (and gives back) the model's share of the rank's SMs: SM copies and collective kernels while they run.
  void hold_sms(int rank);
  void release_sms(int rank);

  /// Appends a record to its rank's: the Runner's for each op as it ends, an executor's for work an op caused (UVM
  /// faults and migrations, recorded before the op that caused them ends). Its label and detail may be views of
  /// temporaries: the record keeps interned copies (sim/interned.hpp); its kind must be a static name.
  void record(OpRecord record);
  /// Room for `ops` records of `rank`, so that a long run's records grow once, not by doubling.
  void reserve_records(int rank, std::size_t ops) { records_[static_cast<std::size_t>(rank)].reserve(ops); }
  const std::vector<std::vector<OpRecord>>& records() const { return records_; }  // by rank
  std::vector<std::vector<OpRecord>>& records() { return records_; }
  /// Blocking ops, for the report's waits table.
  WaitLog& waits() { return waits_; }
  const WaitLog& waits() const { return waits_; }

 private:
  Simulation& simulation_;
  const models::Models& models_;
  models::Variability variability_;
  std::vector<std::vector<OpRecord>> records_;  // by rank
  WaitLog waits_;
};

/// What an executor of one op family starts from: the shared context, and shorthands for what every op does.
class Executor {
 protected:
  explicit Executor(RunContext& context)
      : context_{context},
        simulation_{context.simulation()},
        models_{context.models()},
        variability_{context.variability()} {}
  DeviceId device(int rank) const { return context_.device(rank); }
  void sleep_for(Seconds t) { context_.sleep_for(t); }

  RunContext& context_;
  Simulation& simulation_;
  const models::Models& models_;
  models::Variability& variability_;
};

}  // namespace snsim::workloads
