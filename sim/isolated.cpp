#include "sim/isolated.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace snsim {
namespace {

// The child's first byte says how to read the rest.
constexpr char OK = 'o';
constexpr char INPUT_ERROR = 'i';
constexpr char FAILURE = 'f';

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);  // buffered output must not be written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = OK + body();
    } catch (const InputError& e) {
      out = INPUT_ERROR + std::string(e.what());
    } catch (const std::exception& e) {
      out = FAILURE + std::string(e.what());
    }
    write_all(fds[1], out);
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(0);  // no atexit handlers: they belong to the parent (and SimGrid's would run at exit otherwise)
  }
  ::close(fds[1]);
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw std::runtime_error(fmt::format("the simulation process died of signal {}", WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    throw std::runtime_error(fmt::format("the simulation process exited with code {}", WEXITSTATUS(status)));
  if (text.front() == INPUT_ERROR) throw InputError(text.substr(1));
  if (text.front() == FAILURE) throw std::runtime_error(text.substr(1));
  return text.substr(1);
}

}  // namespace snsim
