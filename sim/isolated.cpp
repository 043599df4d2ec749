#include "sim/isolated.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
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

/// A running child: its pid and the read end of its pipe.
struct Child {
  pid_t pid;
  int fd;
};

/// Forks a child that runs `body` and writes its tagged result into a pipe.
Child spawn(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);  // buffered output must not be written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // A parent killed (kill -9 of a sweep) takes its simulations with it instead of leaving them running.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // it died before prctl
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
  return {pid, fds[0]};
}

/// Reads what is available from `fd` into `text`; false once the child closed its end.
bool read_some(int fd, std::string& text) {
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
}

/// Reaps the child and turns its tagged text into its result (throwing its failure).
std::string finish(const Child& child, const std::string& text) {
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw std::runtime_error(fmt::format("the simulation process died of signal {}", WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    throw std::runtime_error(fmt::format("the simulation process exited with code {}", WEXITSTATUS(status)));
  if (text.front() == INPUT_ERROR) throw InputError(text.substr(1));
  if (text.front() == FAILURE) throw std::runtime_error(text.substr(1));
  return text.substr(1);
}

}  // namespace

std::size_t usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<std::size_t>(std::max(1, CPU_COUNT(&set)));
  return static_cast<std::size_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string run_isolated(const std::function<std::string()>& body) {
  const Child child = spawn(body);
  std::string text;
  while (read_some(child.fd, text)) {
  }
  return finish(child, text);
}

void run_isolated_stream(std::size_t count, std::size_t jobs, const std::function<std::string(std::size_t)>& body,
                         const std::function<bool(std::size_t, std::string, std::exception_ptr)>& done) {
  struct Running {
    Child child;
    std::size_t index;
    std::string text;
  };
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < count || !running.empty()) {
    while (next < count && running.size() < std::max<std::size_t>(jobs, 1)) {
      const std::size_t i = next++;
      running.push_back({spawn([&body, i] { return body(i); }), i, {}});
    }
    std::vector<pollfd> fds;
    for (const auto& r : running) fds.push_back({r.child.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    }
    for (std::size_t k = fds.size(); k-- > 0;) {
      if (fds[k].revents == 0) continue;
      Running& r = running[k];
      if (read_some(r.child.fd, r.text)) continue;
      std::string result;
      std::exception_ptr failure;
      try {
        result = finish(r.child, r.text);
      } catch (...) {
        failure = std::current_exception();
      }
      const std::size_t index = r.index;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      if (!done(index, std::move(result), failure)) next = count;  // start nothing more
    }
  }
}

std::vector<std::string> run_isolated_each(std::size_t count, std::size_t jobs,
                                           const std::function<std::string(std::size_t)>& body,
                                           const std::function<void(std::size_t)>& finished) {
  std::vector<std::string> results(count);
  std::optional<std::size_t> failed;  // the lowest index that failed
  std::exception_ptr failure;
  run_isolated_stream(count, jobs, body, [&](std::size_t i, std::string text, std::exception_ptr error) {
    if (error && (!failed || i < *failed)) {
      failed = i;
      failure = error;
    }
    if (!error) results[i] = std::move(text);
    if (finished) finished(i);
    return !failed;
  });
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace snsim
