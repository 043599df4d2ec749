#include "sim/config.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace snsim;
using namespace snsim::literals;

namespace {
std::shared_ptr<ConfigDocument> doc(const std::string& text) {
  return ConfigDocument::load_string(text, "t.yaml");
}
}  // namespace

TEST_CASE("config: values are read with units and defaults") {
  auto d = doc("topology:\n  gpus: 4\n  nvlink_bandwidth: 450GBps\n");
  auto topo = d->root().child("topology");
  CHECK(topo.required<int>("gpus") == 4);
  CHECK(topo.required<BytesPerSecond>("nvlink_bandwidth") == 450_GBps);
  CHECK(topo.optional<Seconds>("latency", Seconds{1e-6}) == Seconds{1e-6});
  CHECK_NOTHROW(d->reject_unknown_keys());
  CHECK(d->effective()["topology"]["latency"] == "1 us");
  CHECK(d->effective()["topology"]["nvlink_bandwidth"] == "450GBps");
}

TEST_CASE("config: errors name file, line, column and key path") {
  SUBCASE("missing unit") {
    auto d = doc("topology:\n  gpus: 4\n  nvlink_bandwidth: 450\n");
    CHECK_THROWS_WITH_AS(d->root().child("topology").required<BytesPerSecond>("nvlink_bandwidth"),
                         "t.yaml:3:21: topology.nvlink_bandwidth: cannot parse '450' as a bandwidth: missing unit "
                         "(try '450GBps' or '450Gbps')",
                         InputError);
  }
  SUBCASE("missing key points at the parent map") {
    auto d = doc("topology:\n  gpus: 4\n");
    CHECK_THROWS_WITH_AS(d->root().child("topology").required<std::string>("type"),
                         "t.yaml:2:3: topology.type: required key is missing", InputError);
  }
  SUBCASE("not an integer") {
    auto d = doc("gpus: 2.5\n");
    CHECK_THROWS_WITH_AS(d->root().required<int>("gpus"), "t.yaml:1:7: gpus: expected an integer, found '2.5'",
                         InputError);
  }
  SUBCASE("a map where a value belongs") {
    auto d = doc("gpus: {a: 1}\n");
    CHECK_THROWS_WITH_AS(d->root().required<int>("gpus"), "t.yaml:1:7: gpus: expected a single value, found a map",
                         InputError);
  }
  SUBCASE("range") {
    auto d = doc("gpus: 9\n");
    auto root = d->root();
    CHECK_THROWS_WITH_AS(check_between(root, "gpus", root.required<int>("gpus"), 2, 8),
                         "t.yaml:1:7: gpus: must be between 2 and 8, got 9", InputError);
  }
  SUBCASE("malformed YAML names the file") {
    CHECK_THROWS_WITH_AS(doc("topology: {gpus: 8\nname: x\n"), "t.yaml:2:5: invalid YAML: end of map flow not found",
                         InputError);
  }
  SUBCASE("a key must be a name, not a map, a list or nothing") {
    CHECK_THROWS_WITH_AS(doc("models:\n  {a: 1}: 2\n"), "t.yaml:2:3: a key must be a name, found a map", InputError);
    CHECK_THROWS_WITH_AS(doc("models:\n  ? [x]\n  : 2\n"), "t.yaml:2:5: a key must be a name, found a list",
                         InputError);
    CHECK_THROWS_WITH_AS(doc("~: 1\n"), "t.yaml:1:1: a key must be a name, found nothing", InputError);
  }
  SUBCASE("YAML nested past the parser's limit says so (yaml-cpp's own message is \"bad file\")") {
    CHECK_THROWS_WITH_AS(doc("a: " + std::string(600, '[') + std::string(600, ']') + "\n"),
                         "t.yaml:1:1204: invalid YAML: nested deeper than 500 levels", InputError);
  }
}

TEST_CASE("config: unknown keys are errors with a suggestion") {
  auto d = doc("topology:\n  type: hgx\n  gpu: 8\n");
  auto topo = d->root().child("topology");
  (void)topo.required<std::string>("type");
  (void)topo.optional<int>("gpus", 8);
  CHECK_THROWS_WITH_AS(d->reject_unknown_keys(),
                       "t.yaml:3:3: topology.gpu: unknown key (did you mean 'gpus'?); known keys: gpus, type",
                       InputError);
}

TEST_CASE("config: duplicate keys are errors") {
  auto d = doc("seed: 1\nseed: 2\n");
  (void)d->root().optional<int>("seed", 0);
  CHECK_THROWS_WITH_AS(d->reject_unknown_keys(), "t.yaml:2:1: seed: duplicate key", InputError);
}

TEST_CASE("config: --set overrides a value and errors name the option") {
  auto d = doc("topology:\n  gpus: 4\n");
  d->set("topology.gpus=9");
  d->set("seed=7");
  auto root = d->root();
  CHECK(root.required<int>("seed") == 7);
  auto topo = root.child("topology");
  CHECK_THROWS_WITH_AS(check_between(topo, "gpus", topo.required<int>("gpus"), 2, 8),
                       "--set topology.gpus=9: topology.gpus: must be between 2 and 8, got 9", InputError);
  CHECK_THROWS_WITH_AS(d->set("nonsense"), "--set: expected key.path=value, found 'nonsense'", InputError);
  SUBCASE("a value gets a document's checks: keys that are names, aliases without cycles, bounded depth") {
    CHECK_THROWS_WITH_AS(d->set("models={[x]: 1}"), "--set models={[x]: 1}:1:2: a key must be a name, found a list",
                         InputError);
    CHECK_THROWS_WITH_AS(d->set("name=&a [*a]"),
                         "--set name=&a [*a]:1:1: an alias refers to the node that contains it (a cycle)", InputError);
    CHECK_THROWS_WITH_AS(d->set("name=" + std::string(600, '[') + std::string(600, ']')),
                         doctest::Contains("invalid YAML value: nested deeper than 500 levels"), InputError);
    CHECK_THROWS_WITH_AS(d->set("name={a: 1"), doctest::Contains("invalid YAML value: end of map flow not found"),
                         InputError);
  }
}

