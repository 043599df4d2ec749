#include "program/program.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::workloads {
namespace {

constexpr int MAX_REPEAT = 1'000'000'000;
// PGAS limits: more issuers than a GPU has threads in flight make no sense at this grain; signal ids index a
// small symmetric array; one op may move at most 2^50 bytes (wire bytes stay far from 2^64).
constexpr int MAX_ISSUERS = 65536;
constexpr int MAX_SIGNAL = 65535;
constexpr std::uint64_t MAX_LOADS = 1'000'000'000'000;
constexpr double MAX_OP_BYTES = 1125899906842624.0;  // 2^50
constexpr std::string_view OP_NAMES =
    "compute, copy, collective, barrier, put, get, signal_wait, quiet, fence, shmem_barrier, load, managed, touch, "
    "prefetch, advise, read, repeat, streams or ranks";

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string gpu_range(int gpus) {
  return fmt::format("the topology has {} GPUs: 0-{}", gpus, gpus - 1);
}

int checked_rank(const ConfigNode& node, int rank, int gpus) {
  if (rank < 0 || rank >= gpus) node.fail(fmt::format("GPU {} does not exist ({})", rank, gpu_range(gpus)));
  return rank;
}

Group make_group(const std::vector<int>& ranks) {
  return std::make_shared<const std::vector<int>>(ranks);
}

template <class T>
void for_each_rank(const std::vector<int>& ranks, std::vector<Program>& programs, int phase, T make_op) {
  for (int r : ranks) programs[static_cast<std::size_t>(r)].ops.push_back(Op{make_op(r), phase, -1});
}

void parse_list(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
                const Group& group, std::vector<Program>& programs);
void parse_pgas(const std::string& kind, const ConfigNode& op, const std::vector<int>& ranks, const Fabric& fabric,
                int phase, const Group& group, std::vector<Program>& programs);

void parse_one(const ConfigNode& item, const std::vector<int>& ranks, const Fabric& fabric, int phase,
               const Group& group, std::vector<Program>& programs) {
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (!item.is_map()) item.fail(fmt::format("expected an op: {}", OP_NAMES));
  if (item.has("streams")) {
    const ConfigNode list = item.child("streams");
    const auto lists = list.elements();
    if (lists.size() < 2) list.fail(fmt::format("expected a list of 2 or more op lists, found {}", lists.size()));
    std::vector<StreamsOp> ops(programs.size());
    for (const auto& stream : lists) {
      std::vector<Program> bodies(programs.size());
      parse_list(stream, ranks, fabric, phase, group, bodies);
      for (int r : ranks)
        ops[static_cast<std::size_t>(r)].streams.push_back(std::move(bodies[static_cast<std::size_t>(r)].ops));
    }
    for (int r : ranks)
      programs[static_cast<std::size_t>(r)].ops.push_back(Op{std::move(ops[static_cast<std::size_t>(r)]), phase, -1});
    return;
  }
  if (item.has("repeat")) {
    const int count = item.required<int>("repeat");
    check_between(item, "repeat", count, 1, MAX_REPEAT);
    std::vector<Program> bodies(programs.size());
    parse_list(item.child("ops"), ranks, fabric, phase, group, bodies);
    for (int r : ranks) {
      auto& body = bodies[static_cast<std::size_t>(r)].ops;
      programs[static_cast<std::size_t>(r)].ops.push_back(Op{RepeatOp{count, std::move(body)}, phase, -1});
    }
    return;
  }
  if (item.has("ranks")) {  // {ranks: 3, ops: [...]}: these ops run on a subset of the program's ranks only
    const auto subset = parse_ranks(item.child("ranks"), gpus);
    for (int r : subset)
      if (std::ranges::find(ranks, r) == ranks.end())
        item.fail_key("ranks", fmt::format("rank {} is not one of the program's ranks {}", r, fmt::join(ranks, ", ")));
    parse_list(item.child("ops"), subset, fabric, phase, make_group(subset), programs);
    return;
  }
  std::vector<std::string> present;
  for (std::string_view kind : {"compute", "copy", "collective", "barrier", "put", "get", "signal_wait", "quiet",
                                "fence", "shmem_barrier", "load", "managed", "touch", "prefetch", "advise", "read"})
    if (item.has(kind)) present.emplace_back(kind);
  if (present.size() != 1)
    item.fail(present.empty() ? fmt::format("expected an op: {}", OP_NAMES)
                              : fmt::format("one op per list item, found {}", fmt::join(present, " and ")));
  const ConfigNode op = item.child(present.front());
  const std::string& kind = present.front();

  if (kind == "compute") {
    ComputeOp c;
    c.duration = op.maybe<Seconds>("time");
    c.flops = op.optional<Flops>("flops", Flops{0});
    c.bytes = op.optional<Bytes>("bytes", Bytes{0});
    c.pipelined = op.optional<bool>("pipelined", false);
    if (c.duration && (op.has("flops") || op.has("bytes"))) op.fail("give either time, or flops and bytes, not both");
    if (!c.duration && c.flops.count() == 0 && c.bytes.count() == 0)
      op.fail("expected time, or flops and bytes (for the roofline)");
    if (c.duration) check_positive(op, "time", *c.duration);
    if (const auto name = op.maybe<std::string>("dtype")) {
      const auto dtype = dtype_from_string(*name);
      if (!dtype)
        op.fail_key("dtype", fmt::format("unknown number format '{}'; known: {}", *name, known_dtype_names()));
      const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
      if (!gpu.peak(*dtype))
        op.fail_key("dtype", fmt::format("the {} preset has no published dense {} rate", gpu.model, *name));
      if (c.duration) op.fail_key("dtype", "applies to flops, not to a fixed time");
      c.dtype = *dtype;
    }
    for_each_rank(ranks, programs, phase, [&](int) { return c; });
  } else if (kind == "copy") {
    const Bytes bytes = op.required<Bytes>("bytes");
    check_size(op, "bytes", bytes, fabric);
    const auto engine_name = op.optional<std::string>("engine", "ce");
    if (engine_name != "ce" && engine_name != "sm")
      op.fail_key("engine", fmt::format("expected ce or sm, found '{}'", engine_name));
    const auto engine = engine_name == "ce" ? models::CopyEngine::ce : models::CopyEngine::sm;
    const bool pipelined = op.optional<bool>("pipelined", false);
    // `to`: this rank writes into the peer (a push); `from`: it reads from the peer (a pull).
    if (op.has("to") == op.has("from")) op.fail("expected one of `to` (a push) or `from` (a pull)");
    const bool pull = op.has("from");
    const ConfigNode peer = op.child(pull ? "from" : "to");
    // `nvme` only here: the drives are a copy's source or sink, not a GPU location the other ops take.
    const bool nvme = peer.is_scalar() && peer.scalar() == "nvme";
    if (nvme && fabric.nvme_drives().empty())
      op.fail_key(pull ? "from" : "to", "the topology has no NVMe drives; set topology.nvme_drives");
    for_each_rank(ranks, programs, phase, [&](int r) {
      return CopyOp{nvme ? NVME : parse_peer(peer, r, gpus), bytes, engine, pipelined, pull};
    });
  } else if (kind == "collective") {
    CollectiveOp c;
    c.kind = parse_collective_kind(op.child("op"));
    c.bytes = op.required<Bytes>("bytes");
    c.group = group;
    parse_collective_options(op, {c.kind}, fabric, c);
    check_size(op, "bytes", c.bytes, fabric);
    c.root = op.optional<int>("root", group->front());
    if (c.kind == models::CollectiveKind::broadcast && std::ranges::find(*group, c.root) == group->end())
      op.fail_key("root", fmt::format("rank {} is not one of the ranks {}", c.root, fmt::join(*group, ", ")));
    if (group->size() < 2) op.fail("a collective needs at least 2 ranks");
    for_each_rank(ranks, programs, phase, [&](int) { return c; });
  } else if (kind == "barrier") {
    if (!op.is_map() && !(op.is_scalar() && op.scalar().empty())) op.fail("expected {} (no parameters)");
    for_each_rank(ranks, programs, phase, [&](int) { return BarrierOp{group, false}; });
  } else if (kind == "managed" || kind == "touch" || kind == "prefetch" || kind == "advise" || kind == "read") {
    parse_uvm(kind, op, ranks, fabric, phase, programs);
  } else {
    parse_pgas(kind, op, ranks, fabric, phase, group, programs);
  }
}

void parse_list(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
                const Group& group, std::vector<Program>& programs) {
  const auto items = ops.elements();
  if (items.empty()) ops.fail("the program is empty");
  for (const auto& item : items) parse_one(item, ranks, fabric, phase, group, programs);
}

models::Scope parse_scope(const ConfigNode& op) {
  const auto name = op.optional<std::string>("scope", "thread");
  const auto s = models::scope(name);
  if (!s) op.fail_key("scope", fmt::format("expected thread, warp or block, found '{}'", name));
  return *s;
}

/// The other PE of a put or get: a GPU other than the issuing one.
int parse_pe(const ConfigNode& node, int rank, int gpus) {
  const int pe = parse_peer(node, rank, gpus);
  if (pe == HOST) node.fail("the host is not a PE; expected a GPU index, next, prev or xor:K");
  if (pe == rank) node.fail(fmt::format("GPU {} would address itself; expected another GPU", rank));
  return pe;
}

void parse_pgas(const std::string& kind, const ConfigNode& op, const std::vector<int>& ranks, const Fabric& fabric,
                int phase, const Group& group, std::vector<Program>& programs) {
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (kind == "put") {
    const Bytes bytes = op.required<Bytes>("bytes");
    check_size(op, "bytes", bytes, fabric);
    const models::Scope scope = parse_scope(op);
    const int issuers = op.optional<int>("issuers", 1);
    check_between(op, "issuers", issuers, 1, MAX_ISSUERS);
    const int count = op.optional<int>("count", 1);
    check_between(op, "count", count, 1, MAX_REPEAT);
    if (static_cast<double>(bytes.count()) * issuers * count > MAX_OP_BYTES)
      op.fail_key("count", fmt::format("issuers x count x bytes must be at most 1 PiB, got {} x {} x {}", issuers,
                                       count, bytes));
    const auto signal = op.maybe<int>("signal");
    if (signal) check_between(op, "signal", *signal, 0, MAX_SIGNAL);
    const ConfigNode to = op.child("to");
    for_each_rank(ranks, programs, phase,
                  [&](int r) { return PutOp{parse_pe(to, r, gpus), bytes, scope, issuers, count, signal}; });
  } else if (kind == "get") {
    const Bytes bytes = op.required<Bytes>("bytes");
    check_size(op, "bytes", bytes, fabric);
    const models::Scope scope = parse_scope(op);
    const ConfigNode from = op.child("from");
    for_each_rank(ranks, programs, phase, [&](int r) { return GetOp{parse_pe(from, r, gpus), bytes, scope}; });
  } else if (kind == "signal_wait") {
    SignalWaitOp w;
    w.signal = op.required<int>("signal");
    check_between(op, "signal", w.signal, 0, MAX_SIGNAL);
    w.value = op.required<std::uint64_t>("value");
    const auto cmp = op.optional<std::string>("cmp", "ge");
    constexpr std::array<std::string_view, 6> CMP_NAMES{"eq", "ne", "gt", "ge", "lt", "le"};
    const auto it = std::ranges::find(CMP_NAMES, cmp);
    if (it == CMP_NAMES.end()) op.fail_key("cmp", fmt::format("expected eq, ne, gt, ge, lt or le, found '{}'", cmp));
    w.cmp = static_cast<Compare>(it - CMP_NAMES.begin());
    w.consume = op.optional<bool>("consume", false);
    if (w.consume && w.cmp != Compare::ge)
      op.fail_key("consume", "needs cmp: ge (it subtracts value once the signal has reached it)");
    for_each_rank(ranks, programs, phase, [&](int) { return w; });
  } else if (kind == "quiet" || kind == "fence") {
    if (!op.is_map() && !(op.is_scalar() && op.scalar().empty())) op.fail("expected {} (no parameters)");
    if (kind == "quiet")
      for_each_rank(ranks, programs, phase, [](int) { return QuietOp{}; });
    else
      for_each_rank(ranks, programs, phase, [](int) { return FenceOp{}; });
  } else if (kind == "shmem_barrier") {
    const models::Scope scope = parse_scope(op);
    for_each_rank(ranks, programs, phase, [&](int) { return ShmemBarrierOp{group, scope}; });
  } else {  // load
    const Bytes bytes = op.required<Bytes>("bytes");
    check_size(op, "bytes", bytes, fabric);
    const auto pattern = op.optional<std::string>("pattern", "chase");
    if (pattern != "chase" && pattern != "stream")
      op.fail_key("pattern", fmt::format("expected chase or stream, found '{}'", pattern));
    const auto count = op.optional<std::uint64_t>("count", 1);
    check_between(op, "count", count, std::uint64_t{1}, MAX_LOADS);
    if (pattern == "stream" && static_cast<double>(bytes.count()) * static_cast<double>(count) > MAX_OP_BYTES)
      op.fail_key("count", fmt::format("count x bytes must be at most 1 PiB, got {} x {}", count, bytes));
    const ConfigNode from = op.child("from");
    const bool self = from.is_scalar() && from.scalar() == "self";
    for_each_rank(ranks, programs, phase, [&](int r) {
      const int pe = self ? r : parse_peer(from, r, gpus);
      if (pe == HOST) from.fail("SM loads read GPU memory; expected self, a GPU index, next, prev or xor:K");
      return LoadOp{pe, bytes, pattern == "chase" ? models::LoadPattern::chase : models::LoadPattern::stream, count};
    });
  }
}

}  // namespace

