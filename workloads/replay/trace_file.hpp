// Reading a trace file: the whole file, inflated when it is gzip (by content, not by name), with one error line
// for a file that is cut short or corrupt.
#pragma once

#include <filesystem>
#include <string>

namespace snsim::workloads::replay {

/// The bytes of `path`, gunzipped when they start with gzip's magic. An InputError "PATH: truncated or corrupt gzip
/// data (...)" when inflating fails or ends before the stream does.
std::string read_trace_file(const std::filesystem::path& path);

}  // namespace snsim::workloads::replay
