// Collectives as NCCL runs them at 8 GPUs, across nodes and on NVL72: the example scenarios (workloads/examples/
// nccl_*.yaml) pick NCCL's algorithm and reach the published busbw at large sizes, and snsim's time per algorithm stays
// consistent with NCCL's own tuning model (models/nccl_tuning.hpp) at 8, 16, 64 and 512 ranks. Published figures
// (docs/nccl.md 11) and NCCL's model only check: nothing here is fitted.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "models/nccl_tuning.hpp"
#include "scenario/test_support.hpp"
#include "sim/isolated.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::workloads::testing;

namespace {

Scenario example_file(const std::string& name) {
  return Scenario::load(ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/examples/" + name));
}

struct Row {
  std::string algorithm;  // "nvls/Simple/16ch"
  double time_us = 0;
  double busbw = 0;
};

/// The sweep's row for `bytes` in the table of `op` (nccl-tests columns).
Row row(const Report& report, std::string_view op, std::uint64_t bytes) {
  for (const auto& t : report.tables) {
    if (!t.title.starts_with(op) || t.title.find("nccl-tests") == std::string::npos) continue;
    const auto col = [&](std::string_view c) {
      return static_cast<std::size_t>(std::ranges::find(t.columns, c) - t.columns.begin());
    };
    for (const auto& r : t.rows)
      if (r[col("size_B")].get<std::uint64_t>() == bytes)
        return {r[col("algorithm")].get<std::string>(), r[col("time_us")].get<double>(),
                r[col("busbw_GBps")].get<double>()};
  }
  FAIL("no row for ", bytes, " B of ", op);
  return {};
}

bool runs(const Row& r, std::string_view algorithm) {
  return r.algorithm.starts_with(std::string(algorithm) + "/");
}

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

/// A forced all-reduce on `yaml_topology` as snsim runs it, in us.
double forced_us(const std::string& topology, const std::string& algorithm, const std::string& protocol, Bytes bytes,
                 const std::string& params = "h100") {
  const auto s = load(fmt::format(
      "topology: {}\nmodels: {{params: {}}}\nworkloads:\n  - {{type: collective_sweep, ops: all_reduce, algorithm: "
      "{}, protocol: {}, sizes: {{from: {}B, to: {}B}}}}\n",
      topology, params, algorithm, protocol, bytes.count(), bytes.count()));
  // One simulation per process (SimGrid 3.32).
  return std::stod(run_isolated([&] { return std::to_string(row(s.run(), "all_reduce", bytes.count()).time_us); }));
}

}  // namespace

TEST_CASE("nccl scenarios: 8-GPU HGX H100 picks Ring/LL then NVLS and rings for all_gather at the published busbw") {
  const auto report = example_file("nccl_hgx_h100.yaml").run();
  CHECK(runs(row(report, "all_reduce", 4), "ring"));
  CHECK(row(report, "all_reduce", 4).algorithm == "ring/LL/1ch");
  CHECK(runs(row(report, "all_reduce", 64 * MiB), "nvls"));
  const auto large = row(report, "all_reduce", 4 * GiB);
  CHECK(large.algorithm == "nvls/Simple/16ch");
  // Published (docs/nccl.md 11): NVLS all-reduce ~480 GB/s busbw on 8 H100/H200; rings ~370 for the others.
  CHECK(large.busbw == doctest::Approx(480).epsilon(0.10));
  for (auto op : {"all_gather", "reduce_scatter"}) {
    CAPTURE(op);
    const auto r = row(report, op, 4 * GiB);
    CHECK(runs(r, "ring"));
    CHECK(r.busbw == doctest::Approx(370).epsilon(0.10));
  }
}

TEST_CASE("nccl scenarios: 2 HGX nodes on NDR pick Tree then NVLSTree at the published busbw") {
  const auto report = example_file("nccl_superpod_2node.yaml").run();
  CHECK(row(report, "all_reduce", 4).algorithm.starts_with("tree/LL/"));
  CHECK(runs(row(report, "all_reduce", 64 * MiB), "nvls_tree"));
  const auto large = row(report, "all_reduce", 4 * GiB);
  CHECK(large.algorithm == "nvls_tree/Simple/16ch");
  // Published (docs/nccl.md 11): 2 x 8 H100 on IB, default NCCL, 440.6 GB/s at 8 GiB (coreweave/nccl-tests #92).
  CHECK(large.busbw == doctest::Approx(440).epsilon(0.10));
}

TEST_CASE("nccl scenarios: 16 HGX nodes on NDR spread over every rail at the published busbw") {
  const auto report = example_file("nccl_superpod_16node.yaml").run();
  CHECK(runs(row(report, "all_reduce", 4), "tree"));
  const auto large = row(report, "all_reduce", 4 * GiB);
  CHECK((runs(large, "ring") || runs(large, "nvls_tree")));
  // Published (docs/nccl.md 11): multi-node all-reduce without SHARP ~370-380 GB/s, 8 NICs x ~48 GB/s.
  CHECK(large.busbw == doctest::Approx(375).epsilon(0.10));
}

TEST_CASE("nccl scenarios: a GB200 NVL72 rack runs NVLS at the published busbw") {
  const auto report = example_file("nccl_nvl72.yaml").run();
  CHECK(runs(row(report, "all_reduce", 4), "nvls"));
  const auto large = row(report, "all_reduce", 4 * GiB);
  CHECK(runs(large, "nvls"));
  // Published (docs/nccl.md 11): 839 GB/s at 4 GiB on a full rack (coreweave/nccl-tests PR #43).
  CHECK(large.busbw == doctest::Approx(839).epsilon(0.10));
}

TEST_CASE("nccl scenarios: snsim's time per algorithm against NCCL's model at 8 16 64 and 512 ranks") {
  // NCCL's model is a ranking tool (docs/nccl.md 11: accurate at large sizes on one node); in the bandwidth regime
  // snsim's time for the same algorithm stays within 25 % of it.
  using namespace snsim::models::nccl;
  const double bytes = 4.0 * GiB;
  struct Case {
    int nodes;
    std::string topology;
    std::vector<std::pair<Algo, std::string>> algorithms;
  };
  const std::vector<Case> cases{
      {1, "{type: hgx, gpu: h100, gpus: 8}", {{Algo::ring, "ring"}, {Algo::nvls, "nvls"}}},
      {2, "{type: superpod, gpu: h100, nodes: 2}", {{Algo::ring, "ring"}, {Algo::nvls_tree, "nvls_tree"}}},
      {8, "{type: superpod, gpu: h100, nodes: 8}", {{Algo::ring, "ring"}, {Algo::nvls_tree, "nvls_tree"}}},
      {64, "{type: superpod, gpu: h100, nodes: 64}", {{Algo::ring, "ring"}, {Algo::nvls_tree, "nvls_tree"}}},
  };
  for (const auto& c : cases) {
    const auto system = derive(Machine{.arch = Arch::hopper, .nodes = c.nodes, .gpus_per_node = 8});
    for (const auto& entry : c.algorithms) {
      const auto& algo = entry.first;
      const auto& name = entry.second;
      CAPTURE(c.nodes);
      CAPTURE(name);
      const double nccl = time_us(system, Func::all_reduce, algo, snsim::models::Protocol::simple, bytes);
      const double snsim = forced_us(c.topology, name, "Simple", Bytes{4 * GiB});
      CHECK(snsim == doctest::Approx(nccl).epsilon(0.25));
    }
  }
}

TEST_CASE("nccl scenarios: a collective across nodes takes the same time in a sweep as alone") {
  // A sweep builds each algorithm's pairs across the nodes once and reuses them for every size (FlowPattern in
  // runtime/collective_executor.cpp): each size's time must be the one a sweep of that size alone gives, which builds
  // them fresh. Two oversubscribed leaves, so that the flows do not all end at once.
  const std::string topology = "{type: superpod, nodes: 6, ib: roce, oversubscription: 2, sharp: true}";
  const std::vector<std::uint64_t> sizes{256 * KiB, 4 * MiB, 64 * MiB};
  // Each size's time (us, every digit), from one simulation of the sizes from `from` to `to` (one per process).
  auto times = [&](const std::string& algorithm, std::uint64_t from, std::uint64_t to) {
    // auto: NCCL's pick (no SHARP: Tree up to 4 MiB, NVLSTree at 64 MiB, each with its own pairs).
    const bool forced = algorithm != "auto";
    const auto s = load(fmt::format(
        "topology: {}\nmodels: {{params: h100}}\nworkloads:\n  - {{type: collective_sweep, ops: all_reduce, {}sizes: "
        "{{from: {}B, to: {}B, factor: 16}}}}\n",
        forced ? topology : "{type: superpod, nodes: 6, ib: roce, oversubscription: 2}",
        forced ? fmt::format("algorithm: {}, protocol: Simple, ", algorithm) : "", from, to));
    std::istringstream in(run_isolated([&] {
      const Report report = s.run();
      std::string text;
      for (auto bytes : sizes)
        if (bytes >= from && bytes <= to) {
          const Row r = row(report, "all_reduce", bytes);
          if (forced) CHECK(runs(r, algorithm));
          if (!forced) CHECK(runs(r, bytes < 64 * MiB ? "tree" : "nvls_tree"));
          text += fmt::format("{:.17g} ", r.time_us);
        }
      return text;
    }));
    std::vector<double> us;
    for (double t = 0; in >> t;) us.push_back(t);
    return us;
  };
  for (const std::string algorithm : {"ring", "tree", "nvls_tree", "collnet", "auto"}) {
    CAPTURE(algorithm);
    const auto together = times(algorithm, sizes.front(), sizes.back());
    REQUIRE(together.size() == sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(sizes[i]);
      const auto alone = times(algorithm, sizes[i], sizes[i]);
      REQUIRE(alone.size() == 1);
      CHECK(together[i] > 0);
      CHECK(together[i] == doctest::Approx(alone.front()).epsilon(1e-12));
    }
  }
}

TEST_CASE("nccl scenarios: across nodes an op runs on its first channels, each bound to one NIC") {
  // NCCL gives an op its first `channels` ring or tree channels (fewer at small sizes) and binds channel c to NIC c
  // (docs/nccl.md 7): a 2-node tree all-reduce of S on c channels moves S/c up and S/c down through NICs 0..c-1 of
  // each node and nothing through the others.
  constexpr std::uint64_t S = 64 * MiB;
  for (int channels : {1, 2, 8}) {
    CAPTURE(channels);
    const auto s = load(fmt::format(
        "topology: {{type: superpod, node: hgx, gpu: h100, nodes: 2, ib: ndr}}\nmodels: {{params: h100}}\n"
        "workloads: [{{type: program, ops: [{{collective: {{op: all_reduce, bytes: {}B, algorithm: tree, protocol: "
        "Simple, channels: {}}}}}]}}]\n",
        S, channels));
    const std::string nic_bytes = run_isolated([&] {
      const Report r = s.run();
      std::string text;
      for (int gpu = 0; gpu < 16; ++gpu)
        for (const auto& l : r.links)
          if (l.name == fmt::format("gpu{}->nic{}", gpu, gpu)) text += fmt::format("{} ", l.payload_bytes.count());
      return text;
    });
    std::istringstream in(nic_bytes);
    std::vector<std::uint64_t> sent;
    for (std::uint64_t b = 0; in >> b;) sent.push_back(b);
    REQUIRE(sent.size() == 16);
    for (int gpu = 0; gpu < 16; ++gpu) {
      CAPTURE(gpu);
      // Every NIC of the first `channels` sends one channel's share: the child's head up, the root's head down.
      const double expected = gpu % 8 < channels ? static_cast<double>(S) / channels : 0.0;
      CHECK(static_cast<double>(sent[static_cast<std::size_t>(gpu)]) == doctest::Approx(expected).epsilon(1e-6));
    }
  }
}
