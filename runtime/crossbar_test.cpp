// The crossbar fast path (models/fabric.hpp) against the exact path, and NVLS only inside one NVLink domain.
//
// Each comparison runs the exact and the fast variant of one scenario in forked children (sim/isolated.hpp: one
// simulation per process), then compares their step times: the fast path must stay within 2 % of exact max-min.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <sstream>

#include "models/collective.hpp"
#include "scenario/test_support.hpp"
#include "sim/error.hpp"
#include "sim/isolated.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {

/// Runs both paths and checks the fast one ran and stayed within `bound` of the exact one.
void compare(const std::string& yaml, int collectives, double bound = 0.02) {
  const PathOutcome exact = run_with_path(yaml, "exact"), fast = run_with_path(yaml, "fast");
  CHECK(exact.exact == collectives);
  CHECK(fast.crossbar >= 1);
  const double error = relative_error(fast.span, exact.span);
  MESSAGE("exact " << exact.span * 1e3 << " ms, fast " << fast.span * 1e3 << " ms, error " << error * 100 << " %");
  CHECK(error <= bound);
  CHECK(fast.span != exact.span);  // the fast path really ran: jittered rounds never end at the same instant
}
}  // namespace

TEST_CASE("crossbar fast path: a jittered all-to-all on 8 GPUs is within 2 % of exact max-min") {
  compare(
      "seed: 3\ntopology: {type: hgx, gpus: 8}\nmodels: {jitter: {bandwidth: {dist: lognormal, sigma: 0.2}}}\n"
      "workloads: [{type: program, ops: [{repeat: 4, ops: [{collective: {op: all_to_all, bytes: 64MiB}}]}]}]\n",
      4);
}

TEST_CASE("crossbar fast path: a jittered all-to-all on 8 H200s with calibrated rate caps is within 2 % of exact") {
  compare(
      "seed: 5\ntopology: {type: hgx, gpus: 8}\nmodels: {params: h200, jitter: {bandwidth: {dist: lognormal, sigma: "
      "0.1}}}\nworkloads: [{type: program, ops: [{repeat: 4, ops: [{collective: {op: all_to_all, bytes: 64MiB}}]}]}]\n",
      4);
}

TEST_CASE("crossbar fast path: jittered one-shot and two-shot all-reduces on 8 GPUs are within 2 % of exact") {
  compare(
      "seed: 11\ntopology: {type: hgx, gpus: 8}\nmodels: {jitter: {bandwidth: {dist: lognormal, sigma: 0.2}}}\n"
      "workloads: [{type: program, ops: [{repeat: 3, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: "
      "two_shot}}, {collective: {op: all_reduce, bytes: 64MiB, algorithm: one_shot}}]}]}]\n",
      6);
}

TEST_CASE("crossbar fast path: the jittered NVL72 MoE step is within 2 % of exact max-min") {
  // workloads/bench/nvl72_moe_step.yaml: dispatch, expert compute, combine, data-parallel all-reduce.
  compare(
      "seed: 7\ntopology: {type: nvl72}\nmodels: {jitter: {bandwidth: {dist: lognormal, sigma: 0.2}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: 256MiB}}, {compute: {flops: 2TFLOP, "
      "bytes: 4GiB}}, {collective: {op: all_to_all, bytes: 256MiB}}, {collective: {op: all_reduce, bytes: 1GiB}}]}]\n",
      3);
}

TEST_CASE("crossbar fast path: without jitter it is exact, and auto leaves 2 ranks and other domains alone") {
  // Uniform rounds: every port drains at its line rate either way.
  const std::string uniform =
      "topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: "
      "64MiB}}]}]\n";
  const PathOutcome exact = run_with_path(uniform, "exact"), fast = run_with_path(uniform, "auto");
  CHECK(fast.crossbar == 1);
  CHECK(relative_error(fast.span, exact.span) <= 1e-9);
  // 2 ranks under auto: exact (the validated 2-GPU twins do not move); across superpod nodes: never fast.
  const PathOutcome pair = run_with_path(
      "topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: "
      "1MiB}}]}]\n",
      "auto");
  CHECK(pair.exact == 1);
  const PathOutcome pod = run_with_path(
      "topology: {type: superpod, nodes: 2}\nworkloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: "
      "1MiB}}, {ranks: \"0-7\", ops: [{collective: {op: all_to_all, bytes: 1MiB}}]}]}]\n",
      "fast");
  CHECK(pod.exact == 1);
  CHECK(pod.crossbar == 1);
}

TEST_CASE("crossbar fast path: models.fabric.path takes auto, exact or fast") {
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nmodels: {fabric: {path: quick}}\nworkloads: [{type: program, "
                            "ops: [{collective: {op: all_to_all, bytes: 1MiB}}]}]\n"),
                       "t.yaml:2:25: models.fabric.path: expected auto, exact or fast, found 'quick'", InputError);
}

TEST_CASE("nvls: only inside one NVLink domain, never across superpod nodes") {
  const Scenario pod = load(
      "topology: {type: superpod, nodes: 2}\nworkloads: [{type: program, ops: [{ranks: \"0-7\", ops: [{collective: "
      "{op: all_reduce, bytes: 1GiB, algorithm: nvls}}]}]}]\n");  // one node: allowed
  const Fabric& f = pod.fabric();
  const auto g = f.gpus();
  const std::vector<DeviceId> node(g.begin(), g.begin() + 8), all(g.begin(), g.end());
  CHECK(models::switch_reduction(f, node) == doctest::Approx(0.85));
  CHECK(models::switch_reduction(f, all) == 0);
  CHECK(models::switch_reduction(f) == 0);
  // Chosen by size: on 16 ranks NVLS would win on a node's rates, but the group spans two NVLink domains.
  const models::CollectiveModel& model = *pod.models().collective;
  models::CollectivePlatform platform{BytesPerSecond{50e9}, 0.8, Seconds{2e-6}, 18, 0};
  models::CollectiveRequest request;
  request.bytes = Bytes{1ull << 30};
  request.ranks = 16;
  platform.switch_reduction = 0.85;  // what the whole fabric used to report
  CHECK(model.plan(request, platform).algorithm == models::Algorithm::nvls);
  platform.switch_reduction = models::switch_reduction(f, all);
  CHECK(model.plan(request, platform).algorithm != models::Algorithm::nvls);
  // Forced across nodes: an error naming two ranks in different domains.
  CHECK_THROWS_WITH_AS(load("topology: {type: superpod, nodes: 2}\nworkloads: [{type: program, ops: [{ranks: [0, "
                            "8], ops: [{collective: {op: all_reduce, bytes: 1GiB, algorithm: nvls}}]}]}]\n"),
                       "t.yaml:2:111: workloads[0].ops[0].ops[0].collective.algorithm: nvls needs every rank in one "
                       "NVLink domain, and ranks 0 and 8 are in different ones; allowed for all_reduce: ring, tree, "
                       "one_shot, two_shot, nvls_tree, collnet",
                       InputError);
}
