// Folding (scenario/folding.hpp, docs/folding.md) against the full simulation: each case runs a scenario twice, in
// child processes (one simulation per process), folded and with `fold: false`, and checks the step time within 1 %,
// the path the report names, how many ranks ran in full and why, and that the waits and per-GPU rows of the simulated
// ranks are the full run's.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <nlohmann/json.hpp>

#include "runtime/folding.hpp"
#include "scenario/limits.hpp"
#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {

/// What a run gives that folding must keep: step time, path, ranks in full, waits and per-GPU rows.
struct Outcome {
  double step_ms = 0;
  std::string path;
  std::size_t simulated = 0, ranks = 0;
  std::uint64_t proxies = 0;  // folded ranks' ops run by proxies
  std::vector<std::string> why;
  std::vector<std::array<double, 3>> waits;  // by rank: span, busy, waiting (s)
  nlohmann::json per_gpu;                    // the training per-GPU table's rows
  std::string outcome;
};

Outcome run(const std::string& yaml, bool fold) {
  const auto text = run_isolated([&] {
    const auto scenario = load(yaml + fmt::format("fold: {}\n", fold ? "true" : "false"));
    const Report r = scenario.run();
    nlohmann::json out;
    out["step_ms"] = metric(r, "step_mean_ms");
    out["path"] = r.folding.path;
    out["simulated"] = r.folding.simulated;
    out["ranks"] = r.folding.ranks;
    out["proxies"] = r.folding.proxies;
    out["why"] = r.folding.why;
    out["outcome"] = r.outcome;
    for (const auto& w : r.waits) out["waits"].push_back({w.span.count(), w.busy.count(), w.waiting.count()});
    out["per_gpu"] = to_json(table(r, "training: time per GPU"))["rows"];
    return out.dump();
  });
  const auto j = nlohmann::json::parse(text);
  Outcome o;
  o.step_ms = j["step_ms"];
  o.path = j["path"];
  o.simulated = j["simulated"];
  o.ranks = j["ranks"];
  o.proxies = j["proxies"];
  o.why = j["why"].get<std::vector<std::string>>();
  o.outcome = j["outcome"];
  for (const auto& w : j["waits"]) o.waits.push_back({w[0], w[1], w[2]});
  o.per_gpu = j["per_gpu"];
  return o;
}

/// Runs `yaml` folded and in full; checks the step within 1 % and every rank's waits and per-GPU row within 1 % of
/// the step (the simulated ranks' exactly as the full run has them, up to the solver's rounding).
Outcome check_against_full(const std::string& yaml) {
  const Outcome folded = run(yaml, true), full = run(yaml, false);
  CHECK(full.path == "full");
  CHECK(full.simulated == full.ranks);
  CHECK(folded.outcome == full.outcome);
  CHECK(relative_error(folded.step_ms, full.step_ms) < 0.01);
  REQUIRE(folded.waits.size() == full.waits.size());
  const double tolerance = 0.01 * full.step_ms / 1e3;
  for (std::size_t r = 0; r < full.waits.size(); ++r)
    for (std::size_t k = 0; k < 3; ++k) {
      INFO("rank " << r << " waits column " << k);
      CHECK(std::abs(folded.waits[r][k] - full.waits[r][k]) <= tolerance);
    }
  REQUIRE(folded.per_gpu.size() == full.per_gpu.size());
  for (std::size_t r = 0; r < full.per_gpu.size(); ++r)
    for (const char* column : {"compute_ms", "comm_only_ms", "idle_ms"}) {
      INFO("rank " << r << " per-GPU " << column);
      CHECK(std::abs(folded.per_gpu[r][column].get<double>() - full.per_gpu[r][column].get<double>()) <=
            tolerance * 1e3);
    }
  return folded;
}

// 32 H100s in 4 HGX nodes: TP 4 inside a node, 2 pipeline stages, 4 data-parallel replicas (two per node pair).
const std::string DENSE_32 = R"(
topology: {type: superpod, gpu: h100, nodes: 4}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 4, sequence: 1024, global_batch: 16}
    parallel: {tp: 4, pp: 2, dp: 4, zero: true}
)";

// 16 H100s in 2 HGX nodes under PGAS: TP 4, 2 pipeline stages, 2 data-parallel replicas.
const std::string PGAS_16 = R"(
topology: {type: superpod, gpu: h100, nodes: 2}
workloads:
  - type: training
    schedule: pgas
    steps: 1
    model: {preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 8}
    parallel: {tp: 4, pp: 2, dp: 2}
)";

}  // namespace

