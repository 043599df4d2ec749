// Captured measurements: the snsim trace format (docs/design.md#traces; full spec in validation/traces/README.md).
//
// A trace is one JSON Lines file: a header line, one line per measurement record, and a completion line
// `{"complete": true, "records": N}`. A capture cut short lacks the completion line; it is still readable and is
// marked incomplete. A capture whose family failed (a CUDA, NCCL or NVSHMEM error) says so on a line
// `{"incomplete": true, "family": F, "error": E, "records": N}` instead of the completion line (TraceFailure).
// Everything else that is wrong is an InputError naming "file:line: field: message".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace snsim::validation {

/// JSON that keeps the order of keys as written, so that extra fields round-trip unchanged.
using Json = nlohmann::ordered_json;

/// The schema name on the header line; a reader that sees another one refuses the file.
inline constexpr std::string_view trace_schema = "snsim-trace/1";

/// What kind of experiment a record comes from. The list is fixed: a new family is added here and to the
/// validation bounds together (docs/design.md#traces).
enum class Family { copy, latency, launch, jitter, collective, nvshmem, uvm, step, compute };

/// Every family, in the order docs/design.md#traces lists them.
std::span<const Family> all_families();
std::string_view to_string(Family family);
/// nullopt for a name that is not a family.
std::optional<Family> family_from_string(std::string_view name);
/// "collective, copy, jitter, ..." (sorted), for error messages.
std::string known_family_names();

/// The unit of a record's statistics: time (seconds) or rate (bytes per second, SI).
enum class MeasureUnit { seconds, bytes_per_second };
/// "s" or "B/s", as written in the `unit` field.
std::string_view to_string(MeasureUnit unit);

/// One GPU of the captured host.
struct TraceGpu {
  int index = 0;
  std::string name;
  std::string pci;              ///< PCI bus id as the driver prints it, e.g. "00000000:18:00.0"
  Json extra = Json::object();  ///< further properties the probe records (sms, memory_bytes, ...), kept as read
  friend bool operator==(const TraceGpu&, const TraceGpu&) = default;
};

/// The first line of a trace: where and with what software it was captured. Strings the source does not know
/// are empty (importers cannot tell the driver version from an nccl-tests log, for instance); in a file they may
/// also be written as null (the probe writes "nccl": null when built without NCCL), which reads as empty.
struct TraceHeader {
  std::string probe;  ///< version of snsim-probe, empty for imported traces
  std::string host;
  std::vector<TraceGpu> gpus;
  std::string driver;
  std::string cuda;
  std::string nccl;
  std::string nvshmem;
  std::string topo;             ///< `nvidia-smi topo -m` text
  Json env = Json::object();    ///< environment variables that change results (NCCL_*, NVSHMEM_*, ...)
  std::string started;          ///< ISO 8601
  Json extra = Json::object();  ///< header fields beyond the schema (importers add "source", "source_version")
  friend bool operator==(const TraceHeader&, const TraceHeader&) = default;
};

/// One measurement: a test run at one size on some ranks, summarised by order statistics in `unit`.
struct TraceRecord {
  std::string id;  ///< unique within its trace
  Family family = Family::copy;
  std::string test;        ///< e.g. "device_to_device_memcpy_read_ce", "all_reduce_perf"
  std::string variant;     ///< e.g. "round_trip", "in_place", "total"; may be empty
  std::vector<int> ranks;  ///< GPU indices involved, in the order the test names them (source first)
  Bytes bytes{0};          ///< transfer size; 0 where size does not apply (launch overhead, pointer chase)
  std::uint64_t reps = 1;  ///< timed repetitions behind the statistics
  MeasureUnit unit = MeasureUnit::seconds;
  // Order statistics in `unit`; a record holds min <= p01 <= median <= p99 <= max.
  double median = 0;
  double p01 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
  std::vector<double> samples;  ///< the individual measurements in `unit`, if kept; empty for most imports
  Json extra = Json::object();  ///< further fields (algbw, busbw, engine, direction, ...), kept as read
  int line = 0;                 ///< line in the file it was read from; 0 when built in memory

  /// `value` in human units ("1.5 us", "450 GB/s").
  std::string format_value(double value) const;
  /// Equality ignores `line`: the same measurement read from two places is the same record.
  friend bool operator==(const TraceRecord& a, const TraceRecord& b);
};

/// The data rate a record shows, for summaries and plots: its median if measured in B/s; else its `bw`,
/// `sum_bw` (both directions summed) or `algbw` extra field; else, for a timed copy or uvm record that moved
/// bytes, bytes / median time. nullopt for records that measure no transfer (latency, launch, jitter).
std::optional<BytesPerSecond> record_rate(const TraceRecord& record);

/// Whether `key` is one of the record's own fields (id ... samples): an importer's extra field may not take one of
/// these names, or the trace it writes would not read back.
bool is_record_field(std::string_view key);

/// A numeric extra field of the record, or `fallback`.
double extra_number(const TraceRecord& record, const char* key, double fallback = 0);

/// A family whose capture failed part way: the probe's line `{"incomplete": true, "family": F, "error": E,
/// "records": N}`, written when a CUDA, NCCL or NVSHMEM call failed (N: records of the whole file so far). Records
/// before it are valid; with the probe's --keep-going, other families' records may follow it.
struct TraceFailure {
  std::string family;  ///< as the probe names it (its families are the trace families)
  std::string error;   ///< "copy.cu:120: cudaMemcpyAsync(...) failed: cudaErrorIllegalAddress: ..."
  int line = 0;        ///< line in the file it was read from; 0 when built in memory
  friend bool operator==(const TraceFailure&, const TraceFailure&) = default;
};

/// A whole trace file, read or about to be written.
struct Trace {
  std::string source;  ///< file name used in messages
  TraceHeader header;
  std::vector<TraceRecord> records;
  bool complete = false;               ///< the completion line was present (or, for imports, the log ended normally)
  std::vector<TraceFailure> failures;  ///< families whose capture failed; a trace with any is incomplete
  std::vector<std::string> notes;      ///< remarks that are not errors ("incomplete: ..."), one line each
};

/// Reads and validates a trace file. Throws InputError ("file:line: field: message") on anything malformed; an
/// incomplete trace is returned with `complete == false` and a note saying so.
Trace read_trace(const std::filesystem::path& file);

/// Same as read_trace, from text already in memory; `source_name` is what messages call the file.
Trace parse_trace(std::string_view text, std::string_view source_name);

/// The JSON Lines text of `trace`: header, records, then the failure lines, or the completion line if
/// `trace.complete`.
std::string write_trace(const Trace& trace);

/// Writes write_trace(trace) to `file`. Throws InputError if the file cannot be written.
void write_trace_file(const Trace& trace, const std::filesystem::path& file);

/// How far (relative) a sample may lie outside [min, max]: writers may print samples with fewer digits than the
/// statistics (the probe uses 7 significant digits for samples, 9 for statistics), and rounding must not make a
/// good trace invalid.
inline constexpr double sample_rounding = 1e-6;

/// Checks a record's values: non-empty id and test, ranks >= 0, reps >= 1, finite non-negative statistics in
/// order, samples within [min, max] (give or take sample_rounding). Throws InputError at `where` naming the field.
/// Importers call it too, so that imported and captured records obey the same rules.
void check_record(const TraceRecord& record, const SourceLocation& where);

}  // namespace snsim::validation
