#include "process.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

namespace probe {

void RankContext::emit(const Record& record) const {
  if (sink) sink->emit(record);
}

void RankContext::send_line(const std::string& line) const {
  if (record_fd >= 0) write_all(record_fd, line + "\n");
}

void RankContext::share_blob(void* data, std::size_t size) const {
  PROBE_REQUIRE(size <= 4096, "blob too large for an atomic pipe write");
  if (nranks == 1) return;
  if (rank == 0) {
    // One copy per reader; each write of <= PIPE_BUF bytes is atomic, so each reader takes exactly one copy.
    for (int peer = 1; peer < nranks; ++peer) {
      const std::string copy(static_cast<const char*>(data), size);
      write_all(blob_write_fd, copy);
    }
    return;
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(blob_read_fd, static_cast<char*>(data) + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw ProbeError("rank " + std::to_string(rank) + ": rank 0 never shared its unique id");
    done += static_cast<std::size_t>(got);
  }
}

namespace {

[[noreturn]] void run_child(int rank, int nranks, const Options& options, const RankBody& body, int record_fd,
                            int blob_read_fd, int blob_write_fd, int error_fd, pid_t parent) {
  // Die with the parent (e.g. when `timeout` kills it), so no rank keeps a GPU busy.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(3);

  RecordSink sink(record_fd, options.samples_cap);
  sink.set_verbose(options.verbose);
  RankContext context;
  context.rank = rank;
  context.nranks = nranks;
  context.options = &options;
  context.sink = rank == 0 ? &sink : nullptr;
  context.record_fd = record_fd;
  context.blob_read_fd = blob_read_fd;
  context.blob_write_fd = blob_write_fd;
  int status = 0;
  try {
    body(context);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "snsim-probe: rank %d: %s\n", rank, error.what());
    // One line to the parent, for the trace's failure line; a single write of < PIPE_BUF bytes is atomic.
    std::string line = "rank " + std::to_string(rank) + ": " + error.what();
    line = line.substr(0, 4000);
    std::replace(line.begin(), line.end(), '\n', ' ');
    line += '\n';
    // If even this write fails there is nothing left to do: the exit status still says the rank failed.
    [[maybe_unused]] const ssize_t written = ::write(error_fd, line.data(), line.size());
    status = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: the forked copy must not run the parent's atexit handlers or flush the parent's buffers again.
  ::_exit(status);
}

std::string describe_status(int rank, int status) {
  if (WIFEXITED(status))
    return "rank " + std::to_string(rank) + " exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "rank " + std::to_string(rank) + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "rank " + std::to_string(rank) + " ended abnormally";
}

}  // namespace

bool run_ranks(int nranks, const Options& options, const RankBody& body, const LineHandler& on_line,
               std::string* failure) {
  int record_pipe[2];
  int blob_pipe[2];
  int error_pipe[2];  // each failing rank's error message, one line
  if (::pipe(record_pipe) != 0 || ::pipe(blob_pipe) != 0 || ::pipe(error_pipe) != 0)
    throw ProbeError(std::string("pipe() failed: ") + std::strerror(errno));

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  std::vector<pid_t> children(nranks, -1);
  for (int rank = 0; rank < nranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) throw ProbeError(std::string("fork() failed: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(record_pipe[0]);
      ::close(error_pipe[0]);
      int record_fd = record_pipe[1];
      if (rank != 0) {
        ::close(record_fd);
        record_fd = -1;
      }
      // Rank 0 only writes the blob pipe; the others only read it.
      int blob_read = blob_pipe[0], blob_write = blob_pipe[1];
      if (rank == 0) {
        ::close(blob_read);
        blob_read = -1;
      } else {
        ::close(blob_write);
        blob_write = -1;
      }
      run_child(rank, nranks, options, body, record_fd, blob_read, blob_write, error_pipe[1], parent);
    }
    children[rank] = pid;
  }
  ::close(record_pipe[1]);
  ::close(error_pipe[1]);
  ::close(blob_pipe[0]);
  ::close(blob_pipe[1]);

  std::string pending;
  bool pipe_open = true;
  int alive = nranks;
  bool ok = true;
  std::vector<char> buffer(1 << 16);
  while (pipe_open || alive > 0) {
    if (pipe_open) {
      pollfd poller{record_pipe[0], POLLIN, 0};
      const int ready = ::poll(&poller, 1, 200);
      if (ready > 0) {
        const ssize_t got = ::read(record_pipe[0], buffer.data(), buffer.size());
        if (got > 0) {
          pending.append(buffer.data(), static_cast<std::size_t>(got));
          std::size_t newline;
          while ((newline = pending.find('\n')) != std::string::npos) {
            on_line(pending.substr(0, newline));
            pending.erase(0, newline + 1);
          }
        } else if (got == 0 || errno != EINTR) {
          pipe_open = false;  // rank 0 is gone; a partial line left in `pending` is dropped on purpose
        }
      }
    } else {
      ::usleep(50 * 1000);
    }
    for (int rank = 0; rank < nranks; ++rank) {
      if (children[rank] < 0) continue;
      int status = 0;
      const pid_t done = ::waitpid(children[rank], &status, WNOHANG);
      if (done != children[rank]) continue;
      children[rank] = -1;
      --alive;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      if (ok && failure) *failure = describe_status(rank, status);
      ok = false;
      // One rank failed: the others may block forever in a collective, so end them now.
      for (pid_t other : children)
        if (other > 0) ::kill(other, SIGKILL);
    }
  }
  ::close(record_pipe[0]);
  // Every rank has exited, so the error pipe holds all it will: the first line names the call that failed.
  std::string errors;
  for (ssize_t got; (got = ::read(error_pipe[0], buffer.data(), buffer.size())) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    errors.append(buffer.data(), static_cast<std::size_t>(got));
  }
  ::close(error_pipe[0]);
  if (!ok && failure && !errors.empty()) *failure = errors.substr(0, errors.find('\n'));
  return ok;
}

}  // namespace probe
