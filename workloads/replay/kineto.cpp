#include "workloads/replay/kineto.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace snsim::workloads::replay {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  throw_input_error({file, 0, 0}, "", message);
}

Seconds micros(double us) {
  return Seconds{us * 1e-6};
}

/// A host call or operator that shapes the replay, in the host's time order.
struct HostEvent {
  enum class What { launch, sync, collective, stream_wait } what;
  double ts = 0, end = 0;
  long tid = 0;
  std::size_t gpu = 0;           // launch: index into the GPU ops
  bool blocking = false;         // launch: the call also waits for its op (cudaMemcpy)
  const json* args = nullptr;    // collective: record_param_comms' arguments
  bool launches_kernel = false;  // collective: an NCCL kernel is launched inside it
};

struct GpuOp {
  const json* event;
  double ts, dur;
  long stream;
  std::string category;  // kernel, gpu_memcpy, gpu_memset
};

// Calls after which the host has waited for the GPU (CUDA runtime API; their driver-API forms too).
const std::set<std::string, std::less<>> SYNCHRONISING{"cudaDeviceSynchronize", "cudaStreamSynchronize",
                                                       "cudaEventSynchronize",  "cuCtxSynchronize",
                                                       "cuStreamSynchronize",   "cuEventSynchronize"};
// Copies that return only once the data has arrived (cudaMemcpy is synchronous for device memory).
const std::set<std::string, std::less<>> BLOCKING_COPIES{"cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyToSymbol",
                                                         "cudaMemcpyFromSymbol"};

bool is_nccl_kernel(std::string_view name) {
  return name.starts_with("ncclDevKernel") || name.starts_with("ncclKernel");
}

double number(const json& e, const char* key, const std::string& file) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number())
    fail(file, fmt::format("an event '{}' has no numeric `{}`", e.value("name", std::string("?")), key));
  return it->get<double>();
}

/// Bytes per element of the dtypes record_param_comms names (c10's ScalarType names).
std::optional<std::uint64_t> dtype_size(std::string_view dtype) {
  static const std::map<std::string, std::uint64_t, std::less<>> sizes{
      {"Float", 4},         {"Double", 8},      {"Half", 2},         {"BFloat16", 2}, {"Int", 4},
      {"Long", 8},          {"Short", 2},       {"Char", 1},         {"Byte", 1},     {"Bool", 1},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"ComplexFloat", 8}, {"UInt32", 4},   {"UInt64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? std::nullopt : std::optional{it->second};
}

/// "[0, 1, 2]" (record_param_comms' Process Group Ranks) into ranks.
std::vector<int> parse_rank_list(const std::string& text, const std::string& file) {
  std::vector<int> ranks;
  std::string digits;
  for (char c : text + ",") {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == ',' || c == ']') {
      if (!digits.empty()) ranks.push_back(std::stoi(digits));
      digits.clear();
    } else if (c != '[' && c != ' ') {
      fail(file, fmt::format("record_param_comms: expected `Process Group Ranks` like \"[0, 1]\", found '{}'", text));
    }
  }
  std::ranges::sort(ranks);
  return ranks;
}

