// Parsing of the unified-memory ops (program.hpp): managed, touch, prefetch, advise, read.
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/uvm.hpp"
#include "program/program.hpp"

namespace snsim::workloads {
namespace {

// Residency is a bit per location (host and every GPU) in a 64-bit word (runtime/uvm_executor.cpp).
constexpr int MAX_UVM_GPUS = 63;
// The fabric does not describe host memory: 2 TiB, a DGX H200's system memory [spec: NVIDIA DGX H200 datasheet,
// "2TB"], bounds what managed memory can hold beyond the GPUs.
constexpr Bytes HOST_MEMORY{2ull << 40};

// The buffers of the program being parsed (ManagedScope). Parsing is single-threaded and not reentrant.
std::map<std::string, ManagedPtr>* buffers = nullptr;

template <class T>
void for_each_rank(const std::vector<int>& ranks, std::vector<Program>& programs, int phase, T make_op) {
  for (int r : ranks) programs[static_cast<std::size_t>(r)].ops.push_back(Op{make_op(r), phase, -1});
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

void parse_uvm(const std::string& kind, const ConfigNode& op, const std::vector<int>& ranks, const Fabric& fabric,
               int phase, std::vector<Program>& programs) {
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (!buffers) op.fail("managed memory ops need a program");  // parse_ops opens the scope: only a misuse gets here
  if (kind == "managed") {
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
    if (op.has("on")) buffer->on = parse_location(op.child("on"), ranks.front(), gpus);
    (*buffers)[buffer->name] = buffer;
    // Allocated once, by the program's first rank: the others see the same buffer.
    programs[static_cast<std::size_t>(ranks.front())].ops.push_back(Op{ManagedOp{buffer}, phase, -1});
  } else if (kind == "touch" || kind == "read") {
    const ManagedPtr buffer = find_buffer(op);
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const auto range = parse_range(op, *buffer);
    const Bytes offset = range.first, bytes = range.second;
    if (kind == "touch") {
      const auto access = op.optional<std::string>("access", "read");
      if (access != "read" && access != "write")
        op.fail_key("access", fmt::format("expected read or write, found '{}'", access));
      for_each_rank(ranks, programs, phase, [&](int) { return TouchOp{buffer, offset, bytes, access == "write"}; });
    } else {
      const auto passes = op.optional<std::uint64_t>("passes", 1);
      check_between(op, "passes", passes, std::uint64_t{1}, std::uint64_t{1'000'000});
      for_each_rank(ranks, programs, phase, [&](int) { return ReadOp{buffer, offset, bytes, passes}; });
    }
  } else if (kind == "prefetch") {
    const ManagedPtr buffer = find_buffer(op);
    const auto range = parse_range(op, *buffer);
    const Bytes offset = range.first, bytes = range.second;
    const ConfigNode to = op.child("to");
    for_each_rank(ranks, programs, phase, [&](int r) {
      return PrefetchOp{buffer, parse_location(to, r, gpus), offset, bytes};
    });
  } else {  // advise
    const ManagedPtr buffer = find_buffer(op);
    const auto preferred = op.maybe_child("preferred");
    const auto accessed_by = op.maybe_child("accessed_by");
    const bool read_mostly = op.optional<bool>("read_mostly", false);
    for_each_rank(ranks, programs, phase, [&](int r) {
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
}

}  // namespace snsim::workloads
