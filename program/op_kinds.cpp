#include "program/op_kinds.hpp"

#include <algorithm>
#include <array>
#include <type_traits>
#include <variant>

#include "program/program.hpp"

namespace snsim::workloads {
namespace {

template <class... Ops>
constexpr auto kinds_of(std::type_identity<std::variant<Ops...>>) {
  return std::array{Ops::KIND...};
}

/// Every alternative of Op, in its order, then what only the runtime records.
constexpr auto OP_KINDS = [] {
  constexpr auto ops = kinds_of(std::type_identity<decltype(Op::what)>{});
  constexpr std::array runtime{FAULT_KIND, MIGRATE_KIND};
  std::array<OpKind, ops.size() + runtime.size()> all{};
  std::ranges::copy(ops, all.begin());
  std::ranges::copy(runtime, all.begin() + ops.size());
  return all;
}();

constexpr auto RECORD_KINDS = [] {
  std::array<RecordKind, OP_KINDS.size()> all{};
  for (std::size_t i = 0; i < OP_KINDS.size(); ++i)
    all[i] = {OP_KINDS[i].name, OP_KINDS[i].track, OP_KINDS[i].moves_bytes, OP_KINDS[i].blocks};
  return all;
}();

constexpr bool names_unique() {
  for (std::size_t i = 0; i < OP_KINDS.size(); ++i)
    for (std::size_t j = i + 1; j < OP_KINDS.size(); ++j)
      if (OP_KINDS[i].name == OP_KINDS[j].name) return false;
  return true;
}
static_assert(names_unique(), "two op kinds share a name: records and `ops:` could not tell them apart");

}  // namespace

std::span<const OpKind> op_kinds() {
  return OP_KINDS;
}

std::span<const RecordKind> record_kinds() {
  return RECORD_KINDS;
}

}  // namespace snsim::workloads
