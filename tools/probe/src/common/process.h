// Process model: the parent never touches CUDA; every family runs in freshly forked processes.
//
// NCCL and NVSHMEM want one process per GPU, created before any CUDA call, so the parent forks the ranks of
// each family and only collects their output. A single-GPU family runs as one rank. Forking per family also
// isolates families from each other's CUDA state and sticky errors.
//
// Rank 0 streams finished records through a pipe; the parent appends each complete line to the trace file
// and flushes it, so a rank that dies mid-record leaves the file valid (the partial line is dropped).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "options.h"
#include "record.h"

namespace probe {

struct RankContext {
  int rank = 0;
  int nranks = 1;
  const Options* options = nullptr;

  bool is_root() const { return rank == 0; }
  // Rank 0 reports; other ranks' calls are ignored (they measure the same operations as rank 0).
  void emit(const Record& record) const;
  // Copies `size` bytes (<= 4 KiB, so that pipe writes stay atomic) from rank 0 to every other rank: used
  // once per family for the NCCL or NVSHMEM unique id.
  void share_blob(void* data, std::size_t size) const;
  // Rank 0 sends one raw line to the parent (used for non-record output such as the GPU inventory).
  void send_line(const std::string& line) const;

  RecordSink* sink = nullptr;  // set on rank 0 only
  int record_fd = -1;          // rank 0 only
  int blob_read_fd = -1;
  int blob_write_fd = -1;
};

using RankBody = std::function<void(RankContext&)>;
using LineHandler = std::function<void(const std::string&)>;

// Runs `body` in `nranks` forked processes and hands every line rank 0 writes to `on_line`, in order.
// Returns true when every rank exited 0; otherwise kills the rest and fills `failure`.
bool run_ranks(int nranks, const Options& options, const RankBody& body, const LineHandler& on_line,
               std::string* failure);

}  // namespace probe
