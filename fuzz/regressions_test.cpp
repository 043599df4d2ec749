// Replays every input that ever made a fuzz target fail (fuzz/regressions/<target>/), in the normal build: each must
// now end in a clean return or an InputError, which the harness swallows. One test case per target.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/harness.hpp"

namespace {
namespace fs = std::filesystem;

void replay(std::string_view target) {
  const auto found = std::ranges::find_if(snsim::fuzz::targets(), [&](const auto& t) { return t.name == target; });
  REQUIRE(found != snsim::fuzz::targets().end());
  const fs::path folder = fs::path(SNSIM_SOURCE_DIR) / "fuzz" / "regressions" / std::string(target);
  std::vector<fs::path> files;
  if (fs::is_directory(folder))
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::ranges::sort(files);
  for (const auto& file : files) {
    INFO("replaying ", file.string());
    std::ifstream in(file, std::ios::binary);
    REQUIRE(in);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    CHECK_NOTHROW(found->run(bytes.str()));
  }
  MESSAGE(files.size(), " regression input(s) of ", target, " replayed");
}
}  // namespace

TEST_CASE("fuzz regressions: scenario") {
  replay("scenario");
}
TEST_CASE("fuzz regressions: params") {
  replay("params");
}
TEST_CASE("fuzz regressions: trace") {
  replay("trace");
}
TEST_CASE("fuzz regressions: nccl_tests") {
  replay("nccl_tests");
}
TEST_CASE("fuzz regressions: nvbandwidth") {
  replay("nvbandwidth");
}
TEST_CASE("fuzz regressions: p2p_bandwidth_latency") {
  replay("p2p_bandwidth_latency");
}
TEST_CASE("fuzz regressions: nvshmem_perftest") {
  replay("nvshmem_perftest");
}
TEST_CASE("fuzz regressions: nvidia_smi") {
  replay("nvidia_smi");
}
TEST_CASE("fuzz regressions: replay") {
  replay("replay");
}
