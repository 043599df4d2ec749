// Runner: executes per-rank Programs on a Simulation, one SimGrid actor per GPU, turning ops into time with the
// models and recording when each op started and ended. Jitter, per-GPU variation and slow GPUs (models/jitter.hpp)
// are drawn from streams seeded by the scenario's seed: every fixed cost waits through sleep_for(), every transfer's
// rate goes through Simulation::timed_bytes(), every kernel through compute().
#pragma once

#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "models/models.hpp"
#include "program/program.hpp"
#include "runtime/waits.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace snsim::workloads {

struct ManagedState;  // a managed buffer's residency (runtime/uvm_executor.cpp)

class Runner {
 public:
  Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs, std::uint64_t seed = 1);

  /// Spawns one actor per rank. Call once, before Simulation::run().
  void launch();
  /// Every op every rank executed, by rank then start time. Valid after Simulation::run().
  std::vector<OpRecord> records() const;
  /// Per location (host, then every GPU): faults, fault batches, migrated bytes, time in fault service, bytes
  /// evicted, bytes moved by access counters and thrashing pins; nullopt
  /// when the programs use no managed memory. Valid after Simulation::run().
  std::optional<Table> uvm_table() const;
  /// How many collectives ran on the exact path, the crossbar and the ring fast path; nullopt without collectives.
  /// Valid after Simulation::run().
  std::optional<Table> fabric_path_table() const;
  /// Ranks whose program did not run to its end (the engine stopped on a deadlock). Empty after a normal run.
  std::vector<int> unfinished() const;
  /// Into `invariants`: ops started and ended, every op a rank started and never ended with what it waited for (a
  /// signal's value, the members missing from a collective or barrier, an event's records), and any rank whose
  /// records go back in time (runtime/runner.cpp). Valid after Simulation::run().
  void check(Invariants& invariants) const;
  /// Who waited on whom, and when (runtime/waits.hpp). Valid after Simulation::run().
  std::vector<Wait> waits() const { return waits_.waits(); }
  /// Kernels that start on `rank` from now on run `compute` / `hbm` times longer (a slowed failure).
  void slow_gpu(int rank, double compute, double hbm) { variability_.slow(device(rank), compute, hbm); }
  /// The run has failures that change link rates mid-run (scenario/failures.hpp): rings keep the exact path
  /// (models/fabric.hpp). Before launch().
  void expect_fabric_failures() { fabric_failures_ = true; }

 private:
  /// Waits a fixed cost (launch, setup, protocol step and wire latency) times a latency-jitter factor drawn for the
  /// calling rank. Every fixed-cost wait of an op goes through here.
  void sleep_for(Seconds t);
  /// Takes (and gives back) the model's share of the rank's SMs: SM copies and collective kernels while they run.
  void hold_sms(int rank);
  void release_sms(int rank);
  void run_rank(int rank);
  void execute(int rank, const Op& op, const Op& top);
  void compute(int rank, const ComputeOp& op);
  void copy(int rank, const CopyOp& op);
  void barrier(const BarrierOp& op);
  DeviceId device(int rank) const;

  // PGAS ops with NVSHMEM semantics (runtime/pgas_executor.cpp).
  struct Pgas;  // the symmetric heap's signals and every PE's puts in flight
  /// The put that changed a signal last: its issuer and when it was issued (its record's start).
  struct Signaller {
    int rank = 0;
    Seconds issued;
  };
  Pgas& pgas_state();
  void pgas(int rank, const PutOp& op);
  void pgas(int rank, const GetOp& op);
  /// Returns the put that made the signal hold, if one did (nullopt when it held from the start).
  std::optional<Signaller> pgas(int rank, const SignalWaitOp& op);
  void pgas(int rank, const QuietOp& op);
  void pgas(int rank, const FenceOp& op);
  void pgas(int rank, const ShmemBarrierOp& op);
  void pgas(int rank, const LoadOp& op);
  void pgas(int rank, const EventRecordOp& op);  // on the same state as signals (runtime/pgas_executor.cpp)
  void pgas(int rank, const EventWaitOp& op);
  void wait_puts_complete(int rank);
  /// What an unended signal_wait or event_wait of `rank` waits for, with the value it saw last; empty for others.
  std::string pgas_waiting_for(int rank, const Op& op) const;
  models::PgasRoute pgas_route(int from, int to) const;

  // Unified memory (runtime/uvm_executor.cpp). Faults and migrations are recorded as their own ops ("fault", "migrate")
  // with the phase and tag of the op `top` that caused them.
  struct Uvm;  // every managed buffer's residency and advice, and per-location counters
  Uvm& uvm_state();
  void uvm(int rank, const ManagedOp& op, const Op& top);
  void uvm(int rank, const TouchOp& op, const Op& top);
  void uvm(int rank, const PrefetchOp& op, const Op& top);
  void uvm(int rank, const AdviseOp& op, const Op& top);
  void uvm(int rank, const ReadOp& op, const Op& top);
  void fault(int rank, const ManagedPtr& buffer, Bytes offset, Bytes bytes, bool write, const Op& top);
  void migrate(int from, int to, Bytes bytes, Seconds fixed_cost, const Op& top, int rank);
  void evict(int gpu, Bytes bytes, const Op& top, int rank);  // to the host, to make room
  void count_accesses(int rank, ManagedState& buffer, const ReadOp& op, const Op& top);

  // Collectives, one transfer per algorithm step (runtime/collective_executor.cpp).
  struct Step;  // a plan with what its transfers need
  /// Returns the algorithm and protocol it ran: "ring/LL128".
  std::string collective(int rank, const CollectiveOp& op);
  models::CollectivePlatform collective_platform(const std::vector<int>& group);
  void ring_steps(int rank, int next, int prev, const Step& step);
  /// Whether a ring plan on `group` takes the ring fast path (models/fabric.hpp).
  bool ring_fast(const std::vector<int>& group, const Step& step) const;
  void ring_fast_steps(int rank, int next, int prev, const std::vector<int>& group, const Step& step);
  Seconds ring_latency(const std::vector<int>& group);
  void all_peers_steps(int rank, const std::vector<int>& group, const Step& step);
  /// Whether an all-peers plan on `group` takes the crossbar fast path (models/fabric.hpp).
  bool crossbar_fast(const std::vector<int>& group, const Step& step) const;
  void crossbar_steps(int rank, const std::vector<int>& group, std::size_t position, const Step& step);
  void pipeline(int self, std::optional<int> from, std::optional<int> to, const Step& step);
  void tree(int rank, const std::vector<int>& group, std::size_t position, const Step& step);
  /// Starts `transfers` of the step's transfers from `from` to `to` as one comm (the ring fast path moves a rank's
  /// steps at once), with the step's rate cap, and accounts their bytes.
  simgrid::s4u::CommPtr put(int from, int to, const Step& step, int transfers = 1);
  /// The pair's mailbox within one group: collectives of different groups (NCCL communicators) running at once on
  /// the same pair, such as a tensor-parallel and a data-parallel one on two streams, never take each other's data.
  simgrid::s4u::Mailbox* mailbox(int from, int to, const void* group);

  Simulation& simulation_;
  const models::Models& models_;
  models::Variability variability_;
  std::vector<Program> programs_;
  std::vector<std::vector<OpRecord>> records_;  // by rank
  std::vector<bool> finished_;                  // by rank
  std::map<std::tuple<int, int, const void*>, simgrid::s4u::Mailbox*> mailboxes_;
  std::uint64_t mailboxes_created_ = 0;  // names them: two ends may create the same pair's at once (mailbox())
  std::map<const void*, simgrid::s4u::BarrierPtr> barriers_;  // by Group identity
  std::map<const void*, double> switch_reduction_;            // by Group identity, computed on first use
  std::map<const void*, Seconds> ring_latency_;               // by Group identity, computed on first use
  struct CrossbarRound;  // what the ranks of one fast-path round send each other (runtime/collective_executor.cpp)
  std::map<std::pair<const void*, std::uint64_t>, std::shared_ptr<CrossbarRound>> crossbar_rounds_;
  std::map<std::pair<const void*, int>, std::uint64_t> crossbar_rounds_done_;  // by (group, rank)
  std::map<const void*, simgrid::s4u::BarrierPtr> ring_barriers_;              // ring fast path: by Group identity
  std::array<std::uint64_t, 3> collectives_by_path_{};                         // exact, crossbar fast, ring fast
  bool fabric_failures_ = false;                                               // link rates may change mid-run
  std::map<DeviceId, models::TensorDuty> tensor_duty_;  // per GPU, for power-capped clocks (models/compute.hpp)
  std::shared_ptr<Pgas> pgas_;                          // created by the first PGAS op
  std::shared_ptr<Uvm> uvm_;                            // created by the first UVM op
  WaitLog waits_;                                       // blocking ops, for the report's waits table
  // Op tracking, for deadlock diagnosis and the invariants (check()).
  struct Started {
    std::optional<std::uint64_t> index;  // the rank's n-th recorded op; none for a free barrier
    const Op* op = nullptr;
    std::uint64_t instance = 0;  // collectives and barriers: the n-th of its kind the rank started on its group
  };
  std::vector<std::map<std::uint64_t, Started>> pending_;  // by rank: started, not ended, by start sequence
  std::vector<std::uint64_t> started_;                     // by rank: ops started (free barriers included)
  std::vector<std::uint64_t> indexed_;                     // by rank: ops started that are recorded
  std::map<std::tuple<int, Sync, const void*>, std::uint64_t> syncs_started_;  // (rank, kind, group) -> count
  std::uint64_t ops_ended_ = 0;
};

std::string label(const Op& op);

/// What the records say about a PGAS op (runtime/pgas_executor.cpp).
struct OpDescription {
  std::string_view kind;
  std::string label;
  Bytes bytes;  // payload the op moves over links
};
OpDescription describe(const PutOp& op);
OpDescription describe(const GetOp& op);
OpDescription describe(const SignalWaitOp& op);
OpDescription describe(const QuietOp& op);
OpDescription describe(const FenceOp& op);
OpDescription describe(const ShmemBarrierOp& op);
OpDescription describe(const LoadOp& op);
OpDescription describe(const EventRecordOp& op);
OpDescription describe(const EventWaitOp& op);
OpDescription describe(const ManagedOp& op);
OpDescription describe(const TouchOp& op);
OpDescription describe(const PrefetchOp& op);
OpDescription describe(const AdviseOp& op);
OpDescription describe(const ReadOp& op);

}  // namespace snsim::workloads
