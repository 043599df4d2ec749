#include "workloads/replay/kineto.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "workloads/replay/kernels.hpp"
#include "workloads/replay/trace_file.hpp"

namespace snsim::workloads::replay {
namespace {

using nlohmann::json;

Seconds micros(double us) {
  return Seconds{us * 1e-6};
}

/// Bytes of a count computed from a trace's shapes, held below 2^62 (a double beyond the range of an integer does
/// not convert).
Bytes whole_bytes(double bytes) {
  return bytes > 0 ? Bytes{static_cast<std::uint64_t>(std::min(bytes, 0x1p62))} : Bytes{0};
}

/// Whether a tensor dimension from a trace's shapes is one the GEMM and attention models take: a whole count from 1
/// to below 2^24 (the models multiply a few of them in 64 bits).
bool model_dimension(double x) {
  return x >= 1 && x < 0x1p24 && x == std::floor(x);
}

/// Whether `e` is a complete event ("ph": "X"), with the types checked, once, of every field the replay reads from
/// one, so that reading them later cannot throw: `cat` and `name` strings, `tid` a whole number or a string (the
/// profiler names some rows: "PyTorch Profiler"), `args` an object whose `correlation`, `stream`, `External id` and
/// `bytes` are whole numbers.
bool complete_event(const json& e, std::size_t index, const std::string& file) {
  if (!e.is_object()) return false;
  const auto ph = e.find("ph");
  if (ph == e.end() || !ph->is_string() || *ph != "X") return false;
  auto bad = [&](const std::string& key, const char* expected, const json& found) {
    fail_trace(file, fmt::format("traceEvents[{}]: expected {} `{}`, found {}", index, expected, key,
                                 found.dump(-1, ' ', true, json::error_handler_t::replace).substr(0, 60)));
  };
  for (const char* key : {"cat", "name"})
    if (const auto it = e.find(key); it != e.end() && !it->is_string()) bad(key, "a string", *it);
  if (const auto it = e.find("tid"); it != e.end() && !it->is_number_integer() && !it->is_string())
    bad("tid", "a whole number or a string", *it);
  if (const auto args = e.find("args"); args != e.end()) {
    if (!args->is_object()) bad("args", "an object", *args);
    for (const char* key : {"correlation", "stream", "External id", "bytes"})
      if (const auto it = args->find(key); it != args->end() && !it->is_number_integer())
        bad(fmt::format("args.{}", key), "a whole number", *it);
  }
  return true;
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
    fail_trace(file, fmt::format("an event '{}' has no numeric `{}`", e.value("name", std::string("?")), key));
  if (std::string_view(key) == "dur" && it->get<double>() < 0)
    fail_trace(file, fmt::format("an event '{}' lasts {} us: expected a duration of 0 or more",
                                 e.value("name", std::string("?")), it->get<double>()));
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

/// The host thread of a complete event: its `tid`, a named one by its name's hash.
long thread_of(const json& e) {
  const auto it = e.find("tid");
  if (it == e.end()) return 0;
  return it->is_string() ? static_cast<long>(std::hash<std::string>{}(it->get<std::string>())) : it->get<long>();
}

/// The largest rank a trace may name: as many as a replay may have (replay.cpp's `ranks`).
constexpr int MAX_RANK = (1 << 20) - 1;

/// "[0, 1, 2]" (record_param_comms' Process Group Ranks) into ranks.
std::vector<int> parse_rank_list(const std::string& text, const std::string& file) {
  std::vector<int> ranks;
  std::string digits;
  for (char c : text + ",") {
    if (c >= '0' && c <= '9') {
      digits += c;
      if (digits.size() > 7)
        fail_trace(file, fmt::format("record_param_comms: a rank of `Process Group Ranks` is beyond {}: '{}'", MAX_RANK,
                                     text.substr(0, 60)));
    } else if (c == ',' || c == ']') {
      if (!digits.empty()) ranks.push_back(std::stoi(digits));
      if (!ranks.empty() && ranks.back() > MAX_RANK)
        fail_trace(file, fmt::format("record_param_comms: a rank of `Process Group Ranks` is beyond {}: '{}'", MAX_RANK,
                                     text.substr(0, 60)));
      digits.clear();
    } else if (c != '[' && c != ' ') {
      fail_trace(file,
                 fmt::format("record_param_comms: expected `Process Group Ranks` like \"[0, 1]\", found '{}'", text));
    }
  }
  std::ranges::sort(ranks);
  return ranks;
}

/// A global rank record_param_comms gives as a number or a numeric string (`Src Rank`, `Dst Rank`); nullopt when
/// absent.
std::optional<int> rank_field(const json& args, const char* key, const std::string& name, const std::string& file) {
  const auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= MAX_RANK)
    return it->get<int>();
  if (it->is_string()) {
    const auto& text = it->get_ref<const std::string&>();
    if (!text.empty() && text.size() < 8 && std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; }) &&
        std::stoi(text) <= MAX_RANK)
      return std::stoi(text);
  }
  fail_trace(file, fmt::format("record_param_comms '{}': expected a rank `{}`, found {}", name, key, it->dump()));
}

