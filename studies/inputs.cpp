#include "studies/inputs.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace snsim::studies {

void apply_overrides(ConfigDocument& doc, const std::vector<std::string>& sets, const std::optional<std::string>& seed,
                     const std::optional<std::string>& params) {
  for (const auto& s : sets) doc.set(s);
  if (seed) doc.set(fmt::format("seed={}", *seed), fmt::format("--seed {}", *seed));
  if (params) doc.set(fmt::format("models.params={}", *params), fmt::format("--params {}", *params));
}

std::filesystem::path make_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw_input_error({dir, 0, 0}, "--out", fmt::format("cannot create the directory: {}", ec.message()));
  return dir;
}

}  // namespace snsim::studies
