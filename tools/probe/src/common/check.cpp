#include "check.h"

namespace probe {

void throw_call_failure(const char* file, int line, const char* call, const std::string& reason) {
  // Keep only the file name: the message should not carry the build machine's directories.
  std::string path(file);
  const auto slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  throw ProbeError(name + ":" + std::to_string(line) + ": " + call + " failed: " + reason);
}

}  // namespace probe