TEST_CASE("folding: a healthy dense BSP step on 32 GPUs folds 4 replicas into 1 and keeps the full step time") {
  const auto folded = check_against_full(DENSE_32);
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 8);
  CHECK(folded.why.empty());
}

TEST_CASE("folding: context parallelism and an interleaved pipeline fold each replica's cp ranks with it") {
  // 32 H100s: TP 2 x CP 2 inside a node, 2 stages of 2 virtual chunks, 4 replicas; a replica is tp x cp x pp.
  const auto folded = check_against_full(R"(
topology: {type: superpod, gpu: h100, nodes: 4}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 4, sequence: 2048, global_batch: 16}
    parallel: {tp: 2, cp: 2, pp: 2, vp: 2, dp: 4, zero: true}
)");
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 8);
  CHECK(folded.why.empty());
}

TEST_CASE("folding: a slow GPU puts its replica (and only it) in full, and the step still matches") {
  const auto folded = check_against_full(DENSE_32 + "models: {slow: [{gpu: 13, compute: 1.5}]}\n");
  CHECK(folded.step_ms > run(DENSE_32, true).step_ms * 1.005);  // the slow GPU shows
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 16);  // the representative and the slow GPU's replica
  REQUIRE(folded.why.size() == 1);
  CHECK(folded.why[0].find("GPU 13 is slow") != std::string::npos);
}

TEST_CASE("folding: a failed link puts the replica of its GPU in full") {
  const auto folded = check_against_full(DENSE_32 + "failures: [{at: 0s, link: {gpu: 2, lanes: 4}}]\n");
  CHECK(folded.simulated == 16);
  REQUIRE(folded.why.size() == 1);
  CHECK(folded.why[0].find("failure: gpu2") != std::string::npos);
}

TEST_CASE("folding: a PGAS step folds its replicas, their puts to simulated ranks run by proxies") {
  const auto folded = check_against_full(PGAS_16);
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 8);
}

TEST_CASE("folding: an 8-GPU HGX step (data parallelism inside one NVLink domain) folds and matches") {
  const auto folded = check_against_full(R"(
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 8}
    parallel: {tp: 2, pp: 1, dp: 4}
)");
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 2);
}

TEST_CASE("folding: a MoE step whose routing draws differ per replica runs in full, naming the op that differs") {
  const auto folded = check_against_full(R"(
topology: {type: superpod, gpu: h100, nodes: 2}
workloads:
  - type: training
    steps: 1
    model: {preset: mixtral-8x7b, layers: 2, sequence: 1024, global_batch: 8}
    parallel: {tp: 2, pp: 1, dp: 8, ep: 4}
)");
  // Experts draw their tokens per rank and EP group: no two replicas' programs match.
  CHECK(folded.path == "full");
  REQUIRE(folded.why.size() == 7);
  for (const auto& why : folded.why) CHECK(why.find("program differs") != std::string::npos);
}

TEST_CASE("folding: 256 GPUs, TP 8 x PP 2 x DP 16 on 32 HGX nodes, folds into one replica and matches") {
  const auto folded = check_against_full(R"(
topology: {type: superpod, gpu: h100, nodes: 32}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 32}
    parallel: {tp: 8, pp: 2, dp: 16, zero: true}
)");
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 16);
}

TEST_CASE(
    "folding: pipeline sends through the spines of a non-blocking fat tree need no proxy, and oversubscribed ones do") {
  // 64 H100s in 8 HGX nodes whose NICs share leaves (4 nodes a leaf): pipeline stage 0 under leaf 0, stage 1 under
  // leaf 1, so every pipeline send crosses the spines; data-parallel groups stay under one leaf.
  auto yaml = [](const std::string& oversubscription) {
    return fmt::format(R"(
topology: {{type: superpod, gpu: h100, nodes: 8, rail_optimized: false, oversubscription: {}}}
workloads:
  - type: training
    steps: 1
    model: {{preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 16}}
    parallel: {{tp: 8, pp: 2, dp: 4, zero: true}}
)",
                       oversubscription);
  };
  const auto open = check_against_full(yaml("1"));
  const auto blocking = check_against_full(yaml("2"));
  CHECK(open.path == "folded");
  CHECK(blocking.path == "folded");
  CHECK(open.simulated == 16);
  // The same collectives run by proxies either way; only the blocking spines add the pipeline sends.
  CHECK(open.proxies > 0);
  CHECK(blocking.proxies > open.proxies);
}

