#include "workloads/generators.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "workloads/replay/replay.hpp"
#include "workloads/training/training.hpp"

namespace snsim::workloads {
namespace {

constexpr int MAX_SWEEP_POINTS = 64;

Group all_ranks(int gpus) {
  std::vector<int> ranks(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return std::make_shared<const std::vector<int>>(std::move(ranks));
}

/// A free barrier across every rank, so that the next measurement starts alone.
void sync_all(std::vector<Program>& programs, const Group& everyone, int phase) {
  for (auto& p : programs) p.ops.push_back(Op{BarrierOp{everyone, true}, phase, -1});
}

// ---- program: explicit ops ----------------------------------------------------------------------------------------

class ExplicitProgram final : public Workload {
 public:
  std::vector<Program> programs;
  void emit(std::vector<Program>& out, int phase, const std::vector<bool>& /*needed*/) const override {
    for (std::size_t r = 0; r < out.size(); ++r)
      for (auto op : programs[r].ops) {
        op.phase = phase;
        out[r].ops.push_back(std::move(op));
      }
  }
};

std::unique_ptr<Workload> make_program(const ConfigNode& node, const Fabric& fabric) {
  auto w = std::make_unique<ExplicitProgram>();
  const int gpus = static_cast<int>(fabric.gpus().size());
  w->programs.resize(static_cast<std::size_t>(gpus));
  parse_ops(node.child("ops"), parse_ranks_or_all(node, gpus), fabric, 0, w->programs);
  return w;
}

// ---- p2p_sweep: copies between pairs, one at a time ----------------------------------------------------------------

class P2pSweep final : public Workload {
 public:
  struct Point {
    int src, dst;
    Bytes bytes;
    models::CopyEngine engine;
  };
  std::vector<Point> points;
  int gpus = 0;

  void emit(std::vector<Program>& programs, int phase, const std::vector<bool>& /*needed*/) const override {
    const Group everyone = all_ranks(gpus);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& p = points[i];
      programs[static_cast<std::size_t>(p.src)].ops.push_back(
          Op{CopyOp{p.dst, p.bytes, p.engine}, phase, static_cast<int>(i)});
      sync_all(programs, everyone, phase);
    }
  }

  std::vector<Table> summarize(const RankRecords& records, int phase) const override {
    Table t{"p2p_sweep: one copy at a time (bandwidth = size / time, per direction)",
            {"src", "dst", "engine", "size_B", "time_us", "bandwidth_GBps"},
            {}};
    for (const auto& r : records) {
      if (r.phase != phase || r.tag < 0) continue;
      const auto& p = points[static_cast<std::size_t>(r.tag)];
      const double time = (r.end - r.start).count();
      t.rows.push_back({p.src, p.dst, std::string(models::to_string(p.engine)), p.bytes.count(), time * 1e6,
                        static_cast<double>(p.bytes.count()) / time / 1e9});
    }
    return {t};
  }
};

std::unique_ptr<Workload> make_p2p_sweep(const ConfigNode& node, const Fabric& fabric) {
  auto w = std::make_unique<P2pSweep>();
  w->gpus = static_cast<int>(fabric.gpus().size());
  const auto sizes = parse_sizes(node.section("sizes"), fabric, Bytes{4}, Bytes{1ull << 30});
  std::vector<std::pair<int, int>> pairs;
  const auto pairs_node = node.maybe_child("pairs");
  if (!pairs_node || (pairs_node->is_scalar() && pairs_node->scalar() == "all")) {
    for (int a = 0; a < w->gpus; ++a)
      for (int b = 0; b < w->gpus; ++b)
        if (a != b) pairs.emplace_back(a, b);
  } else {
    for (const auto& pair : pairs_node->elements()) {
      const auto ends = pair.elements();
      if (ends.size() != 2) pair.fail("expected a pair [src, dst]");
      pairs.emplace_back(parse_peer(ends[0], 0, w->gpus), parse_peer(ends[1], 0, w->gpus));
      if (pairs.back().first == HOST) ends[0].fail("the source must be a GPU");
    }
  }
  const auto engine = node.optional<std::string>("engine", "ce");
  std::vector<models::CopyEngine> engines;
  if (engine == "ce" || engine == "both") engines.push_back(models::CopyEngine::ce);
  if (engine == "sm" || engine == "both") engines.push_back(models::CopyEngine::sm);
  if (engines.empty()) node.fail_key("engine", fmt::format("expected ce, sm or both, found '{}'", engine));
  for (auto [a, b] : pairs)
    for (auto e : engines)
      for (auto s : sizes) w->points.push_back({a, b, s, e});
  return w;
}

// ---- collective_sweep: nccl-tests -------------------------------------------------------------------------------

class CollectiveSweep final : public Workload {
 public:
  struct Point {
    models::CollectiveKind kind;
    Bytes bytes;
  };
  std::vector<Point> points;
  Group group;
  CollectiveOp options;  // algorithm, protocol, channels, launch
  int gpus = 0;

