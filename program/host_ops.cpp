// Parsing and records of host ops (program/host_ops.hpp).
#include "program/host_ops.hpp"

#include <fmt/format.h>

#include "program/program.hpp"

namespace snsim::workloads {

void parse_host(const ConfigNode& op, const OpParse& at) {
  HostOp h;
  h.time = op.required<Seconds>("time");
  check_positive(op, "time", h.time);
  at.for_each_rank([&](int) { return h; });
}

OpDescription describe(const HostOp& op) {
  return {fmt::format("{} {}", op.label, op.time)};
}

}  // namespace snsim::workloads
