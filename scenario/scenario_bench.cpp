// Benchmarks of Scenario::load: parse, build the fabric and models, expand every workload into per-rank programs and
// check them (everything `snsim run` does before Engine::run). In-process work only: a simulation runs once per
// process (SimGrid 3.32), so whole runs are timed by tools/bench/bench_runs.sh instead.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "scenario/scenario.hpp"

namespace {

std::string read_example(const std::string& name) {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "examples" / name;
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A program workload with `ops` explicit ops for every rank: compute, a copy to the next GPU, an all-reduce.
std::string many_ops_scenario(int ops) {
  std::string text =
      "name: many-ops\nseed: 1\ntopology: {type: hgx, gpu: h200, gpus: 8}\nworkloads:\n  - type: program\n"
      "    ranks: all\n    ops:\n";
  for (int i = 0; i < ops; ++i) {
    switch (i % 3) {
      case 0:
        text += "      - compute: {flops: 2.2TFLOP, bytes: 512MiB}\n";
        break;
      case 1:
        text += fmt::format("      - copy: {{to: next, bytes: {}KiB, engine: sm}}\n", 4 << (i % 8));
        break;
      default:
        text += fmt::format("      - collective: {{op: all_reduce, bytes: {}MiB}}\n", 1 << (i % 8));
        break;
    }
  }
  return text;
}

void load(benchmark::State& state, const std::string& text) {
  if (text.empty()) {
    state.SkipWithError("cannot read the scenario");
    return;
  }
  for (auto _ : state) {
    auto scenario = snsim::workloads::Scenario::load(snsim::ConfigDocument::load_string(text, "bench.yaml"));
    benchmark::DoNotOptimize(scenario);
  }
}

void BM_ScenarioLoadExample(benchmark::State& state, const char* file) {
  load(state, read_example(file));
}
BENCHMARK_CAPTURE(BM_ScenarioLoadExample, hgx_h200_default, "hgx_h200_default.yaml")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScenarioLoadExample, hgx_step, "hgx_step.yaml")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScenarioLoadExample, pcie_baseline, "pcie_baseline.yaml")->Unit(benchmark::kMicrosecond);

void BM_ScenarioLoadManyOps(benchmark::State& state) {
  load(state, many_ops_scenario(static_cast<int>(state.range(0))));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ScenarioLoadManyOps)->RangeMultiplier(10)->Range(10, 10'000)->Unit(benchmark::kMicrosecond);

/// Expanding the workloads into programs again (Scenario::run does it once more before launching the actors).
void BM_ScenarioPrograms(benchmark::State& state) {
  const auto scenario =
      snsim::workloads::Scenario::load(snsim::ConfigDocument::load_string(read_example("hgx_h200_default.yaml"), "b"));
  std::size_t ops = 0;
  for (auto _ : state) {
    const auto programs = scenario.programs();
    ops = 0;
    for (const auto& p : programs) ops += p.ops.size();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_ScenarioPrograms)->Unit(benchmark::kMicrosecond);

}  // namespace
