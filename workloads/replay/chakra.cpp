#include "workloads/replay/chakra.hpp"

#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "chakra_et.pb.h"
#include "sim/error.hpp"
#include "workloads/replay/trace_file.hpp"

namespace snsim::workloads::replay {
namespace {

namespace pb = ChakraProtoMsg;

const pb::AttributeProto* attribute(const pb::Node& node, std::string_view name) {
  for (const auto& a : node.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t integer(const pb::AttributeProto& a) {
  switch (a.value_case()) {
    case pb::AttributeProto::kInt64Val:
      return a.int64_val();
    case pb::AttributeProto::kInt32Val:
      return a.int32_val();
    case pb::AttributeProto::kUint64Val:
      return static_cast<std::int64_t>(a.uint64_val());
    case pb::AttributeProto::kUint32Val:
      return a.uint32_val();
    case pb::AttributeProto::kSint64Val:
      return a.sint64_val();
    default:
      return 0;
  }
}

std::optional<models::CollectiveKind> collective_kind(std::int64_t type, const std::string& file, std::uint64_t id) {
  switch (type) {
    case pb::ALL_REDUCE:
      return models::CollectiveKind::all_reduce;
    case pb::ALL_GATHER:
      return models::CollectiveKind::all_gather;
    case pb::BROADCAST:
      return models::CollectiveKind::broadcast;
    case pb::ALL_TO_ALL:
      return models::CollectiveKind::all_to_all;
    case pb::REDUCE_SCATTER:
    case pb::REDUCE_SCATTER_BLOCK:
      return models::CollectiveKind::reduce_scatter;
    case pb::BARRIER:
      return std::nullopt;
    default:
      fail_trace(file,
                 fmt::format("node {}: collective type {} (REDUCE, GATHER or SCATTER) has no model yet", id, type));
  }
}

}  // namespace

RankTrace read_chakra(const std::string& bytes, const std::string& file, int position) {
  // A string field that is not UTF-8 fails the parse, which is our one error line; protobuf would also log it.
  const google::protobuf::LogSilencer quiet;
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&array);
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  auto next = [&](google::protobuf::Message& message, std::size_t index) {
    std::uint32_t size = 0;
    if (!in.ReadVarint32(&size)) return false;
    const auto limit = in.PushLimit(static_cast<int>(size));
    if (!message.ParseFromCodedStream(&in) || in.BytesUntilLimit() != 0)
      fail_trace(file, index == 0
                           ? "expected a PyTorch profiler (Kineto) JSON trace or a Chakra execution trace (a "
                             "protobuf stream starting with GlobalMetadata)"
                           : fmt::format("message {} (of {} bytes) is cut short or corrupt: a truncated Chakra trace",
                                         index + 1, size));
    in.PopLimit(limit);
    return true;
  };
  pb::GlobalMetadata metadata;
  if (!next(metadata, 0))
    fail_trace(file,
               "expected a PyTorch profiler (Kineto) JSON trace or a Chakra execution trace (a protobuf stream "
               "starting with GlobalMetadata)");
  std::vector<pb::Node> nodes;
  for (pb::Node node; next(node, nodes.size() + 1); node.Clear()) nodes.push_back(node);
  if (!in.ExpectAtEnd() && in.CurrentPosition() != static_cast<int>(bytes.size()))
    fail_trace(file, "a truncated Chakra trace: the last message's length runs past the end of the file");

  RankTrace trace;
  trace.file = file;
  trace.rank = position;
  trace.notes.push_back(
      "a Chakra trace carries no rank and no process-group members: its rank is its place on the "
      "command line and every collective spans all the traces' ranks");
  std::map<std::uint64_t, std::size_t> index_of;  // node id -> position in `nodes`
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!index_of.emplace(nodes[i].id(), i).second)
      fail_trace(file, fmt::format("node id {} appears twice", nodes[i].id()));
  // Kahn's order over ctrl and data dependencies; ids break ties, so the order is the file's where it can be.
  std::vector<std::vector<std::size_t>> deps(nodes.size()), users(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    auto add = [&](std::uint64_t id) {
      const auto it = index_of.find(id);
      if (it == index_of.end())
        fail_trace(file, fmt::format("node {} depends on node {}, which is not in the trace", nodes[i].id(), id));
      if (std::ranges::find(deps[i], it->second) == deps[i].end()) {
        deps[i].push_back(it->second);
        users[it->second].push_back(i);
      }
    };
    for (auto d : nodes[i].ctrl_deps()) add(d);
    for (auto d : nodes[i].data_deps()) add(d);
  }
  std::vector<std::size_t> waiting(nodes.size()), order;
  std::deque<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if ((waiting[i] = deps[i].size()) == 0) ready.push_back(i);
  while (!ready.empty()) {
    const std::size_t i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (auto u : users[i])
      if (--waiting[u] == 0) ready.push_back(u);
  }
  if (order.size() != nodes.size())
    fail_trace(file, fmt::format("{} nodes are in a dependency cycle", nodes.size() - order.size()));

