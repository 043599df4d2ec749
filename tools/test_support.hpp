// Helpers of the tests that run the built `snsim` binary (SNSIM_BINARY) as a user would, each in a fresh
// temporary directory (TempDir, studies/test_support.hpp). Header-only; included by test files only.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "studies/python.hpp"
#include "studies/test_support.hpp"

namespace snsim::testing {

namespace fs = std::filesystem;

/// Quotes one argument for /bin/sh.
inline std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `program args...` with `dir` as the working directory and captures exit code, stdout and stderr.
inline Result run_program(const TempDir& dir, const std::string& program, const std::vector<std::string>& args) {
  std::string command = "cd " + quote(dir.path().string()) + " && " + quote(program);
  for (const auto& a : args) {
    command += ' ';
    command += quote(a);
  }
  command += " >.stdout 2>.stderr </dev/null";
  const int status = std::system(command.c_str());
  Result r;
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  r.code = WEXITSTATUS(status);
  r.out = read_file(dir.path() / ".stdout");
  r.err = read_file(dir.path() / ".stderr");
  fs::remove(dir.path() / ".stdout");
  fs::remove(dir.path() / ".stderr");
  return r;
}

/// Runs `snsim args...` with `dir` as the working directory and captures exit code, stdout and stderr.
inline Result run_snsim(const TempDir& dir, const std::vector<std::string>& args) {
  return run_program(dir, SNSIM_BINARY, args);
}

/// The interpreter that draws, or nullopt where none has matplotlib: the calling test then skips, saying so. CI sets
/// SNSIM_REQUIRE_PLOTS, so that a missing matplotlib fails there instead of passing unseen.
inline std::optional<std::string> python_with_matplotlib() {
  std::vector<std::string> tried;
  auto python = snsim::studies::find_python(tried);
  if (!python) {
    if (std::getenv("SNSIM_REQUIRE_PLOTS")) FAIL("SNSIM_REQUIRE_PLOTS is set but no python3 has matplotlib");
    MESSAGE("skipped: no python3 with matplotlib (apt install python3-matplotlib)");
  }
  return python;
}

/// A refused input: exit code 2, exactly `line` on stderr, nothing on stdout.
inline void check_input_error(const Result& r, const std::string& line) {
  CHECK(r.code == 2);
  CHECK(r.err == line + "\n");
  CHECK(r.out.empty());
}

}  // namespace snsim::testing
