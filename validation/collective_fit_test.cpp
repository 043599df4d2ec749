// The `collective` family's twins (validation/twins/collective_twin.cpp) and fit (validation/fits/collective_fit.cpp).
#include <doctest/doctest.h>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/calibrate.hpp"
#include "validation/twins.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::literals;
using models::Algorithm;
using models::CollectiveKind;
using models::Protocol;

namespace {

Trace h200x2(Json env) {
  Trace t;
  t.source = "synthetic.jsonl";
  t.header.gpus = {{0, "NVIDIA H200", "", Json::object()}, {1, "NVIDIA H200", "", Json::object()}};
  t.header.env = std::move(env);
  t.complete = true;
  return t;
}

TraceRecord record(const std::string& test, const std::string& variant, Bytes bytes, double median = 1e-5) {
  TraceRecord r;
  r.id = fmt::format("collective/{}/{}/0-1/{}", test, variant, bytes.count());
  r.family = Family::collective;
  r.test = test;
  r.variant = variant;
  r.ranks = {0, 1};
  r.bytes = bytes;
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median};
  if (variant == "graph") r.extra["ops_per_graph"] = 50;
  return r;
}

/// The collective op a one-op or repeated sample runs on `rank`, and the repeat count.
std::pair<workloads::CollectiveOp, int> collective_of(const Twin& twin, int rank) {
  const auto& ops = twin.sample.at(static_cast<std::size_t>(rank));
  REQUIRE(ops.size() == 1);
  if (const auto* repeat = std::get_if<workloads::RepeatOp>(&ops[0].what)) {
    REQUIRE(repeat->body.size() == 1);
    return {std::get<workloads::CollectiveOp>(repeat->body[0].what), repeat->count};
  }
  return {std::get<workloads::CollectiveOp>(ops[0].what), 1};
}

}  // namespace

TEST_CASE("collective twins: one op per out_of_place sample, ops_per_graph graph launches per graph sample") {
  const auto models = snsim::models::testing::load();
  const Trace trace = h200x2({{"NCCL_NVLS_ENABLE", "0"}, {"NCCL_PROTO", "LL128"}});
  for (const std::string test : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}) {
    CAPTURE(test);
    const auto stream = make_twin(trace, record(test, "out_of_place", 1_MiB), 2, models);
    REQUIRE(std::holds_alternative<Twin>(stream));
    const auto& s = std::get<Twin>(stream);
    CHECK(s.repetitions == 1);
    CHECK(s.samples == 2);
    for (int rank : {0, 1}) {
      const auto [c, count] = collective_of(s, rank);
      CHECK(count == 1);
      CHECK(c.kind == *models::collective_kind(test));
      CHECK(c.bytes == 1_MiB);
      CHECK(c.launch == models::Launch::stream);
      CHECK(c.host_paced);  // calls back to back on the host thread
      CHECK(*c.group == std::vector<int>{0, 1});
      CHECK(c.root == 0);
      // NCCL_PROTO binds the collectives; all_to_all's grouped send/recv picks LL or Simple by itself.
      if (test == "all_to_all")
        CHECK(!c.protocol);
      else
        CHECK(c.protocol == Protocol::ll128);
      // NVLS was off: NCCL ran ring on 2 GPUs, and the twin says so where the model could choose.
      if (test == "all_reduce")
        CHECK(c.algorithm == Algorithm::ring);
      else
        CHECK(!c.algorithm);
    }
    const auto graph = make_twin(trace, record(test, "graph", 1_MiB), 2, models);
    REQUIRE(std::holds_alternative<Twin>(graph));
    const auto& g = std::get<Twin>(graph);
    CHECK(g.repetitions == 50);
    const auto [c, count] = collective_of(g, 1);
    CHECK(count == 50);
    CHECK(c.launch == models::Launch::graph);
    CHECK(!c.host_paced);
  }
}

TEST_CASE("collective twins: NCCL's own choice is the model's, and what cannot be forced has no twin") {
  const auto models = snsim::models::testing::load();
  // NVLS left on and no NCCL_PROTO: nothing forced.
  const auto free = make_twin(h200x2(Json::object()), record("all_reduce", "out_of_place", 8_B), 2, models);
  REQUIRE(std::holds_alternative<Twin>(free));
  const auto [c, count] = collective_of(std::get<Twin>(free), 0);
  CHECK(!c.protocol);
  CHECK(!c.algorithm);
  auto reason = [&](Json env, TraceRecord r) {
    const auto made = make_twin(h200x2(std::move(env)), r, 4, models);
    REQUIRE(std::holds_alternative<std::string>(made));
    return std::get<std::string>(made);
  };
  CHECK(reason({{"NCCL_PROTO", "LL,Simple"}}, record("all_gather", "graph", 1_KiB)) ==
        "NCCL_PROTO=LL,Simple is not one protocol (LL, LL128, Simple)");
  CHECK(reason({{"NCCL_ALGO", "CollnetDirect"}}, record("all_reduce", "graph", 1_KiB)) ==
        "NCCL_ALGO=CollnetDirect is not one algorithm snsim models");
  auto four = record("all_reduce", "graph", 1_KiB);
  four.ranks = {0, 1, 2, 3};
  CHECK(reason({{"NCCL_NVLS_ENABLE", "0"}}, four) ==
        "NCCL_NVLS_ENABLE=0 with more than 2 ranks: the twin cannot keep the model from choosing nvls");
  CHECK(reason(Json::object(), record("all_reduce", "in_place", 1_KiB)) == "no twin for collective variant 'in_place'");
  CHECK(reason(Json::object(), record("reduce", "graph", 1_KiB)) == "no twin for collective test 'reduce'");
  // NCCL_ALGO forces the algorithm, as NCCL's names are spelled.
  const auto tree = make_twin(h200x2({{"NCCL_ALGO", "Tree"}}), record("all_reduce", "graph", 1_KiB), 2, models);
  REQUIRE(std::holds_alternative<Twin>(tree));
  CHECK(collective_of(std::get<Twin>(tree), 0).first.algorithm == Algorithm::tree);
}