  void emit(std::vector<Program>& programs, int phase, const std::vector<bool>& /*needed*/) const override {
    const Group everyone = all_ranks(gpus);
    for (std::size_t i = 0; i < points.size(); ++i) {
      sync_all(programs, everyone, phase);
      CollectiveOp op = options;
      op.kind = points[i].kind;
      op.bytes = points[i].bytes;
      op.root = group->front();
      op.group = group;
      op.host_paced = op.launch == models::Launch::stream;  // nccl-tests' loop of calls; a graph replays without
      for (int r : *group) programs[static_cast<std::size_t>(r)].ops.push_back(Op{op, phase, static_cast<int>(i)});
    }
  }

  std::vector<Table> summarize(const RankRecords& records, int phase) const override {
    // A collective's time runs from the first rank's start to the last rank's end (they start together).
    std::map<int, std::pair<Seconds, Seconds>> span;
    std::map<int, std::string> ran;  // what the first rank's record says the collective ran: "nvls/Simple/16ch"
    for (const auto& r : records) {
      if (r.phase != phase || r.tag < 0) continue;
      if (!r.detail.empty()) ran.try_emplace(r.tag, r.detail);
      auto [it, inserted] = span.try_emplace(r.tag, r.start, r.end);
      if (!inserted) {
        it->second.first = std::min(it->second.first, r.start);
        it->second.second = std::max(it->second.second, r.end);
      }
    }
    const int n = static_cast<int>(group->size());
    std::vector<Table> tables;
    for (const auto& [tag, times] : span) {
      const auto& p = points[static_cast<std::size_t>(tag)];
      const std::string title = fmt::format("{} on {} ranks (nccl-tests columns)", models::to_string(p.kind), n);
      if (tables.empty() || tables.back().title != title)
        tables.push_back(
            {title,
             {"size_B", "count", "type", "redop", "root", "algorithm", "time_us", "algbw_GBps", "busbw_GBps"},
             {}});
      const double time = (times.second - times.first).count();
      const double algbw = static_cast<double>(p.bytes.count()) / time / 1e9;
      const bool reduces =
          p.kind == models::CollectiveKind::all_reduce || p.kind == models::CollectiveKind::reduce_scatter;
      tables.back().rows.push_back({p.bytes.count(), p.bytes.count() / 4, "float", reduces ? "sum" : "none",
                                    p.kind == models::CollectiveKind::broadcast ? group->front() : -1,
                                    ran.contains(tag) ? ran.at(tag) : std::string("auto"), time * 1e6, algbw,
                                    algbw * models::bus_bandwidth_factor(p.kind, n)});
    }
    return tables;
  }
};

std::unique_ptr<Workload> make_collective_sweep(const ConfigNode& node, const Fabric& fabric) {
  auto w = std::make_unique<CollectiveSweep>();
  w->gpus = static_cast<int>(fabric.gpus().size());
  const auto ranks = parse_ranks_or_all(node, w->gpus);
  if (ranks.size() < 2) node.fail_key("ranks", "a collective needs at least 2 ranks");
  w->group = std::make_shared<const std::vector<int>>(ranks);
  std::vector<models::CollectiveKind> kinds;
  const ConfigNode ops = node.child("ops");
  for (const auto& e : ops.is_sequence() ? ops.elements() : std::vector<ConfigNode>{ops})
    kinds.push_back(parse_collective_kind(e));
  w->options.group = w->group;
  parse_collective_options(node, kinds, fabric, w->options);
  const auto sizes = parse_sizes(node.section("sizes"), fabric, Bytes{8}, Bytes{1ull << 30});
  for (auto k : kinds)
    for (auto s : sizes) w->points.push_back({k, s});
  return w;
}

}  // namespace

std::vector<Bytes> parse_sizes(const ConfigNode& node, const Fabric& fabric, Bytes from, Bytes to) {
  from = node.optional<Bytes>("from", from);
  to = node.optional<Bytes>("to", to);
  const int factor = node.optional<int>("factor", 2);
  check_size(node, "from", from, fabric);
  check_size(node, "to", to, fabric);
  check_between(node, "factor", factor, 2, 1024);
  if (from > to) node.fail_key("to", fmt::format("must be >= from ({}), got {}", from, to));
  std::vector<Bytes> sizes;
  for (auto s = from.count(); s <= to.count(); s *= static_cast<std::uint64_t>(factor)) {
    sizes.emplace_back(s);
    if (sizes.size() > MAX_SWEEP_POINTS)
      node.fail(fmt::format("more than {} sizes from {} to {}; use a larger factor", MAX_SWEEP_POINTS, from, to));
  }
  return sizes;
}

WorkloadRegistry::Entry program_entry() {
  return {"program",
          "explicit per-rank ops: compute, copy, collective, barrier, PGAS (put, get, ...), loads, repeat, streams",
          {{"ranks", "all|even|odd|N|\"A-B\"|[list]", "all", "the ranks that run the ops"},
           {"ops", "list of ops", "",
            "compute {flops, bytes, dtype | time}, copy {to | from, bytes, engine, pipelined, launch}, collective {op, "
            "bytes, root, algorithm, protocol, channels, launch, host_paced}, barrier {}, put {to, bytes, scope, "
            "issuers, count, "
            "signal}, get {from, bytes, scope}, signal_wait {signal, value, cmp}, quiet {}, fence {}, shmem_barrier "
            "{}, load {from, bytes, pattern, count}, repeat N with ops, streams [[ops], [ops]], {ranks, ops}"}},
          make_program};
}

WorkloadRegistry::Entry p2p_sweep_entry() {
  return {"p2p_sweep",
          "copies between GPU pairs, one at a time, over a range of sizes (like nvbandwidth / p2pBandwidthLatencyTest)",
          {{"pairs", "all | [[src, dst], ...]", "all", "ordered pairs; a peer may be host"},
           {"sizes.from", "bytes", "4B", "smallest size"},
           {"sizes.to", "bytes", "1GiB", "largest size"},
           {"sizes.factor", "integer", "2", "ratio between sizes"},
           {"engine", "ce|sm|both", "ce", "copy engine or SM copies"}},
          make_p2p_sweep};
}

WorkloadRegistry::Entry collective_sweep_entry() {
  return {"collective_sweep",
          "NCCL-like collectives over a range of sizes, reported like nccl-tests (time, algbw, busbw)",
          {{"ops", "collective or list", "", "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast"},
           {"ranks", "all|even|odd|N|\"A-B\"|[list]", "all", "the ranks taking part"},
           {"sizes.from", "bytes", "8B", "smallest size"},
           {"sizes.to", "bytes", "1GiB", "largest size"},
           {"sizes.factor", "integer", "2", "ratio between sizes"},
           {"algorithm", "ring|tree|one_shot|two_shot|nvls|direct|nvls_tree|collnet", "NCCL's choice",
            "force an algorithm"},
           {"protocol", "LL|LL128|Simple", "by size", "force a protocol"},
           {"channels", "count", "one per link", "force the channel count, 1-64"},
           {"launch", "stream|graph", "stream", "launch from a stream or a CUDA graph"}},
          make_collective_sweep};
}

void register_workloads(WorkloadRegistry& registry) {
  registry.add(program_entry());
  registry.add(p2p_sweep_entry());
  registry.add(collective_sweep_entry());
  registry.add(training_entry());
  registry.add(replay::trace_entry());
}

}  // namespace snsim::workloads
