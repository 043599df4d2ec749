// Every real tool output in samples/real/ validates: imported, simulated on the platform it names (or the one a user
// would give for it), with at least one record compared, or a clear error where none can be. The table lists the
// files that need the user's word on the platform, and those that fail with the reason; any other file in the folder
// must compare as it is, so a fixture added without thought fails here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <unistd.h>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"
#include "validation/twins.hpp"
#include "validation/validate.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

namespace fs = std::filesystem;

const fs::path REAL = fs::path(SNSIM_SOURCE_DIR) / "validation/importers/samples/real";

// The 6-GPU PCIe machines of two reports (RTX A6000 and unnamed GPUs, no NVLink): the user's platform is a PCIe
// topology of 6 GPUs at Gen4 x16 (16 GT/s x 16 lanes, 128b/130b: 31.5 GB/s per direction [spec: PCI-SIG], the
// A6000's link; the other report does not say, and a user would). snsim has no A6000 preset: the GPU is a stand-in,
// what is compared is the PCIe path.
constexpr const char* PCIE_SIX = "topology: {type: pcie, gpu: h100, gpus: 6, pcie_bandwidth: 31.5GBps}\n";

struct Expected {
  std::vector<std::string> sets;  // --set as a user would give it
  bool pcie_scenario = false;     // --platform PCIE_SIX
  std::string error;              // a part of the expected error; empty: records are compared
};

const std::map<std::string, Expected>& expected() {
  static const std::map<std::string, Expected> table{
      // The rank list is elided ("..."): neither the GPU nor the nodes are printed.
      {"nccl-allreduce-96xh100-12node-ib-sharp-coreweave-illustrative.txt", {{"gpu=h100", "nodes=12"}, false, ""}},
      // "NVIDIA Graphics Device": the driver did not name the GB200.
      {"nccl-tests-coreweave-pr43-all_reduce-72xgb200-nvl72-rank-list-cut.txt", {{"gpu=gb200"}, false, ""}},
      // A table without its header: 2 nodes x 4 GPUs as the report says, GPU not named.
      {"nccl-tests-issue128-reduce_scatter-8gpu-2node-zero-size-rows.txt",
       {{"gpu=h100", "nodes=2", "gpus_per_node=4"}, false, ""}},
      {"nccl-tests-issue107-all_reduce-2xv100-two-single-rank-jobs.txt", {{}, false, "rank 0 is listed twice"}},
      // No device list; the machine is an HGX H100 (samples/real/README.md).
      {"nvbandwidth-d2d-ce-latency-8xh100-sxm-kr-unresolved.txt", {{"gpu=h100"}, false, ""}},
      // snsim has no H20 preset: the user stands in the nearest one.
      {"nvbandwidth-issue48-v0.8-device_local_copy-8xh20-3e.txt", {{"gpu=h200"}, false, ""}},
      {"nvbandwidth-issue50-v0.8-d2d-read-ce-6xa6000.txt", {{}, true, ""}},
      {"p2pBandwidthLatencyTest-nccl814-6gpu-pcie-p2p-read-cut.txt", {{}, true, ""}},
      // perftest printed neither the GPU nor its kernel's CTAs and threads: nothing to simulate.
      {"perftest-awslabs599-shmem_put_bw-srun-2node-cut.txt",
       {{"gpu=h100", "nodes=2", "gpus_per_node=1"}, false, "none of its 18 records can be compared"}},
      {"perftest-nvshmem39-reduction_on_stream-cut.txt", {{"gpu=h100"}, false, "snsim models no NVSHMEM collectives"}},
  };
  return table;
}

std::vector<std::string> real_files() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(REAL))
    if (entry.path().filename() != "README.md") names.push_back(entry.path().filename().string());
  std::ranges::sort(names);
  return names;
}

}  // namespace

