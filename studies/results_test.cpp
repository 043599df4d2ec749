// A sweep's results store in process: torn and corrupted lines, merging, and the log a running sweep appends to.
#include "studies/results.hpp"

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "studies/test_support.hpp"

using namespace snsim;
using namespace snsim::studies;
using namespace snsim::testing;
using nlohmann::json;

TEST_CASE("sweep: a torn last line is dropped, a corrupted line elsewhere is an error naming file and line") {
  const TempDir dir;
  const std::string good = R"({"key":"a","point":0,"trial":0,"outcome":"completed","metrics":{}})";
  dir.write("torn.jsonl", good + "\n" + good.substr(0, 20));
  std::size_t valid = 0;
  const auto lines = read_results((dir.path() / "torn.jsonl").string(), &valid);
  CHECK(lines.size() == 1);
  CHECK(valid == good.size() + 1);

  dir.write("bad.jsonl", good + "\n{\"key\": \n" + good + "\n");
  const std::string bad = (dir.path() / "bad.jsonl").string();
  CHECK_THROWS_WITH_AS(read_results(bad), (bad + ":2: corrupted line: not JSON").c_str(), InputError);
  dir.write("odd.jsonl", good + "\n[1, 2]\n" + good + "\n");
  const std::string odd = (dir.path() / "odd.jsonl").string();
  CHECK_THROWS_WITH_AS(
      read_results(odd),
      (odd + ":2: corrupted line: not a sweep result (an object with key, point, trial, outcome and metrics)").c_str(),
      InputError);
}

TEST_CASE("sweep: merging drops exact duplicates and rejects conflicting results") {
  auto line = [](const std::string& key, double makespan, double wall, std::string where) {
    return ResultLine{json{{"key", key},
                           {"point", key == "b" ? 1 : 0},
                           {"trial", 0},
                           {"outcome", "completed"},
                           {"metrics", {{"makespan_s", makespan}}},
                           {"wall_s", wall}},
                      std::move(where)};
  };
  std::size_t duplicates = 0;
  const auto merged =
      merge_results({line("b", 2, 0.1, "x:1"), line("a", 1, 0.1, "x:2"), line("a", 1, 0.7, "y:1")}, &duplicates);
  REQUIRE(merged.size() == 2);
  CHECK(duplicates == 1);  // the same result, another wall time
  CHECK(merged[0]["key"] == "a");
  CHECK(merged[1]["key"] == "b");
  CHECK_THROWS_WITH_AS(merge_results({line("a", 1, 0.1, "x:2"), line("a", 1.5, 0.1, "y:4")}),
                       "y:4: result a (point 0, trial 0) conflicts with x:2: the same scenario and seed gave different "
                       "results",
                       InputError);
}

TEST_CASE("sweep: the results log is one sweep's, cuts a torn last line and appends whole lines") {
  const TempDir dir;
  const std::string good = R"({"key":"a","point":0,"trial":0,"outcome":"completed","metrics":{}})";
  dir.write("r.jsonl", good + "\n" + good.substr(0, 20));
  const std::string path = (dir.path() / "r.jsonl").string();
  std::size_t valid = 0;
  CHECK(read_results(path, &valid).size() == 1);
  {
    ResultsLog log(path, valid);
    CHECK_THROWS_WITH_AS(ResultsLog(path, valid),
                         (path + ": another sweep is writing this file (use another --out)").c_str(), InputError);
    log.append(json::parse(R"({"key":"b","point":1,"trial":0,"outcome":"completed","metrics":{}})"));
  }
  const auto lines = read_results(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].value["key"] == "b");
  CHECK(lines[1].where == path + ":2");
  CHECK(results_path(dir.path().string()) == (dir.path() / "results.jsonl").string());
  CHECK(results_path(path) == path);
}