TEST_CASE("collective fit: calibrate recovers the parameters that generated the records") {
  // Records written with the model's own lone-collective time on the platform calibrate() assumes (hgx h200 x2), with
  // known protocol latencies, efficiencies and channel ramps and per-kind relative rates.
  auto doc = ConfigDocument::load_string("topology: {type: hgx, gpu: h200, gpus: 2}\n", "t.yaml");
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  const Fabric fabric = topologies.create(doc->root().child("topology"))->build();
  const auto defaults = snsim::models::testing::load();
  const auto cost = fabric.cost(fabric.gpus()[0], fabric.gpus()[1]);
  const models::CollectivePlatform platform{cost.bottleneck, defaults.copy->efficiency(models::CopyEngine::sm),
                                            cost.latency, models::switch_links(fabric, fabric.gpus()[0]),
                                            models::switch_reduction(fabric)};
  models::CollectiveModel truth = *defaults.collective;
  // Channel ramps that end (at 18 channels) below the sizes that give the rates; LL's threshold doubles on 2 ranks.
  truth.protocols[0] = {0.4, BytesPerSecond{0}, Seconds{4e-6}, Seconds{0.5e-6}, 8_KiB};
  truth.protocols[1] = {0.7, BytesPerSecond{0}, Seconds{8e-6}, Seconds{1.3e-6}, 16_KiB};
  truth.protocols[2] = {0.8, BytesPerSecond{0}, Seconds{7e-6}, Seconds{4e-6}, 64_KiB};
  truth.relative_rate = {1.0, 0.8, 0.85, 0.9, 1.2};  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast
  truth.direct = models::Latencies{Seconds{5e-6}, Seconds{0}};  // all_to_all's own fixed cost, in one step
  // Launched from a stream, a call costs the GPU 3.1 us more than from a graph, and calls back to back run no faster
  // than the host's 10 us per call (all_to_all: + 0.4 us per send and recv): the small sizes are host bound.
  truth.stream_launch = truth.graph_launch + Seconds{3.1e-6};
  truth.host_call = Seconds{10e-6};
  truth.host_p2p_call = Seconds{0.4e-6};

  std::vector<Trace> traces;
  for (const std::string proto : {"LL", "LL128", "Simple"}) {
    Trace t = h200x2({{"NCCL_NVLS_ENABLE", "0"}, {"NCCL_PROTO", proto}});
    t.source = proto + ".jsonl";
    for (const std::string test : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"})
      for (const std::string variant : {"out_of_place", "graph"})
        for (std::uint64_t bytes = 8; bytes <= (1ull << 30); bytes *= 2) {
          const auto kind = *models::collective_kind(test);
          const bool p2p = kind == CollectiveKind::all_to_all;
          const models::CollectiveRequest request{
              kind,
              Bytes{bytes},
              2,
              kind == CollectiveKind::all_reduce ? std::optional{Algorithm::ring} : std::nullopt,
              p2p ? std::nullopt : models::protocol(proto),
              {},
              variant == "graph" ? models::Launch::graph : models::Launch::stream};
          const double t_lone = truth.predict(truth.plan(request, platform), platform).count();
          const double host = variant == "graph" ? 0 : truth.host_cost(kind, 2).count();
          t.records.push_back(record(test, variant, Bytes{bytes}, std::max(t_lone, host)));
        }
    traces.push_back(std::move(t));
  }
  const auto calibration = calibrate(traces);
  auto params = ConfigDocument::load_string(calibration.to_yaml("test"), "p.yaml");
  auto overlay = ConfigDocument::load_string("{}", "<t>");
  overlay->overlay(*params, "models");
  const auto fitted = models::Models::load(overlay->root().section("models"));
  const auto& m = *fitted.collective;
  // Times are written with 4 significant digits.
  for (std::size_t p = 0; p < 3; ++p) {
    CAPTURE(p);
    CHECK(m.protocols[p].efficiency == doctest::Approx(truth.protocols[p].efficiency).epsilon(1e-4));
    CHECK(m.protocols[p].base_latency.count() ==
          doctest::Approx(truth.protocols[p].base_latency.count()).epsilon(1e-3));
    CHECK(m.protocols[p].step_latency.count() ==
          doctest::Approx(truth.protocols[p].step_latency.count()).epsilon(1e-3));
    CHECK(m.protocols[p].max_bandwidth.count() == 0);
    CHECK(m.protocols[p].channel_bytes == truth.protocols[p].channel_bytes);
  }
  CHECK(m.stream_launch.count() == doctest::Approx(truth.stream_launch.count()).epsilon(1e-3));
  CHECK(m.host_call.count() == doctest::Approx(10e-6).epsilon(1e-3));
  CHECK(m.host_p2p_call.count() == doctest::Approx(0.4e-6).epsilon(1e-3));
  REQUIRE(m.direct);
  CHECK(m.direct->base_latency.count() == doctest::Approx(5e-6).epsilon(1e-3));
  CHECK(m.direct->step_latency.count() == 0);
  for (std::size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    CHECK(m.relative_rate[k] == doctest::Approx(truth.relative_rate[k]).epsilon(1e-4));
  }
}
