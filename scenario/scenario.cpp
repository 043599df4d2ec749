#include "scenario/scenario.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <xbt/log.h>

#include "models/params.hpp"
#include "runtime/runner.hpp"
#include "scenario/folding.hpp"
#include "sim/invariants.hpp"
#include "sim/progress.hpp"
#include "topologies/register.hpp"

namespace snsim::workloads {
namespace {
bool forces_nvls(const std::vector<Op>& ops) {
  return std::ranges::any_of(ops, [](const Op& op) {
    if (const auto* r = std::get_if<RepeatOp>(&op.what)) return forces_nvls(r->body);
    const auto* c = std::get_if<CollectiveOp>(&op.what);
    return c && c->algorithm == models::Algorithm::nvls;
  });
}

/// "deadlock: " and, per stuck rank, each op it left unended and what that op waits for; at most MAX_NAMED of them,
/// the rest counted (report.json's invariants.unended lists them all).
std::string deadlock_outcome(const std::vector<int>& stuck, const std::vector<UnendedOp>& unended) {
  constexpr std::size_t MAX_NAMED = 8;
  std::vector<std::string> all;
  for (int rank : stuck) {
    const auto before = all.size();
    for (const auto& u : unended)
      if (u.rank == rank) all.push_back(u.describe());
    // A stuck rank always has an op in progress; said anyway, should that ever change.
    if (all.size() == before) all.push_back(fmt::format("rank {}: did not finish its program", rank));
  }
  if (all.size() > MAX_NAMED) {
    const std::size_t more = all.size() - MAX_NAMED;
    all.resize(MAX_NAMED);
    all.push_back(fmt::format("and {} more (report.json: invariants.unended)", more));
  }
  return fmt::format("deadlock: {}", fmt::join(all, "; "));
}
}  // namespace

Table Scenario::phase_spans(const std::vector<OpRecord>& records) const {
  // A program's ops have no table of their own: when each workload ran is what their comments discuss.
  struct Span {
    Seconds start{std::numeric_limits<double>::infinity()}, end{0};
    std::uint64_t ops = 0;
  };
  std::vector<Span> spans(workloads_.size());
  for (const auto& r : records) {
    auto& s = spans.at(static_cast<std::size_t>(r.phase));
    s.start = std::min(s.start, r.start);
    s.end = std::max(s.end, r.end);
    ++s.ops;
  }
  Table t{"workloads: when each ran", {"workload", "type", "ops", "start_us", "end_us", "span_us"}, {}};
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.ops == 0) {
      t.rows.push_back({i, workload_types_[i], 0, "-", "-", "-"});  // it emitted no op
      continue;
    }
    t.rows.push_back(
        {i, workload_types_[i], s.ops, s.start.count() * 1e6, s.end.count() * 1e6, (s.end - s.start).count() * 1e6});
  }
  return t;
}

