// End to end: `snsim calibrate` then `snsim validate` on the committed H200 traces keep each bounded family's
// validation records within validation/bounds.yaml (issue 4). Runs the built binary (SNSIM_BINARY) from the source
// tree (SNSIM_SOURCE_DIR), writing into a fresh temporary directory.
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

/// Runs a shell command; its exit code.
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/// The family's summary in `snsim validate`'s validation.json.
nlohmann::json family(const nlohmann::json& result, const std::string& name) {
  for (const auto& f : result["families"])
    if (f["family"] == name) return f;
  FAIL("no family " << name << " in validation.json");
  return {};
}

}  // namespace

TEST_CASE("validation: calibrate then validate on the H200 traces keeps collectives within their bound") {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/snsim-validation-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()));
  const fs::path dir = pattern;
  const std::string traces = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200";
  const std::string snsim = std::string("'") + SNSIM_BINARY + "' ";
  const std::string params = (dir / "h200.yaml").string();
  REQUIRE(run(snsim + "calibrate '" + traces + "' -o '" + params + "' > /dev/null") == 0);
  // The exit code speaks for every bounded family; this test holds the collective family to its bound.
  const int code =
      run(snsim + "validate '" + traces + "' --params '" + params + "' --out '" + dir.string() + "' > /dev/null");
  CHECK((code == 0 || code == 1));
  std::ifstream in(dir / "validation.json");
  REQUIRE(in.good());
  const auto result = nlohmann::json::parse(in);
  const auto collective = family(result, "collective");
  CHECK(collective["validation_records"].get<int>() >= 500);
  CHECK(collective["skipped_records"].get<int>() == 0);
  CHECK(collective["bound"]["median"].get<double>() == doctest::Approx(0.10));
  CHECK(collective["median_abs_error"].get<double>() <= 0.10);
  CHECK(collective["pass"].get<bool>());
  fs::remove_all(dir);
}
