// Running one simulation per child process. SimGrid 3.32 cannot reset its clock or run two engines in one process
// (docs/simgrid.md#one-simulation-per-process), so commands that run many simulations (validate, later sweeps and
// studies) fork a child for each, before any engine exists in the parent, and read back what it printed.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace snsim {

/// The CPUs this process may run on (its affinity mask): the default number of children at a time.
std::size_t usable_cpus();

/// Runs `body` in a forked child and returns the text it returned. An InputError in the child is rethrown as an
/// InputError with the same message; any other failure (an exception, a crash, a non-zero exit) as
/// std::runtime_error naming it. Call only from a process that has not created a SimGrid engine.
std::string run_isolated(const std::function<std::string()>& body);

/// Runs body(0) ... body(count - 1), each in its own forked child, at most `jobs` at a time, and hands each child's
/// result to `done(i, text, failure)` in this process as child i ends (in the order they end): `failure` is null, or
/// what run_isolated would have thrown. `done` returns false to start no further child (the running ones finish).
/// Children die with this process (a sweep killed with SIGKILL leaves no simulation running). Same precondition.
void run_isolated_stream(std::size_t count, std::size_t jobs, const std::function<std::string(std::size_t)>& body,
                         const std::function<bool(std::size_t, std::string, std::exception_ptr)>& done);

/// Runs body(0) ... body(count - 1), each in its own forked child, at most `jobs` at a time, and returns what they
/// returned, in index order (so the result does not depend on `jobs`). `finished(i)` is called in this process as
/// child i ends. On a failure no further child starts; once the running ones have ended, the failure of the lowest
/// index is rethrown as run_isolated would. Same precondition as run_isolated.
std::vector<std::string> run_isolated_each(std::size_t count, std::size_t jobs,
                                           const std::function<std::string(std::size_t)>& body,
                                           const std::function<void(std::size_t)>& finished = {});

}  // namespace snsim
