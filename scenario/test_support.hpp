// Helpers shared by the workloads tests: a scenario from YAML text, and the spans and errors they assert on.
// Included by test files only.
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "sim/isolated.hpp"

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

/// The first table whose title starts with `prefix` (titles carry their workload's details after it).
inline const Table& table(const Report& r, std::string_view prefix) {
  for (const auto& t : r.tables)
    if (t.title.starts_with(prefix)) return t;
  throw std::logic_error("no table " + std::string(prefix));
}

/// A value of the training summary table (a training run's metrics).
inline double metric(const Report& r, std::string_view name) {
  for (const auto& row : table(r, "training summary").rows)
    if (row[0] == name) return row[1].get<double>();
  throw std::logic_error("no metric " + std::string(name));
}

inline double relative_error(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

/// One GiB as a double, for expected times written as formulas.
inline constexpr double GIB = 1073741824.0;

/// The `index`-th record of `kind` of one rank in one phase, in start order.
inline const OpRecord& record(const Report& report, int rank, const std::string& kind, int index = 0, int phase = 0) {
  for (const auto& o : report.ops)
    if (o.rank == rank && o.kind == kind && o.phase == phase && index-- == 0) return o;
  throw std::logic_error("no such record: " + kind);
}

/// A run under one `models.fabric.path`: its simulated time and the collectives each path ran (the report's
/// "fabric path" table).
struct PathOutcome {
  double span = 0;   // simulated time of the whole run
  int exact = 0;     // collectives on the exact path
  int crossbar = 0;  // on the crossbar fast path
  int ring = 0;      // on the ring fast path
  int send = 0;      // on the send fast path
};

/// Runs `yaml` with models.fabric.path set to `path` in a child process.
inline PathOutcome run_with_path(const std::string& yaml, const std::string& path) {
  const std::string text = run_isolated([&] {
    auto document = ConfigDocument::load_string(yaml, "t.yaml");
    document->set("models.fabric.path=" + path);
    const Report r = Scenario::load(document).run();
    int exact = 0, crossbar = 0, ring = 0, send = 0;
    for (const auto& t : r.tables)
      if (t.title.starts_with("fabric path"))
        for (const auto& row : t.rows) {
          if (row[0] == "exact") exact = row[1].get<int>();
          if (row[0] == "crossbar fast") crossbar = row[1].get<int>();
          if (row[0] == "ring fast") ring = row[1].get<int>();
          if (row[0] == "send fast") send = row[1].get<int>();
        }
    return fmt::format("{:.17g} {} {} {} {}", r.simulated_time.count(), exact, crossbar, ring, send);
  });
  PathOutcome o;
  std::istringstream(text) >> o.span >> o.exact >> o.crossbar >> o.ring >> o.send;
  return o;
}

}  // namespace snsim::workloads::testing