TEST_CASE("every real tool output validates with compared records, or fails with a clear reason") {
  const fs::path scenario = fs::temp_directory_path() / fmt::format("snsim-pcie-six-{}.yaml", ::getpid());
  std::ofstream(scenario) << PCIE_SIX;
  const auto names = real_files();
  REQUIRE(names.size() >= 41);
  for (const auto& name : names) {
    CAPTURE(name);
    const auto it = expected().find(name);
    const Expected e = it != expected().end() ? it->second : Expected{{}, false, ""};
    TwinOptions options;
    options.max_samples = 1;
    options.platform.sets = e.sets;
    if (e.pcie_scenario) options.platform.scenario_file = scenario.string();
    std::string error;
    std::size_t compared = 0;
    try {
      const Trace trace = import_any(REAL / name);
      const auto result = validate({trace}, Bounds{}, options);
      compared = result.comparisons.size();
      std::map<std::string, MeasureUnit> units;
      for (const auto& r : trace.records) units[r.id] = r.unit;
      for (const auto& c : result.comparisons) {
        CAPTURE(c.id);
        CHECK(c.use == Use::validation);  // no record of another tool's output calibrated anything in use
        CHECK(c.predicted > 0);
        CHECK(c.unit == to_string(units.at(c.id)));  // the twin's value is in the record's unit
      }
      int skipped = 0;
      for (const auto& f : result.families) skipped += f.skipped;
      CHECK(static_cast<std::size_t>(skipped) == result.skipped.size());  // every record without a twin is listed
    } catch (const InputError& err) {
      error = err.what();
    }
    if (e.error.empty()) {
      CHECK_MESSAGE(error.empty(), error);
      CHECK(compared >= 1);
    } else {
      CHECK_MESSAGE(error.find(e.error) != std::string::npos, error);
    }
  }
  fs::remove(scenario);
}

TEST_CASE("a file that does not name its GPU is an error that lists the presets and says how to give one") {
  const Trace trace = import_any(REAL / "nccl-tests-coreweave-pr43-all_reduce-72xgb200-nvl72-rank-list-cut.txt");
  try {
    platform_of(trace);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("no preset for 'NVIDIA Graphics Device'") != std::string::npos);
    CHECK(what.find("b200, gb200, h100, h200") != std::string::npos);
    CHECK(what.find("--set gpu=PRESET") != std::string::npos);
  }
  // Told the GPU, the 72 ranks are one NVL72 rack.
  PlatformChoice choice;
  choice.sets = {"gpu=gb200"};
  CHECK(platform_of(trace, choice).topology == "{type: nvl72, gpus: 72}");
}

TEST_CASE("multi-node files become a superpod of their size, a node's ranks on its first GPUs") {
  const Trace two = import_any(REAL / "nccl-tests-issue290-all_reduce-16xh100-2node-srun-label.txt");
  const Platform p = platform_of(two);
  CHECK(p.topology == "{type: superpod, node: hgx, gpu: h100, nodes: 2}");
  CHECK(p.gpu_of_rank.size() == 16);
  CHECK(p.gpu_of_rank[9] == 9);
  // One PE on each of two nodes: PE 1 is the second node's first GPU, so the put crosses InfiniBand.
  const Trace pes = import_any(REAL / "nvshmem-shmem_put_bw-2xh200-internode-ib-ctc.txt");
  const Platform q = platform_of(pes);
  CHECK(q.topology == "{type: superpod, node: hgx, gpu: h200, nodes: 2}");
  CHECK(q.gpu_of_rank == std::vector<int>{0, 8});
  // 96 ranks without their spread over nodes: an error naming the fix, then 12 nodes of 8 when told.
  const Trace many = import_any(REAL / "nccl-allreduce-96xh100-12node-ib-sharp-coreweave-illustrative.txt");
  PlatformChoice gpu_only;
  gpu_only.sets = {"gpu=h100"};
  CHECK_THROWS_WITH_AS(platform_of(many, gpu_only), doctest::Contains("pass --set nodes=N"), InputError);
  PlatformChoice told = gpu_only;
  told.sets.push_back("nodes=12");
  CHECK(platform_of(many, told).topology == "{type: superpod, node: hgx, gpu: h100, nodes: 12}");
  // The user's word overrides the file's: a GPU model and a topology key.
  PlatformChoice other;
  other.sets = {"gpu=h200", "topology.ib=xdr"};
  const Platform r = platform_of(two, other);
  CHECK(r.topology == "{type: superpod, node: hgx, gpu: h200, nodes: 2}");
  CHECK(r.sets == std::vector<std::string>{"topology.ib=xdr"});
  PlatformChoice bad;
  bad.sets = {"gpus=3"};
  CHECK_THROWS_WITH_AS(platform_of(two, bad), doctest::Contains("known: gpu, nodes, gpus_per_node, topology.*"),
                       InputError);
}

