#include "workloads/replay/replay.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/files.hpp"
#include "sim/text.hpp"
#include "topologies/gpus.hpp"
#include "workloads/replay/chakra.hpp"
#include "workloads/replay/kernels.hpp"
#include "workloads/replay/kineto.hpp"
#include "workloads/replay/trace_file.hpp"

namespace snsim::workloads::replay {

RankTrace read_trace_bytes(std::string raw, const std::string& file, int position) {
  const std::string bytes = inflate_trace(std::move(raw), file);
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{') {
    nlohmann::json json;
    check_json_nesting(bytes, {file, 0, 0});
    try {
      json = nlohmann::json::parse(bytes);
    } catch (const nlohmann::json::parse_error& e) {
      fail_trace(file, fmt::format("not a complete JSON trace (byte {} of {}): {}", e.byte, bytes.size(),
                                   std::string(e.what()).substr(std::string(e.what()).find(':') + 2)));
    } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double (1e999): found by fuzz/ (replay)
      fail_trace(file, fmt::format("not a JSON trace snsim can read: {}",
                                   std::string(e.what()).substr(std::string(e.what()).find(']') + 2)));
    }
    if (is_kineto(json)) return read_kineto(json, file, position);
    if (json.contains("nodes") && json.contains("schema"))
      fail_trace(file,
                 "a PyTorch execution trace: give its Kineto trace, or convert it to Chakra with chakra_converter");
    fail_trace(file, "expected a PyTorch profiler (Kineto) trace (a JSON object with `traceEvents`) or a Chakra trace");
  }
  return read_chakra(bytes, file, position);
}

