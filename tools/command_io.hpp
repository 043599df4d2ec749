// What the subcommands share on their way in and out: the scenario with the command line's overrides applied, and
// the output files. Every failure is an InputError naming what it could not do.
#pragma once

#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/config.hpp"
#include "sim/error.hpp"

namespace snsim::tools {

/// Applies, in this order, every `--set key.path=value`, then `--seed` and `--params` (a parameter set replacing the
/// scenario's models.params; a path there is relative to the working directory, as the option's origin says).
void apply_overrides(ConfigDocument& doc, const std::vector<std::string>& sets, const std::optional<std::string>& seed,
                     const std::optional<std::string>& params = std::nullopt);

/// Creates `dir` and its parents (the value of `--out`).
std::filesystem::path make_output_dir(const std::string& dir);

/// Writes `text` to `path`, replacing the file.
void write_file(const std::filesystem::path& path, const std::string& text);

/// Runs the subcommand `snsim NAME`, turning exceptions into design.md's exit codes: an input error prints its one
/// line and gives 2, anything else is an internal error (3). Standard output is flushed first, so that the error
/// comes after whatever the command printed.
template <class Command>
int guarded(const char* name, Command command) {
  try {
    return command();
  } catch (const InputError& e) {
    std::cout.flush();
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << fmt::format("snsim {}: internal error: {}\n", name, e.what());
    return 3;
  }
}

}  // namespace snsim::tools
