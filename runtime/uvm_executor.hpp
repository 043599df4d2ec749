// Unified-memory ops (program/uvm_ops.hpp) on every managed buffer's residency (runtime/uvm_residency.hpp), with
// per-location counters for the report's uvm table. Faults and migrations are recorded as their own ops ("fault",
// "migrate": program/uvm_ops.hpp) with the phase and tag of the op that caused them.
#pragma once

#include <memory>
#include <optional>

#include "program/program.hpp"
#include "runtime/context.hpp"
#include "runtime/pgas_executor.hpp"

namespace snsim::workloads {

namespace uvm {
struct ManagedState;
}

class UvmExecutor : Executor {
 public:
  /// A read's streaming loads run as the PGAS executor's loads.
  UvmExecutor(RunContext& context, PgasExecutor& loads) : Executor{context}, loads_{loads} {}
  void run(int rank, const ManagedOp& op, const Op& top);
  void run(int rank, const TouchOp& op, const Op& top);
  void run(int rank, const PrefetchOp& op, const Op& top);
  void run(int rank, const AdviseOp& op, const Op& top);
  void run(int rank, const ReadOp& op, const Op& top);
  /// Per location (host, then every GPU): faults, fault batches, migrated bytes, time in fault service, bytes
  /// evicted, bytes moved by access counters and thrashing pins; nullopt when the programs use no managed memory.
  std::optional<Table> uvm_table() const;

 private:
  struct Uvm;  // every managed buffer's residency and advice, and per-location counters
  Uvm& uvm_state();
  void fault(int rank, const ManagedPtr& buffer, Bytes offset, Bytes bytes, bool write, const Op& top);
  void migrate(int from, int to, Bytes bytes, Seconds fixed_cost, const Op& top, int rank);
  void evict(int gpu, Bytes bytes, const Op& top, int rank);  // to the host, to make room
  void count_accesses(int rank, uvm::ManagedState& buffer, const ReadOp& op, const Op& top);

  PgasExecutor& loads_;
  std::shared_ptr<Uvm> uvm_;  // created by the first UVM op
};

}  // namespace snsim::workloads