namespace {

std::string describe_collective(const TraceCollective& c) {
  if (c.p2p)
    return fmt::format("send / recv of {} from rank {} to rank {}", c.in_bytes, c.p2p->sender, c.p2p->receiver);
  return fmt::format("{} of {} in, {} out", c.kind ? models::to_string(*c.kind) : "barrier", c.in_bytes, c.out_bytes);
}

/// Every send has its recv and every recv its send: the n-th send from one rank to another (with one tag) is the
/// n-th recv of the other from it, of the same size. NCCL's send / recv block until the other end posts, so an
/// unmatched one would hang the job; here it is an error naming both ranks before the run.
void check_point_to_point(const std::vector<RankTrace>& traces) {
  struct Ends {
    std::vector<const TraceCollective*> sends, recvs;
  };
  std::map<std::tuple<int, int, int>, Ends> pairs;  // (sender, receiver, tag) -> both ends, in issue order
  for (const auto& t : traces)
    for (const auto& n : t.nodes)
      if (n.collective && n.collective->p2p) {
        const PointToPoint& p = *n.collective->p2p;
        auto& ends = pairs[{p.sender, p.receiver, p.tag}];
        (p.sender == t.rank ? ends.sends : ends.recvs).push_back(&*n.collective);
      }
  auto file = [&](int rank) { return traces[static_cast<std::size_t>(rank)].file; };
  auto tagged = [](int tag) { return tag == 0 ? std::string() : fmt::format(" with tag {}", tag); };
  auto posts = [](std::size_t n, const char* what) { return fmt::format("posts {} {}{}", n, what, n == 1 ? "" : "s"); };
  for (const auto& [key, ends] : pairs) {
    const auto& [sender, receiver, tag] = key;
    for (std::size_t i = 0; i < std::max(ends.sends.size(), ends.recvs.size()); ++i) {
      if (i >= ends.recvs.size())
        fail_trace(file(sender),
                   fmt::format("send #{} from rank {} to rank {}{} ({}) has no matching recv: rank {} ({}) "
                               "{} from rank {}; the job would hang in it",
                               i + 1, sender, receiver, tagged(tag), ends.sends[i]->in_bytes, receiver, file(receiver),
                               posts(ends.recvs.size(), "recv"), sender));
      if (i >= ends.sends.size())
        fail_trace(file(receiver),
                   fmt::format("recv #{} of rank {} from rank {}{} ({}) has no matching send: rank {} ({}) "
                               "{} to rank {}; the job would hang in it",
                               i + 1, receiver, sender, tagged(tag), ends.recvs[i]->in_bytes, sender, file(sender),
                               posts(ends.sends.size(), "send"), receiver));
      if (ends.sends[i]->in_bytes != ends.recvs[i]->in_bytes)
        fail_trace(file(receiver),
                   fmt::format("recv #{} of rank {} from rank {}{} is {}, but its send on rank {} ({}) is "
                               "{}: the traces are not of one job",
                               i + 1, receiver, sender, tagged(tag), ends.recvs[i]->in_bytes, sender, file(sender),
                               ends.sends[i]->in_bytes));
    }
  }
}

/// Every group's collectives, in issue order, alike on all its members: same kind and sizes.
void check_collectives(const std::vector<RankTrace>& traces) {
  std::map<std::vector<int>, std::map<int, std::vector<const TraceCollective*>>> by_group;  // group -> rank -> ops
  for (const auto& t : traces)
    for (const auto& n : t.nodes)
      if (n.collective) {
        for (int r : n.collective->group)
          if (r < 0 || r >= static_cast<int>(traces.size()))
            fail_trace(t.file,
                       fmt::format("a {} on ranks [{}] names rank {}, but traces were given for ranks 0-{} only",
                                   describe_collective(*n.collective), fmt::join(n.collective->group, ", "), r,
                                   traces.size() - 1));
        if (!n.collective->p2p) by_group[n.collective->group][t.rank].push_back(&*n.collective);
      }
  for (const auto& [group, ranks] : by_group) {
    const auto& [first_rank, first] = *ranks.begin();
    for (const auto& [rank, ops] : ranks)
      for (std::size_t i = 0; i < std::min(ops.size(), first.size()); ++i)
        if (ops[i]->kind != first[i]->kind || ops[i]->in_bytes != first[i]->in_bytes ||
            ops[i]->out_bytes != first[i]->out_bytes)
          fail_trace(
              traces[static_cast<std::size_t>(rank)].file,
              fmt::format("collective #{} on ranks [{}] is a {}, but rank {}'s ({}) is a {}: the traces are not of "
                          "one job",
                          i + 1, fmt::join(group, ", "), describe_collective(*ops[i]), first_rank,
                          traces[static_cast<std::size_t>(first_rank)].file, describe_collective(*first[i])));
  }
}

const GpuSpec& source_gpu(const RankTrace& t, const ReplayOptions& options, std::map<std::string, GpuSpec>& cache,
                          const std::string& origin) {
  std::string preset;
  if (options.source_gpu) {
    preset = *options.source_gpu;
  } else {
    std::string upper = t.gpu;
    std::ranges::transform(upper, upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (const auto& p : topologies::gpu_presets()) {
      std::string model = p.model;
      std::ranges::transform(model, model.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      if (upper.find(model) != std::string::npos && model.size() > preset.size()) preset = p.model;
    }
    if (preset.empty())
      fail_trace(t.file,
                 fmt::format("the trace's GPU is {}: set the trace workload's `source_gpu` (one of {}) to scale "
                             "its kernels",
                             t.gpu.empty() ? "not named" : fmt::format("'{}', no known preset", t.gpu),
                             fmt::join(topologies::gpu_preset_names(), ", ")));
  }
  auto it = cache.find(preset);
  if (it == cache.end()) {
    const auto& presets = topologies::gpu_presets();
    const auto p = std::ranges::find(presets, preset, &GpuSpec::model);
    if (p == presets.end())
      throw_input_error(
          {origin, 0, 0}, "source_gpu",
          fmt::format("unknown GPU '{}'; known: {}", preset, fmt::join(topologies::gpu_preset_names(), ", ")));
    it = cache.emplace(preset, *p).first;
  }
  return it->second;
}

/// The bytes of a collective as nccl-tests counts them (models/collective.hpp), for a group of `n`.
Bytes collective_bytes(const TraceCollective& c, std::size_t n) {
  switch (*c.kind) {
    case models::CollectiveKind::all_gather:
      return Bytes{c.in_bytes.count() * n};
    case models::CollectiveKind::reduce_scatter:
      return Bytes{c.out_bytes.count() * n};
    default:
      return c.in_bytes;
  }
}

}  // namespace

std::vector<RankTrace> read_traces(const std::vector<std::string>& files) {
  if (files.empty()) throw_input_error({"snsim replay", 0, 0}, "", "no trace given");
  std::vector<RankTrace> traces;
  for (std::size_t i = 0; i < files.size(); ++i)
    traces.push_back(read_trace_bytes(read_file(files[i]), files[i], static_cast<int>(i)));
  check_traces(traces);
  return traces;
}

void take_shapes(RankTrace& trace, const RankTrace& shaped) {
  const auto kernels = [](const RankTrace& t, std::size_t lane) {
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      if (t.nodes[i].lane == lane && t.nodes[i].kind == TraceNode::Kind::kernel) found.push_back(i);
    return found;
  };
  for (std::size_t lane = 0; lane < trace.lanes.size(); ++lane) {
    const auto mine = kernels(trace, lane);
    if (mine.empty()) continue;
    const auto other = std::ranges::find(shaped.lanes, trace.lanes[lane]);
    const auto theirs = other == shaped.lanes.end()
                            ? std::vector<std::size_t>{}
                            : kernels(shaped, static_cast<std::size_t>(other - shaped.lanes.begin()));
    const auto differ = [&](const std::string& what) {
      fail_trace(trace.file, fmt::format("its shapes trace {} is not a profile of the same steps: {} {}", shaped.file,
                                         trace.lanes[lane], what));
    };
    // The slowed host of the shapes profile shifts its window against the light one's by a few kernels at either
    // end (the tail of the step before, the last step's end): the longest overlap in which every kernel's name
    // matches gives the shapes; kernels outside it keep their recorded time.
    const auto n = static_cast<std::ptrdiff_t>(mine.size()), m = static_cast<std::ptrdiff_t>(theirs.size());
    std::ptrdiff_t best = 0, best_overlap = 0;
    for (std::ptrdiff_t d = -(n - 1); d < m; ++d) {  // mine[k] against theirs[k + d]
      const std::ptrdiff_t first = std::max<std::ptrdiff_t>(0, -d), last = std::min(n, m - d);
      if (last - first <= best_overlap) continue;
      bool same = true;
      for (std::ptrdiff_t k = first; same && k < last; ++k)
        same = trace.nodes[mine[static_cast<std::size_t>(k)]].name ==
               shaped.nodes[theirs[static_cast<std::size_t>(k + d)]].name;
      if (same) best = d, best_overlap = last - first;
    }
    if (2 * best_overlap < n)
      differ(fmt::format("has {} kernels here and {} there, and no run of half of these is a run of those",
                         grouped(mine.size()), grouped(theirs.size())));
    for (std::ptrdiff_t k = std::max<std::ptrdiff_t>(0, -best); k < std::min(n, m - best); ++k) {
      TraceNode& to = trace.nodes[mine[static_cast<std::size_t>(k)]];
      const TraceNode& from = shaped.nodes[theirs[static_cast<std::size_t>(k + best)]];
      to.flops = from.flops;
      to.gemm = from.gemm;
      to.attention = from.attention;
      to.hbm_bytes = from.hbm_bytes;
      to.dtype = from.dtype;
    }
  }
}

void check_traces(std::vector<RankTrace>& traces) {
  std::map<int, const RankTrace*> by_rank;
  for (const auto& t : traces) {
    if (t.rank < 0) fail_trace(t.file, fmt::format("rank {} is negative", t.rank));
    if (const auto [it, fresh] = by_rank.emplace(t.rank, &t); !fresh)
      fail_trace(t.file, fmt::format("rank {} again: {} is rank {} too", t.rank, it->second->file, t.rank));
  }
  int world = static_cast<int>(traces.size());
  for (const auto& t : traces)
    if (t.world_size) world = std::max(world, *t.world_size);
  std::vector<int> missing;
  for (int r = 0; r < world; ++r)
    if (!by_rank.contains(r)) missing.push_back(r);
  if (!missing.empty())
    fail_trace(traces.front().file, fmt::format("the job has {} ranks and no trace was given for rank{} {}: give one "
                                                "trace per rank",
                                                world, missing.size() > 1 ? "s" : "", fmt::join(missing, ", ")));
  std::ranges::sort(traces, {}, &RankTrace::rank);
  // A collective whose trace names no members (Chakra's) spans every rank.
  std::vector<int> everyone(traces.size());
  for (std::size_t r = 0; r < traces.size(); ++r) everyone[r] = static_cast<int>(r);
  for (auto& t : traces)
    for (auto& n : t.nodes)
      if (n.collective && n.collective->group.empty()) {
        n.collective->group = everyone;
        if (n.collective->kind == models::CollectiveKind::reduce_scatter)
          n.collective->out_bytes = Bytes{n.collective->in_bytes.count() / everyone.size()};
      }
  check_collectives(traces);
  check_point_to_point(traces);
}

std::vector<Program> build_programs(const std::vector<RankTrace>& traces, const Fabric& fabric,
                                    const ReplayOptions& options, int phase, const std::string& origin) {
  const int captured = static_cast<int>(traces.size());
  const int ranks = options.ranks == 0 ? captured : options.ranks;
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (ranks % captured != 0)
    throw_input_error(
        {origin, 0, 0}, "ranks",
        fmt::format("{} is no multiple of the {} captured ranks (replicas of the whole job)", ranks, captured));
  if (ranks > gpus)
    throw_input_error({origin, 0, 0}, "ranks",
                      fmt::format("{} ranks to replay and the topology has {} GPUs", ranks, gpus));
  const int replicas = ranks / captured;
  std::map<std::string, GpuSpec> sources;
  std::map<std::vector<int>, Group> groups;
  auto group_of = [&](const std::vector<int>& captured_group, int replica) {
    // The whole captured job's group is the data-parallel one: it spans every replica. A smaller group (tensor or
    // pipeline parallel) stays inside its replica.
    std::vector<int> members;
    if (static_cast<int>(captured_group.size()) == captured) {
      for (int r = 0; r < ranks; ++r) members.push_back(r);
    } else {
      for (int r : captured_group) members.push_back(r + replica * captured);
    }
    auto [it, fresh] = groups.try_emplace(members, nullptr);
    if (fresh) it->second = std::make_shared<const std::vector<int>>(members);
    return it->second;
  };
  // A send / recv stays inside its replica, and each direction (and tag) of a pair is a group of its own: the
  // runtime matches a group's collectives in order (runtime/collective_executor.hpp), and NCCL matches a send with
  // the recv of the same peers, so rank 0's send to 1 and its recv from 1 never pair up with each other.
  std::map<std::tuple<int, int, int>, Group> p2p_groups;  // (sender, receiver, tag) in replayed ranks
  auto p2p_group = [&](const PointToPoint& p, int replica) {
    const int sender = p.sender + replica * captured, receiver = p.receiver + replica * captured;
    auto [it, fresh] = p2p_groups.try_emplace({sender, receiver, p.tag}, nullptr);
    if (fresh)
      it->second = std::make_shared<const std::vector<int>>(
          std::vector<int>{std::min(sender, receiver), std::max(sender, receiver)});
    return it->second;
  };

  std::vector<Program> programs(static_cast<std::size_t>(gpus));
  // One re-timing per (source, target) pair of GPU specs: loading a preset's models is not free.
  std::map<std::pair<const GpuSpec*, const GpuSpec*>, KernelRetiming> retimings;
  for (int replica = 0; replica < replicas; ++replica)
    for (const auto& t : traces) {
      const int rank = t.rank + replica * captured;
      const GpuSpec& target = *fabric.device(fabric.gpus()[static_cast<std::size_t>(rank)]).gpu;
      // Looked up only when a kernel needs it: a trace of host work alone (Chakra's) may name no GPU.
      auto source = [&]() -> const GpuSpec& { return source_gpu(t, options, sources, origin); };
      std::vector<bool> awaited(t.nodes.size(), false);
      for (const auto& n : t.nodes)
        for (auto d : n.deps) awaited[d] = t.nodes[d].lane != n.lane;
      StreamsOp streams;
      streams.streams.resize(std::max<std::size_t>(t.lanes.size(), 2));
      for (std::size_t i = 0; i < t.nodes.size(); ++i) {
        const TraceNode& n = t.nodes[i];
        auto& list = streams.streams[n.lane];
        auto push = [&](auto op) { list.push_back(Op{std::move(op), phase, n.step}); };
        for (auto d : n.deps)
          if (t.nodes[d].lane != n.lane) push(EventWaitOp{static_cast<int>(d), 1});
        // A kernel costed from its shapes pays the compute model's own launch or queue cost instead of the gap.
        const bool derived = options.cost == KernelCost::derived && n.kind == TraceNode::Kind::kernel && n.flops;
        if (n.delay > Seconds{0} && !derived) push(HostOp{n.delay, "launch gap"});
        switch (n.kind) {
          case TraceNode::Kind::host:
            push(HostOp{n.duration, "host"});  // even when empty: a Chakra node without its time is still an op
            break;
          case TraceNode::Kind::sync:
            break;
          case TraceNode::Kind::kernel:
          case TraceNode::Kind::memory: {
            if (derived) {
              ComputeOp c{*n.flops, n.hbm_bytes, std::nullopt, n.dtype, true};
              if (models::kernels_by_shape(target, n.dtype)) {  // else the roofline, as the training workload does
                if (n.gemm) c.shape = *n.gemm;                  // timed by its tiles
                if (n.attention) c.shape = *n.attention;        // by its score blocks over the SMs
              }
              // A memory-bound kernel reaches its kind's share of HBM bandwidth (a layer norm's, GeLU's backward).
              if (!n.gemm && !n.attention) c.memory = memory_kind(n.name);
              push(c);
              break;
            }
            const auto kind = n.kind == TraceNode::Kind::memory ? KernelClass::memory : classify(n.name);
            auto key = std::pair{&source(), &target};
            auto it = retimings.find(key);
            if (it == retimings.end()) it = retimings.try_emplace(key, source(), target).first;
            const Seconds time = it->second.time(kind, n.name, n.duration);
            if (time > Seconds{0}) push(ComputeOp{Flops{0}, Bytes{0}, time});
            break;
          }
          case TraceNode::Kind::host_copy:
            if (n.bytes.count() > 0) push(CopyOp{.peer = HOST, .bytes = n.bytes, .pull = !n.to_host});
            break;
          case TraceNode::Kind::collective: {
            if (const auto& p = n.collective->p2p) {
              if (n.collective->in_bytes.count() == 0) break;  // nothing to move: skipped like an empty collective
              CollectiveOp c;
              c.kind = models::CollectiveKind::broadcast;
              c.bytes = n.collective->in_bytes;
              c.group = p2p_group(*p, replica);
              c.root = p->sender + replica * captured;
              push(std::move(c));
              break;
            }
            const Group group = group_of(n.collective->group, replica);
            if (group->size() < 2) break;
            if (!n.collective->kind) {
              push(BarrierOp{group});
              break;
            }
            CollectiveOp c;
            c.kind = *n.collective->kind;
            c.bytes = collective_bytes(*n.collective, group->size());
            c.group = group;
            c.root =
                std::ranges::find(*group, n.collective->root) != group->end() ? n.collective->root : group->front();
            if (c.bytes.count() > 0) push(std::move(c));
            break;
          }
        }
        if (awaited[i]) push(EventRecordOp{static_cast<int>(i)});
      }
      programs[static_cast<std::size_t>(rank)].ops.push_back(Op{std::move(streams), phase, -1});
    }
  return programs;
}

namespace {

class TraceWorkload final : public Workload {
 public:
  std::vector<RankTrace> traces;
  std::vector<Program> programs;
  int ranks = 0;

  void emit(std::vector<Program>& out, int phase, const std::vector<bool>& /*needed*/) const override {
    for (std::size_t r = 0; r < out.size(); ++r)
      for (auto op : programs[r].ops) {
        op.phase = phase;
        out[r].ops.push_back(std::move(op));
      }
  }

  std::vector<Table> summarize(const RankRecords& records, int phase) const override {
    const int steps = traces.front().steps;
    // A trace of host work only (a Chakra trace of CPU operators) is timed by its host ops instead.
    const bool has_gpu = std::ranges::any_of(records, [&](const OpRecord& r) {
      return r.phase == phase && (r.kind == "compute" || r.kind == "copy" || r.kind == "collective");
    });
    auto gpu_op = [has_gpu](const OpRecord& r) {
      if (!has_gpu) return r.kind == "host";
      return r.kind == "compute" || r.kind == "copy" || r.kind == "collective" || r.kind == "barrier";
    };
    // A step ends with its last GPU op: what the captured step times (CUDA events between steps) measure. The
    // first starts when the queue found at the window's start has drained, or with its first GPU op.
    std::vector<double> ends(static_cast<std::size_t>(steps), 0);
    double queue_end = -1, first_start = 1e300;
    for (const auto& r : records) {
      if (r.phase != phase || !gpu_op(r) || r.tag >= steps) continue;
      if (r.tag < 0) {
        queue_end = std::max(queue_end, r.end.count());
        continue;
      }
      first_start = std::min(first_start, r.start.count());
      ends[static_cast<std::size_t>(r.tag)] = std::max(ends[static_cast<std::size_t>(r.tag)], r.end.count());
    }
    const double start = queue_end >= 0 ? queue_end : first_start;
    Table per_step{
        "replay: profiler steps (the last GPU op of each, over all ranks)", {"step", "end_ms", "step_ms"}, {}};
    for (int s = 0; s < steps; ++s) {
      const double previous = s == 0 ? start : ends[static_cast<std::size_t>(s - 1)];
      per_step.rows.push_back(
          {s, ends[static_cast<std::size_t>(s)] * 1e3, (ends[static_cast<std::size_t>(s)] - previous) * 1e3});
    }
    const double step = (ends.back() - start) / steps;
    std::size_t kernels = 0, unknown = 0;
    std::set<std::string> unknown_names;
    for (const auto& t : traces)
      for (const auto& n : t.nodes)
        if (n.kind == TraceNode::Kind::kernel) {
          ++kernels;
          if (classify(n.name) == KernelClass::unknown) {
            ++unknown;
            unknown_names.insert(n.name.substr(0, 48));
          }
        }
    Table summary{"replay", {"metric", "value"}, {}};
    summary.rows.push_back({"step_time_ms", step * 1e3});
    summary.rows.push_back({"steps", steps});
    summary.rows.push_back({"ranks", ranks});
    summary.rows.push_back({"captured_ranks", traces.size()});
    summary.rows.push_back({"kernels_per_captured_job", kernels});
    summary.rows.push_back({"kernels_costed_as_memory_bound_by_default", unknown});
    std::vector<Table> tables{summary, per_step};
    Table notes{"replay notes", {"note"}, {}};
    for (const auto& t : traces)
      for (const auto& n : t.notes) notes.rows.push_back({fmt::format("{}: {}", t.file, n)});
    if (unknown > 0)
      notes.rows.push_back(
          {fmt::format("{} kernels of {} names are of no known class and are scaled as memory-bound, "
                       "e.g. {}",
                       unknown, unknown_names.size(), *unknown_names.begin())});
    if (!notes.rows.empty()) tables.push_back(std::move(notes));
    return tables;
  }
};

}  // namespace

WorkloadRegistry::Entry trace_entry() {
  return {"trace",
          "replay a captured job: PyTorch profiler (Kineto) or Chakra traces, one per rank (docs/replay.md)",
          {{"paths", "list of files", "", "one trace per rank (.json, .json.gz, Chakra .et); relative to the scenario"},
           {"cost", "recorded|derived", "recorded",
            "kernels: recorded time scaled to the target GPU, or from their shapes where known"},
           {"ranks", "count", "as captured", "ranks to replay: captured ranks x data-parallel replicas"},
           {"source_gpu", "GPU preset", "from the trace", "the GPU the traces ran on, when their header lacks it"},
           {"shapes", "list of files", "none",
            "per rank, a profile of the same steps with shapes (record_shapes): cost derived takes the kernels' "
            "shapes from it and the host's timing from `paths`"}},
          [](const ConfigNode& node, const Fabric& fabric) -> std::unique_ptr<Workload> {
            auto w = std::make_unique<TraceWorkload>();
            // A list of files, each relative to the scenario that names it.
            const auto files_of = [](const ConfigNode& list) {
              std::vector<std::string> files;
              for (const auto& p : list.elements()) {
                std::filesystem::path file(p.as<std::string>());
                const SourceLocation where = p.location();
                if (file.is_relative() && where.line > 0) file = std::filesystem::path(where.file).parent_path() / file;
                files.push_back(file.lexically_normal().string());
              }
              return files;
            };
            const ConfigNode paths = node.child("paths");
            const auto files = files_of(paths);
            if (files.empty()) paths.fail("expected one trace per rank, found none");
            ReplayOptions options;
            const auto cost = node.optional<std::string>("cost", "recorded");
            if (cost != "recorded" && cost != "derived")
              node.fail_key("cost", fmt::format("expected recorded or derived, found '{}'", cost));
            options.cost = cost == "derived" ? KernelCost::derived : KernelCost::recorded;
            options.ranks = node.optional<int>("ranks", 0);
            if (node.has("ranks")) check_between(node, "ranks", options.ranks, 1, 1 << 20);
            options.source_gpu = node.maybe<std::string>("source_gpu");
            w->traces = read_traces(files);
            if (const auto shapes = node.maybe_child("shapes")) {
              const auto shaped = files_of(*shapes);
              if (shaped.size() != files.size())
                shapes->fail(
                    fmt::format("expected one shapes trace per trace ({}), found {}", files.size(), shaped.size()));
              for (std::size_t i = 0; i < shaped.size(); ++i)  // the traces are in rank order now, not the files'
                take_shapes(*std::ranges::find(w->traces, files[i], &RankTrace::file),
                            read_trace_bytes(read_file(shaped[i]), shaped[i], static_cast<int>(i)));
            }
            const std::string origin = node.location().to_string();
            w->programs = build_programs(w->traces, fabric, options, 0, origin);
            w->ranks = options.ranks == 0 ? static_cast<int>(w->traces.size()) : options.ranks;
            return w;
          }};
}

}  // namespace snsim::workloads::replay
