// The ring fast path (models/fabric.hpp) against the exact path, and where auto leaves rings exact.
//
// Each comparison runs the exact and the fast variant of one scenario in forked children (sim/isolated.hpp: one
// simulation per process), then compares their simulated times: issue 6 allows a fast path 2 % against exact; a
// lone ring, whatever its members' arrival times, is exact by construction.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <sstream>

#include "scenario/test_support.hpp"
#include "sim/isolated.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {

/// workloads/bench/superpod4096_dp_step.yaml (tools/bench/perf_targets.sh -g) on `nodes` nodes: compute, a
/// reduce-scatter in each node, a ring all-reduce of each GPU's shard across the nodes on its rail, an all-gather in
/// each node.
std::string superpod_step(int nodes) {
  std::string y = fmt::format(
      "topology: {{type: superpod, node: hgx, nodes: {}, ib: ndr}}\nworkloads:\n  - type: program\n    ops:\n"
      "      - compute: {{flops: 20TFLOP, bytes: 16GiB}}\n",
      nodes);
  auto per_node = [&](std::string_view op) {
    for (int n = 0; n < nodes; ++n)
      y += fmt::format("      - {{ranks: \"{}-{}\", ops: [{{collective: {{op: {}, bytes: 1GiB}}}}]}}\n", 8 * n,
                       8 * n + 7, op);
  };
  per_node("reduce_scatter");
  for (int rail = 0; rail < 8; ++rail) {
    std::string ranks;
    for (int n = 0; n < nodes; ++n) ranks += fmt::format("{}{}", n ? ", " : "", 8 * n + rail);
    y += fmt::format(
        "      - {{ranks: [{}], ops: [{{collective: {{op: all_reduce, bytes: 128MiB, algorithm: ring}}}}]}}\n", ranks);
  }
  per_node("all_gather");
  return y;
}
}  // namespace

TEST_CASE("ring fast path: the hierarchical superpod step on 16 nodes takes what the exact path gives") {
  const std::string yaml = superpod_step(16);
  const PathOutcome exact = run_with_path(yaml, "exact"), fast = run_with_path(yaml, "auto");
  CHECK(exact.ring == 0);
  CHECK(exact.exact == 40);  // 16 reduce-scatters, 8 rail all-reduces, 16 all-gathers
  CHECK(fast.ring == 40);
  const double error = relative_error(fast.span, exact.span);
  MESSAGE("exact " << exact.span * 1e3 << " ms, fast " << fast.span * 1e3 << " ms, error " << error * 100 << " %");
  CHECK(error <= 1e-9);  // lone rings in lockstep: exact by construction
}

TEST_CASE("ring fast path: a ring that waits for a late member and shares a GPU's links with a copy is within 2 %") {
  // Rank 3 computes first (the others wait for it in the exact path's first steps); rank 0 copies to rank 1 on a
  // second stream while the ring runs, taking a share of the links of the ring's 0 -> 1 hop.
  const std::string yaml =
      "topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [\n"
      "  {ranks: \"3\", ops: [{compute: {flops: 1TFLOP, bytes: 1GiB}}]},\n"
      "  {streams: [[{collective: {op: all_reduce, bytes: 1GiB, algorithm: ring}},\n"
      "              {collective: {op: all_gather, bytes: 256MiB}}],\n"
      "             [{ranks: \"0\", ops: [{copy: {to: next, bytes: 2GiB, engine: sm}}]}]]}]}]\n";
  const PathOutcome exact = run_with_path(yaml, "exact"), fast = run_with_path(yaml, "auto");
  CHECK(exact.exact == 2);
  CHECK(fast.ring == 2);
  const double error = relative_error(fast.span, exact.span);
  MESSAGE("exact " << exact.span * 1e3 << " ms, fast " << fast.span * 1e3 << " ms, error " << error * 100 << " %");
  CHECK(error <= 0.02);
}

TEST_CASE("ring fast path: auto leaves jittered rings, 2-rank rings and runs with fabric failures exact") {
  const std::string ring =
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 64MiB, algorithm: ring}}]}]\n";
  const PathOutcome jittered = run_with_path(
      "topology: {type: hgx, gpus: 8}\nmodels: {jitter: {latency: {dist: lognormal, sigma: 0.1}}}\n" + ring, "fast");
  CHECK(jittered.exact == 1);
  CHECK(jittered.ring == 0);
  const std::string pair = "topology: {type: hgx, gpus: 2}\n" + ring;
  CHECK(run_with_path(pair, "auto").exact == 1);
  CHECK(run_with_path(pair, "fast").ring == 1);
  const PathOutcome failed = run_with_path(
      "topology: {type: hgx, gpus: 8}\nfailures: [{at: 10us, link: {gpu: 3, lanes: 1}}]\n" + ring, "fast");
  CHECK(failed.exact == 1);
  // A slowed GPU changes kernels only: the ring stays fast.
  CHECK(run_with_path("topology: {type: hgx, gpus: 8}\nfailures: [{at: 0s, slowed: {gpu: 3, compute: 1.2}}]\n" + ring,
                      "auto")
            .ring == 1);
}