  // Lanes: a node continues the lane of a dependency that ends one (a chain of CPU ops, a stream's kernels), else
  // starts its own; its other dependencies become stream events (replay.cpp).
  std::vector<std::optional<std::size_t>> node_of(nodes.size());  // `nodes` index -> trace node
  std::vector<std::size_t> lane_tail;                             // lane -> its last `nodes` index
  for (auto i : order) {
    const auto& n = nodes[i];
    TraceNode t;
    t.name = n.name();
    t.duration = Seconds{static_cast<double>(n.duration_micros()) * 1e-6};
    const auto* cpu = attribute(n, "is_cpu_op");
    const bool on_cpu = !cpu || cpu->bool_val();
    switch (n.type()) {
      case pb::COMP_NODE:
        t.kind = on_cpu ? TraceNode::Kind::host : TraceNode::Kind::kernel;
        break;
      case pb::COMM_COLL_NODE: {
        const auto* type = attribute(n, "comm_type");
        const auto* size = attribute(n, "comm_size");
        if (!type || !size)
          fail_trace(file, fmt::format("communication node {} has no comm_type or comm_size", n.id()));
        TraceCollective c;
        c.kind = collective_kind(integer(*type), file, n.id());
        c.in_bytes = c.out_bytes = Bytes{static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer(*size)))};
        c.dtype = "Byte";
        t.kind = TraceNode::Kind::collective;
        t.collective = std::move(c);  // its group is set once every trace is read (replay.cpp)
        break;
      }
      case pb::MEM_LOAD_NODE:
      case pb::MEM_STORE_NODE: {
        t.kind = TraceNode::Kind::host_copy;
        t.to_host = n.type() == pb::MEM_STORE_NODE;
        if (const auto* size = attribute(n, "tensor_size"))
          t.bytes = Bytes{static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer(*size)))};
        break;
      }
      case pb::COMM_SEND_NODE:
      case pb::COMM_RECV_NODE: {
        const bool send = n.type() == pb::COMM_SEND_NODE;
        const auto* size = attribute(n, "comm_size");
        if (!size) fail_trace(file, fmt::format("{} node {} has no comm_size", send ? "send" : "recv", n.id()));
        // The trace's own end may be left out (a send's comm_src, a recv's comm_dst): it is this rank.
        auto end = [&](const char* key, bool own) -> int {
          const auto* a = attribute(n, key);
          if (!a) {
            if (own) return position;
            fail_trace(file, fmt::format("{} node {} has no {}", send ? "send" : "recv", n.id(), key));
          }
          const std::int64_t rank = integer(*a);
          if (rank < 0 || rank >= (1 << 24))
            fail_trace(file, fmt::format("{} node {}: {} {} is no rank", send ? "send" : "recv", n.id(), key, rank));
          return static_cast<int>(rank);
        };
        const PointToPoint p2p{.sender = end("comm_src", send), .receiver = end("comm_dst", !send)};
        if ((send ? p2p.sender : p2p.receiver) != position || p2p.sender == p2p.receiver)
          fail_trace(file, fmt::format("{} node {} goes from rank {} to rank {}, but this trace is rank {} (its place "
                                       "among the traces)",
                                       send ? "send" : "recv", n.id(), p2p.sender, p2p.receiver, position));
        TraceCollective c;
        c.kind = models::CollectiveKind::broadcast;
        c.in_bytes = c.out_bytes = Bytes{static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer(*size)))};
        c.dtype = "Byte";
        c.group = {std::min(p2p.sender, p2p.receiver), std::max(p2p.sender, p2p.receiver)};
        c.root = p2p.sender;
        c.p2p = p2p;
        if (const auto* tag = attribute(n, "comm_tag")) c.p2p->tag = static_cast<int>(integer(*tag));
        t.kind = TraceNode::Kind::collective;
        t.collective = std::move(c);
        break;
      }
      case pb::METADATA_NODE:
        t.kind = TraceNode::Kind::sync;
        t.duration = Seconds{0};
        break;
      default:
        fail_trace(file, fmt::format("node {} has no known type ({})", n.id(), static_cast<int>(n.type())));
    }
    std::optional<std::size_t> lane;
    for (std::size_t l = 0; l < lane_tail.size() && !lane; ++l)
      if (std::ranges::find(deps[i], lane_tail[l]) != deps[i].end() &&
          trace.nodes[*node_of[lane_tail[l]]].kind == t.kind)
        lane = l;
    if (!lane) {
      lane = lane_tail.size();
      lane_tail.push_back(i);
      trace.lanes.push_back(fmt::format("chakra lane {}", *lane));
    }
    lane_tail[*lane] = i;
    t.lane = *lane;
    for (auto d : deps[i])
      if (trace.nodes[*node_of[d]].lane != t.lane) t.deps.push_back(*node_of[d]);
    node_of[i] = trace.nodes.size();
    trace.nodes.push_back(std::move(t));
  }
  if (trace.nodes.empty()) fail_trace(file, "the Chakra trace has no nodes after its metadata");
  return trace;
}

}  // namespace snsim::workloads::replay
