// Planning a collective on 1,024-16,384 ranks (8 GPUs per node): NCCL's graphs for the machine, then the algorithm,
// protocol and channel pick for one size, and a sweep of 8 B-16 GiB (32 sizes) as a collective sweep plans it.
#include <benchmark/benchmark.h>

#include "models/nccl_tuning.hpp"

namespace {

using namespace snsim::models::nccl;

void ranks(benchmark::internal::Benchmark* b) {
  b->ArgName("ranks")->Arg(1024)->Arg(4096)->Arg(16384);
}

void BM_NcclPlanOne(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)) / 8;
  for (auto _ : state) {
    const auto system = derive(Machine{.arch = Arch::hopper, .nodes = nodes, .gpus_per_node = 8});
    benchmark::DoNotOptimize(choose(system, Func::all_reduce, 64.0 * 1024 * 1024));
  }
}
BENCHMARK(BM_NcclPlanOne)->Apply(ranks);

void BM_NcclPlanSweep(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)) / 8;
  for (auto _ : state) {
    const auto system = derive(Machine{.arch = Arch::hopper, .nodes = nodes, .gpus_per_node = 8});
    for (double bytes = 8; bytes <= 16.0 * (1ull << 30); bytes *= 2)
      benchmark::DoNotOptimize(choose(system, Func::all_reduce, bytes));
  }
}
BENCHMARK(BM_NcclPlanSweep)->Apply(ranks);

}  // namespace