/// The collective a record_param_comms describes; nullopt for what is no collective of its own (`wait`, a
/// coalescing marker) or a kind the replay does not model yet (send / recv: noted).
std::optional<TraceCollective> parse_collective(const json& args, const std::string& file, int rank,
                                                std::vector<std::string>& notes) {
  const std::string name = args.value("Collective name", std::string());
  static const std::map<std::string, std::optional<models::CollectiveKind>, std::less<>> kinds{
      {"allreduce", models::CollectiveKind::all_reduce},
      {"all_reduce", models::CollectiveKind::all_reduce},
      {"allreduce_coalesced", models::CollectiveKind::all_reduce},
      {"broadcast", models::CollectiveKind::broadcast},
      {"allgather", models::CollectiveKind::all_gather},
      {"_allgather_base", models::CollectiveKind::all_gather},
      {"all_gather_into_tensor", models::CollectiveKind::all_gather},
      {"allgather_into_tensor_coalesced", models::CollectiveKind::all_gather},
      {"reduce_scatter", models::CollectiveKind::reduce_scatter},
      {"_reduce_scatter_base", models::CollectiveKind::reduce_scatter},
      {"reduce_scatter_tensor", models::CollectiveKind::reduce_scatter},
      {"reduce_scatter_tensor_coalesced", models::CollectiveKind::reduce_scatter},
      {"alltoall", models::CollectiveKind::all_to_all},
      {"alltoall_base", models::CollectiveKind::all_to_all},
      {"all_to_all", models::CollectiveKind::all_to_all},
      {"barrier", std::nullopt}};
  const auto kind = kinds.find(name);
  if (kind == kinds.end()) {
    if (name != "wait" && name != "coalesced" && name != "startCoalescing" && name != "endCoalescing") {
      const std::string note = fmt::format("record_param_comms '{}' is not replayed (no model for it yet)", name);
      if (std::ranges::find(notes, note) == notes.end()) notes.push_back(note);
    }
    return std::nullopt;
  }
  TraceCollective c;
  c.kind = kind->second;
  c.dtype = args.value("dtype", std::string("Byte"));
  const auto size = dtype_size(c.dtype);
  if (!size) fail(file, fmt::format("record_param_comms '{}': unknown dtype '{}'", name, c.dtype));
  auto elements = [&](const char* key) {
    const auto it = args.find(key);
    if (it == args.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0)
      fail(file, fmt::format("record_param_comms '{}': expected a count `{}`", name, key));
    return it->get<std::uint64_t>();
  };
  c.in_bytes = Bytes{elements("In msg nelems") * *size};
  c.out_bytes = Bytes{elements("Out msg nelems") * *size};
  const auto ranks = args.find("Process Group Ranks");
  if (ranks != args.end() && ranks->is_string()) c.group = parse_rank_list(ranks->get<std::string>(), file);
  if (c.group.empty()) {  // an older PyTorch: the group as start, stride and size
    const int start = args.value("Global rank start", 0), stride = args.value("Global rank stride", 1);
    const int n = args.value("Group size", 0);
    for (int i = 0; i < n; ++i) c.group.push_back(start + i * stride);
  }
  if (std::ranges::find(c.group, rank) == c.group.end())
    fail(file, fmt::format("record_param_comms '{}': rank {} is not in its group [{}]", name, rank,
                           fmt::join(c.group, ", ")));
  c.root = args.value("Root", c.group.front());
  return c;
}

/// The work of a matrix multiply from its operator's shapes (record_shapes): aten::mm [m,k]x[k,n], aten::addmm
/// (bias, [m,k], [k,n]), aten::bmm / aten::baddbmm with a batch. 2mkn FLOPs; reads both operands and writes the
/// product once.
void derive_matmul(const json& op, TraceNode& node) {
  const std::string name = op.value("name", std::string());
  if (name != "aten::mm" && name != "aten::addmm" && name != "aten::bmm" && name != "aten::baddbmm") return;
  const auto& args = op.value("args", json::object());
  const auto dims = args.find("Input Dims");
  if (dims == args.end() || !dims->is_array()) return;
  const std::size_t first = name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0;
  if (dims->size() < first + 2) return;
  const auto& a = (*dims)[first];
  const auto& b = (*dims)[first + 1];
  const bool batched = name == "aten::bmm" || name == "aten::baddbmm";
  const std::size_t rank = batched ? 3 : 2;
  if (!a.is_array() || !b.is_array() || a.size() != rank || b.size() != rank) return;
  const double batch = batched ? a[0].get<double>() : 1;
  const double m = a[rank - 2].get<double>(), k = a[rank - 1].get<double>(), n = b[rank - 1].get<double>();
  std::string type;
  if (const auto types = args.find("Input type"); types != args.end() && types->size() > first)
    type = (*types)[first].get<std::string>();
  const double size = type == "float" ? 4 : type == "double" ? 8 : 2;
  node.dtype = type == "float"       ? Dtype::fp32
               : type == "double"    ? Dtype::fp64
               : type == "c10::Half" ? Dtype::fp16
                                     : Dtype::bf16;
  node.flops = Flops{2 * batch * m * k * n};
  node.hbm_bytes = Bytes{static_cast<std::uint64_t>(size * batch * (m * k + k * n + m * n))};
}

}  // namespace

bool is_kineto(const json& j) {
  return j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array();
}

