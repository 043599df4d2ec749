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

namespace {
constexpr const char* LOCK_FILE = ".snsim.lock";
constexpr const char* WRITTEN_FILE = ".snsim-files";

/// A name that `.snsim-files` may list: relative, inside the folder, no way out of it.
bool inside(const std::filesystem::path& name) {
  if (name.empty() || name.is_absolute()) return false;
  for (const auto& part : name)
    if (part == "..") return false;
  return true;
}
}  // namespace

OutputDir::OutputDir(const std::string& dir) : dir_{make_output_dir(dir)} {
  namespace fs = std::filesystem;
  lock_ = std::make_unique<AppendFile>(dir_ / LOCK_FILE);
  if (!lock_->try_lock())
    throw_input_error({dir, 0, 0}, "--out",
                      fmt::format("another snsim run is writing into this folder (it holds {}); wait for it to end, "
                                  "or give another folder",
                                  (dir_ / LOCK_FILE).string()));
  // What an earlier run wrote goes, so that no stale file (a timeline.json this run does not write) sits beside this
  // run's; only regular files, and only those listed.
  if (const auto listed = read_file_if_exists(dir_ / WRITTEN_FILE)) {
    std::size_t start = 0;
    while (start < listed->size()) {
      auto end = listed->find('\n', start);
      if (end == std::string::npos) end = listed->size();
      const fs::path name = listed->substr(start, end - start);
      start = end + 1;
      std::error_code ec;
      if (inside(name) && fs::is_regular_file(fs::symlink_status(dir_ / name, ec))) fs::remove(dir_ / name, ec);
    }
  }
  written_ = std::make_unique<AppendFile>(dir_ / WRITTEN_FILE);
  written_->truncate(0);
}

OutputDir::~OutputDir() = default;

void OutputDir::write(const std::string& name, std::string_view text) {
  const std::filesystem::path file = dir_ / name;
  if (file.has_parent_path()) make_output_dir(file.parent_path().string());
  written_->append(name + "\n");  // listed first: a run killed while writing still has it removed next time
  write_file(file, text);
}

}  // namespace snsim::studies