TEST_CASE("folding: a data-parallel ring across nodes runs its folded members only next to a simulated one") {
  // 64 H100s in 8 HGX nodes, TP 8 in each node and DP 8 across them: each data-parallel group holds one simulated
  // rank and 7 folded ones, one per node. The distributed optimizer's reduce-scatters and all-gathers run as NCCL's
  // rings across the nodes, whose flows are alike: only the simulated rank's two neighbours need to run them.
  const std::string yaml = R"(
topology: {type: superpod, gpu: h100, nodes: 8}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 16}
    parallel: {tp: 8, dp: 8, zero: true}
)";
  const auto folded = check_against_full(yaml);
  CHECK(folded.path == "folded");
  CHECK(folded.simulated == 8);
  const auto rings = run_isolated([&] {
    const Report r = load(yaml).run();
    return std::to_string(std::ranges::count_if(r.ops, [](const OpRecord& o) {
      return o.rank == 0 && o.kind == "collective" &&
             (o.label.starts_with("reduce_scatter") || o.label.starts_with("all_gather"));
    }));
  });
  // With every member running them, the rings alone would take 8 simulated ranks x 7 folded members each.
  CHECK(std::stoul(rings) > 0);
  CHECK(folded.proxies < 8 * 7 * std::stoul(rings));
}

TEST_CASE("folding: jitter drawn per GPU, fold: false and a failed plane each run everything in full, saying why") {
  auto full_because = [](const std::string& yaml, const std::string& reason) {
    const auto o = run(yaml, true);
    CHECK(o.path == "full");
    CHECK(o.simulated == o.ranks);
    REQUIRE(!o.why.empty());
    CHECK(o.why[0].find(reason) != std::string::npos);
  };
  full_because(DENSE_32 + "models: {jitter: {compute: {dist: normal, sigma: 0.01}}}\n", "models.jitter draws per GPU");
  const auto off = run(DENSE_32, false);
  CHECK(off.path == "full");
  REQUIRE(!off.why.empty());
  CHECK(off.why[0].find("fold: false") != std::string::npos);
  full_because(R"(
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: training
    steps: 1
    model: {preset: llama3.1-8b, layers: 2, sequence: 1024, global_batch: 8}
    parallel: {tp: 2, pp: 1, dp: 4}
failures: [{at: 0s, plane: 1}]
)",
               "every replica is set apart");
}

TEST_CASE("folding: a program that differs from its representative's is found, with the op that differs") {
  Folding folding{4, Replicas{{{0, 1}, {2, 3}}}, 0, {true, true}};
  CHECK(folding.relabel(1, 3) == 3);
  CHECK(folding.relabel(3, 3) == 1);
  auto group = std::make_shared<const std::vector<int>>(std::vector<int>{0, 2});
  auto pair_a = std::make_shared<const std::vector<int>>(std::vector<int>{0, 1});
  auto pair_b = std::make_shared<const std::vector<int>>(std::vector<int>{2, 3});
  auto collective = [](Group g, Bytes bytes) {
    CollectiveOp c;
    c.root = g->front();
    c.group = std::move(g);
    c.bytes = bytes;
    return Op{c, 0, -1};
  };
  Program rep{{collective(group, Bytes{1024}), collective(pair_a, Bytes{64})}};
  Program same{{collective(group, Bytes{1024}), collective(pair_b, Bytes{64})}};
  CHECK(program_difference(rep, same, folding, 2).empty());
  Program bigger{{collective(group, Bytes{1024}), collective(pair_b, Bytes{128})}};
  CHECK(program_difference(rep, bigger, folding, 2).find("op 1") != std::string::npos);
  Program wrong_pair{{collective(group, Bytes{1024}), collective(pair_a, Bytes{64})}};  // not relabelled
  CHECK(!program_difference(rep, wrong_pair, folding, 2).empty());
  auto copy_of_group = std::make_shared<const std::vector<int>>(*group);  // the same ranks, another collective
  Program other_instance{{collective(copy_of_group, Bytes{1024}), collective(pair_b, Bytes{64})}};
  CHECK(!program_difference(rep, other_instance, folding, 2).empty());
  Program shorter{{collective(group, Bytes{1024})}};
  CHECK(program_difference(rep, shorter, folding, 2).find("1 ops, not 2") != std::string::npos);
}

