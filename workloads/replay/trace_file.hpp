// A trace file's bytes, inflated when they are gzip (by content, not by name), with one error line
// for a file that is cut short or corrupt.
#pragma once

#include <string>

namespace snsim::workloads::replay {

/// `raw` (a trace file's bytes) gunzipped when it starts with gzip's magic, else as it is. An InputError "FILE:
/// truncated or corrupt gzip data (...)" when inflating fails or ends before the stream does.
std::string inflate_trace(std::string raw, const std::string& file);

/// An InputError "FILE: message" about a whole trace file (no line or column: traces are JSON or protobuf).
[[noreturn]] void fail_trace(const std::string& file, const std::string& message);

}  // namespace snsim::workloads::replay