Scenario Scenario::load(std::shared_ptr<ConfigDocument> document) {
  Scenario s;
  s.document_ = document;
  const ConfigNode root = document->root();
  s.name_ = root.optional<std::string>("name", "unnamed");
  s.seed_ = root.optional<std::uint64_t>("seed", 1);
  s.fold_ = root.optional<bool>("fold", true);

  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  s.fabric_ = topologies.create(root.child("topology"))->build();
  // One check for every topology, built-in or custom: connected, switch port counts within their radix.
  if (auto problem = s.fabric_.check()) root.child("topology").fail(*problem);

  models::apply_params(*document);
  s.models_ = models::Models::load(root.section("models"));
  s.models_.slow->check(static_cast<int>(s.fabric_.gpus().size()));

  WorkloadRegistry workloads("workload");
  register_workloads(workloads);
  const ConfigNode list = root.child("workloads");
  const auto items = list.elements();
  if (items.empty()) list.fail("no workload to run");
  for (const auto& item : items) {
    s.workloads_.push_back(workloads.create(item, s.fabric_));
    s.workload_types_.push_back(item.required<std::string>("type"));
    s.workloads_.back()->set_seed(s.seed_);
  }

  s.failures_ = parse_failures(root.maybe_child("failures"), s.fabric_);
  s.timeline_ = root.section("output").optional<bool>("timeline", false);
  if (const auto gpus = root.section("output").maybe_child("timeline_gpus"))
    s.timeline_gpus_ = parse_ranks(*gpus, static_cast<int>(s.fabric_.gpus().size()));
  document->reject_unknown_keys();

  // Replicas alike by construction: only the programs a run simulates are built (the folded ones are their
  // representatives'), unless a program turns out to need the full simulation after all (managed memory, the host).
  const Replicas proposed = s.proposed_replicas();
  s.alike_ =
      !proposed.ranks.empty() && std::ranges::all_of(s.workloads_, [](const auto& w) { return w->replicas_alike(); });
  if (s.alike_) s.needed_ = needed_ranks(proposed, s.fabric_.gpus().size(), s.fabric_, s.models_, s.failures_, s.fold_);
  s.programs_ = s.build_programs();
  if (!s.needed_.empty()) {
    const auto decision = s.folding(s.programs_);
    for (std::size_t r = 0; r < s.needed_.size(); ++r)
      if (!s.needed_[r] && decision.folding.simulated(static_cast<int>(r))) {
        s.needed_.clear();
        s.programs_ = s.build_programs();
        break;
      }
  }
  const auto& programs = s.programs_;
  for (std::size_t r = 0; r < programs.size(); ++r)
    if (const auto n = expanded_size(programs[r].ops); n > MAX_OPS_PER_RANK)
      list.fail(n == std::numeric_limits<std::uint64_t>::max()
                    ? fmt::format("rank {} would run more than 2^64 ops; the limit is {} per rank", r, MAX_OPS_PER_RANK)
                    : fmt::format("rank {} would run {} ops; the limit is {} per rank", r, n, MAX_OPS_PER_RANK));
  if (!s.models_.collective->nvls_enabled &&
      std::ranges::any_of(programs, [](const auto& p) { return forces_nvls(p.ops); }))
    root.section("models").section("collective").fail_key("nvls", "is false, but a collective forces algorithm: nvls");
  return s;
}

Replicas Scenario::proposed_replicas() const {
  Replicas proposed;
  for (const auto& w : workloads_) {
    auto r = w->replicas();
    if (r.ranks.empty()) continue;
    if (proposed.ranks.empty())
      proposed = std::move(r);
    else if (r != proposed)
      return {};
  }
  return proposed;
}

FoldingDecision Scenario::folding(const std::vector<Program>& programs) const {
  return decide_folding(proposed_replicas(), programs, fabric_, models_, failures_, fold_, alike_);
}

namespace {

/// The waits of every folded rank, from its representative's, relabelled (docs/folding.md).
void add_folded_waits(std::vector<RankWaits>& waits, const Folding& folding) {
  for (std::size_t r = 0; r < waits.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (folding.simulated(rank)) continue;
    RankWaits copy = waits[static_cast<std::size_t>(folding.representative(rank))];
    copy.rank = rank;
    std::map<int, Seconds> on;
    for (const auto& [x, time] : copy.on) on[folding.relabel(x, rank)] += time;
    copy.on = std::move(on);
    waits[r] = std::move(copy);
  }
}

}  // namespace

std::vector<Program> Scenario::build_programs() const {
  std::vector<Program> programs(fabric_.gpus().size());
  std::vector<int> all(programs.size());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  const Group everyone = std::make_shared<const std::vector<int>>(all);
  for (std::size_t phase = 0; phase < workloads_.size(); ++phase) {
    if (phase > 0)
      for (std::size_t r = 0; r < programs.size(); ++r)
        if (needed_.empty() || needed_[r])
          programs[r].ops.push_back(Op{BarrierOp{everyone, true}, static_cast<int>(phase), -1});
    workloads_[phase]->emit(programs, static_cast<int>(phase), needed_);
  }
  return programs;
}

std::vector<std::string> Scenario::notes() const {
  std::vector<std::string> all;
  for (const auto& w : workloads_)
    for (auto& note : w->notes()) all.push_back(std::move(note));
  return all;
}

Report Scenario::run(const std::vector<std::string>& engine_args, std::string_view progress) const {
  auto all_programs = programs_.empty() ? build_programs() : std::exchange(programs_, {});
  auto decision = folding(all_programs);
  return run(std::move(all_programs), std::move(decision), engine_args, progress);
}