TEST_CASE(
    "an imported record's twin gives the record's unit: nvbandwidth GB/s stay rates, nccl-tests times stay "
    "times") {
  const Trace bw = import_any(REAL / "nvbandwidth-v0.8-1xh200.txt");
  const auto result = validate({bw}, Bounds{}, TwinOptions{});
  REQUIRE(!result.comparisons.empty());
  for (const auto& c : result.comparisons) {
    CHECK(c.unit == "B/s");
    CAPTURE(c.id);
    // A twin that returned seconds for a rate would be off by 20 orders of magnitude, not a few tens of percent.
    CHECK(std::abs(c.error) < 1.0);
  }
  const Trace nccl = import_any(REAL / "nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt");
  const auto collective = validate({nccl}, Bounds{}, TwinOptions{});
  REQUIRE(collective.comparisons.size() == nccl.records.size());
  for (const auto& c : collective.comparisons) CHECK(c.unit == "s");
  REQUIRE(collective.tests.size() == 1);
  CHECK(collective.tests.front().test == "all_reduce_perf");
  CHECK(collective.tests.front().records == 12);
  CHECK(collective.tests.front().worst.size() == 3);
  // The default bounds judge only the probe's traces; given by the user (--bounds), they judge imported ones too.
  Bounds bounds = load_bounds(testing::sample_text("../../bounds.yaml"), "bounds.yaml");
  REQUIRE(bounds.families.contains("collective"));
  for (const auto& f : validate({nccl}, bounds, TwinOptions{}).families) CHECK_FALSE(f.has_bound);
  bounds.judge_imported = true;
  for (const auto& f : validate({nccl}, bounds, TwinOptions{}).families) CHECK(f.has_bound);
}

namespace {

/// Predicted value per record id of one file validated alone.
std::map<std::string, double> predicted(const std::string& name, const PlatformChoice& choice = {}) {
  TwinOptions options;
  options.max_samples = 1;
  options.platform = choice;
  std::map<std::string, double> out;
  for (const auto& c : validate({import_any(REAL / name)}, Bounds{}, options).comparisons) out[c.id] = c.predicted;
  return out;
}

}  // namespace

TEST_CASE(
    "imported twins run the tools' experiments: in place = out of place, bidirectional = both ways summed, "
    "two nodes cross InfiniBand") {
  // nccl-tests: the model has no in-place difference (only the buffers differ).
  const auto g8 = predicted("nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt");
  const std::string big = "nccl-tests/all_reduce_perf/{}/float/sum/134217728";
  CHECK(g8.at(fmt::format(fmt::runtime(big), "in_place")) ==
        doctest::Approx(g8.at(fmt::format(fmt::runtime(big), "out_of_place"))).epsilon(0.01));
  // The same 128 MiB all_reduce on 2 nodes of 8 crosses the superpod's InfiniBand: without in-network reduction,
  // each node must receive the other's contribution to all S bytes, so it takes at least S over the node's eight
  // NDR NICs (8 x 50 GB/s); NVLink alone would allow far less.
  const auto two = predicted("nccl-tests-issue290-all_reduce-16xh100-2node-srun-label.txt");
  CHECK(two.at(fmt::format(fmt::runtime(big), "out_of_place")) > 134217728.0 / (8 * 50e9));
  // p2pBandwidthLatencyTest sums both directions of a bidirectional cell: a full-duplex NVLink pair gives twice
  // the one-way rate; the diagonal counts the copy's read and write.
  const auto p2p = predicted("p2pBandwidthLatencyTest-8xh100-sxm-kr-unresolved.txt");
  CHECK(p2p.at("p2pBandwidthLatencyTest/bidir_p2p_enabled/gpu0-gpu1") ==
        doctest::Approx(2 * p2p.at("p2pBandwidthLatencyTest/unidir_p2p_writes/gpu0-gpu1")).epsilon(0.05));
  // perftest between two nodes: PE 1 is on the second node, so a large put runs at a NIC's rate, not NVLink's.
  const auto ib = predicted("nvshmem-shmem_put_bw-2xh200-internode-ib-ctc.txt");
  const double large = ib.at("perftest/shmem_put_bw_uni/none/bw/33554432");
  CHECK(large < 60e9);
  CHECK(large > 10e9);
}
