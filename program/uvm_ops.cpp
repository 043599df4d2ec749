// Parsing and records of the unified-memory ops (program/uvm_ops.hpp): managed, touch, prefetch, advise, read.
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/uvm.hpp"
#include "program/program.hpp"

namespace snsim::workloads {
namespace {

// Residency is a bit per location (host and every GPU) in a 64-bit word (runtime/uvm_residency.hpp).
constexpr int MAX_UVM_GPUS = 63;
// The fabric does not describe host memory: 2 TiB, a DGX H200's system memory [spec: NVIDIA DGX H200 datasheet,
// "2TB"], bounds what managed memory can hold beyond the GPUs.
constexpr Bytes HOST_MEMORY{2ull << 40};

// The buffers of the program being parsed (ManagedScope). Parsing is single-threaded and not reentrant.
std::map<std::string, ManagedPtr>* buffers = nullptr;

/// Managed memory ops resolve buffer names in the program being parsed: parse_ops opens the scope, so only a misuse
/// gets here without one.
void require_scope(const ConfigNode& op) {
  if (!buffers) op.fail("managed memory ops need a program");
}

/// A location: host, self, a GPU index, next, prev or xor:K.
int parse_location(const ConfigNode& node, int rank, int gpus) {
  if (node.is_scalar() && node.scalar() == "self") return rank;
  return parse_peer(node, rank, gpus);
}

/// The buffer an op names, declared earlier in the program.
ManagedPtr find_buffer(const ConfigNode& op) {
  const auto name = op.required<std::string>("buffer");
  const auto it = buffers->find(name);
  if (it == buffers->end()) {
    std::vector<std::string> known;
    for (const auto& [n, b] : *buffers) known.push_back(n);
    op.fail_key("buffer", known.empty()
                              ? fmt::format("unknown managed buffer '{}'; none is declared before it", name)
                              : fmt::format("unknown managed buffer '{}'; declared: {}", name, fmt::join(known, ", ")));
  }
  return it->second;
}

/// The range [offset, offset + bytes) of `buffer` that an op names; bytes defaults to the rest of the buffer.
std::pair<Bytes, Bytes> parse_range(const ConfigNode& op, const ManagedBuffer& buffer) {
  const Bytes offset = op.optional<Bytes>("offset", Bytes{0});
  if (offset >= buffer.bytes)
    op.fail_key("offset", fmt::format("{} is past the end of buffer '{}' ({})", offset, buffer.name, buffer.bytes));
  const Bytes bytes = op.optional<Bytes>("bytes", Bytes{buffer.bytes.count() - offset.count()});
  if (bytes.count() == 0) op.fail_key("bytes", "must be > 0, got 0 B");
  if (bytes.count() > buffer.bytes.count() - offset.count())
    op.fail_key("bytes", fmt::format("offset {} + {} runs past the end of buffer '{}' ({})", offset, bytes, buffer.name,
                                     buffer.bytes));
  return {offset, bytes};
}

}  // namespace

ManagedScope::ManagedScope() {
  buffers = new std::map<std::string, ManagedPtr>();
}

ManagedScope::~ManagedScope() {
  delete buffers;
  buffers = nullptr;
}

std::string location_name(int location) {
  return location == HOST ? std::string("host") : fmt::format("gpu{}", location);
}

void parse_managed(const ConfigNode& op, const OpParse& at) {
  require_scope(op);
  const Fabric& fabric = at.fabric;
  const int gpus = at.gpus();
  if (gpus > MAX_UVM_GPUS)
    op.fail(fmt::format("managed memory is modelled on up to {} GPUs; the topology has {}", MAX_UVM_GPUS, gpus));
  auto buffer = std::make_shared<ManagedBuffer>();
  buffer->name = op.required<std::string>("name");
  if (buffer->name.empty()) op.fail_key("name", "must not be empty");
  if (buffers->contains(buffer->name))
    op.fail_key("name", fmt::format("buffer '{}' is already declared in this program", buffer->name));
  buffer->bytes = op.required<Bytes>("bytes");
  // A buffer may oversubscribe a GPU (eviction makes room), but not the machine: every GPU's memory plus the
  // host's.
  if (buffer->bytes.count() == 0) op.fail_key("bytes", "must be > 0, got 0 B");
  Bytes machine = HOST_MEMORY;
  for (const DeviceId gpu : fabric.gpus()) machine += fabric.device(gpu).gpu->memory;
  if (buffer->bytes > machine)
    op.fail_key("bytes", fmt::format("{} exceeds the GPUs' memory plus the host's {} ({} in all)", buffer->bytes,
                                     HOST_MEMORY, machine));
  buffer->page = op.optional<Bytes>("page", Bytes{4096});
  if (buffer->page != Bytes{4096} && buffer->page != Bytes{65536} && buffer->page != models::UvmModel::BLOCK)
    op.fail_key("page", fmt::format("expected 4KiB, 64KiB or 2MiB, found {}", buffer->page));
  if (op.has("on")) buffer->on = parse_location(op.child("on"), at.ranks.front(), gpus);
  (*buffers)[buffer->name] = buffer;
  // Allocated once, by the program's first rank: the others see the same buffer.
  at.programs[static_cast<std::size_t>(at.ranks.front())].ops.push_back(Op{ManagedOp{buffer}, at.phase, -1});
}

void parse_touch(const ConfigNode& op, const OpParse& at) {
  require_scope(op);
  const ManagedPtr buffer = find_buffer(op);
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  const auto range = parse_range(op, *buffer);
  const Bytes offset = range.first, bytes = range.second;
  const auto access = op.optional<std::string>("access", "read");
  if (access != "read" && access != "write")
    op.fail_key("access", fmt::format("expected read or write, found '{}'", access));
  at.for_each_rank([&](int) { return TouchOp{buffer, offset, bytes, access == "write"}; });
}

void parse_read(const ConfigNode& op, const OpParse& at) {
  require_scope(op);
  const ManagedPtr buffer = find_buffer(op);
  const auto range = parse_range(op, *buffer);
  const Bytes offset = range.first, bytes = range.second;
  const auto passes = op.optional<std::uint64_t>("passes", 1);
  check_between(op, "passes", passes, std::uint64_t{1}, std::uint64_t{1'000'000});
  at.for_each_rank([&](int) { return ReadOp{buffer, offset, bytes, passes}; });
}

void parse_prefetch(const ConfigNode& op, const OpParse& at) {
  require_scope(op);
  const int gpus = at.gpus();
  const ManagedPtr buffer = find_buffer(op);
  const auto range = parse_range(op, *buffer);
  const Bytes offset = range.first, bytes = range.second;
  const ConfigNode to = op.child("to");
  at.for_each_rank([&](int r) { return PrefetchOp{buffer, parse_location(to, r, gpus), offset, bytes}; });
}

void parse_advise(const ConfigNode& op, const OpParse& at) {
  require_scope(op);
  const int gpus = at.gpus();
  const ManagedPtr buffer = find_buffer(op);
  const auto preferred = op.maybe_child("preferred");
  const auto accessed_by = op.maybe_child("accessed_by");
  const bool read_mostly = op.optional<bool>("read_mostly", false);
  at.for_each_rank([&](int r) {
    AdviseOp a{buffer, std::nullopt, {}, read_mostly};
    if (preferred) a.preferred = parse_location(*preferred, r, gpus);
    if (accessed_by) {
      const auto items = accessed_by->is_sequence() ? accessed_by->elements() : std::vector{*accessed_by};
      for (const auto& item : items) {
        const int gpu = parse_location(item, r, gpus);
        if (gpu == HOST) item.fail("the host always reaches managed memory; expected a GPU");
        a.accessed_by.push_back(gpu);
      }
    }
    return a;
  });
}

OpDescription describe(const ManagedOp& op) {
  return {fmt::format("managed {} {} on {} pages {}", op.buffer->name, op.buffer->bytes, location_name(op.buffer->on),
                      op.buffer->page)};
}

OpDescription describe(const TouchOp& op) {
  return {fmt::format("touch {} {} at {} {}", op.buffer->name, op.bytes, op.offset, op.write ? "write" : "read")};
}

OpDescription describe(const PrefetchOp& op) {
  return {fmt::format("prefetch {} {} at {} to {}", op.buffer->name, op.bytes, op.offset, location_name(op.to)),
          op.bytes};
}

OpDescription describe(const AdviseOp& op) {
  std::string label = fmt::format("advise {}", op.buffer->name);
  if (op.preferred) label += fmt::format(" preferred {}", location_name(*op.preferred));
  for (int gpu : op.accessed_by) label += fmt::format(" accessed_by gpu{}", gpu);
  if (op.read_mostly) label += " read_mostly";
  return {label};
}

OpDescription describe(const ReadOp& op) {
  return {fmt::format("read {} {} at {} x{}", op.buffer->name, op.bytes, op.offset, op.passes),
          Bytes{op.bytes.count() * op.passes}};
}

}  // namespace snsim::workloads
