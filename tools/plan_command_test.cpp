// `snsim plan` through the built binary (tools/test_support.hpp): the simulated plans ranked by step time, every one
// valid and within HBM, resume, a job that fits nowhere, and the flags' errors. The enumeration itself is tested in
// studies/plan_test.cpp.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/test_support.hpp"

using namespace snsim::testing;
using nlohmann::json;

namespace {

/// Llama 3.1 8B cut to 2 layers with 1,024-token sequences on one 8 x H100 HGX: seconds to simulate.
const std::vector<std::string> SMALL_PLAN{"plan",
                                          "--model",
                                          "{preset: llama3.1-8b, layers: 2}",
                                          "--topology",
                                          "{type: hgx, gpu: h100, gpus: 8}",
                                          "--gpus",
                                          "8",
                                          "--global-batch",
                                          "8",
                                          "--seq",
                                          "1024",
                                          "--budget",
                                          "4",
                                          "--jobs",
                                          "2",
                                          "--out",
                                          "out"};

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("snsim plan: simulates the budget's plans, each valid and within HBM, and ranks them by step time") {
  TempDir dir;
  const auto r = run_snsim(dir, SMALL_PLAN);
  INFO(r.out, r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("| rank | plan | tp | pp | dp |") != std::string::npos);
  const json plan = json::parse(read_file(dir.path() / "out/plan.json"));
  CHECK(plan["gpus"] == 8);
  CHECK(plan["simulated"] == 4);
  CHECK(plan["fitting"].get<int>() <= plan["enumerated"].get<int>());
  const auto& plans = plan["plans"];
  REQUIRE(plans.size() == plan["fitting"].get<std::size_t>());
  double previous = 0;
  std::size_t simulated = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const json& p = plans[i];
    CAPTURE(p.dump());
    CHECK(p["tp"].get<int>() * p["pp"].get<int>() * p["dp"].get<int>() == 8);
    CHECK(32 % p["tp"].get<int>() == 0);  // Llama 3.1 8B: 32 heads, 8 KV heads
    CHECK(8 % p["tp"].get<int>() == 0);
    CHECK(2 % p["pp"].get<int>() == 0);  // 2 layers
    CHECK(p["micro_batch"].get<int>() * p["micro_batches"].get<int>() * p["dp"].get<int>() == 8);
    CHECK(p["memory_gib"]["total"].get<double>() <= plan["hbm_gib"].get<double>());
    if (p["step_time_s"].is_null()) continue;
    // The simulated ones come first, fastest first.
    CHECK(i == simulated);
    CHECK(p["outcome"] == "completed");
    CHECK(p["step_time_s"].get<double>() >= previous);
    CHECK(p["tokens_per_s_per_gpu"].get<double>() > 0);
    CHECK(p["comm_ms_per_gpu"].get<double>() >= 0);
    previous = p["step_time_s"].get<double>();
    ++simulated;
  }
  CHECK(simulated == 4);
  CHECK(lines(read_file(dir.path() / "out/results.jsonl")) == 4);
  CHECK(fs::exists(dir.path() / "out/plan.md"));
  CHECK(fs::exists(dir.path() / "out/sweep.md"));

  // Again: the sweep resumes, nothing is simulated twice, the ranking is the same.
  const auto again = run_snsim(dir, SMALL_PLAN);
  REQUIRE(again.code == 0);
  CHECK(lines(read_file(dir.path() / "out/results.jsonl")) == 4);
  CHECK(json::parse(read_file(dir.path() / "out/plan.json"))["plans"] == plans);
}

