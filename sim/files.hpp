// Reading and writing the files users name (scenarios, parameter files, results, reports): one place for the error
// checks, so that every command words a file it cannot use the same way ("PATH: cannot open the file").
//
// Only regular files are read, their kind checked before they are opened: a directory reads as nothing, a device
// (a terminal, /dev/zero) may never end and a FIFO with no writer blocks for ever, so each is refused with one line
// instead; and no file larger than MAX_INPUT_FILE is read whole. Writes replace a file atomically (a temporary file
// beside it, flushed to disk, renamed over it), so that a reader never sees half a report; appends (AppendFile) go out
// as one write() each and are flushed before the next, so that a process killed part way leaves at most its last line
// torn.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace snsim {

/// The most snsim reads from one input file: 250x the largest trace in validation/traces/ (4 MiB), far above any
/// scenario; what is larger is refused before it is read, not read until memory runs out.
inline constexpr Bytes MAX_INPUT_FILE{Bytes{1} * (std::uint64_t{1} << 30)};

/// The whole of `path`. An InputError "PATH: cannot open the file" when it cannot be opened, "PATH: not a regular
/// file (a directory); expected a regular file" (or a device, a FIFO or pipe, a socket) when it is not one, "PATH:
/// the file is larger than 1 GiB, ..." beyond `limit`, "PATH: cannot read the file: why" when reading fails part way.
std::string read_file(const std::filesystem::path& path, Bytes limit = MAX_INPUT_FILE);

/// As read_file, or nullopt when nothing is at `path`.
std::optional<std::string> read_file_if_exists(const std::filesystem::path& path, Bytes limit = MAX_INPUT_FILE);

/// Replaces `path` with `text`, atomically. An InputError "PATH: cannot write the file" when it cannot (also when
/// `path` is a directory or a device).
void write_file(const std::filesystem::path& path, std::string_view text);

/// A file that one writer at a time appends to, each append durable before the next (a sweep's results).
class AppendFile {
 public:
  /// Opens `path` for appending, creating it; an InputError "PATH: cannot open for appending: why" otherwise.
  explicit AppendFile(const std::filesystem::path& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  /// Takes the file's exclusive lock (flock) without waiting; false when another process holds it. The lock goes
  /// with the file's closing, and with the process.
  bool try_lock();
  /// Cuts the file to its first `size` bytes (a torn last line off) when it is longer.
  void truncate(std::size_t size);
  /// Appends `text` with one write() and waits for it to reach the disk (fsync).
  void append(std::string_view text);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace snsim
