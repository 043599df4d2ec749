// Importers: other tools' benchmark output read into snsim trace records (validation/traces/README.md says how
// each format maps). Every importer validates what it builds with check_record, so an imported trace obeys the
// same rules as a captured one; values are converted to SI units (GB/s -> B/s x1e9, us -> s x1e-6).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "validation/trace.hpp"

namespace snsim::validation {

/// The formats import_any recognises by content.
enum class TraceFormat {
  snsim_trace,            ///< our own JSON Lines (docs/design.md#traces)
  nccl_tests,             ///< all_reduce_perf & co., text output
  nccl_tests_json,        ///< all_reduce_perf & co., -J JSON output (nccl-tests 2.17.3 and later)
  nvbandwidth_text,       ///< nvbandwidth, plain-text output
  nvbandwidth_json,       ///< nvbandwidth -j
  p2p_bandwidth_latency,  ///< cuda-samples p2pBandwidthLatencyTest
  nvshmem_perftest,       ///< NVSHMEM perftest tables or "&&&& PERF" lines
};

/// A short human name: "nccl-tests", "nvbandwidth (JSON)", ...
std::string_view to_string(TraceFormat format);
/// All formats' names, for "unknown format" messages.
std::string known_format_names();

/// What the user tells an import that the file itself may not say.
struct ImportOptions {
  /// The nccl-tests collective ("all_reduce", "all_gather_perf", ...), for logs that do not name it: used when the
  /// log prints no "# Collective test starting:" line; a log that names another one is an error.
  std::string collective;
};

/// Which format `text` is in, judged by content alone; nullopt if none fits.
std::optional<TraceFormat> sniff_format(std::string_view text);

/// Reads `file` in whatever known format it is in. Throws InputError for unknown content (listing the known
/// formats) and for malformed content ("file:line: field: message").
Trace import_any(const std::filesystem::path& file, const ImportOptions& options = {});
/// Same, from text in memory; `source_name` is what messages call the file.
Trace import_text(std::string_view text, std::string_view source_name, const ImportOptions& options = {});

// One function per format, for callers that know the format already. `source_name` names the file in messages.
Trace import_nccl_tests(std::string_view text, std::string_view source_name);
Trace import_nccl_tests_json(std::string_view text, std::string_view source_name);
// The same, told what the file may not say (ImportOptions::collective).
Trace import_nccl_tests_with_options(std::string_view text, std::string_view source_name, const ImportOptions& options);
Trace import_nccl_tests_json_with_options(std::string_view text, std::string_view source_name,
                                          const ImportOptions& options);
Trace import_nvbandwidth_text(std::string_view text, std::string_view source_name);
Trace import_nvbandwidth_json(std::string_view text, std::string_view source_name);
Trace import_p2p_bandwidth_latency(std::string_view text, std::string_view source_name);
Trace import_nvshmem_perftest(std::string_view text, std::string_view source_name);

}  // namespace snsim::validation