TEST_CASE("folding: dense training steps build their replicas alike, as they say: compared whole, every one folds") {
  // A workload whose replicas are alike by construction (Workload::replicas_alike) has only its simulated ranks'
  // programs built; here every rank's is, and compared op for op with its representative's, peers relabelled.
  const std::string cp_vp = R"(
topology: {type: superpod, gpu: h100, nodes: 4}
workloads:
  - type: training
    steps: 2
    model: {preset: llama3.1-8b, layers: 4, sequence: 2048, global_batch: 16}
    parallel: {tp: 2, cp: 2, pp: 2, vp: 2, dp: 4, zero: true, sequence_parallel: true, recompute: full}
)";
  for (const std::string& yaml : {DENSE_32, cp_vp, PGAS_16}) {
    CAPTURE(yaml);
    const auto every = load(yaml + "fold: false\n");
    const auto& programs = every.programs();
    REQUIRE(std::ranges::none_of(programs, [](const Program& p) { return p.ops.empty(); }));
    const auto compared = decide_folding(every.proposed_replicas(), programs, every.fabric(), every.models(), {},
                                         /*enabled=*/true, /*alike=*/false);
    CHECK(compared.summary.why.empty());
    CHECK(compared.summary.path == "folded");
    // Folded: the same decision from the simulated ranks' programs alone.
    const auto folded = load(yaml);
    const auto decision = folded.folding(folded.programs());
    CHECK(decision.summary.simulated == compared.summary.simulated);
    for (std::size_t r = 0; r < programs.size(); ++r)
      CHECK(folded.programs()[r].ops.empty() == !decision.folding.simulated(static_cast<int>(r)));
  }
}

TEST_CASE("folding: the memory estimate counts a folded rank's ops at their summary records and no actor of its own") {
  const auto scenario = load(DENSE_32);
  const auto programs = scenario.programs();
  const auto decision = scenario.folding(programs);
  REQUIRE(decision.folding.simulated_ranks() == 8);
  const auto every = load(DENSE_32 + "fold: false\n");
  const auto full = estimate_memory(every.fabric(), every.programs(), nullptr, RunFiles::none);
  const auto folded = estimate_memory(scenario.fabric(), programs, &decision.folding, RunFiles::none);
  CHECK(full.folded_ops == 0);
  CHECK(folded.ops + folded.folded_ops == full.ops);
  CHECK(folded.folded_ops == 3 * folded.ops);  // 3 of the 4 replicas fold
  CHECK(folded.actors < full.actors);
  CHECK(folded.total < full.total);
  CHECK(folded.breakdown().find("folded ops") != std::string::npos);
}

TEST_CASE(
    "folding: the summaries walk the simulated records, then each one's folded copies, rank and peer relabelled") {
  // Ranks 0-1 are replica 0 (simulated), ranks 2-3 replica 1, folded into it; rank 4 belongs to no replica.
  const Folding folding(5, Replicas{{{0, 1}, {2, 3}}}, 0, {false, true});
  std::vector<OpRecord> simulated(3);
  simulated[0] = {.rank = 0, .kind = "copy", .label = "a label longer than the small-string buffer", .peer = 1};
  simulated[1] = {.rank = 1, .kind = "copy", .label = "to the host", .peer = 4};
  simulated[2] = {.rank = 4, .kind = "compute", .label = "alone"};
  std::vector<std::array<int, 2>> seen;  // rank, peer
  std::vector<std::string> labels;
  for (const auto& r : RankRecords(simulated, folding)) {
    seen.push_back({r.rank, r.peer});
    labels.emplace_back(r.label);
  }
  const std::vector<std::array<int, 2>> expected{{0, 1}, {1, 4}, {4, -1}, {2, 3}, {3, 4}};
  CHECK(seen == expected);
  CHECK(labels[3] == simulated[0].label);
  CHECK(labels[4] == simulated[1].label);
  CHECK(std::ranges::count_if(RankRecords(simulated, folding), [](const OpRecord& r) { return r.kind == "copy"; }) ==
        4);

  std::size_t unfolded = 0;
  const Folding none(5);
  for (const auto& r : RankRecords(simulated, none)) CHECK(&r == &simulated[unfolded++]);  // as they are, not copied
  CHECK(unfolded == simulated.size());
  CHECK(RankRecords(std::vector<OpRecord>{}, folding).begin() == std::default_sentinel);
}
