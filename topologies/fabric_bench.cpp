// Benchmarks of building fabrics and querying them: what `snsim topo` and the platform builder do before a run.
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "topologies/register.hpp"

namespace {

snsim::Fabric build(const std::string& type, int gpus) {
  snsim::Registry<snsim::Topology> registry("topology");
  snsim::topologies::register_topologies(registry);
  auto doc = snsim::ConfigDocument::load_string(fmt::format("topology: {{type: {}, gpus: {}}}", type, gpus), "b.yaml");
  auto fabric = registry.create(doc->root().child("topology"))->build();
  doc->reject_unknown_keys();
  return fabric;
}

/// Each benchmark runs for every topology type (BENCHMARK_CAPTURE) and these GPU counts (the argument).
void gpu_counts(benchmark::internal::Benchmark* b) {
  b->ArgName("gpus")->Arg(2)->Arg(4)->Arg(8);
}

void BM_FabricBuild(benchmark::State& state, const char* type) {
  const int gpus = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(build(type, gpus));
}
BENCHMARK_CAPTURE(BM_FabricBuild, hgx, "hgx")->Apply(gpu_counts);
BENCHMARK_CAPTURE(BM_FabricBuild, pcie, "pcie")->Apply(gpu_counts);

/// Every ordered GPU pair's ECMP route, plus each GPU to the host and back: what the platform builder asks for.
void BM_FabricAllRoutes(benchmark::State& state, const char* type) {
  const snsim::Fabric f = build(type, static_cast<int>(state.range(0)));
  std::size_t routes = 0;
  for (auto _ : state) {
    routes = 0;
    for (auto a : f.gpus()) {
      for (auto b : f.gpus())
        if (a != b) {
          auto r = f.route(a, b);
          benchmark::DoNotOptimize(r);
          routes += r.has_value();
        }
      if (auto host = f.host()) {
        benchmark::DoNotOptimize(f.route(a, *host));
        benchmark::DoNotOptimize(f.route(*host, a));
        routes += 2;
      }
    }
  }
  state.counters["routes"] = static_cast<double>(routes);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * routes));
}
BENCHMARK_CAPTURE(BM_FabricAllRoutes, hgx, "hgx")->Apply(gpu_counts)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FabricAllRoutes, pcie, "pcie")->Apply(gpu_counts)->Unit(benchmark::kMicrosecond);

void BM_FabricBisection(benchmark::State& state, const char* type) {
  const snsim::Fabric f = build(type, static_cast<int>(state.range(0)));
  double bandwidth = 0;
  for (auto _ : state) {
    bandwidth = f.bisection_bandwidth().count();
    benchmark::DoNotOptimize(bandwidth);
  }
  state.counters["GBps"] = bandwidth / 1e9;
}
BENCHMARK_CAPTURE(BM_FabricBisection, hgx, "hgx")->Apply(gpu_counts);
BENCHMARK_CAPTURE(BM_FabricBisection, pcie, "pcie")->Apply(gpu_counts);

/// The routes a collective sweep across a 1,024-node HGX superpod asks for, found by a fresh Router each time as the
/// platform finds them on first use: each GPU to its two neighbours in the node (NVLink) and to the GPU of its rail
/// in the next node, in the node 32 on (another leaf, through the spines) and back.
void BM_SuperpodRoutes(benchmark::State& state) {
  snsim::Registry<snsim::Topology> registry("topology");
  snsim::topologies::register_topologies(registry);
  auto doc = snsim::ConfigDocument::load_string(
      fmt::format("topology: {{type: superpod, gpu: h100, nodes: {}}}", state.range(0)), "b.yaml");
  const snsim::Fabric f = registry.create(doc->root().child("topology"))->build();
  const auto& gpus = f.gpus();
  const std::size_t n = gpus.size();
  std::size_t hops = 0;
  for (auto _ : state) {
    snsim::Router router(f);
    hops = 0;
    for (std::size_t g = 0; g < n; ++g)
      for (std::size_t peer : {g / 8 * 8 + (g + 1) % 8, g / 8 * 8 + (g + 7) % 8, (g + 8) % n, (g + 256) % n}) {
        const auto r = router.route(gpus[g], gpus[peer]);
        hops += r->hops.size();
        benchmark::DoNotOptimize(router.route(gpus[peer], gpus[g]));
      }
  }
  state.counters["hops"] = static_cast<double>(hops);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n * 8));
}
BENCHMARK(BM_SuperpodRoutes)->ArgName("nodes")->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
