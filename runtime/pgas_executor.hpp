// PGAS ops with NVSHMEM semantics and the stream events (program/pgas_ops.hpp), on the symmetric heap: every PE's
// signals, its puts in flight and its events' records (runtime/pgas_executor.cpp says how a put travels).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "program/program.hpp"
#include "runtime/context.hpp"

namespace snsim::workloads {

class PgasExecutor : Executor {
 public:
  explicit PgasExecutor(RunContext& context) : Executor{context} {}
  /// Creates the heap's mutex and condition variables. Creating SimGrid objects is a simcall, which must not race:
  /// call it before the actors run.
  void prepare();
  void run(int rank, const PutOp& op);
  void run(int rank, const GetOp& op);
  /// Its outcome's cause is the put that made the signal hold, if one did (none when it held from the start).
  OpOutcome run(int rank, const SignalWaitOp& op);
  void run(int rank, const QuietOp& op);
  void run(int rank, const FenceOp& op);
  void run(int rank, const ShmemBarrierOp& op);
  void run(int rank, const LoadOp& op);
  void run(int rank, const EventRecordOp& op);  // on the same state as signals
  void run(int rank, const EventWaitOp& op);
  /// What an unended signal_wait or event_wait of `rank` waits for, with the value it saw last; empty for others.
  std::string waiting_for(int rank, const Op& op) const;

 private:
  struct Heap;  // the symmetric heap's signals and events, and every PE's puts in flight
  Heap& heap();
  void wait_puts_complete(int rank);
  models::PgasRoute pgas_route(int from, int to) const;

  std::shared_ptr<Heap> heap_;  // created by prepare()
};

}  // namespace snsim::workloads
