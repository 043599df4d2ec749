// Runner: executes per-rank Programs on a Simulation, one SimGrid actor per GPU. It expands repeats and streams,
// hands every other op to the executor of its family -- kernels and copies, collectives and barriers, PGAS and
// stream events, unified memory (runtime/*_executor.hpp) -- and records when each op started and ended. The
// executors share a RunContext (runtime/context.hpp): the simulation, the models, the variability drawn from the
// scenario's seed, and the records and waits.
#pragma once

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/models.hpp"
#include "program/program.hpp"
#include "runtime/collective_executor.hpp"
#include "runtime/context.hpp"
#include "runtime/device_executor.hpp"
#include "runtime/folding.hpp"
#include "runtime/host_executor.hpp"
#include "runtime/op_tracker.hpp"
#include "runtime/pgas_executor.hpp"
#include "runtime/uvm_executor.hpp"
#include "runtime/waits.hpp"
#include "sim/report.hpp"
#include "sim/simulation.hpp"

namespace snsim::workloads {

class Runner {
 public:
  /// With a `folding` (runtime/folding.hpp), only its simulated ranks run their programs; each runs proxies for
  /// the folded ranks it speaks for where their ops meet simulated ranks or shared links.
  Runner(Simulation& simulation, const models::Models& models, std::vector<Program> programs, std::uint64_t seed = 1,
         std::optional<Folding> folding = std::nullopt);

  /// Spawns one actor per rank. Call once, before Simulation::run().
  void launch();
  /// Every op every rank executed, by rank then start time, moved out (the runner keeps none: a large run's records are
  /// gigabytes). After Simulation::run() and check().
  std::vector<OpRecord> take_records();
  /// Ops the simulated ranks run: the programs' expanded_size(), folded ranks left out.
  std::uint64_t ops_to_run() const;
  /// Ops ended so far, every rank, free barriers included: of the programs' expanded_size(), during the run too.
  std::uint64_t ops_ended() const { return tracker_.ended(); }
  /// Per location (host, then every GPU): faults, fault batches, migrated bytes, time in fault service, bytes
  /// evicted, bytes moved by access counters and thrashing pins; nullopt
  /// when the programs use no managed memory. Valid after Simulation::run().
  std::optional<Table> uvm_table() const { return uvm_.uvm_table(); }
  /// How many collectives ran on the exact path, the crossbar and the ring fast path; nullopt without collectives.
  /// Valid after Simulation::run().
  std::optional<Table> fabric_path_table() const { return collectives_.fabric_path_table(); }
  /// Ranks whose program did not run to its end (the engine stopped on a deadlock). Empty after a normal run.
  std::vector<int> unfinished() const;
  /// Into `invariants`: ops started and ended, every op a rank started and never ended with what it waited for (a
  /// signal's value, the members missing from a collective or barrier, an event's records), and any rank whose
  /// records go back in time (runtime/op_tracker.hpp). Valid after Simulation::run().
  void check(Invariants& invariants) const;
  /// Who waited on whom, and when (runtime/waits.hpp). Valid after Simulation::run().
  std::vector<Wait> waits() const { return context_.waits().waits(); }
  /// Kernels that start on `rank` from now on run `compute` / `hbm` times longer (a slowed failure).
  void slow_gpu(int rank, double compute, double hbm) {
    context_.variability().slow(context_.device(rank), compute, hbm);
  }
  /// The run has failures that change link rates mid-run (scenario/failures.hpp): rings keep the exact path
  /// (models/fabric.hpp). Before launch().
  void expect_fabric_failures() { collectives_.expect_fabric_failures(); }
  /// Folded ranks' ops run by proxies so far (docs/folding.md).
  std::uint64_t proxies() const { return proxies_; }

 private:
  void run_rank(int rank);
  /// Runs `op` on `rank`, as part of the top-level op `top` (whose phase and tag its record takes by default).
  void execute(int rank, const Op& op, const Op& top);
  /// A simulated rank's leaf op as folded rank `folded` runs it: peers relabelled (Folding::relabel), a group that
  /// holds `folded` kept (the same collective), any other relabelled (its replica's own, one Group per replica).
  Op as_folded(const Op& op, int folded);
  Group relabelled(const Group& group, int folded);
  /// Whether folded rank `folded`'s leaf op must run (on a proxy actor): it joins a group with a simulated member,
  /// targets a simulated rank, or moves bytes over links that other ranks' routes share.
  bool needs_proxy(int folded, const Op& op);
  /// Whether folded rank `folded`'s exchange with `peer` meets a simulated rank or links others' routes share.
  bool reaches(int folded, int peer);
  /// Whether any folded rank that `rank` speaks for may need a proxy for `op` (then needs_proxy decides for each);
  /// false for kernels and for exchanges inside the representative's replica that meet no one. Decided once per group
  /// or peer.
  bool mirrors_may_need_proxies(int rank, const Op& op);
  /// Whether a group's flows may cross links that routes of other ranks share; computed once per Group.
  bool shares_links(const Group& group);
  /// Whether the route between two ranks crosses a link that is not the ranks' own: a channel neither of whose ends
  /// is one of them or a device only one of them uses (its NIC). Inside a crossbar domain none does (the switch is
  /// non-blocking, its ports each GPU's own). The host and NVMe are shared.
  bool shares_links(int rank, int peer);
  /// Hands a leaf op to the one executor that runs its type.
  template <class T>
  OpOutcome dispatch(int rank, const T& op, const Op& top);

  RunContext context_;
  std::vector<Program> programs_;
  Folding folding_;
  std::vector<int> domain_;  // by rank: its crossbar domain, or -1 outside any (Fabric::crossbar_domains)
  std::vector<int> owner_;   // by DeviceId: the rank of a GPU, or of the one GPU a NIC or PCIe switch serves; else -1
  std::vector<bool> non_binding_;                                   // by channel: Fabric::non_binding_channels
  std::map<const void*, bool> group_shares_links_;                  // by Group identity
  std::map<std::pair<int, int>, bool> pair_shares_links_;           // by (rank, peer)
  std::unordered_map<const void*, bool> group_mirrored_;            // mirrors_may_need_proxies, by Group identity
  std::map<std::pair<int, int>, bool> peer_mirrored_;               // mirrors_may_need_proxies, by (rank, peer)
  std::map<std::pair<const void*, int>, Group> relabelled_groups_;  // by (Group identity, replica)
  std::vector<bool> finished_;                                      // by rank
  std::uint64_t proxies_ = 0;
  OpTracker tracker_;
  DeviceExecutor device_;
  HostExecutor host_;
  CollectiveExecutor collectives_;
  PgasExecutor pgas_;
  UvmExecutor uvm_;
};

}  // namespace snsim::workloads
