// Helpers shared by the workloads tests: a scenario from YAML text, and the spans and errors they assert on.
// Included by test files only.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/config.hpp"
#include "workloads/scenario.hpp"

namespace snsim::workloads::testing {

/// A scenario from YAML text, named "t.yaml" in its error messages.
inline Scenario load(const std::string& yaml) {
  return Scenario::load(ConfigDocument::load_string(yaml, "t.yaml"));
}

/// From the first start to the last end of the ops of one phase.
inline double span(const Report& report, int phase = 0) {
  double first = 1e300, last = 0;
  for (const auto& o : report.ops)
    if (o.phase == phase) {
      first = std::min(first, o.start.count());
      last = std::max(last, o.end.count());
    }
  return last - first;
}

inline double relative_error(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

}  // namespace snsim::workloads::testing
