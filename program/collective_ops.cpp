// Parsing and records of collectives and barriers (program/collective_ops.hpp).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "program/program.hpp"

namespace snsim::workloads {

void parse_collective(const ConfigNode& op, const OpParse& at) {
  const Group& group = at.group;
  CollectiveOp c;
  c.kind = parse_collective_kind(op.child("op"));
  c.bytes = op.required<Bytes>("bytes");
  c.group = group;
  parse_collective_options(op, {c.kind}, at.fabric, c);
  c.host_paced = op.optional<bool>("host_paced", false);
  if (c.host_paced && c.launch == models::Launch::graph)
    op.fail_key("host_paced", "a CUDA graph replays its calls without the host: use launch: stream");
  check_size(op, "bytes", c.bytes, at.fabric);
  c.root = op.optional<int>("root", group->front());
  if (c.kind == models::CollectiveKind::broadcast && std::ranges::find(*group, c.root) == group->end())
    op.fail_key("root", fmt::format("rank {} is not one of the ranks {}", c.root, fmt::join(*group, ", ")));
  if (group->size() < 2) op.fail("a collective needs at least 2 ranks");
  at.for_each_rank([&](int) { return c; });
}

void parse_barrier(const ConfigNode& op, const OpParse& at) {
  check_no_parameters(op);
  at.for_each_rank([&](int) { return BarrierOp{at.group, false}; });
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
                      fmt::format("expected ring, tree, one_shot, two_shot, nvls, direct, nvls_tree or collnet, "
                                  "found '{}'",
                                  *name));
  }
  // NVLS reduces in the switches of one NVLink domain: the group's GPUs must all be in it.
  std::vector<DeviceId> members;
  for (int r : *op.group) members.push_back(fabric.gpus()[static_cast<std::size_t>(r)]);
  const bool reduces = models::switch_reduction(fabric, members) > 0;
  const auto nodes = models::nodes_of(fabric, members);
  const bool one_node = std::ranges::all_of(nodes, [](int n) { return n == 0; });
  for (auto kind : kinds) {
    const auto runs = models::algorithms_for(kind);
    auto allowed = runs;
    if (!reduces) std::erase(allowed, models::Algorithm::nvls);
    if (one_node) {  // NVLSTree and SHARP join nodes
      std::erase(allowed, models::Algorithm::nvls_tree);
      std::erase(allowed, models::Algorithm::collnet);
    }
    std::vector<std::string_view> names;
    for (auto a : allowed) names.push_back(models::to_string(a));
    if (op.algorithm && std::ranges::find(allowed, *op.algorithm) == allowed.end()) {
      if (*op.algorithm == models::Algorithm::nvls_tree || *op.algorithm == models::Algorithm::collnet)
        parent.fail_key("algorithm",
                        fmt::format("{} runs across nodes, and every rank is in one node; "
                                    "allowed for {}: {}",
                                    models::to_string(*op.algorithm), models::to_string(kind), fmt::join(names, ", ")));
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

OpDescription describe(const CollectiveOp& op) {
  return {fmt::format("{} {}", models::to_string(op.kind), op.bytes), op.bytes};
}

OpDescription describe(const BarrierOp&) {
  return {"barrier"};
}

}  // namespace snsim::workloads
