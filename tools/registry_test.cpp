// Descriptions and validation share one source: every plugin documents exactly the keys it reads.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "models/models.hpp"
#include "topologies/register.hpp"
#include "workloads/workload.hpp"

using namespace snsim;

namespace {
template <class Entry>
std::set<std::string> documented(const Entry& e) {
  std::set<std::string> names;
  for (const auto& p : e.params) names.insert(p.name);
  return names;
}

/// Builds `entry` from `yaml` (its parameters) and returns the keys it asked for.
template <class Registry, class... Context>
std::set<std::string> asked(const Registry& registry, const std::string& name, const std::string& yaml,
                            const Context&... context) {
  auto doc = ConfigDocument::load_string("p: " + yaml, "t.yaml");
  (void)registry.create(name, doc->root().child("p"), context...);
  auto keys = doc->keys_asked("p");
  keys.erase("type");
  return keys;
}
}  // namespace

TEST_CASE("registry: topologies and models document exactly the keys they read") {
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  // Topologies that cannot be built from no parameters at all get a small example.
  const std::map<std::string, std::string> examples{
      {"file", "{devices: [{name: g0, kind: gpu}], links: []}"},
      {"nvidia_smi", "{text: \"GPU0 GPU1\\nGPU0 X NV18\\nGPU1 NV18 X\\n\"}"}};
  for (const auto& e : topologies.entries()) {
    CAPTURE(e.name);
    CHECK(asked(topologies, e.name, examples.contains(e.name) ? examples.at(e.name) : "{}") == documented(e));
  }
  Registry<models::Model> models("model");
  models::register_models(models);
  for (const auto& e : models.entries()) {
    CAPTURE(e.name);
    if (e.name == "slow") {  // a list: its documented keys are those of one element
      auto doc = ConfigDocument::load_string("p: [{gpu: 0}]", "t.yaml");
      (void)models.create(e.name, doc->root().child("p"));
      CHECK(doc->keys_asked("p[0]") == documented(e));
      continue;
    }
    CHECK(asked(models, e.name, "{}") == documented(e));
  }
}

TEST_CASE("registry: workloads document the keys they read") {
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  auto doc = ConfigDocument::load_string("{type: hgx}", "t.yaml");
  const Fabric fabric = topologies.create(doc->root())->build();
  workloads::WorkloadRegistry workloads("workload");
  workloads::register_workloads(workloads);
  const std::map<std::string, std::string> examples{
      {"program", "{ranks: all, ops: [{barrier: {}}]}"},
      {"p2p_sweep", "{pairs: all, engine: ce, sizes: {from: 4B, to: 8B, factor: 2}}"},
      {"collective_sweep",
       "{ops: all_reduce, ranks: all, algorithm: ring, protocol: LL, channels: 4, launch: graph, sizes: {from: 8B, "
       "to: 16B, factor: 2}}"},
      {"training",
       "{schedule: pgas, steps: 1, model: {layers: 2, hidden: 1024, heads: 8, ffn_hidden: 4096, sequence: 512, "
       "vocabulary: 1000, micro_batch: 1, micro_batches: 2, dtype: bf16, attention: flash, moe: {experts: 8, top_k: "
       "2, capacity_factor: 1.25, skew: 1}}, parallel: {tp: 1, pp: 1, dp: 8, ep: 2, pipeline: 1f1b, "
       "sequence_parallel: false, zero: false, bucket: 25MiB}, pgas: {blocks: 32, threshold: 1.0, resync_every: 4}}"}};
  for (const auto& e : workloads.entries()) {
    CAPTURE(e.name);
    REQUIRE(examples.contains(e.name));
    auto keys = asked(workloads, e.name, examples.at(e.name), fabric);
    // Op parameters live below `ops` and are documented in the `ops` entry.
    std::erase_if(keys, [](const std::string& k) { return k.starts_with("ops."); });
    CHECK(keys == documented(e));
  }
}
