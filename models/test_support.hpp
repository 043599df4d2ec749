// Helpers shared by the models tests: models from YAML text, and the input error a text gives. Included by test files
// only.
#pragma once

#include <string>

#include "models/models.hpp"
#include "sim/config.hpp"
#include "sim/error.hpp"

namespace snsim::models::testing {

/// The models of a document's `models:` section, named "t.yaml" in messages; unknown keys are errors.
inline Models load(const std::string& yaml = "{}") {
  auto doc = ConfigDocument::load_string(yaml, "t.yaml");
  auto m = Models::load(doc->root().section("models"));
  doc->reject_unknown_keys();
  return m;
}

/// The message of the input error `yaml` gives, or "no error".
inline std::string error(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace snsim::models::testing
