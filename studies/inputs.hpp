// What the commands and the studies share on their way in and out: the scenario with the command line's overrides
// applied, and the output folder. Every failure is an InputError naming what it could not do.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/config.hpp"

namespace snsim::studies {

/// Applies, in this order, every `--set key.path=value`, then `--seed` and `--params` (a parameter set replacing the
/// scenario's models.params; a path there is relative to the working directory, as the option's origin says).
void apply_overrides(ConfigDocument& doc, const std::vector<std::string>& sets, const std::optional<std::string>& seed,
                     const std::optional<std::string>& params = std::nullopt);

/// Creates `dir` and its parents (the value of `--out`).
std::filesystem::path make_output_dir(const std::string& dir);

}  // namespace snsim::studies
