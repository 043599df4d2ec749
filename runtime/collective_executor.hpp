// Collectives and barriers (program/collective_ops.hpp). A collective is a plan from the collective model
// (models/collective.hpp), executed as one transfer per algorithm step between pair mailboxes, so that collectives
// share links max-min with everything else; or, where models.fabric.path allows, on the crossbar or ring fast path
// (models/fabric.hpp). Every member's arrival at a collective or barrier goes to the wait log.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <simgrid/forward.h>

#include "program/program.hpp"
#include "runtime/context.hpp"
#include "runtime/folding.hpp"

namespace snsim::workloads {

class CollectiveExecutor : Executor {
 public:
  explicit CollectiveExecutor(RunContext& context) : Executor{context} {}
  /// Its outcome's detail is the algorithm, protocol and channel count it ran: "ring/LL128/24ch".
  OpOutcome run(int rank, const CollectiveOp& op);
  void run(int rank, const BarrierOp& op);
  /// The run has failures that change link rates mid-run (scenario/failures.hpp): rings keep the exact path
  /// (models/fabric.hpp). Before the programs run.
  void expect_fabric_failures() { fabric_failures_ = true; }
  /// A folded run (docs/folding.md): which ranks are simulated, and whether the route between two ranks crosses a
  /// link that others' routes may fill (Runner). Before the programs run; `folding` outlives the executor's runs.
  void fold(const Folding& folding, std::function<bool(int, int)> shares_links);
  /// Folded rank `member` of `op`'s group, which has a simulated member, reaches `op` with its representative: whether
  /// it must run it (as a proxy). It need not when its flows across nodes would only run between folded members over
  /// links no one else's route can fill, alike the flows that run (FlowPattern); it is then counted as having run it.
  bool enter_folded(int member, const CollectiveOp& op);
  /// How many collectives ran on the exact path, the crossbar and the ring fast path; nullopt without collectives.
  std::optional<Table> fabric_path_table() const;

 private:
  struct Step;         // a plan with what its transfers need
  struct Layout;       // a group's nodes and what NCCL's tuning model sees of them
  struct FlowSet;      // every pair's bytes of one collective across nodes
  struct FlowPattern;  // the pairs an algorithm joins across a group's nodes, without the bytes
  const Layout& layout(const std::vector<int>& group);
  /// A collective across nodes as the flows between pairs that NCCL's structure gives (rings per rail, double binary
  /// trees between the nodes' heads, NVLSTree, SHARP, all-to-all through PXN), all at once after the plan's latency;
  /// the members start and end together.
  void node_flows(int rank, const std::vector<int>& group, std::size_t position, const Step& step);
  /// The pairs `algorithm` joins on `group` across its nodes over the first `channels` of its rings or trees (all
  /// of them for the other algorithms), built on first use.
  const FlowPattern& flow_pattern(const std::vector<int>& group, models::Algorithm algorithm, int channels);
  /// How many of the group's ring or tree channels a plan runs on: NCCL gives an op its first `plan.channels`
  /// channels (fewer at small sizes), each bound to its NIC. Every other algorithm's structure is whole.
  int pattern_channels(const Layout& layout, const models::CollectivePlan& plan) const;
  /// Marks which of a pattern's pairs and members a folded run leaves out (FlowPattern).
  void leave_out_folded(const std::vector<int>& group, FlowPattern& pattern);
  /// Whether `plan` runs as flows across the group's nodes (node_flows).
  bool across_nodes(const std::vector<int>& group, models::CollectiveKind kind, const models::CollectivePlan& plan);
  /// Waits for every member of the op's group; a barrier that is not `sync` then pays the barrier latency.
  void barrier(const BarrierOp& op);
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
  void pipeline(int self, std::optional<int> from, std::optional<int> to, const Step& step, bool whole = false);
  bool send_fast(const std::vector<int>& group, const Step& step) const;
  /// No per-transfer draw and no failure: a rank's transfers of one step move alike (the fast paths' condition).
  bool transfers_alike() const;
  void tree(int rank, const std::vector<int>& group, std::size_t position, const Step& step);
  /// Starts `transfers` of the step's transfers from `from` to `to` as one comm (the ring fast path moves a rank's
  /// steps at once), with the step's rate cap, and accounts their bytes.
  simgrid::s4u::CommPtr put(int from, int to, const Step& step, int transfers = 1);
  /// The pair's mailbox within one group: collectives of different groups (NCCL communicators) running at once on
  /// the same pair, such as a tensor-parallel and a data-parallel one on two streams, never take each other's data.
  simgrid::s4u::Mailbox* mailbox(int from, int to, const void* group);

  struct PairKey {  // a pair of ranks within one group
    int from, to;
    const void* group;
    bool operator==(const PairKey&) const = default;
  };
  struct PairHash {
    std::size_t operator()(const PairKey& k) const {
      const auto ranks =
          (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.from)) << 32) | static_cast<std::uint32_t>(k.to);
      return std::hash<std::uint64_t>{}(ranks) ^ (std::hash<const void*>{}(k.group) * 0x9E3779B97F4A7C15ull);
    }
  };
  // Looked up for every transfer of every collective: hashed, not ordered.
  std::unordered_map<PairKey, simgrid::s4u::Mailbox*, PairHash> mailboxes_;
  std::uint64_t mailboxes_created_ = 0;  // names them: two ends may create the same pair's at once (mailbox())
  std::map<const void*, simgrid::s4u::BarrierPtr> barriers_;  // by Group identity
  std::map<const void*, double> switch_reduction_;            // by Group identity, computed on first use
  std::map<const void*, std::shared_ptr<Layout>> layouts_;    // by Group identity, computed on first use
  std::map<std::pair<const void*, std::uint64_t>, std::shared_ptr<FlowSet>> flow_sets_;  // by (group, round)
  std::map<std::tuple<const void*, models::Algorithm, int>, std::shared_ptr<FlowPattern>> flow_patterns_;
  std::map<std::pair<const void*, int>, std::uint64_t> flow_sets_done_;  // by (group, rank)
  std::map<const void*, Seconds> ring_latency_;                          // by Group identity, computed on first use
  struct CrossbarRound;  // what the ranks of one fast-path round send each other
  std::map<std::pair<const void*, std::uint64_t>, std::shared_ptr<CrossbarRound>> crossbar_rounds_;
  std::map<std::pair<const void*, int>, std::uint64_t> crossbar_rounds_done_;  // by (group, rank)
  std::map<const void*, simgrid::s4u::BarrierPtr> ring_barriers_;              // ring fast path: by Group identity
  std::array<std::uint64_t, 4> collectives_by_path_{};  // exact, crossbar fast, ring fast, send fast
  bool fabric_failures_ = false;                        // link rates may change mid-run
  const Folding* folding_ = nullptr;                    // folded runs: which ranks are simulated
  using EnteringKey = std::tuple<const void*, models::CollectiveKind, Bytes, std::optional<models::Algorithm>,
                                 std::optional<models::Protocol>, std::optional<int>, models::Launch>;
  std::optional<std::pair<EnteringKey, const FlowPattern*>> entering_;  // enter_folded's last op and its pattern
  std::function<bool(int, int)> shares_links_;                          // folded runs: a route others' may fill
};

}  // namespace snsim::workloads