TEST_CASE("snsim plan: several GPU counts plan each on the topology resized, the best of each side by side") {
  TempDir dir;
  const auto r = run_snsim(dir, {"plan", "--model", "{preset: llama3.1-8b, layers: 2}", "--topology",
                                 "{type: superpod, gpu: h100, nodes: 1}", "--gpus", "16,8", "--global-batch", "16",
                                 "--seq", "1024", "--budget", "2", "--jobs", "2", "--out", "out"});
  INFO(r.out, r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("| GPUs | best plan | step s |") != std::string::npos);
  const json summary = json::parse(read_file(dir.path() / "out/plan.json"));
  REQUIRE(summary["counts"].size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const json& row = summary["counts"][i];
    const int gpus = i == 0 ? 8 : 16;  // in increasing order
    CHECK(row["gpus"] == gpus);
    // Each count's own plan, on 1 and 2 nodes of 8: its best is the summary's, every plan using all its GPUs.
    const json own = json::parse(read_file(dir.path() / "out" / row["dir"].get<std::string>() / "plan.json"));
    CHECK(own["gpus"] == gpus);
    CHECK(own["simulated"] == 2);
    CHECK(own["plans"][0]["label"] == row["best"]["label"]);
    CHECK(own["plans"][0]["step_time_s"] == row["best"]["step_time_s"]);
    for (const auto& p : own["plans"])
      CHECK(p["tp"].get<int>() * p["cp"].get<int>() * p["pp"].get<int>() * p["dp"].get<int>() == gpus);
  }
  // Counts that cannot be built are refused before anything runs.
  const auto odd = run_snsim(dir, {"plan", "--model", "llama3.1-8b", "--topology",
                                   "{type: superpod, gpu: h100, nodes: 1}", "--gpus", "8,12", "--global-batch", "8"});
  CHECK(odd.code == 2);
  CHECK(odd.err.find("--gpus: found 12; expected a multiple of the topology's 8 GPUs per node") != std::string::npos);
  const auto zero = run_snsim(dir, {"plan", "--model", "llama3.1-8b", "--topology", "{type: hgx, gpus: 8}", "--gpus",
                                    "0,8", "--global-batch", "8"});
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--gpus: found 0; expected at least 1") != std::string::npos);
  const auto fixed = run_snsim(dir, {"plan", "--model", "llama3.1-8b", "--topology", "{type: nvl72}", "--gpus",
                                     "72,144", "--global-batch", "72"});
  CHECK(fixed.code == 2);
  CHECK(fixed.err.find("--gpus: several GPU counts need a topology with `nodes` or `gpus` to resize") !=
        std::string::npos);
}

TEST_CASE("snsim plan: a job that fits on no plan says so, with the smallest footprint") {
  TempDir dir;
  const auto r = run_snsim(dir, {"plan", "--model", "llama3.1-405b", "--topology", "{type: hgx, gpu: h100, gpus: 8}",
                                 "--global-batch", "8"});
  CHECK(r.code == 2);
  CHECK(r.err.find("no plan fits") != std::string::npos);
  CHECK(r.err.find("the smallest footprint is") != std::string::npos);
  CHECK(r.err.find("llama3.1-405b on 8 x h100") != std::string::npos);
  // The framework's share of HBM counts: a 2-layer model that fits easily fits nowhere beside 80 GiB of it.
  const auto small =
      run_snsim(dir, {"plan", "--model", "{preset: llama3.1-8b, layers: 2}", "--topology",
                      "{type: hgx, gpu: h100, gpus: 8}", "--global-batch", "8", "--framework-overhead", "80GiB"});
  CHECK(small.code == 2);
  CHECK(small.err.find("no plan fits") != std::string::npos);
}

TEST_CASE("snsim plan: bad flags name the flag, what was found and what was expected") {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expected;
  };
  const std::string hgx = "{type: hgx, gpu: h100, gpus: 8}";
  const std::vector<Case> cases{
      {{"plan", "--model", "llama9", "--topology", hgx, "--global-batch", "8"},
       {"--model", "unknown preset 'llama9'", "llama3.1-8b"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", hgx, "--gpus", "16", "--global-batch", "8"},
       {"--gpus", "found 16", "the topology's 8 GPUs"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", hgx}, {"--global-batch", "missing"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", hgx, "--global-batch", "0"}, {"--global-batch", "found 0"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", hgx, "--global-batch", "8", "--budget", "0"},
       {"--budget", "found 0"}},
      {{"plan", "--model", "llama3.1-8b", "--global-batch", "8"}, {"--topology", "missing"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", "[1, 2]", "--global-batch", "8"},
       {"--topology", "found a list"}},
      {{"plan", "--model", "{preset: llama3.1-8b, layers: 3, kv_heads: 4, sequence: 4096}", "--topology", hgx,
        "--global-batch", "7"},
       {"--global-batch", "7 sequences on 8 GPUs leave no valid plan"}},
      {{"plan", "--model", "llama3.1-8b", "--topology", hgx, "--global-batch", "8", "--framework-overhead", "lots"},
       {"--framework-overhead", "cannot parse 'lots' as a size"}},
      {{"plan", "--scenario", "missing.yaml", "--global-batch", "8"}, {"--scenario", "no file 'missing.yaml'"}},
  };
  for (const auto& c : cases) {
    const auto r = run_snsim(dir, c.args);
    CAPTURE(c.args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    for (const auto& e : c.expected) CHECK(r.err.find(e) != std::string::npos);
  }
}
