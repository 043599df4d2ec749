// Helpers shared by the calibration tests: what a calibration fitted, read back as numbers. Included by test files
// only.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "validation/calibrate.hpp"

namespace snsim::validation::testing {

/// The fitted parameters by key, as the parameter file writes them ("1.362us", "40GBps", "0.78").
inline std::map<std::string, std::string> fitted_values(const Calibration& calibration) {
  std::map<std::string, std::string> fitted;
  for (const auto& p : calibration.parameters) fitted[p.key] = p.value;
  return fitted;
}

/// Checks that every key of `expected` was fitted to its value within 2e-3 (times are written with 4 digits).
inline void check_fitted(const std::map<std::string, std::string>& fitted,
                         const std::vector<std::pair<std::string, double>>& expected) {
  for (const auto& entry : expected) {
    const auto& key = entry.first;
    const auto& want = entry.second;
    CAPTURE(key);
    const auto it = fitted.find(key);
    REQUIRE_MESSAGE(it != fitted.end(), key);
    const std::string& v = it->second;
    const double value = v.ends_with("us")     ? std::stod(v) * 1e-6
                         : v.ends_with("GBps") ? std::stod(v) * 1e9
                                               : std::stod(v);
    CHECK_MESSAGE(std::abs(value / want - 1) < 2e-3, v);
  }
}

}  // namespace snsim::validation::testing
