// Trace replay: the captured H200 steps against their unprofiled measurements, the programs a trace becomes, and
// the errors bad traces give.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"
#include "scenario/test_support.hpp"
#include "sim/files.hpp"
#include "sim/isolated.hpp"
#include "workloads/replay/kernels.hpp"
#include "workloads/replay/replay.hpp"

using namespace snsim;
using namespace snsim::workloads;

namespace {

const std::string TRACES = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200-replay/";

/// The replay's step time (its "replay" table) of `paths` on `topology`, run in a child process.
double replayed_step_ms(const std::vector<std::string>& paths, const std::string& topology,
                        const std::string& extra = "") {
  const std::string text = run_isolated([&] {
    nlohmann::json workload{{"type", "trace"}, {"paths", paths}};
    const std::string yaml = fmt::format("topology: {}\nmodels: {{params: h200}}\nworkloads: [{}{}]\n", topology,
                                         workload.dump().substr(0, workload.dump().size() - 1), extra + "}");
    const Report r = testing::load(yaml).run();
    REQUIRE(r.outcome == "completed");
    const Table* t = find_table(r.tables, "replay");
    REQUIRE(t);
    return t->rows.front()[1].dump();
  });
  return std::stod(text);
}

/// The median unprofiled step time of `variant` by CUDA events between back-to-back steps (steps.jsonl).
double measured_step_ms(const std::string& variant) {
  std::istringstream lines(read_file(TRACES + "steps.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("variant", "") == variant && j.value("method", "") == "events_between_steps")
      return j["median"].get<double>() * 1e3;
  }
  FAIL("no record of " << variant);
  return 0;
}

}  // namespace

TEST_CASE("replay: each captured H200 training step replays within 5 % of its unprofiled step on its own platform") {
  for (const std::string variant :
       {"gpt-h2048-l2-b2-s2048", "llama-h2048-l2-b2-s2048", "gpt-h4096-l2-b1-s4096", "gpt-h2048-l2-b2-s2048-ddp"}) {
    const double replayed = replayed_step_ms({TRACES + variant + ".kineto.json.gz"}, "{type: hgx, gpu: h200, gpus: 2}");
    const double measured = measured_step_ms(variant);
    INFO(variant << ": replayed " << replayed << " ms, measured " << measured << " ms");
    CHECK(testing::relative_error(replayed, measured) < 0.05);
  }
}
