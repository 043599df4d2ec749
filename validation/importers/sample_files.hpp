// Test helper: the hand-written sample outputs under validation/importers/samples/.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "validation/importers/import.hpp"

namespace snsim::validation::testing {

/// The text of samples/<name>, read from the source tree.
inline std::string sample_text(const std::string& name) {
  std::ifstream in(std::string(SNSIM_SOURCE_DIR) + "/validation/importers/samples/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing sample " + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Imports samples/<name> by content, calling the file just `name` in messages.
inline Trace import_sample(const std::string& name) {
  return import_text(sample_text(name), name);
}

/// The message of the InputError that importing samples/<name> throws, or "no error".
inline std::string import_error(const std::string& name) {
  try {
    import_sample(name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// The record with `id`; throws if there is none, so that a test fails with the id in its message.
inline const TraceRecord& record(const Trace& trace, const std::string& id) {
  for (const TraceRecord& r : trace.records)
    if (r.id == id) return r;
  throw std::runtime_error("no record " + id);
}

}  // namespace snsim::validation::testing
