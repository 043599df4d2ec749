// Benchmarks of the config layer alone (sim/ cannot see workloads/, so "validate" here is a generic walk that
// reads every value through ConfigNode, sizes as Bytes, and then rejects unknown keys, the way plugins do).
// The full Scenario::load of the same files is in scenario/scenario_bench.cpp.
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "sim/config.hpp"
#include "sim/files.hpp"

namespace {

/// The default scenario's text, read from the source tree next to this file.
const std::string& default_scenario_text() {
  static const std::string text = [] {
    const auto path = std::filesystem::path(__FILE__).parent_path().parent_path() / "workloads" / "examples" /
                      "hgx_h200_default.yaml";
    return snsim::read_file(path);
  }();
  return text;
}

/// A program workload with `ops` explicit ops (copies and collectives), as a user or a generator would write it.
std::string copies_and_collectives_text(int ops) {
  std::string text =
      "name: many-ops\nseed: 1\ntopology: {type: hgx, gpu: h200, gpus: 8}\nworkloads:\n  - type: program\n"
      "    ranks: all\n    ops:\n";
  for (int i = 0; i < ops; ++i)
    text += i % 2 == 0 ? fmt::format("      - copy: {{to: next, bytes: {}KiB, engine: sm}}\n", 4 << (i % 8))
                       : fmt::format("      - collective: {{op: all_reduce, bytes: {}MiB}}\n", 1 << (i % 8));
  return text;
}

/// Reads every value of the tree as a plugin would: keys through lookups (so they become known), scalars as text,
/// and values of size keys as Bytes.
std::size_t walk(const snsim::ConfigNode& node) {
  std::size_t values = 0;
  if (node.is_map()) {
    for (const auto& key : node.keys()) {
      const auto child = node.child(key);
      if (child.is_scalar() && (key == "bytes" || key == "from" || key == "to") && !child.scalar().empty() &&
          child.scalar().back() == 'B') {
        benchmark::DoNotOptimize(child.as<snsim::Bytes>());
        ++values;
      } else {
        values += walk(child);
      }
    }
  } else if (node.is_sequence()) {
    for (const auto& e : node.elements()) values += walk(e);
  } else if (node.is_scalar()) {
    benchmark::DoNotOptimize(node.as<std::string>());
    ++values;
  }
  return values;
}

void parse_and_validate(benchmark::State& state, const std::string& text) {
  std::size_t values = 0;
  for (auto _ : state) {
    auto doc = snsim::ConfigDocument::load_string(text, "bench.yaml");
    values = walk(doc->root());
    doc->reject_unknown_keys();
    benchmark::DoNotOptimize(doc);
  }
  state.counters["values"] = static_cast<double>(values);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_ConfigDefaultScenario(benchmark::State& state) {
  if (default_scenario_text().empty()) {
    state.SkipWithError("cannot read workloads/examples/hgx_h200_default.yaml");
    return;
  }
  parse_and_validate(state, default_scenario_text());
}
BENCHMARK(BM_ConfigDefaultScenario);

void BM_ConfigManyOps(benchmark::State& state) {
  parse_and_validate(state, copies_and_collectives_text(static_cast<int>(state.range(0))));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ConfigManyOps)->RangeMultiplier(10)->Range(10, 10'000)->Unit(benchmark::kMicrosecond);

void BM_ConfigSetOverride(benchmark::State& state) {
  for (auto _ : state) {
    auto doc = snsim::ConfigDocument::load_string(default_scenario_text(), "bench.yaml");
    doc->set("topology.gpus=4");
    doc->set("workloads[1].sizes.to=64MiB");
    benchmark::DoNotOptimize(doc->root().child("topology").required<int>("gpus"));
  }
}
BENCHMARK(BM_ConfigSetOverride);

void BM_ParseQuantities(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(snsim::parse_bytes("1GiB"));
    benchmark::DoNotOptimize(snsim::parse_bytes("64 MiB"));
    benchmark::DoNotOptimize(snsim::parse_bandwidth("450GBps"));
    benchmark::DoNotOptimize(snsim::parse_seconds("1.5us"));
  }
  state.SetItemsProcessed(state.iterations() * 4);
}
BENCHMARK(BM_ParseQuantities);

}  // namespace
