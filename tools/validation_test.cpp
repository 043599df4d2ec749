// End-to-end checks of issue 4's accuracy targets: `snsim calibrate` on the committed H200 traces, then
// `snsim validate` with the parameters it wrote, run as a user would (the built binary, SNSIM_BINARY).
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tools/test_support.hpp"

using namespace snsim::testing;

namespace {

std::string trace(const std::string& name) {
  return (fs::path(SNSIM_SOURCE_DIR) / "validation/traces/h200" / name).string();
}

/// Calibrates on every H200 trace, validates `traces` with the result, and checks that `family` has at least
/// `records` validation records, none skipped, and a median |error| within its 10 % bound.
void check_family(const std::vector<std::string>& traces, const std::string& family, int records) {
  TempDir dir;
  REQUIRE(run_snsim(dir, {"calibrate", trace(""), "-o", "params.yaml"}).code == 0);
  std::vector<std::string> args{"validate"};
  for (const auto& t : traces) args.push_back(trace(t));
  for (const char* a : {"--params", "params.yaml", "--out", "report"}) args.emplace_back(a);
  const Result r = run_snsim(dir, args);
  const auto report = nlohmann::json::parse(read_file(dir.path() / "report" / "validation.json"));
  bool found = false;
  for (const auto& f : report["families"]) {
    if (f["family"] != family) continue;
    found = true;
    CHECK(f["validation_records"].get<int>() >= records);
    CHECK(f["skipped_records"].get<int>() == 0);
    CHECK(f["bound"]["median"].get<double>() == doctest::Approx(0.10));
    CHECK(f["median_abs_error"].get<double>() <= 0.10);
    CHECK(f["pass"].get<bool>());
  }
  CHECK(found);
  CHECK(r.code == 0);
}

}  // namespace

TEST_CASE("validation: calibrated on the H200 traces, the nvshmem twins meet the nvshmem bound") {
  // Only the nvshmem trace is validated (its split is the same as within the whole folder): the other families
  // have their own checks, and CI validates the whole folder.
  check_family({"h200x2-nvshmem.jsonl"}, "nvshmem", 70);
}

TEST_CASE("validation: calibrated on the H200 traces, the collective twins meet the collective bound") {
  check_family({"h200x2-collective.jsonl", "h200x2-collective-proto-ll.jsonl", "h200x2-collective-proto-ll128.jsonl",
                "h200x2-collective-proto-simple.jsonl"},
               "collective", 500);
}
