// What the commands and the studies share on their way in and out: the scenario with the command line's overrides
// applied, and the output folder. Every failure is an InputError naming what it could not do.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/files.hpp"

namespace snsim::studies {

/// Applies, in this order, every `--set key.path=value`, then `--seed` and `--params` (a parameter set replacing the
/// scenario's models.params; a path there is relative to the working directory, as the option's origin says).
void apply_overrides(ConfigDocument& doc, const std::vector<std::string>& sets, const std::optional<std::string>& seed,
                     const std::optional<std::string>& params = std::nullopt);

/// Creates `dir` and its parents (the value of `--out`).
std::filesystem::path make_output_dir(const std::string& dir);

/// A command's `--out` folder, held while the command writes it: it holds one run's files only, and one run at a
/// time. Opening it creates it, takes its lock (`.snsim.lock`, flock: released when the process ends, however it
/// ends) or refuses when another run holds it, and removes the files that an earlier run of snsim wrote there, as
/// listed in `.snsim-files`; nothing that snsim did not write is removed. Every file written through it is listed.
class OutputDir {
 public:
  explicit OutputDir(const std::string& dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  /// Replaces `name` (relative to the folder: "report.json", "bsp/report.json") with `text`, atomically, and lists
  /// it as snsim's.
  void write(const std::string& name, std::string_view text);

 private:
  std::filesystem::path dir_;
  std::unique_ptr<AppendFile> lock_;     // .snsim.lock, held
  std::unique_ptr<AppendFile> written_;  // .snsim-files: one name a line
};

}  // namespace snsim::studies
