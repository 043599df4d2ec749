// Parsing and records of the PGAS ops and stream events (program/pgas_ops.hpp).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "program/program.hpp"

namespace snsim::workloads {
namespace {

// PGAS limits: more issuers than a GPU has threads in flight make no sense at this grain; signal ids index a
// small symmetric array; one op may move at most 2^50 bytes (wire bytes stay far from 2^64).
constexpr int MAX_ISSUERS = 65536;
constexpr int MAX_SIGNAL = 65535;
constexpr std::uint64_t MAX_LOADS = 1'000'000'000'000;
constexpr double MAX_OP_BYTES = 1125899906842624.0;  // 2^50

constexpr std::array<std::string_view, 6> CMP_SYMBOLS{"==", "!=", ">", ">=", "<", "<="};

std::string gpu_name(int rank) {
  return fmt::format("gpu{}", rank);
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

}  // namespace

std::string_view symbol(Compare cmp) {
  return CMP_SYMBOLS[static_cast<std::size_t>(cmp)];
}

void parse_put(const ConfigNode& op, const OpParse& at) {
  const int gpus = at.gpus();
  const Bytes bytes = op.required<Bytes>("bytes");
  check_size(op, "bytes", bytes, at.fabric);
  const models::Scope scope = parse_scope(op);
  const int issuers = op.optional<int>("issuers", 1);
  check_between(op, "issuers", issuers, 1, MAX_ISSUERS);
  const int count = op.optional<int>("count", 1);
  check_between(op, "count", count, 1, MAX_REPEAT);
  if (static_cast<double>(bytes.count()) * issuers * count > MAX_OP_BYTES)
    op.fail_key("count",
                fmt::format("issuers x count x bytes must be at most 1 PiB, got {} x {} x {}", issuers, count, bytes));
  const auto signal = op.maybe<int>("signal");
  if (signal) check_between(op, "signal", *signal, 0, MAX_SIGNAL);
  const ConfigNode to = op.child("to");
  at.for_each_rank([&](int r) { return PutOp{parse_pe(to, r, gpus), bytes, scope, issuers, count, signal}; });
}

void parse_get(const ConfigNode& op, const OpParse& at) {
  const int gpus = at.gpus();
  const Bytes bytes = op.required<Bytes>("bytes");
  check_size(op, "bytes", bytes, at.fabric);
  const models::Scope scope = parse_scope(op);
  const ConfigNode from = op.child("from");
  at.for_each_rank([&](int r) { return GetOp{parse_pe(from, r, gpus), bytes, scope}; });
}

void parse_signal_wait(const ConfigNode& op, const OpParse& at) {
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
  at.for_each_rank([&](int) { return w; });
}

void parse_quiet(const ConfigNode& op, const OpParse& at) {
  check_no_parameters(op);
  at.for_each_rank([](int) { return QuietOp{}; });
}

void parse_fence(const ConfigNode& op, const OpParse& at) {
  check_no_parameters(op);
  at.for_each_rank([](int) { return FenceOp{}; });
}

void parse_shmem_barrier(const ConfigNode& op, const OpParse& at) {
  const models::Scope scope = parse_scope(op);
  at.for_each_rank([&](int) { return ShmemBarrierOp{at.group, scope}; });
}

void parse_load(const ConfigNode& op, const OpParse& at) {
  const int gpus = at.gpus();
  const Bytes bytes = op.required<Bytes>("bytes");
  check_size(op, "bytes", bytes, at.fabric);
  const auto pattern = op.optional<std::string>("pattern", "chase");
  if (pattern != "chase" && pattern != "stream")
    op.fail_key("pattern", fmt::format("expected chase or stream, found '{}'", pattern));
  const auto count = op.optional<std::uint64_t>("count", 1);
  check_between(op, "count", count, std::uint64_t{1}, MAX_LOADS);
  if (pattern == "stream" && static_cast<double>(bytes.count()) * static_cast<double>(count) > MAX_OP_BYTES)
    op.fail_key("count", fmt::format("count x bytes must be at most 1 PiB, got {} x {}", count, bytes));
  const ConfigNode from = op.child("from");
  const bool self = from.is_scalar() && from.scalar() == "self";
  at.for_each_rank([&](int r) {
    const int pe = self ? r : parse_peer(from, r, gpus);
    if (pe == HOST) from.fail("SM loads read GPU memory; expected self, a GPU index, next, prev or xor:K");
    return LoadOp{pe, bytes, pattern == "chase" ? models::LoadPattern::chase : models::LoadPattern::stream, count};
  });
}

OpDescription describe(const PutOp& op) {
  std::string label = fmt::format("put {} to {} {}", op.bytes, gpu_name(op.to), models::to_string(op.scope));
  if (op.issuers > 1) label += fmt::format(" x{} issuers", op.issuers);
  if (op.count > 1) label += fmt::format(" x{}", op.count);
  if (op.signal) label += fmt::format(" signal {}", *op.signal);
  return {label, times(op.bytes, static_cast<std::uint64_t>(op.issuers) * op.count), op.to};
}

OpDescription describe(const GetOp& op) {
  return {fmt::format("get {} from {} {}", op.bytes, gpu_name(op.from), models::to_string(op.scope)), op.bytes,
          op.from};
}

OpDescription describe(const SignalWaitOp& op) {
  return {fmt::format("signal_wait {} {} {}{}", op.signal, symbol(op.cmp), op.value, op.consume ? " consume" : "")};
}

OpDescription describe(const QuietOp&) {
  return {"quiet"};
}

OpDescription describe(const FenceOp&) {
  return {"fence"};
}

OpDescription describe(const ShmemBarrierOp& op) {
  return {fmt::format("shmem_barrier {}", models::to_string(op.scope))};
}

OpDescription describe(const LoadOp& op) {
  const bool chase = op.pattern == models::LoadPattern::chase;
  return {fmt::format("load {} from {} {} x{}", op.bytes, gpu_name(op.from), models::to_string(op.pattern), op.count),
          chase ? Bytes{0} : times(op.bytes, op.count), op.from};
}

OpDescription describe(const EventRecordOp& op) {
  return {fmt::format("event_record {}", op.event)};
}

OpDescription describe(const EventWaitOp& op) {
  return {fmt::format("event_wait {} x{}", op.event, op.count)};
}

}  // namespace snsim::workloads