/// The collective a record_param_comms describes; nullopt for what is no collective of its own (`wait`, a
/// coalescing marker) or a kind the replay does not model yet (noted).
std::optional<TraceCollective> read_collective(const json& args, const std::string& file, int rank,
                                               std::vector<std::string>& notes) {
  // Its fields, checked for their types: record_param_comms' values are the framework's, not ours.
  auto text = [&](const char* key, const char* fallback) {
    const auto it = args.find(key);
    if (it == args.end()) return std::string(fallback);
    if (!it->is_string())
      fail_trace(file, fmt::format("record_param_comms: expected a string `{}`, found {}", key, it->dump()));
    return it->get<std::string>();
  };
  auto whole = [&](const char* key, int fallback, int least = 0) {
    const auto it = args.find(key);
    if (it == args.end()) return fallback;
    if (!it->is_number_integer() || it->get<std::int64_t>() < least || it->get<std::int64_t>() > MAX_RANK)
      fail_trace(file, fmt::format("record_param_comms: expected `{}` a whole number from {} to {}, found {}", key,
                                   least, MAX_RANK, it->dump()));
    return it->get<int>();
  };
  std::string name = text("Collective name", "");
  // Some PyTorch versions name point-to-point calls by their profiling title.
  if (name == "nccl:send" || name == "nccl:recv") name = name.substr(5);
  const bool send = name == "send", recv = name == "recv";
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
  if (kind == kinds.end() && !send && !recv) {
    if (name != "wait" && name != "coalesced" && name != "startCoalescing" && name != "endCoalescing") {
      const std::string note = fmt::format("record_param_comms '{}' is not replayed (no model for it yet)", name);
      if (std::ranges::find(notes, note) == notes.end()) notes.push_back(note);
    }
    return std::nullopt;
  }
  TraceCollective c;
  c.kind = send || recv ? models::CollectiveKind::broadcast : kind->second;
  c.dtype = text("dtype", "Byte");
  const auto size = dtype_size(c.dtype);
  if (!size) fail_trace(file, fmt::format("record_param_comms '{}': unknown dtype '{}'", name, c.dtype));
  auto elements = [&](const char* key) {
    const auto it = args.find(key);
    if (it == args.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0)
      fail_trace(file, fmt::format("record_param_comms '{}': expected a count `{}`", name, key));
    return it->get<std::uint64_t>();
  };
  c.in_bytes = Bytes{elements("In msg nelems") * *size};
  c.out_bytes = Bytes{elements("Out msg nelems") * *size};
  const auto ranks = args.find("Process Group Ranks");
  if (ranks != args.end() && ranks->is_string()) c.group = parse_rank_list(ranks->get<std::string>(), file);
  if (c.group.empty()) {  // an older PyTorch: the group as start, stride and size
    const std::int64_t start = whole("Global rank start", 0), stride = whole("Global rank stride", 1);
    const std::int64_t n = whole("Group size", 0);
    if (start + (n - 1) * stride > MAX_RANK)
      fail_trace(file, fmt::format("record_param_comms '{}': a group of {} from rank {} by {} goes beyond rank {}",
                                   name, n, start, stride, MAX_RANK));
    for (std::int64_t i = 0; i < n; ++i) c.group.push_back(static_cast<int>(start + i * stride));
  }
  if (std::ranges::find(c.group, rank) == c.group.end())
    fail_trace(file, fmt::format("record_param_comms '{}': rank {} is not in its group [{}]", name, rank,
                                 fmt::join(c.group, ", ")));
  c.root = whole("Root", c.group.front(), -1);  // a root outside the group is replaced by its first rank
  if (send || recv) {
    // The peer's global rank: `Dst Rank` / `Src Rank` (PyTorch's profiler records them for send / recv), else the
    // other member of a two-rank group.
    std::optional<int> peer = rank_field(args, send ? "Dst Rank" : "Src Rank", name, file);
    if (!peer && c.group.size() == 2) peer = c.group[0] == rank ? c.group[1] : c.group[0];
    if (!peer)
      fail_trace(file, fmt::format("record_param_comms '{}' on ranks [{}]: expected its peer in `{}`", name,
                                   fmt::join(c.group, ", "), send ? "Dst Rank" : "Src Rank"));
    if (*peer == rank || std::ranges::find(c.group, *peer) == c.group.end())
      fail_trace(
          file, fmt::format("record_param_comms '{}': rank {}'s peer {} is {}", name, rank, *peer,
                            *peer == rank ? "itself" : fmt::format("not in its group [{}]", fmt::join(c.group, ", "))));
    c.p2p = PointToPoint{.sender = send ? rank : *peer, .receiver = send ? *peer : rank};
    c.in_bytes = c.out_bytes = send ? c.in_bytes : c.out_bytes;
    c.group = {std::min(rank, *peer), std::max(rank, *peer)};
    c.root = c.p2p->sender;
  }
  return c;
}

