// Descriptions and validation share one source: every plugin documents exactly the keys it reads, and the
// documented defaults are the values runs use.
#include <doctest/doctest.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "models/models.hpp"
#include "sim/error.hpp"
#include "tools/test_support.hpp"
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
       "{schedule: pgas, steps: 1, model: {preset: llama3.1-8b, layers: 2, hidden: 1024, heads: 8, kv_heads: 8, "
       "head_dim: 128, ffn_hidden: 4096, mlp: swiglu, glu: fused, causal: true, norm: rmsnorm, rotary: true, rope: "
       "fused, "
       "autocast: false, "
       "tied_embeddings: false, dropout: false, sequence: 512, vocabulary: 1000, micro_batch: 1, micro_batches: 2, "
       "dtype: bf16, attention: flash, sliding_window: {tokens: 256, global_every: 2}, mla: "
       "{q_lora_rank: 64, kv_lora_rank: 32, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16}, moe: "
       "{experts: 8, top_k: 2, ffn_hidden: 512, shared_experts: 1, dense_layers: 1, every: 1, capacity_factor: 1.25, "
       "skew: 1}}, parallel: {tp: 1, pp: 1, dp: 8, ep: 2, pipeline: 1f1b, sequence_parallel: false, recompute: none, "
       "zero: false, bucket: 25MiB}, memory: {framework_overhead: 1GiB, communicator_buffers: 128MiB, "
       "allow_oversubscribe: false}, pgas: {blocks: 32, threshold: 1.0, resync_every: 4}}"},
      {"trace",
       "{paths: [validation/traces/h200-replay/gpt-h2048-l2-b2-s2048.kineto.json.gz], cost: recorded, ranks: 2, "
       "source_gpu: h200}"}};
  for (const auto& e : workloads.entries()) {
    CAPTURE(e.name);
    REQUIRE(examples.contains(e.name));
    auto keys = asked(workloads, e.name, examples.at(e.name), fabric);
    // Op parameters live below `ops` and are documented in the `ops` entry.
    std::erase_if(keys, [](const std::string& k) { return k.starts_with("ops."); });
    CHECK(keys == documented(e));
  }
}

// ---- one declaration per parameter: the docs, the reads and the reference agree -------------------------------

namespace {

/// The parameter tables of the models, by model name (what models.<name> reads).
struct ModelTable {
  std::string name;
  std::vector<std::pair<std::string, std::string>> recorded_defaults;
  std::vector<std::string> not_at_default;  // of the models loaded from an empty `models:`
};

std::vector<ModelTable> model_tables(const models::Models& m) {
  using namespace models;
  return {
      {"copy", copy_params().recorded_defaults(), copy_params().not_at_default(*m.copy)},
      {"compute", compute_params().recorded_defaults(), compute_params().not_at_default(*m.compute)},
      {"collective", collective_params().recorded_defaults(), collective_params().not_at_default(*m.collective)},
      {"stream", stream_params().recorded_defaults(), stream_params().not_at_default(*m.stream)},
      {"jitter", jitter_params().recorded_defaults(), jitter_params().not_at_default(*m.jitter)},
      {"variation", variation_params().recorded_defaults(), variation_params().not_at_default(*m.variation)},
      {"pgas", pgas_params().recorded_defaults(), pgas_params().not_at_default(*m.pgas)},
      {"uvm", uvm_params().recorded_defaults(), uvm_params().not_at_default(*m.uvm)},
      {"fabric", fabric_params().recorded_defaults(), fabric_params().not_at_default(*m.fabric)},
  };
}

/// The value at dotted `key` of a JSON object, or null.
nlohmann::json at_key(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* at = &object;
  std::size_t start = 0;
  for (;;) {
    const auto dot = key.find('.', start);
    const auto part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(part)) return nullptr;
    at = &(*at)[part];
    if (dot == std::string::npos) return *at;
    start = dot + 1;
  }
}

/// Whether two texts of a value mean the same: as a quantity, a number (to the 6 digits docs print) or verbatim.
bool same_value(const std::string& documented, const std::string& used) {
  auto close = [](double a, double b) {
    return a == b || std::abs(a - b) <= 1e-5 * std::max(std::abs(a), std::abs(b));
  };
  auto as = [&](auto parse) -> std::optional<bool> {
    try {
      return close(parse(documented).count(), parse(used).count());
    } catch (const UnitError&) {
      return std::nullopt;
    }
  };
  for (auto parsed : {as([](std::string_view t) { return Seconds{parse_seconds(t)}; }),
                      as([](std::string_view t) { return BytesPerSecond{parse_bandwidth(t)}; }),
                      as([](std::string_view t) { return Seconds{static_cast<double>(parse_bytes(t).count())}; })})
    if (parsed) return *parsed;
  double a = 0, b = 0;
  auto number = [](const std::string& t, double& v) {
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc{} && end == t.data() + t.size();
  };
  if (number(documented, a) && number(used, b)) return close(a, b);
  return documented == used;
}

}  // namespace