std::vector<int> parse_ranks(const ConfigNode& node, int gpus) {
  std::vector<int> ranks;
  if (node.is_sequence()) {
    for (const auto& e : node.elements()) ranks.push_back(checked_rank(e, e.as<int>(), gpus));
  } else {
    const std::string text = node.scalar();
    if (text == "all" || text == "even" || text == "odd") {
      for (int r = 0; r < gpus; ++r)
        if (text == "all" || (text == "even") == (r % 2 == 0)) ranks.push_back(r);
    } else if (auto single = to_int(text)) {
      ranks.push_back(checked_rank(node, *single, gpus));
    } else if (auto dash = text.find('-'); dash != std::string::npos) {
      const auto first = to_int(std::string_view(text).substr(0, dash));
      const auto last = to_int(std::string_view(text).substr(dash + 1));
      if (!first || !last || *first > *last) node.fail(fmt::format("expected a range like \"0-3\", found '{}'", text));
      for (int r = *first; r <= *last; ++r) ranks.push_back(checked_rank(node, r, gpus));
    } else {
      node.fail(fmt::format("expected all, even, odd, a rank, a range like \"0-3\" or a list, found '{}'", text));
    }
  }
  std::ranges::sort(ranks);
  if (std::ranges::adjacent_find(ranks) != ranks.end()) node.fail("a rank is listed twice");
  if (ranks.empty()) node.fail("selects no rank");
  return ranks;
}

