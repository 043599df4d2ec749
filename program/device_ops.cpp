// Parsing and records of kernels and copies (program/device_ops.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "program/program.hpp"

namespace snsim::workloads {

void parse_compute(const ConfigNode& op, const OpParse& at) {
  const Fabric& fabric = at.fabric;
  ComputeOp c;
  c.duration = op.maybe<Seconds>("time");
  c.flops = op.optional<Flops>("flops", Flops{0});
  c.bytes = op.optional<Bytes>("bytes", Bytes{0});
  c.pipelined = op.optional<bool>("pipelined", false);
  const bool shaped = op.has("gemm") || op.has("attention");
  if (op.has("gemm") && op.has("attention")) op.fail("give one of gemm and attention");
  if (c.duration && (op.has("flops") || op.has("bytes") || shaped))
    op.fail("give one of time, gemm, attention, or flops and bytes");
  if (op.has("gemm") && (op.has("flops") || op.has("bytes")))
    op.fail("a gemm's flops and bytes follow from its shape: give gemm, or flops and bytes, not both");
  if (op.has("attention") && op.has("flops"))
    op.fail("attention's flops follow from its shape: give attention (and bytes, its HBM traffic), not flops");
  if (!c.duration && !shaped && c.flops.count() == 0 && c.bytes.count() == 0)
    op.fail("expected time, gemm or attention (a shape), or flops and bytes (for the roofline)");
  if (c.duration) check_positive(op, "time", *c.duration);
  if (const auto name = op.maybe<std::string>("dtype")) {
    const auto dtype = dtype_from_string(*name);
    if (!dtype) op.fail_key("dtype", fmt::format("unknown number format '{}'; known: {}", *name, known_dtype_names()));
    const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
    if (!gpu.peak(*dtype))
      op.fail_key("dtype", fmt::format("the {} preset has no published dense {} rate", gpu.model, *name));
    if (c.duration) op.fail_key("dtype", "applies to flops, not to a fixed time");
    c.dtype = *dtype;
  }
  if (const auto shape = op.maybe_child("gemm")) {
    if (c.dtype == Dtype::fp32 || c.dtype == Dtype::fp64)
      op.fail_key("dtype", fmt::format("GEMMs by shape are modelled in bf16, fp16, fp8 and tf32, not {}; give flops "
                                       "and bytes",
                                       to_string(c.dtype)));
    // Dimensions up to 2^24 and batches up to 2^20: beyond any transformer's, and their product stays exact in a
    // double.
    constexpr std::int64_t MAX_DIM = 1 << 24, MAX_BATCH = 1 << 20;
    models::Gemm g;
    for (auto [key, field] : {std::pair{"m", &g.m}, std::pair{"n", &g.n}, std::pair{"k", &g.k}}) {
      *field = shape->required<std::int64_t>(key);
      check_between(*shape, key, *field, std::int64_t{1}, MAX_DIM);
    }
    g.batch = shape->optional<std::int64_t>("batch", 1);
    check_between(*shape, "batch", g.batch, std::int64_t{1}, MAX_BATCH);
    const auto layout_name = shape->optional<std::string>("layout", "TN");
    const auto layout = models::gemm_layout(layout_name);
    if (!layout) shape->fail_key("layout", fmt::format("expected TN, NN, NT or TT, found '{}'", layout_name));
    g.layout = *layout;
    g.backward = shape->optional<bool>("backward", false);
    const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
    if (gpu.sms <= 0) op.fail_key("gemm", "the GPU preset does not say how many SMs it has; give flops and bytes");
    // The operands live in the GPU's memory: a shape whose A, B and C do not fit is no GEMM this GPU runs (and its
    // byte count would not fit in 64 bits long before it stopped fitting in a double).
    models::Gemm one_pass = g;  // the backward pass's two GEMMs read the same tensors
    one_pass.backward = false;
    const double operands = one_pass.operand_elements() * models::element_size(c.dtype);
    if (operands > static_cast<double>(gpu.memory.count()))
      shape->fail(fmt::format("its operands ({}) do not fit in one GPU's memory ({})",
                              operands < 0x1p63 ? fmt::format("{}", Bytes{static_cast<std::uint64_t>(operands)})
                                                : fmt::format("{:.3g} B", operands),
                              gpu.memory));
    c.shape = g;
    c.flops = g.flops();
    c.bytes = g.operand_bytes(models::element_size(c.dtype));
  }
  if (const auto shape = op.maybe_child("attention")) {
    if (c.dtype != Dtype::bf16 && c.dtype != Dtype::fp16)
      op.fail_key("dtype", fmt::format("fused attention is modelled in bf16 and fp16, not {}", to_string(c.dtype)));
    constexpr std::int64_t MAX_DIM = 1 << 24;
    models::Attention a;
    for (auto [key, field] : {std::pair{"batch", &a.batch}, std::pair{"heads", &a.heads}, std::pair{"seq", &a.seq},
                              std::pair{"head_dim", &a.head_dim}}) {
      *field = key == std::string_view("seq") ? shape->required<std::int64_t>(key)
                                              : shape->optional<std::int64_t>(key, *field);
      check_between(*shape, key, *field, std::int64_t{1}, MAX_DIM);
    }
    a.kv_heads = shape->optional<std::int64_t>("kv_heads", a.heads);
    check_between(*shape, "kv_heads", a.kv_heads, std::int64_t{1}, a.heads);
    if (a.heads % a.kv_heads != 0)
      shape->fail_key("kv_heads", fmt::format("must divide heads ({}), got {}", a.heads, a.kv_heads));
    a.causal = shape->optional<bool>("causal", true);
    a.backward = shape->optional<bool>("backward", false);
    if (fabric.device(fabric.gpus().front()).gpu->sms <= 0)
      op.fail_key("attention", "the GPU preset does not say how many SMs it has; give flops and bytes");
    c.shape = a;
    c.flops = a.flops();
  }
  const auto launch_name = op.optional<std::string>("launch", "stream");
  const auto launch = models::launch(launch_name);
  if (!launch) op.fail_key("launch", fmt::format("expected stream or graph, found '{}'", launch_name));
  if (*launch == models::Launch::graph && c.duration) op.fail_key("launch", "applies to computed kernels");
  c.launch = *launch;
  if (op.has("clock_mhz") && op.has("reported_clock_mhz"))
    op.fail_key("reported_clock_mhz", "a kernel's clock is locked (clock_mhz) or reported, not both");
  for (const char* key : {"clock_mhz", "reported_clock_mhz"}) {
    if (!op.has(key)) continue;
    if (c.duration) op.fail_key(key, "applies to computed kernels, not to a fixed time");
    const double boost = fabric.device(fabric.gpus().front()).gpu->boost_mhz;
    if (boost <= 0) op.fail_key(key, "the GPU preset does not publish its boost clock");
    c.clock_mhz = op.required<double>(key);
    c.clock_reported = std::string_view(key) == "reported_clock_mhz";
    check_between(op, key, *c.clock_mhz, 100.0, boost);
  }
  if (op.has("operands")) {
    if (c.duration) op.fail_key("operands", "applies to computed kernels, not to a fixed time");
    const auto name = op.required<std::string>("operands");
    const auto data = models::operand_data(name);
    if (!data) op.fail_key("operands", fmt::format("expected normal or low_entropy, found '{}'", name));
    c.operands = *data;
  }
  if (op.has("kernel")) {
    if (c.duration) op.fail_key("kernel", "applies to computed kernels, not to a fixed time");
    if (!std::holds_alternative<std::monostate>(c.shape))
      op.fail_key("kernel", "a gemm or attention is timed by its shape; `kernel` names a memory-bound kernel's kind");
    const auto name = op.required<std::string>("kernel");
    constexpr std::string_view BACKWARD = "_backward";
    const bool backward = name.ends_with(BACKWARD);
    const auto kernel = models::memory_kernel(backward ? name.substr(0, name.size() - BACKWARD.size()) : name);
    if (!kernel || (backward && !models::has_backward(*kernel)))
      op.fail_key("kernel", fmt::format("expected one of {}, found '{}'", models::memory_kernel_names(), name));
    c.memory = {*kernel, backward};
  }
  at.for_each_rank([&](int) { return c; });
}

void parse_copy(const ConfigNode& op, const OpParse& at) {
  const Fabric& fabric = at.fabric;
  const int gpus = at.gpus();
  const Bytes bytes = op.required<Bytes>("bytes");
  check_size(op, "bytes", bytes, fabric);
  const auto engine_name = op.optional<std::string>("engine", "ce");
  if (engine_name != "ce" && engine_name != "sm")
    op.fail_key("engine", fmt::format("expected ce or sm, found '{}'", engine_name));
  const auto engine = engine_name == "ce" ? models::CopyEngine::ce : models::CopyEngine::sm;
  const bool pipelined = op.optional<bool>("pipelined", false);
  const auto launch_name = op.optional<std::string>("launch", "stream");
  const auto launch = models::launch(launch_name);
  if (!launch) op.fail_key("launch", fmt::format("expected stream or graph, found '{}'", launch_name));
  // `to`: this rank writes into the peer (a push); `from`: it reads from the peer (a pull).
  if (op.has("to") == op.has("from")) op.fail("expected one of `to` (a push) or `from` (a pull)");
  const bool pull = op.has("from");
  const ConfigNode peer = op.child(pull ? "from" : "to");
  // `nvme` only here: the drives are a copy's source or sink, not a GPU location the other ops take.
  const bool nvme = peer.is_scalar() && peer.scalar() == "nvme";
  if (nvme && fabric.nvme_drives().empty())
    op.fail_key(pull ? "from" : "to", "the topology has no NVMe drives; set topology.nvme_drives");
  at.for_each_rank(
      [&](int r) { return CopyOp{nvme ? NVME : parse_peer(peer, r, gpus), bytes, engine, pipelined, pull, *launch}; });
}

OpDescription describe(const ComputeOp& op) {
  if (op.duration) return {fmt::format("compute {}", *op.duration), op.bytes};
  if (const auto* a = op.attention())
    return {fmt::format("attention b{} h{} s{} d{}{} {}{}", a->batch, a->heads, a->seq, a->head_dim,
                        a->causal ? " causal" : "", to_string(op.dtype), a->backward ? " backward" : ""),
            op.bytes};
  if (const auto* g = op.gemm())
    return {fmt::format("gemm {}x{}x{}{} {} {}{}", g->m, g->n, g->k,
                        g->batch > 1 ? fmt::format(" x{}", g->batch) : std::string(), models::to_string(g->layout),
                        to_string(op.dtype), g->backward ? " backward" : ""),
            op.bytes};
  const bool kind = op.memory.kernel != models::MemoryKernel::stream;
  return {fmt::format("compute {} {} {}{}{}{}", op.flops, op.bytes, to_string(op.dtype), kind ? " " : "",
                      kind ? models::to_string(op.memory.kernel) : "", op.memory.backward ? "_backward" : ""),
          op.bytes};
}

OpDescription describe(const CopyOp& op) {
  return {fmt::format("copy {} {} {} {}{}", op.bytes, op.pull ? "from" : "to",
                      op.peer == HOST   ? std::string("host")
                      : op.peer == NVME ? std::string("nvme")
                                        : fmt::format("gpu{}", op.peer),
                      models::to_string(op.engine),
                      op.pipelined ? (op.launch == models::Launch::graph ? " queued in a graph" : " queued") : ""),
          op.bytes, op.peer};
}

}  // namespace snsim::workloads
