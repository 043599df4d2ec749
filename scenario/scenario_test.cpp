// Scenarios end to end: workloads as phases, the README's scenario, failures' outcomes. Each TEST_CASE that runs a
// simulation is its own process (one simulation per process).
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

TEST_CASE("workloads: with NVSwitch plane 2 down a ring all-reduce runs at 14/18 of the NVLink rate on every GPU") {
  // The ring all-reduce above with hgx's plane 2 (4 of each GPU's 18 lanes) down from the start: every step's
  // bytes see 14 lanes, the fixed costs are unchanged.
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 1us}, stream_launch: 0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n"
      "failures: [{at: 0s, plane: 2}]\n");
  const Report r = s.run();
  const double n = 4, S = 256.0 * (1 << 20), B = 450e9 * 14 / 18 * 0.5, alpha = 1e-6 + 0.354e-6;
  CHECK(relative_error(span(r, 0), 2 * (n - 1) * (alpha + S / (n * B))) <= 1e-9);
  for (int rank = 0; rank < 4; ++rank) {  // every GPU's ops end together: all of them were slowed alike
    double end = 0;
    for (const auto& o : r.ops)
      if (o.rank == rank) end = std::max(end, o.end.count());
    CHECK(relative_error(end, span(r, 0)) <= 1e-9);
  }
}

TEST_CASE("workloads: a lost GPU ends the run with a failed outcome and the failures table") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "workloads: [{type: program, ops: [{repeat: 100, ops: [{collective: {op: all_reduce, bytes: 256MiB}}]}]}]\n"
      "failures: [{at: 0s, degraded: {gpu: 1, factor: 0.5}}, {at: 3ms, gpu_lost: 2}]\n");
  const Report r = s.run();
  CHECK(r.outcome == "failed: GPU 2 lost at 3 ms");
  CHECK(r.simulated_time.count() == doctest::Approx(3e-3));
  const auto t = std::ranges::find(r.tables, std::string("failures applied"), &Table::title);
  REQUIRE(t != r.tables.end());
  REQUIRE(t->rows.size() == 2);
  CHECK(t->rows[0][1] == "gpu1 NVLink bandwidth x 0.5");
  CHECK(t->rows[0][2] == "nvswitch[0-3]->gpu1 gpu1->nvswitch[0-3]");
  CHECK(t->rows[1][1] == "gpu2 lost");
}

TEST_CASE("workloads: phases run one after another and repeats expand") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - {type: program, ops: [{repeat: 3, ops: [{compute: {time: 1ms}}]}]}\n"
      "  - {type: program, ops: [{compute: {time: 2ms}}]}\n");
  const Report r = s.run();
  CHECK(r.ops.size() == 2 * 3 + 2);
  CHECK(relative_error(r.simulated_time.count(), 5e-3) <= 1e-9);
}

TEST_CASE("workloads: a run with a program workload tables when each workload ran") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads:\n"
      "  - {type: program, ops: [{repeat: 3, ops: [{compute: {time: 1ms}}]}]}\n"
      "  - {type: collective_sweep, ops: all_reduce, sizes: {from: 1MiB, to: 1MiB}}\n"
      "  - {type: program, ops: [{compute: {time: 2ms}}]}\n");
  const Report r = s.run();
  const Table* t = find_table(r.tables, "workloads: when each ran");
  REQUIRE(t != nullptr);
  CHECK(t->columns == std::vector<std::string>{"workload", "type", "ops", "start_us", "end_us", "span_us"});
  REQUIRE(t->rows.size() == 3);
  CHECK(t->rows[0][1] == "program");
  CHECK(t->rows[0][2] == 2 * 3);  // ops on both GPUs
  CHECK(t->rows[0][3].get<double>() == 0);
  CHECK(relative_error(t->rows[0][5].get<double>(), 3e3) <= 1e-9);
  CHECK(t->rows[1][1] == "collective_sweep");
  // One after another: each starts where the one before ended, and the last ends the run.
  CHECK(t->rows[1][3].get<double>() >= t->rows[0][4].get<double>());
  CHECK(t->rows[2][3].get<double>() >= t->rows[1][4].get<double>());
  CHECK(relative_error(t->rows[2][5].get<double>(), 2e3) <= 1e-9);
  CHECK(relative_error(t->rows[2][4].get<double>(), r.simulated_time.count() * 1e6) <= 1e-9);
}

TEST_CASE("workloads: without a program workload no span table is added (the others have their own tables)") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\nworkloads: [{type: collective_sweep, ops: all_reduce, sizes: {from: 1MiB, to: "
      "1MiB}}]\n");
  const Report r = s.run();
  CHECK(find_table(r.tables, "workloads: when each ran") == nullptr);
  CHECK(!r.tables.empty());
}

TEST_CASE("workloads: the README's scenario parses and runs") {
  std::ifstream in(std::string(SNSIM_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto begin = readme.find("```yaml\n");
  REQUIRE(begin != std::string::npos);
  const auto end = readme.find("```", begin + 8);
  const auto s = Scenario::load(ConfigDocument::load_string(readme.substr(begin + 8, end - begin - 8), "README.md"));
  const Report r = s.run();
  CHECK(r.outcome == "completed");
  CHECK(r.ops.size() == 8 * 10 * 3);
}
