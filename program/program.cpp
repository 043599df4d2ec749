#include "program/program.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace snsim::workloads {
namespace {

/// "compute, copy, ..., read, repeat, streams or ranks": what a list item of `ops:` may be.
const std::string& op_names() {
  static const std::string names = [] {
    std::vector<std::string_view> leaves, structure;
    for (const OpKind& kind : op_kinds())
      if (kind.source == OpSource::scenario) (kind.parse ? leaves : structure).push_back(kind.name);
    return fmt::format("{}, {} or ranks", fmt::join(leaves, ", "), fmt::join(structure, ", "));
  }();
  return names;
}

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

void parse_list(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
                const Group& group, std::vector<Program>& programs);

/// The ops written out so far for each rank by the parse_ops under way (repeat bodies once, aliases each time
/// they are used): a rank beyond MAX_OPS_PER_RANK here is beyond it after repeats too.
thread_local std::vector<std::uint64_t>* written_ops = nullptr;

void count_written(const ConfigNode& item, const std::vector<int>& ranks) {
  if (!written_ops) return;
  for (int r : ranks) {
    auto& n = (*written_ops)[static_cast<std::size_t>(r)];
    if (++n > MAX_OPS_PER_RANK)
      item.fail(
          fmt::format("rank {} would run more than {} ops (written out, YAML aliases expanded); the limit is {} "
                      "per rank",
                      r, MAX_OPS_PER_RANK, MAX_OPS_PER_RANK));
  }
}

void parse_one(const ConfigNode& item, const std::vector<int>& ranks, const Fabric& fabric, int phase,
               const Group& group, std::vector<Program>& programs) {
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (!item.is_map()) item.fail(fmt::format("expected an op: {}", op_names()));
  if (item.has(StreamsOp::KIND.name)) {
    const ConfigNode list = item.child(StreamsOp::KIND.name);
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
  if (item.has(RepeatOp::KIND.name)) {
    const int count = item.required<int>(RepeatOp::KIND.name);
    check_between(item, RepeatOp::KIND.name, count, 1, MAX_REPEAT);
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
  std::vector<const OpKind*> present;
  for (const OpKind& kind : op_kinds())
    if (kind.parse && item.has(kind.name)) present.push_back(&kind);
  if (present.size() != 1) {
    std::vector<std::string_view> names;
    for (const OpKind* kind : present) names.push_back(kind->name);
    item.fail(present.empty() ? fmt::format("expected an op: {}", op_names())
                              : fmt::format("one op per list item, found {}", fmt::join(names, " and ")));
  }
  const OpKind& kind = *present.front();
  count_written(item, ranks);
  kind.parse(item.child(kind.name), OpParse{ranks, fabric, phase, group, programs});
}

void parse_list(const ConfigNode& ops, const std::vector<int>& ranks, const Fabric& fabric, int phase,
                const Group& group, std::vector<Program>& programs) {
  const auto items = ops.elements();
  if (items.empty()) ops.fail("the program is empty");
  for (const auto& item : items) parse_one(item, ranks, fabric, phase, group, programs);
}

}  // namespace

const OpKind& kind_of(const Op& op) {
  return std::visit([](const auto& o) -> const OpKind& { return std::decay_t<decltype(o)>::KIND; }, op.what);
}

OpDescription describe(const Op& op) {
  return std::visit(
      [](const auto& o) -> OpDescription {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, RepeatOp>)
          return {fmt::format("repeat {}", o.count)};
        else if constexpr (std::is_same_v<T, StreamsOp>)
          return {fmt::format("streams {}", o.streams.size())};
        else
          return describe(o);
      },
      op.what);
}

bool is_free_barrier(const Op& op) {
  const auto* b = std::get_if<BarrierOp>(&op.what);
  return b && b->sync;
}

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
  std::vector<std::uint64_t> written(programs.size());
  auto* outer = std::exchange(written_ops, &written);
  try {
    parse_list(ops, ranks, fabric, phase, make_group(ranks), programs);
  } catch (...) {
    written_ops = outer;
    throw;
  }
  written_ops = outer;
}

void check_size(const ConfigNode& parent, std::string_view key, Bytes bytes, const Fabric& fabric) {
  if (bytes.count() == 0) parent.fail_key(key, "must be > 0, got 0 B");
  const Bytes memory = fabric.device(fabric.gpus().front()).gpu->memory;
  if (bytes > memory) parent.fail_key(key, fmt::format("{} does not fit in one GPU's memory ({})", bytes, memory));
}

void check_no_parameters(const ConfigNode& op) {
  if (!op.is_map() && !(op.is_scalar() && op.scalar().empty())) op.fail("expected {} (no parameters)");
  // Opened, asking for no real key, so that keys inside `barrier: {...}` are unknown, not ignored.
  if (op.is_map()) op.has("");
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
