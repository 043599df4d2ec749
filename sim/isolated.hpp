// Running one simulation per child process. SimGrid 3.32 cannot reset its clock or run two engines in one process
// (reference/simgrid-3.32.md), so commands that run many simulations (validate, later sweeps and studies) fork a
// child for each, before any engine exists in the parent, and read back what it printed.
#pragma once

#include <functional>
#include <string>

namespace snsim {

/// Runs `body` in a forked child and returns the text it returned. An InputError in the child is rethrown as an
/// InputError with the same message; any other failure (an exception, a crash, a non-zero exit) as
/// std::runtime_error naming it. Call only from a process that has not created a SimGrid engine.
std::string run_isolated(const std::function<std::string()>& body);

}  // namespace snsim
