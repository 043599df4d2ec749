#include "sim/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace snsim {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& path, std::string_view message) {
  throw_input_error({path.string(), 0, 0}, "", message);
}

/// What a file that is not regular is, for the message that refuses it; empty when it is a regular file.
std::string_view special_kind(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISFIFO(mode)) return "a FIFO or pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

[[noreturn]] void refuse_kind(const fs::path& path, std::string_view kind) {
  fail(path, fmt::format("not a regular file ({}); expected a regular file", kind));
}

/// Closes a descriptor when it goes out of scope.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file(const fs::path& path, Bytes limit) {
  // The kind first, from the path: opening a FIFO that no one writes to would block for ever.
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) fail(path, "cannot open the file");
  if (const auto kind = special_kind(status.st_mode); !kind.empty()) refuse_kind(path, kind);
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) fail(path, "cannot open the file");
  if (::fstat(file.fd, &status) != 0) fail(path, fmt::format("cannot read the file: {}", std::strerror(errno)));
  if (const auto kind = special_kind(status.st_mode); !kind.empty()) refuse_kind(path, kind);  // replaced since
  const auto too_large = [&] {
    fail(path, fmt::format("the file is larger than {}, the most snsim reads from one file", limit));
  };
  if (static_cast<std::uint64_t>(status.st_size) > limit.count()) too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(status.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, fmt::format("cannot read the file: {}", std::strerror(errno)));
    }
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > limit.count()) too_large();  // it grew while being read
  }
  return text;
}

std::optional<std::string> read_file_if_exists(const fs::path& path, Bytes limit) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return read_file(path, limit);
}

void write_file(const fs::path& path, std::string_view text) {
  // Over a directory or a device there is no file to replace; a rename would fail or, for a device, replace the
  // device node.
  if (struct stat status{}; ::stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode))
    fail(path, "cannot write the file");
  // Beside the file, so that the rename stays within one filesystem; named after this process, which writes one
  // file at a time.
  fs::path temporary = path;
  temporary.replace_filename(fmt::format(".{}.tmp-{}", path.filename().string(), ::getpid()));
  bool written = false;
  {
    const Descriptor file{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)};
    if (file.fd >= 0) {
      std::size_t done = 0;
      while (done < text.size()) {
        const ssize_t n = ::write(file.fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      written = done == text.size() && ::fsync(file.fd) == 0;
    }
  }
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    fail(path, "cannot write the file");
  }
}

AppendFile::AppendFile(const fs::path& path)
    : path_{path}, fd_{::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)} {
  if (fd_ < 0) fail(path, fmt::format("cannot open for appending: {}", std::strerror(errno)));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool AppendFile::try_lock() {
  return ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
}

void AppendFile::truncate(std::size_t size) {
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || static_cast<std::size_t>(status.st_size) <= size) return;
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    throw std::runtime_error(
        fmt::format("{}: cannot cut the file to {} bytes: {}", path_.string(), size, std::strerror(errno)));
}

void AppendFile::append(std::string_view text) {
  const ssize_t n = ::write(fd_, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    throw std::runtime_error(
        fmt::format("{}: cannot append: {}", path_.string(), n < 0 ? std::strerror(errno) : "short write"));
  if (::fsync(fd_) != 0) throw std::runtime_error(fmt::format("{}: fsync: {}", path_.string(), std::strerror(errno)));
}

}  // namespace snsim