/// Bytes per element of a tensor whose `Input type` the profiler records as `type`; nullopt for a scalar or a type
/// the replay does not know.
std::optional<double> element_size(const std::string& type) {
  static const std::map<std::string, double, std::less<>> sizes{
      {"float", 4},         {"double", 8},      {"c10::BFloat16", 2},      {"c10::Half", 2},
      {"long int", 8},      {"int", 4},         {"short int", 2},          {"bool", 1},
      {"unsigned char", 1}, {"signed char", 1}, {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? std::nullopt : std::optional{it->second};
}

Dtype dtype_of(const std::string& type) {
  return type == "float"       ? Dtype::fp32
         : type == "double"    ? Dtype::fp64
         : type == "c10::Half" ? Dtype::fp16
                               : Dtype::bf16;
}

/// The operator's input `i` as a tensor: its dims, element count and element size; nullopt when it is no tensor of
/// a known type (a Scalar, a list of ints, an absent optional). A 0-d tensor has dims [] and one element.
struct TensorInput {
  std::vector<double> dims;
  double elements = 1;
  double element_bytes = 0;
  std::string type;
  double bytes() const { return elements * element_bytes; }
};
std::optional<TensorInput> tensor_input(const json& args, std::size_t i) {
  const auto dims = args.find("Input Dims");
  const auto types = args.find("Input type");
  if (dims == args.end() || types == args.end() || !dims->is_array() || !types->is_array() || i >= dims->size() ||
      i >= types->size() || !(*dims)[i].is_array() || !(*types)[i].is_string())
    return std::nullopt;
  TensorInput t;
  t.type = (*types)[i].get<std::string>();
  const auto size = element_size(t.type);
  if (!size) return std::nullopt;
  t.element_bytes = *size;
  for (const auto& d : (*dims)[i]) {
    // Beyond 2^40 elements an axis is no tensor a GPU holds: such a shape is not derived from.
    if (!d.is_number() || d.get<double>() < 0 || d.get<double>() > 0x1p40) return std::nullopt;
    t.dims.push_back(d.get<double>());
    t.elements *= d.get<double>();
  }
  if (t.elements > 0x1p50) return std::nullopt;
  return t;
}

/// The work of a matrix multiply from its operator's shapes (record_shapes): aten::mm [m,k]x[k,n], aten::addmm
/// (bias, [m,k], [k,n]), aten::bmm / aten::baddbmm with a batch. 2mkn FLOPs; reads both operands and writes the
/// product once.
void derive_matmul(const json& op, TraceNode& node) {
  const std::string name = op.value("name", std::string());
  if (name != "aten::mm" && name != "aten::addmm" && name != "aten::bmm" && name != "aten::baddbmm") return;
  const auto& args = op.value("args", json::object());
  const std::size_t first = name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0;
  const bool batched = name == "aten::bmm" || name == "aten::baddbmm";
  const std::size_t rank = batched ? 3 : 2;
  const auto a = tensor_input(args, first), b = tensor_input(args, first + 1);
  if (!a || !b || a->dims.size() != rank || b->dims.size() != rank) return;
  const double batch = batched ? a->dims[0] : 1;
  const double m = a->dims[rank - 2], k = a->dims[rank - 1], n = b->dims[rank - 1];
  node.dtype = dtype_of(a->type);
  node.flops = Flops{2 * batch * m * k * n};
  // Row-major PyTorch operands are cuBLAS's column-major ones transposed: the layout the GEMM model reads only
  // matters for tf32, whose K-major operands PyTorch's contiguous [m,k] x [k,n] make NN.
  if (model_dimension(m) && model_dimension(n) && model_dimension(k) && model_dimension(batch))
    node.gemm = models::Gemm{static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k),
                             static_cast<std::int64_t>(batch), models::GemmLayout::nn};
  node.hbm_bytes = whole_bytes(a->element_bytes * batch * (m * k + k * n + m * n));
}

/// Fused attention from its operator's shapes (record_shapes): the operators that launch the attention kernel,
/// where their query and key are in the inputs, which axis is the sequence, and which concrete input is is_causal
/// (aten's schemas: cuDNN's and the SDPA wrappers' tensors are [batch, heads, seq, dim], FlashAttention's
/// [batch, seq, heads, dim]).
struct AttentionSchema {
  std::string_view name;
  bool backward;
  std::size_t query, key, seq_axis, is_causal;
};
constexpr std::array<AttentionSchema, 8> ATTENTION{{
    {"aten::_cudnn_attention_forward", false, 0, 1, 2, 10},
    {"aten::_cudnn_attention_backward", true, 1, 2, 2, 14},
    {"aten::_scaled_dot_product_cudnn_attention", false, 0, 1, 2, 6},
    {"aten::_scaled_dot_product_cudnn_attention_backward", true, 1, 2, 2, 14},
    {"aten::_flash_attention_forward", false, 0, 1, 1, 8},
    {"aten::_flash_attention_backward", true, 1, 2, 1, 11},
    {"aten::_scaled_dot_product_flash_attention", false, 0, 1, 2, 4},
    {"aten::_scaled_dot_product_flash_attention_backward", true, 1, 2, 2, 11},
}};

/// The forward's two matrix multiplies (QK^T, PV) are 2 x 2 x elements(q) x seq_k FLOPs; the backward's five
/// (the recomputed QK^T, dV, dP, dQ, dK) 2.5 times that, as FlashAttention counts them; a causal mask skips half.
/// Traffic: the forward reads q, k, v and writes the output; the backward reads q, k, v, the output and its
/// gradient and writes dq, dk, dv: each tensor once (the kernels keep the score matrix on chip).
void derive_attention(const json& op, TraceNode& node) {
  const std::string name = op.value("name", std::string());
  const auto schema = std::ranges::find(ATTENTION, name, &AttentionSchema::name);
  if (schema == ATTENTION.end()) return;
  const auto& args = op.value("args", json::object());
  const auto q = tensor_input(args, schema->query), k = tensor_input(args, schema->key);
  if (!q || !k || q->dims.size() != 4 || k->dims.size() != 4) return;
  bool causal = false;
  if (const auto concrete = args.find("Concrete Inputs");
      concrete != args.end() && concrete->is_array() && schema->is_causal < concrete->size())
    causal = (*concrete)[schema->is_causal] == "True";
  const double forward = 4 * q->elements * k->dims[schema->seq_axis];
  node.flops = Flops{forward * (schema->backward ? 2.5 : 1) * (causal ? 0.5 : 1)};
  node.hbm_bytes = whole_bytes((schema->backward ? 4 : 2) * (q->bytes() + k->bytes()));
  node.dtype = dtype_of(q->type);
  // cuDNN's kernels, [batch, heads, seq, dim], as the attention model runs them when queries and keys are as many
  // (self-attention): the model is fitted on cuDNN's SDPA kernels. FlashAttention's (PyTorch's FlashAttention-2 ran
  // 1.5-2x longer than cuDNN's on our H200, h200x1-compute-4-torch.jsonl) stay on the roofline, a bound.
  const auto& qd = q->dims;
  const auto& kd = k->dims;
  if (name.find("cudnn") != std::string::npos && qd[2] == kd[2] && qd[0] == kd[0] && qd[3] == kd[3] &&
      std::ranges::all_of(qd, model_dimension) && model_dimension(kd[1]) &&
      static_cast<std::int64_t>(qd[1]) % static_cast<std::int64_t>(kd[1]) == 0)
    node.attention = models::Attention{.batch = static_cast<std::int64_t>(qd[0]),
                                       .heads = static_cast<std::int64_t>(qd[1]),
                                       .seq = static_cast<std::int64_t>(qd[2]),
                                       .head_dim = static_cast<std::int64_t>(qd[3]),
                                       .kv_heads = static_cast<std::int64_t>(kd[1]),
                                       .causal = causal,
                                       .backward = schema->backward};
}

/// Elementwise operators, bound by HBM, whose bytes follow from their shapes. `reads_first`: whether the first input
/// is read (copy_, fill_ and zero_ only write it); `in_place`: whether the result is written into the first input.
struct ElementwiseSchema {
  std::string_view name;
  bool reads_first;
  bool in_place;
};
constexpr std::array<ElementwiseSchema, 22> ELEMENTWISE{{
    {"aten::copy_", false, true},   {"aten::fill_", false, true},
    {"aten::zero_", false, true},   {"aten::add_", true, true},
    {"aten::sub_", true, true},     {"aten::mul_", true, true},
    {"aten::div_", true, true},     {"aten::add", true, false},
    {"aten::sub", true, false},     {"aten::mul", true, false},
    {"aten::div", true, false},     {"aten::neg", true, false},
    {"aten::gelu", true, false},    {"aten::gelu_backward", true, false},
    {"aten::silu", true, false},    {"aten::silu_backward", true, false},
    {"aten::relu", true, false},    {"aten::threshold_backward", true, false},
    {"aten::exp", true, false},     {"aten::tanh", true, false},
    {"aten::sigmoid", true, false}, {"aten::native_layer_norm", true, false},
}};

/// Reads every tensor input once (an in-place one is read unless it is only written) and writes the result once:
/// the first input for an in-place operator, else a tensor of the largest input's elements in the first input's
/// type (elementwise results broadcast to the largest operand; layer norm's mean and rstd are left out).
void derive_elementwise(const json& op, TraceNode& node) {
  const std::string name = op.value("name", std::string());
  const auto schema = std::ranges::find(ELEMENTWISE, name, &ElementwiseSchema::name);
  if (schema == ELEMENTWISE.end()) return;
  const auto& args = op.value("args", json::object());
  const auto first = tensor_input(args, 0);
  if (!first) return;
  const auto inputs = args["Input Dims"].size();  // an array: tensor_input found the first
  double read = schema->reads_first ? first->bytes() : 0, largest = first->elements;
  for (std::size_t i = 1; i < inputs; ++i)
    if (const auto t = tensor_input(args, i)) {
      read += t->bytes();
      largest = std::max(largest, t->elements);
    }
  const double written = schema->in_place ? first->bytes() : largest * first->element_bytes;
  node.flops = Flops{0};
  node.hbm_bytes = whole_bytes(read + written);
  node.dtype = dtype_of(first->type);
}

}  // namespace