RankTrace read_kineto(const json& j, const std::string& file, int position) {
  if (!is_kineto(j)) fail(file, "expected a PyTorch profiler (Kineto) trace: a JSON object with `traceEvents`");
  RankTrace trace;
  trace.file = file;
  trace.rank = position;
  if (const auto info = j.find("distributedInfo"); info != j.end() && info->is_object()) {
    if (info->contains("rank")) trace.rank = (*info)["rank"].get<int>();
    if (info->contains("world_size")) trace.world_size = (*info)["world_size"].get<int>();
  }
  if (const auto props = j.find("deviceProperties"); props != j.end() && props->is_array() && !props->empty())
    trace.gpu = (*props)[0].value("name", std::string());

  std::vector<GpuOp> gpu;
  std::map<std::int64_t, std::size_t> gpu_by_correlation;
  std::vector<const json*> calls, steps, comms;
  std::map<std::int64_t, const json*> operator_of;  // External id -> the operator with its shapes
  for (const auto& e : j["traceEvents"]) {
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    const std::string cat = e.value("cat", std::string());
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const auto& args = e.value("args", json::object());
      if (!args.contains("correlation") || !args.contains("stream"))
        fail(file, fmt::format("GPU event '{}' has no `correlation` or `stream`", e.value("name", std::string())));
      gpu_by_correlation[args["correlation"].get<std::int64_t>()] = gpu.size();
      gpu.push_back({&e, number(e, "ts", file), number(e, "dur", file), args["stream"].get<long>(), cat});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      calls.push_back(&e);
    } else if (cat == "user_annotation" && e.value("name", std::string()).starts_with("ProfilerStep#")) {
      steps.push_back(&e);
    } else if (cat == "cpu_op") {
      if (e.value("name", std::string()) == "record_param_comms") comms.push_back(&e);
      const auto& args = e.value("args", json::object());
      if (const auto id = args.find("External id"); id != args.end() && args.contains("Input Dims"))
        operator_of.emplace(id->get<std::int64_t>(), &e);
    }
  }
  if (gpu.empty()) fail(file, "the trace has no GPU kernels, copies or memsets: profile with ProfilerActivity.CUDA");
  // Where each op's stream was free before it, in the GPU's order: ops launched before the window (the queue the
  // first replayed op waited behind) count too, so that the wait is not taken for a launch latency.
  std::map<std::size_t, double> stream_free;  // GPU op -> the end of the previous op on its stream
  {
    std::vector<std::size_t> order(gpu.size());
    for (std::size_t i = 0; i < gpu.size(); ++i) order[i] = i;
    std::ranges::stable_sort(order, {}, [&](std::size_t i) { return gpu[i].ts; });
    std::map<long, double> ends;
    for (auto i : order) {
      if (const auto it = ends.find(gpu[i].stream); it != ends.end()) stream_free[i] = it->second;
      ends[gpu[i].stream] = gpu[i].ts + gpu[i].dur;
    }
  }
  std::ranges::sort(steps, {}, [&](const json* e) { return number(*e, "ts", file); });
  double from = -1e300, to = 1e300;
  if (!steps.empty()) {
    from = number(*steps.front(), "ts", file);
    to = number(*steps.back(), "ts", file) + number(*steps.back(), "dur", file);
    trace.steps = static_cast<int>(steps.size());
  } else {
    trace.notes.push_back("no ProfilerStep# annotations: the whole trace is replayed as one step");
  }
  auto step_of = [&](double ts) {
    int s = 0;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (number(*steps[i], "ts", file) <= ts) s = static_cast<int>(i);
    return s;
  };

  std::vector<HostEvent> host;
  for (const json* c : calls) {
    const double ts = number(*c, "ts", file);
    if (ts < from || ts > to) continue;
    const double end = ts + number(*c, "dur", file);
    const std::string name = c->value("name", std::string());
    const long tid = c->value("tid", 0L);
    const auto& args = c->value("args", json::object());
    const auto corr = args.find("correlation");
    const auto op = corr != args.end() ? gpu_by_correlation.find(corr->get<std::int64_t>()) : gpu_by_correlation.end();
    if (op != gpu_by_correlation.end())
      host.push_back({HostEvent::What::launch, ts, end, tid, op->second, BLOCKING_COPIES.contains(name)});
    else if (SYNCHRONISING.contains(name))
      host.push_back({HostEvent::What::sync, ts, end, tid});
    else if (name == "cudaStreamWaitEvent")
      host.push_back({HostEvent::What::stream_wait, ts, end, tid});
  }
  for (const json* c : comms) {
    const double ts = number(*c, "ts", file);
    if (ts < from || ts > to) continue;
    HostEvent e{HostEvent::What::collective, ts, ts + number(*c, "dur", file), c->value("tid", 0L)};
    e.args = &(*c)["args"];
    host.push_back(e);
  }
  std::ranges::stable_sort(host, {}, &HostEvent::ts);
  // A collective whose NCCL kernel the trace holds is replayed in that kernel's place, on its stream; one without
  // (a one-rank group, a trace without kernels) on a communication lane of its own.
  for (auto& e : host) {
    if (e.what != HostEvent::What::collective) continue;
    for (const auto& l : host)
      if (l.what == HostEvent::What::launch && l.tid == e.tid && l.ts >= e.ts && l.ts <= e.end &&
          is_nccl_kernel(gpu[l.gpu].event->value("name", std::string())))
        e.launches_kernel = true;
  }

  trace.lanes.push_back("host");
  std::map<long, std::size_t> lane_of_stream;
  std::map<std::size_t, std::size_t> last_on_lane;  // lane -> its last node
  std::map<std::size_t, std::size_t> fence_seen;    // GPU lane -> the last collective it waited for (+1)
  std::optional<std::size_t> comm_lane, last_host, last_collective, fence;
  std::optional<TraceCollective> open_collective;  // its NCCL kernel is still to come
  double open_until = 0;
  double cursor = steps.empty() ? (host.empty() ? 0 : host.front().ts) : from;
  std::set<std::int64_t> dropped_before;
  auto add = [&](TraceNode node) {
    last_on_lane[node.lane] = trace.nodes.size();
    trace.nodes.push_back(std::move(node));
    return trace.nodes.size() - 1;
  };
  auto gpu_lanes_last = [&](std::optional<std::size_t> except) {
    std::vector<std::size_t> deps;
    for (const auto& [lane, node] : last_on_lane)
      if (lane != 0 && lane != except) deps.push_back(node);
    return deps;
  };
  auto host_gap = [&](double ts, int step) {
    if (ts > cursor) {
      last_host = add(
          {.kind = TraceNode::Kind::host, .lane = 0, .name = "host", .duration = micros(ts - cursor), .step = step});
      cursor = ts;
    }
  };
  // A GPU op as a node of its stream's lane, without its waits.
  auto gpu_node = [&](std::size_t index, int step) {
    const GpuOp& op = gpu[index];
    auto [stream, fresh] = lane_of_stream.try_emplace(op.stream, trace.lanes.size());
    if (fresh) trace.lanes.push_back(fmt::format("stream {}", op.stream));
    TraceNode node{.lane = stream->second,
                   .name = op.event->value("name", std::string()),
                   .duration = micros(op.dur),
                   .step = step};
    const auto& args = op.event->value("args", json::object());
    if (op.category == "kernel") {
      node.kind = TraceNode::Kind::kernel;
      // The operator that launched it, where the trace recorded shapes: its FLOPs for `cost: derived`.
      if (const auto id = args.find("External id"); id != args.end())
        if (const auto it = operator_of.find(id->get<std::int64_t>()); it != operator_of.end())
          derive_matmul(*it->second, node);
    } else {
      node.bytes = Bytes{args.value("bytes", std::uint64_t{0})};
      const bool host_side = node.name.find("HtoD") != std::string::npos || node.name.find("DtoH") != std::string::npos;
      node.kind = op.category == "gpu_memcpy" && host_side ? TraceNode::Kind::host_copy : TraceNode::Kind::memory;
      node.to_host = node.name.find("DtoH") != std::string::npos;
    }
    return node;
  };
  // What the GPU still had queued when the window opened (launched before it): replayed first, in no step, so
  // that the first step starts behind the same queue as it did.
  {
    std::set<std::size_t> launched;
    for (const auto& e : host)
      if (e.what == HostEvent::What::launch) launched.insert(e.gpu);
    std::map<long, double> first_launched;  // stream -> start of its first op launched in the window
    for (auto i : launched)
      if (const auto [it, fresh] = first_launched.try_emplace(gpu[i].stream, gpu[i].ts); !fresh)
        it->second = std::min(it->second, gpu[i].ts);
    std::vector<std::size_t> queued;
    for (std::size_t i = 0; i < gpu.size(); ++i)
      if (!launched.contains(i) && gpu[i].ts + gpu[i].dur > from && first_launched.contains(gpu[i].stream) &&
          gpu[i].ts < first_launched[gpu[i].stream] && !is_nccl_kernel(gpu[i].event->value("name", std::string())))
        queued.push_back(i);
    std::ranges::stable_sort(queued, {}, [&](std::size_t i) { return gpu[i].ts; });
    for (auto i : queued) {
      TraceNode node = gpu_node(i, -1);
      if (gpu[i].ts < from) node.duration = micros(gpu[i].ts + gpu[i].dur - from);  // what was left of it
      const auto previous = stream_free.find(i);
      if (previous != stream_free.end() && gpu[i].ts - from > 0)
        node.delay = micros(std::max(0.0, gpu[i].ts - std::max(previous->second, from)));
      add(std::move(node));
    }
    if (!queued.empty())
      trace.notes.push_back(
          fmt::format("{} GPU ops launched before the first step were still queued: replayed first, "
                      "in no step",
                      queued.size()));
  }
  for (const auto& e : host) {
    const int step = step_of(e.ts);
    if (e.what == HostEvent::What::stream_wait) {
      // A stream waiting outside a collective's own launch: the framework waits for the collectives issued so far
      // (DDP's work.wait() before the gradients are used).
      if (!(open_collective && e.ts <= open_until) && last_collective) fence = *last_collective;
      continue;
    }
    host_gap(e.ts, step);
    if (e.what == HostEvent::What::sync) {
      add({.kind = TraceNode::Kind::sync,
           .lane = 0,
           .name = "sync",
           .deps = gpu_lanes_last(std::nullopt),
           .step = step});
      last_host = trace.nodes.size() - 1;
      cursor = std::max(cursor, e.end);
      continue;
    }
    if (e.what == HostEvent::What::collective) {
      auto c = parse_collective(*e.args, file, trace.rank, trace.notes);
      if (!c) continue;
      if (e.launches_kernel) {
        open_collective = std::move(c);
        open_until = e.end;
        continue;
      }
      // A one-rank group moves nothing, but stays: a replay with more ranks widens it (replay.hpp).
      if (!comm_lane) {
        comm_lane = trace.lanes.size();
        trace.lanes.push_back("collectives (no NCCL kernel in the trace)");
      }
      auto deps = gpu_lanes_last(comm_lane);
      if (last_host) deps.push_back(*last_host);
      last_collective = add({.kind = TraceNode::Kind::collective,
                             .lane = *comm_lane,
                             .name = std::string(models::to_string(*c->kind)),
                             .collective = std::move(c),
                             .deps = std::move(deps),
                             .step = step});
      continue;
    }
    // A launch: the op on its stream's lane, after the host reached this call and after what its stream ran before.
    const GpuOp& op = gpu[e.gpu];
    TraceNode node = gpu_node(e.gpu, step);
    const std::size_t lane = node.lane;
    const auto previous = stream_free.find(e.gpu);
    const double ready = std::max(e.ts, previous == stream_free.end() ? e.ts : previous->second);
    node.delay = micros(std::max(0.0, op.ts - ready));
    if (is_nccl_kernel(node.name)) {
      if (!open_collective || e.ts > open_until)
        fail(file, fmt::format("the NCCL kernel '{}' at ts {} us has no record_param_comms around its launch, so "
                               "its size and group are unknown (PyTorch records them since 2.1)",
                               node.name.substr(0, 60), op.ts));
      node.kind = TraceNode::Kind::collective;
      node.collective = std::move(open_collective);
      open_collective.reset();
      node.delay = Seconds{0};  // the recorded start waited for the peers; the replay's collective does that itself
      if (node.collective->group.size() < 2) node.kind = TraceNode::Kind::kernel;
    }
    if (last_host) node.deps.push_back(*last_host);
    if (node.kind == TraceNode::Kind::collective)
      for (auto d : gpu_lanes_last(lane)) node.deps.push_back(d);
    if (fence && fence_seen[lane] < *fence + 1) {
      node.deps.push_back(*fence);
      fence_seen[lane] = *fence + 1;
    }
    const bool collective = node.kind == TraceNode::Kind::collective;
    const std::size_t index = add(std::move(node));
    if (collective) last_collective = index;
    if (e.blocking) {
      add({.kind = TraceNode::Kind::sync, .lane = 0, .name = "sync", .deps = {index}, .step = step});
      last_host = trace.nodes.size() - 1;
      cursor = std::max(cursor, e.end);
    }
  }
  if (lane_of_stream.empty())
    fail(file,
         "no GPU op was launched inside the profiled steps (their launches are outside the ProfilerStep# "
         "windows or the runtime calls are missing)");
  return trace;
}

}  // namespace snsim::workloads::replay