TEST_CASE("config: list elements carry their index in the path") {
  auto d = doc("workloads:\n  - {bytes: 1MiB}\n  - {bytes: 12}\n");
  auto items = d->root().child("workloads").elements();
  REQUIRE(items.size() == 2);
  CHECK(items[0].required<Bytes>("bytes") == 1_MiB);
  CHECK_THROWS_WITH_AS(items[1].required<Bytes>("bytes"),
                       "t.yaml:3:13: workloads[1].bytes: cannot parse '12' as a size: missing unit (try '12B' or "
                       "'12MiB')",
                       InputError);
}

TEST_CASE("config: an overlay fills what the document leaves out, and its errors name the overlay file") {
  auto d = doc("models:\n  copy: {ce: {efficiency: 0.5}}\n");
  auto params = ConfigDocument::load_string(
      "models:\n  copy:\n    ce: {efficiency: 0.9, setup: 1us}\n    sm: {setup: 2}\n  stream: {event_wait: 4us}\n",
      "p.yaml");
  d->overlay(*params, "models");
  auto copy = d->root().child("models").child("copy");
  CHECK(copy.child("ce").required<double>("efficiency") == 0.5);  // the scenario wins
  CHECK(copy.child("ce").required<Seconds>("setup") == Seconds{1e-6});
  CHECK(d->root().child("models").child("stream").required<Seconds>("event_wait") == Seconds{4e-6});
  CHECK_THROWS_WITH(copy.child("sm").required<Seconds>("setup"),
                    "p.yaml:4:17: models.copy.sm.setup: cannot parse '2' as a time: missing unit (try '2us' or '2s')");
}

TEST_CASE("config: a distribution the document gives replaces the overlay's whole, other maps still merge") {
  auto d =
      doc("models:\n"
          "  jitter:\n"
          "    latency: {dist: constant, value: 1}\n"
          "    bandwidth: {sigma: 0.01}\n");
  auto params = ConfigDocument::load_string(
      "models:\n"
      "  jitter:\n"
      "    latency: {dist: empirical, samples: [0.9, 1.1]}\n"
      "    bandwidth: {dist: lognormal, sigma: 0.004}\n"
      "    compute: {dist: normal, sigma: 0.002}\n",
      "p.yaml");
  d->overlay(*params, "models");
  auto jitter = d->root().child("models").child("jitter");
  auto latency = jitter.child("latency");
  CHECK(latency.required<std::string>("dist") == "constant");
  CHECK(latency.required<double>("value") == 1);
  CHECK_FALSE(latency.has("samples"));  // used to be copied in: "unknown key; known keys: dist, value"
  // A map without `dist:` is a partial setting: the overlay's distribution fills in around it.
  CHECK(jitter.child("bandwidth").required<std::string>("dist") == "lognormal");
  CHECK(jitter.child("bandwidth").required<double>("sigma") == 0.01);
  CHECK(jitter.child("compute").required<std::string>("dist") == "normal");  // absent: the overlay's, as before
}

TEST_CASE("config: text that is not UTF-8 is refused where it is, in a document and in a --set value") {
  CHECK_THROWS_WITH_AS(doc("name: ok\nother: caf\xE9\n"), "t.yaml:2:11: not UTF-8 text: byte 0xE9", InputError);
  auto d = doc("name: ok\n");
  CHECK_THROWS_WITH_AS(d->set("name=caf\xE9"), "--set:1:9: not UTF-8 text: byte 0xE9", InputError);
}

TEST_CASE("config: aliases are counted as expanded, without expanding them: an alias bomb is refused at once") {
  // 2^10 leaves: fine, and counted right (aliases of aliases of a 3-node map).
  std::string text = "x0: &x0 {a: 1}\n";
  for (int k = 1; k <= 10; ++k) text += fmt::format("x{0}: &x{0} [*x{1}, *x{1}]\n", k, k - 1);
  CHECK_NOTHROW(doc(text));
  // 2^30 leaves from 31 lines: refused at the first node beyond the cap, in linear time.
  for (int k = 11; k <= 30; ++k) text += fmt::format("x{0}: &x{0} [*x{1}, *x{1}]\n", k, k - 1);
  CHECK_THROWS_WITH_AS(doc(text),
                       "t.yaml:21:1: more than 4194304 nodes once the aliases in here are expanded (aliases of "
                       "aliases?); a long program is written with `repeat`",
                       InputError);
}

TEST_CASE("config: every key of a map that takes no keys is unknown") {
  auto d = doc("barrier: {ranks: 1}\nother: {}\n");
  CHECK_FALSE(d->root().child("barrier").has(""));  // an op without parameters opens its map, asking for no key
  CHECK_FALSE(d->root().child("other").has(""));
  CHECK_THROWS_WITH_AS(d->reject_unknown_keys(), "t.yaml:1:11: barrier.ranks: unknown key; 'barrier' takes no keys",
                       InputError);
}