TEST_CASE("registry: the models of an empty models: hold every declared default") {
  auto doc = ConfigDocument::load_string("models: {}", "t.yaml");
  const auto m = models::Models::load(doc->root().section("models"));
  const auto config = doc->effective();
  std::size_t rows = 0;
  for (const auto& t : model_tables(m)) {
    CAPTURE(t.name);
    CHECK(t.not_at_default.empty());
    for (const auto& entry : t.recorded_defaults) {
      const auto& key = entry.first;
      const auto& text = entry.second;
      CAPTURE(key);
      CHECK(at_key(config, fmt::format("models.{}.{}", t.name, key)) == text);
      ++rows;
    }
  }
  CHECK(rows > 100);  // every defaulted model parameter was compared, not a few
}

TEST_CASE("registry: a report's config section shows every model and topology default as documented") {
  // A run without `models:` (no parameter set): its report echoes each default it used.
  snsim::testing::TempDir dir;
  dir.write("s.yaml",
            "name: defaults\n"
            "topology: {type: hgx}\n"
            "workloads: [{type: program, ranks: all, ops: [{barrier: {}}]}]\n");
  const auto r = snsim::testing::run_snsim(dir, {"run", "s.yaml", "--quiet", "--out", "out"});
  REQUIRE(r.code == 0);
  const auto config = nlohmann::json::parse(snsim::testing::read_file(dir.path() / "out" / "report.json"))["config"];
  Registry<models::Model> models("model");
  models::register_models(models);
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  auto doc = ConfigDocument::load_string("models: {}", "t.yaml");
  const auto tables = model_tables(models::Models::load(doc->root().section("models")));
  std::size_t compared = 0;
  // Each documented default against the value the run recorded; keys the docs give no value for (required, unset,
  // a distribution left at none) are not recorded, and the tables say which.
  auto compare = [&](const std::string& prefix, const std::vector<ParamDoc>& docs,
                     const std::vector<std::pair<std::string, std::string>>* recorded) {
    for (const auto& p : docs) {
      CAPTURE(prefix);
      CAPTURE(p.name);
      const auto used = at_key(config, fmt::format("{}.{}", prefix, p.name));
      const bool expected =
          !recorded || std::ranges::any_of(*recorded, [&](const auto& row) { return row.first == p.name; });
      REQUIRE(used.is_string() == expected);
      if (!expected) continue;
      CHECK(same_value(p.default_value, used.get<std::string>()));
      if (recorded) CHECK(std::ranges::find(*recorded, std::pair{p.name, used.get<std::string>()}) != recorded->end());
      ++compared;
    }
  };
  for (const auto& t : tables) compare("models." + t.name, models.find(t.name)->params, &t.recorded_defaults);
  compare("topology", topologies.find("hgx")->params, nullptr);
  CHECK(compared > 100);
}

TEST_CASE("registry: docs/reference/parameters.md is what snsim info --markdown writes") {
  snsim::testing::TempDir dir;
  const auto r = snsim::testing::run_snsim(dir, {"info", "--markdown"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto committed =
      snsim::testing::read_file(std::filesystem::path(SNSIM_SOURCE_DIR) / "docs/reference/parameters.md");
  // Stale: regenerate with `build/tools/snsim info --markdown > docs/reference/parameters.md`.
  CHECK(committed == r.out);
  // Every declared model parameter has its row, with its default.
  CHECK(r.out.find("| `models.copy.ce.efficiency` | fraction | `0.83` | 0.01 to 1 |") != std::string::npos);
  CHECK(r.out.find("| `models.uvm.access_counters.granularity` | 64KiB\\|2MiB\\|16MiB\\|16GiB | `2MiB` |  |") !=
        std::string::npos);
}

TEST_CASE("registry: a declared range check names the file, line, key, what was found and what is expected") {
  auto load = [](const std::string& yaml) {
    auto doc = ConfigDocument::load_string(yaml, "t.yaml");
    (void)models::Models::load(doc->root().section("models"));
  };
  CHECK_THROWS_WITH_AS(load("models:\n  copy: {ce: {efficiency: 1.5}}\n"),
                       "t.yaml:2:27: models.copy.ce.efficiency: must be between 0.01 and 1, got 1.5", InputError);
  CHECK_THROWS_WITH_AS(load("models:\n  pgas: {thread: {issue: 0ns}}\n"),
                       "t.yaml:2:26: models.pgas.thread.issue: must be > 0, got 0 s", InputError);
  CHECK_THROWS_WITH_AS(load("models:\n  stream: {event_wait: -1us}\n"),
                       "t.yaml:2:24: models.stream.event_wait: cannot parse '-1us' as a time: cannot be negative",
                       InputError);
  CHECK_THROWS_WITH_AS(load("models:\n  uvm: {access_counters: {granularity: 1MiB}}\n"),
                       "t.yaml:2:40: models.uvm.access_counters.granularity: expected 64KiB, 2MiB, 16MiB or 16GiB, "
                       "found 1 MiB",
                       InputError);
  CHECK_THROWS_WITH_AS(load("models:\n  fabric: {path: quick}\n"),
                       "t.yaml:2:18: models.fabric.path: expected auto, exact or fast, found 'quick'", InputError);
  CHECK_THROWS_WITH_AS(load("models:\n  slow: [{compute: 2}]\n"),
                       "t.yaml:2:10: models.slow[0].gpu: required key is missing", InputError);
}
