// The send fast path (models/fabric.hpp): a 2-rank broadcast (NCCL's send/recv) as one transfer of all its chunks,
// against the exact path's chunk-by-chunk pipeline, and where it stays exact.
//
// Each comparison runs the exact and the auto variant of one scenario in forked children (sim/isolated.hpp: one
// simulation per process). Between two ranks the receiver takes one chunk at a time, so the chunks run back to back:
// one transfer gives the same time whatever shares its links, to rounding.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

using namespace snsim::workloads::testing;

TEST_CASE("send fast path: a pipelined training step's sends take what the exact path gives") {
  const std::string yaml =
      "topology: {type: superpod, gpu: h100, nodes: 2}\nworkloads:\n  - type: training\n"
      "    model: {layers: 8, hidden: 2048, heads: 16, sequence: 2048, micro_batches: 4}\n"
      "    parallel: {tp: 2, cp: 2, pp: 4, dp: 1, sequence_parallel: true}\n";
  const PathOutcome exact = run_with_path(yaml, "exact"), fast = run_with_path(yaml, "auto");
  CHECK(exact.send == 0);
  CHECK(fast.send > 0);
  CHECK(fast.send + fast.exact == exact.exact);
  const double error = relative_error(fast.span, exact.span);
  MESSAGE("exact " << exact.span * 1e3 << " ms, fast " << fast.span * 1e3 << " ms, " << fast.send << " sends");
  CHECK(error <= 1e-9);
}

TEST_CASE("send fast path: a send whose link's share changes mid-transfer takes what the exact path gives") {
  // 64 MiB from rank 0 to 1 in 128 chunks, while rank 0 copies 32 MiB to rank 1 on a second stream after a short
  // kernel: the copy takes a share of the same links for part of the send.
  const std::string yaml =
      "topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [\n"
      "  {streams: [[{ranks: \"0-1\", ops: [{collective: {op: broadcast, bytes: 64MiB, root: 0}}]}],\n"
      "             [{ranks: \"0\", ops: [{compute: {flops: 20GFLOP}}, {copy: {to: next, bytes: 32MiB, engine: "
      "sm}}]}]]}]}]\n";
  const PathOutcome exact = run_with_path(yaml, "exact"), fast = run_with_path(yaml, "auto");
  CHECK(exact.exact == 1);
  CHECK(fast.send == 1);
  const double error = relative_error(fast.span, exact.span);
  MESSAGE("exact " << exact.span * 1e6 << " us, fast " << fast.span * 1e6 << " us");
  CHECK(error <= 1e-9);
}

TEST_CASE("send fast path: broadcasts over 3 ranks, jittered sends and runs with fabric failures stay exact") {
  const std::string send =
      "workloads: [{type: program, ops: [{ranks: \"0-1\", ops: [{collective: {op: broadcast, bytes: 64MiB}}]}]}]\n";
  CHECK(run_with_path("topology: {type: hgx, gpus: 8}\n" + send, "auto").send == 1);
  CHECK(run_with_path("topology: {type: hgx, gpus: 8}\n" + send, "exact").exact == 1);
  const PathOutcome chain = run_with_path(
      "topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [{ranks: \"0-2\", ops: [{collective: "
      "{op: broadcast, bytes: 64MiB}}]}]}]\n",
      "fast");
  CHECK(chain.exact == 1);
  CHECK(chain.send == 0);
  const PathOutcome jittered = run_with_path(
      "topology: {type: hgx, gpus: 8}\nmodels: {jitter: {bandwidth: {dist: lognormal, sigma: 0.1}}}\n" + send, "fast");
  CHECK(jittered.exact == 1);
  const PathOutcome failed = run_with_path(
      "topology: {type: hgx, gpus: 8}\nfailures: [{at: 10us, link: {gpu: 1, lanes: 1}}]\n" + send, "fast");
  CHECK(failed.exact == 1);
}