std::vector<int> parse_ranks_or_all(const ConfigNode& parent, int gpus) {
  if (auto r = parent.maybe_child("ranks")) return parse_ranks(*r, gpus);
  std::vector<int> ranks(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return ranks;
}

models::CollectiveKind parse_collective_kind(const ConfigNode& node) {
  const auto name = node.as<std::string>();
  const auto kind = models::collective_kind(name);
  if (!kind)
    node.fail(
        fmt::format("unknown collective '{}'; known: all_gather, all_reduce, all_to_all, broadcast, "
                    "reduce_scatter",
                    name));
  return *kind;
}

std::optional<models::Protocol> parse_protocol(const ConfigNode& parent) {
  const auto name = parent.maybe<std::string>("protocol");
  if (!name) return std::nullopt;
  const auto p = models::protocol(*name);
  if (!p) parent.fail_key("protocol", fmt::format("expected LL, LL128 or Simple, found '{}'", *name));
  return p;
}

void parse_collective_options(const ConfigNode& parent, const std::vector<models::CollectiveKind>& kinds,
                              const Fabric& fabric, CollectiveOp& op) {
  op.protocol = parse_protocol(parent);
  if (const auto name = parent.maybe<std::string>("algorithm")) {
    op.algorithm = models::algorithm(*name);
    if (!op.algorithm)
      parent.fail_key("algorithm",
                      fmt::format("expected ring, tree, one_shot, two_shot, nvls or direct, found '{}'", *name));
  }
  // NVLS reduces in the switches of one NVLink domain: the group's GPUs must all be in it.
  std::vector<DeviceId> members;
  for (int r : *op.group) members.push_back(fabric.gpus()[static_cast<std::size_t>(r)]);
  const bool reduces = models::switch_reduction(fabric, members) > 0;
  for (auto kind : kinds) {
    const auto runs = models::algorithms_for(kind);
    auto allowed = runs;
    if (!reduces) std::erase(allowed, models::Algorithm::nvls);
    std::vector<std::string_view> names;
    for (auto a : allowed) names.push_back(models::to_string(a));
    if (op.algorithm && std::ranges::find(allowed, *op.algorithm) == allowed.end()) {
      if (std::ranges::find(runs, *op.algorithm) != runs.end()) {  // nvls where the switches cannot reduce
        const auto domain = fabric.nvlink_domain(members.front());
        for (std::size_t i = 1; i < members.size() && models::switch_reduction(fabric, {members.front()}) > 0; ++i)
          if (!std::ranges::binary_search(domain, members[i]))
            parent.fail_key("algorithm", fmt::format("nvls needs every rank in one NVLink domain, and ranks {} and {} "
                                                     "are in different ones; allowed for {}: {}",
                                                     op.group->front(), (*op.group)[i], models::to_string(kind),
                                                     fmt::join(names, ", ")));
        parent.fail_key("algorithm", fmt::format("nvls needs NVSwitches that reduce in the switch and this topology "
                                                 "has none; allowed for {}: {}",
                                                 models::to_string(kind), fmt::join(names, ", ")));
      }
      parent.fail_key("algorithm", fmt::format("{} cannot run {}; allowed: {}", models::to_string(*op.algorithm),
                                               models::to_string(kind), fmt::join(names, ", ")));
    }
    if (!op.protocol) continue;
    // The protocols of the forced algorithm, or of any algorithm that can run this collective.
    std::vector<models::Protocol> protocols;
    for (auto a : op.algorithm ? std::vector{*op.algorithm} : allowed)
      for (auto p : models::protocols_for(a))
        if (std::ranges::find(protocols, p) == protocols.end()) protocols.push_back(p);
    if (std::ranges::find(protocols, *op.protocol) == protocols.end()) {
      std::ranges::sort(protocols);
      std::vector<std::string_view> allowed_names;
      for (auto p : protocols) allowed_names.push_back(models::to_string(p));
      parent.fail_key(
          "protocol",
          fmt::format("{} cannot run {}{}; allowed: {}", models::to_string(*op.protocol), models::to_string(kind),
                      op.algorithm ? fmt::format(" with {}", models::to_string(*op.algorithm)) : std::string(),
                      fmt::join(allowed_names, ", ")));
    }
  }
  op.channels = parent.maybe<int>("channels");
  // NCCL runs at most 64 channels (MAXCHANNELS, src/include/device.h).
  if (op.channels) check_between(parent, "channels", *op.channels, 1, 64);
  const auto launch = parent.optional<std::string>("launch", "stream");
  const auto l = models::launch(launch);
  if (!l) parent.fail_key("launch", fmt::format("expected stream or graph, found '{}'", launch));
  op.launch = *l;
}

int parse_peer(const ConfigNode& node, int rank, int gpus) {
  const std::string text = node.scalar();
  if (text == "next") return (rank + 1) % gpus;
  if (text == "prev") return (rank + gpus - 1) % gpus;
  if (text == "host") return HOST;
  if (text.starts_with("xor:")) {
    const auto k = to_int(std::string_view(text).substr(4));
    if (!k || *k <= 0) node.fail(fmt::format("expected xor:K with K > 0, found '{}'", text));
    return checked_rank(node, rank ^ *k, gpus);
  }
  if (auto index = to_int(text)) return checked_rank(node, *index, gpus);
  node.fail(fmt::format("expected a GPU index, next, prev, xor:K or host, found '{}'", text));
}

void parse_ops(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
               std::vector<Program>& programs) {
  const ManagedScope buffers;
  parse_list(ops, ranks, fabric, phase, make_group(ranks), programs);
}

void check_size(const ConfigNode& parent, std::string_view key, Bytes bytes, const Fabric& fabric) {
  if (bytes.count() == 0) parent.fail_key(key, "must be > 0, got 0 B");
  const Bytes memory = fabric.device(fabric.gpus().front()).gpu->memory;
  if (bytes > memory) parent.fail_key(key, fmt::format("{} does not fit in one GPU's memory ({})", bytes, memory));
}

std::uint64_t expanded_size(const std::vector<Op>& ops) {
  std::uint64_t total = 0;
  for (const auto& op : ops) {
    // Saturating: nested repeats can exceed 2^64 ops, which must not wrap around below the limit.
    constexpr auto most = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t n = 1;
    if (const auto* r = std::get_if<RepeatOp>(&op.what)) {
      const std::uint64_t body = expanded_size(r->body);
      const auto count = static_cast<std::uint64_t>(r->count);
      n = body != 0 && count > most / body ? most : count * body;
    } else if (const auto* s = std::get_if<StreamsOp>(&op.what)) {
      n = 0;
      for (const auto& stream : s->streams) {
        const std::uint64_t k = expanded_size(stream);
        n = k > most - n ? most : n + k;
      }
    }
    total = n > most - total ? most : total + n;
  }
  return total;
}

}  // namespace snsim::workloads
