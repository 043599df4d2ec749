// The slow-node study's parsing and planning in process; the study itself runs through the binary in tools/.
#include "studies/slow_node.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "sim/error.hpp"
#include "studies/test_support.hpp"

using namespace snsim;
using namespace snsim::studies;

namespace {

std::vector<workloads::Program> programs_of(const std::string& yaml) {
  return workloads::Scenario::load(ConfigDocument::load_string(yaml, "t.yaml")).programs();
}

}  // namespace

TEST_CASE("study: --slow points parse as GPU:FACTOR or GPU:N%, several GPUs joined by commas") {
  const SlowPoint a = parse_slow_point("3:1.05", 8);
  REQUIRE(a.gpus.size() == 1);
  CHECK(a.gpus[0].gpu == 3);
  CHECK(a.gpus[0].compute == 1.05);
  CHECK(a.label() == "gpu3 x1.05");
  CHECK(a.yaml() == "[{gpu: 3, compute: 1.05}]");
  CHECK(a.slowdown() == doctest::Approx(1 - 1 / 1.05));
  const SlowPoint b = parse_slow_point("0:20%,7:1.1", 8);
  REQUIRE(b.gpus.size() == 2);
  CHECK(b.gpus[0].compute == doctest::Approx(1.2));
  CHECK(b.label() == "gpu0 x1.2+gpu7 x1.1");
  CHECK(b.slowdown() == doctest::Approx(1 - 1 / 1.2));  // the slowest GPU's
  CHECK(SlowPoint{}.label() == "healthy");
  CHECK(SlowPoint{}.yaml() == "[]");
  CHECK(SlowPoint{}.slowdown() == 0);
  const SlowPoint c = parse_slow_point("2:1.1:1.3", 8);
  CHECK(c.gpus[0].hbm == 1.3);
  CHECK(c.label() == "gpu2 x1.1 hbm x1.3");
  CHECK(c.yaml() == "[{gpu: 2, compute: 1.1, hbm: 1.3}]");
  CHECK(c.slowdown() == doctest::Approx(1 - 1 / 1.3));
  CHECK_THROWS_WITH_AS(parse_slow_point("3=1.05", 8),
                       "--slow 3=1.05: expected GPU:FACTOR[:HBM_FACTOR], such as 3:1.05 or 3:5% (GPU 3's kernels "
                       "take 5 % longer)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("3:1:1:1", 8),
                       "--slow 3:1:1:1: expected GPU:FACTOR[:HBM_FACTOR], such as 3:1.05 or 3:5% (GPU 3's kernels "
                       "take 5 % longer)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("x:1.05", 8), "--slow x:1.05: expected a GPU index before ':', found 'x'",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("8:1.05", 8),
                       "--slow 8:1.05: GPU 8 does not exist (the topology has 8 GPUs: 0-7)", InputError);
  CHECK_THROWS_WITH_AS(
      parse_slow_point("3:fast", 8),
      "--slow 3:fast: expected a compute-time factor after ':' (1.05, or 5% for the same), found 'fast'", InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("3:0", 8),
                       "--slow 3:0: the compute-time factor must be between 0.001 and 1000, got 0", InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("3:1.1:-100%", 8),
                       "--slow 3:1.1:-100%: the HBM-time factor must be between 0.001 and 1000, got 0", InputError);
  CHECK_THROWS_WITH_AS(parse_slow_point("3:1.1,3:1.2", 8), "--slow 3:1.1,3:1.2: GPU 3 is named twice", InputError);
}

TEST_CASE("study: the step count is the top-level repeat count when every workload is one repeat of it") {
  CHECK(infer_steps(programs_of(testing::BSP_STEP)).count == 3);
  const std::string two_phases =
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - {type: program, ops: [{repeat: 5, ops: [{compute: {time: 1ms}}]}]}\n"
      "  - {type: program, ops: [{repeat: 5, ops: [{collective: {op: all_reduce, bytes: 1MiB}}]}]}\n";
  CHECK(infer_steps(programs_of(two_phases)).count == 5);
  const std::string mixed =
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - {type: program, ops: [{compute: {time: 1ms}}, {repeat: 5, ops: [{compute: {time: 1ms}}]}]}\n";
  const Steps steps = infer_steps(programs_of(mixed));
  CHECK(steps.count == 1);
  CHECK(steps.why.find("--steps") != std::string::npos);
}