bool is_kineto(const json& j) {
  return j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array();
}

RankTrace read_kineto(const json& j, const std::string& file, int position) {
  if (!is_kineto(j)) fail_trace(file, "expected a PyTorch profiler (Kineto) trace: a JSON object with `traceEvents`");
  RankTrace trace;
  trace.file = file;
  trace.rank = position;
  if (const auto info = j.find("distributedInfo"); info != j.end() && info->is_object()) {
    auto field = [&](const char* key, int least) -> std::optional<int> {
      const auto it = info->find(key);
      if (it == info->end()) return std::nullopt;
      if (!it->is_number_integer() || it->get<std::int64_t>() < least || it->get<std::int64_t>() > MAX_RANK + 1)
        fail_trace(file, fmt::format("distributedInfo: expected `{}` a whole number from {} to {}, found {}", key,
                                     least, MAX_RANK + 1, it->dump()));
      return it->get<int>();
    };
    if (const auto rank = field("rank", 0)) trace.rank = *rank;
    trace.world_size = field("world_size", 1);
  }
  if (const auto props = j.find("deviceProperties");
      props != j.end() && props->is_array() && !props->empty() && (*props)[0].is_object())
    if (const auto name = (*props)[0].find("name"); name != (*props)[0].end() && name->is_string())
      trace.gpu = name->get<std::string>();

  std::vector<GpuOp> gpu;
  std::map<std::int64_t, std::size_t> gpu_by_correlation;
  std::vector<const json*> calls, steps, comms;
  std::map<std::int64_t, const json*> operator_of;  // External id -> the operator with its shapes
  std::map<std::int64_t, int> kernels_of_operator;  // External id -> the kernels it launched
  const json& events = j["traceEvents"];
  for (std::size_t index = 0; index < events.size(); ++index) {
    const json& e = events[index];
    if (!complete_event(e, index, file)) continue;
    const std::string cat = e.value("cat", std::string());
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const auto& args = e.value("args", json::object());
      if (!args.contains("correlation") || !args.contains("stream"))
        fail_trace(file,
                   fmt::format("GPU event '{}' has no `correlation` or `stream`", e.value("name", std::string())));
      gpu_by_correlation[args["correlation"].get<std::int64_t>()] = gpu.size();
      if (const auto id = args.find("External id"); cat == "kernel" && id != args.end() && id->is_number_integer())
        ++kernels_of_operator[id->get<std::int64_t>()];
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
  if (gpu.empty())
    fail_trace(file, "the trace has no GPU kernels, copies or memsets: profile with ProfilerActivity.CUDA");
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
    const long tid = thread_of(*c);
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
    HostEvent e{HostEvent::What::collective, ts, ts + number(*c, "dur", file), thread_of(*c)};
    static const json no_arguments = json::object();
    e.args = c->contains("args") ? &(*c)["args"] : &no_arguments;
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
      // The operator that launched it, where the trace recorded shapes: its work for `cost: derived`. An
      // attention operator's work goes to its attention kernel (cuDNN's backward launches helpers beside it);
      // an elementwise one's only when it launched this kernel alone, so that no bytes are counted twice.
      if (const auto id = args.find("External id"); id != args.end() && id->is_number_integer())
        if (const auto it = operator_of.find(id->get<std::int64_t>()); it != operator_of.end()) {
          const KernelClass kind = classify(node.name);
          if (kind == KernelClass::gemm) derive_matmul(*it->second, node);
          if (kind == KernelClass::attention) derive_attention(*it->second, node);
          if ((kind == KernelClass::memory || kind == KernelClass::unknown) &&
              kernels_of_operator[id->get<std::int64_t>()] == 1)
            derive_elementwise(*it->second, node);
          // A cuDNN helper beside an attention kernel that runs on the attention model by its shape: the model's
          // backward holds its helpers (models::ComputeModel::plan_attention), so the helper adds no work of its
          // own (it still pays its queue gap).
          if (cudnn_attention_helper(node.name)) {
            TraceNode attention;
            derive_attention(*it->second, attention);
            if (attention.attention) {
              node.flops = Flops{0};
              node.hbm_bytes = Bytes{0};
              node.dtype = attention.dtype;
            }
          }
        }
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
      auto c = read_collective(*e.args, file, trace.rank, trace.notes);
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
      last_collective = add(
          {.kind = TraceNode::Kind::collective,
           .lane = *comm_lane,
           .name = c->p2p ? (c->p2p->sender == trace.rank ? "send" : "recv") : std::string(models::to_string(*c->kind)),
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
        fail_trace(file, fmt::format("the NCCL kernel '{}' at ts {} us has no record_param_comms around its launch, so "
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
    fail_trace(file,
               "no GPU op was launched inside the profiled steps (their launches are outside the ProfilerStep# "
               "windows or the runtime calls are missing)");
  return trace;
}

}  // namespace snsim::workloads::replay
