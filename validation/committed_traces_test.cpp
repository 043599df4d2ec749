// Every trace committed under validation/traces/ must read cleanly. The files are found when the test runs, so
// captures committed later are covered without editing this test; with none committed it passes trivially.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "validation/trace.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {

std::vector<std::filesystem::path> committed_traces() {
  const std::filesystem::path root = std::filesystem::path(SNSIM_SOURCE_DIR) / "validation" / "traces";
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".jsonl") files.push_back(entry.path());
  return files;
}

}  // namespace

TEST_CASE("traces: every committed trace under validation/traces/ is valid") {
  const auto files = committed_traces();
  for (const auto& file : files) {
    try {
      const Trace trace = read_trace(file);
      for (const std::string& note : trace.notes) MESSAGE(note);
      CHECK_MESSAGE(!trace.records.empty(), file.string(), ": no records");
    } catch (const InputError& e) {
      FAIL_CHECK(std::string(e.what()));
    }
  }
  MESSAGE(files.size(), " committed trace(s) checked");
}
