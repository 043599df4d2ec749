// Errors that reach users. Library code throws; only `main()` in tools/ catches and maps to exit codes
// (docs/hardening.md#exit-codes: 2 bad input, 3 internal error, 4 a simulated failure of the system).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace snsim {

/// Where in a user's input something is. Lines and columns count from 1; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  /// "file:line:col", "file:line" or "file", whichever is known.
  std::string to_string() const;
};

/// A problem with what the user gave us (scenario, trace, command line, sweep plan). Exit code 2.
/// what() is one line: "file:line:col: key: message" (see format_input_error).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run that ended because the simulated system failed (a lost GPU stopped the job): a result, not a bug and not
/// bad input. Exit code 4; what() is the run's outcome ("failed: GPU 4 lost at 3 ms") and where it came from.
class SimulatedFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The one format of every input error: "file:line:col: key: message"; the key part is left out when empty.
std::string format_input_error(const SourceLocation& where, std::string_view key, std::string_view message);

/// Throws an InputError in the one format.
[[noreturn]] void throw_input_error(const SourceLocation& where, std::string_view key, std::string_view message);

}  // namespace snsim