Report Scenario::run(std::vector<Program> all_programs, FoldingDecision decision,
                     const std::vector<std::string>& engine_args, std::string_view progress) const {
  // The report names what each stuck rank waits for; SimGrid's own deadlock listing (its actors' addresses) would
  // only add noise on stderr. Set before the engine reads --log options, so that a user's --log=ker_engine... wins.
  xbt_log_control_set("ker_engine.app:file:/dev/null");
  Simulation simulation(fabric_, engine_args, models_.compute->comm_sm_share);
  InvariantMonitor monitor;
  auto& [folding, folding_summary] = decision;
  const Folding folded = folding;
  // A folded rank's program is its representative's, relabelled (Runner::as_folded): not kept.
  for (std::size_t r = 0; r < all_programs.size(); ++r)
    if (!folded.simulated(static_cast<int>(r))) all_programs[r] = Program{};
  Runner runner(simulation, models_, std::move(all_programs), seed_, std::move(folding));
  const std::uint64_t total_ops = runner.ops_to_run();
  FailureLog failures;
  // First: failures at 0 s apply before any op starts. A slowed GPU changes the rates the runner's kernels read.
  schedule_failures(simulation, failures_, failures, {.slow_gpu = [&runner](int rank, double compute, double hbm) {
                      runner.slow_gpu(rank, compute, hbm);
                    }});
  if (std::ranges::any_of(failures_, [](const Failure& f) {
        return f.kind != Failure::Kind::slowed && f.kind != Failure::Kind::gpu_lost;  // lanes, planes, trays
      }))
    runner.expect_fabric_failures();
  runner.launch();
  std::optional<SimulationProgress> shown;
  if (!progress.empty()) shown.emplace(std::string(progress), total_ops, [&runner] { return runner.ops_ended(); });
  Report report;
  report.scenario = name_;
  report.seed = seed_;
  report.config = document_->effective();
  report.notes = notes();
  report.simulated_time = simulation.run();
  if (shown) shown->finish(report.simulated_time);
  const auto stuck = runner.unfinished();
  report.invariants = monitor.finish(!failures.outcome && stuck.empty());
  runner.check(report.invariants);
  report.ops = runner.take_records();  // after the checks, which read them
  report.wait_spans = runner.waits();
  report.record_kinds = record_kinds();
  report.folding = std::move(folding_summary);
  report.folding.proxies = runner.proxies();
  report.waits = wait_table(report.ops, report.wait_spans, fabric_.gpus().size());
  if (folded.any_folded()) add_folded_waits(report.waits, folded);
  report.links = simulation.links();
  if (failures.outcome)
    report.outcome = *failures.outcome;  // a lost GPU stopped every rank: not a deadlock
  else if (!stuck.empty())
    report.outcome = deadlock_outcome(stuck, report.invariants.unended);
  for (const auto& w : workloads_)
    if (const auto why = w->outcome(); why && report.outcome == "completed") report.outcome = *why;
  // The workloads summarise every rank, folded ones too: their records are their representatives', for the
  // summaries only (report.ops holds the simulated ranks').
  const RankRecords every_rank(report.ops, folded);
  for (std::size_t phase = 0; phase < workloads_.size(); ++phase)
    for (auto& t : workloads_[phase]->summarize(every_rank, static_cast<int>(phase)))
      report.tables.push_back(std::move(t));
  if (std::ranges::count(workload_types_, "program") > 0) report.tables.push_back(phase_spans(report.ops));
  if (!failures_.empty()) {
    Table applied{"failures applied", {"at_us", "what", "links_changed"}, {}};
    for (const auto& f : failures.applied)
      applied.rows.push_back({f.at.count() * 1e6, f.what, fmt::format("{}", fmt::join(f.links, " "))});
    report.tables.push_back(std::move(applied));
  }
  if (auto uvm = runner.uvm_table()) report.tables.push_back(std::move(*uvm));
  if (auto path = runner.fabric_path_table()) report.tables.push_back(std::move(*path));
  if (report.folding.replicas > 0) report.tables.push_back(report.folding.table());
  return report;
}

}  // namespace snsim::workloads
