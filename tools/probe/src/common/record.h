// One trace record (one measurement), its summary statistics, and the sink that streams records out.
//
// Records are serialised and written the moment they are measured, one line each, so a capture that dies part
// way keeps every record before the failure.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace probe {

// Order statistics over a sample set. Percentiles interpolate linearly between order statistics (the
// "linear" method of numpy.percentile), so p01/p99 of a small set stay within [min, max].
struct Summary {
  double median = 0, p01 = 0, p99 = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> samples);
double percentile_sorted(const std::vector<double>& sorted, double fraction);

// Extra fields: numbers, strings, and arrays of either (per-window series, shape lists, kernel names).
using ExtraValue = std::variant<double, std::int64_t, std::string, std::vector<double>, std::vector<std::string>>;

struct Record {
  std::string family;   // copy | latency | launch | jitter | collective | nvshmem | uvm | step | compute
  std::string test;     // e.g. ce_peer
  std::string variant;  // e.g. single, pipelined, round_trip
  std::vector<int> ranks;
  std::uint64_t bytes = 0;
  std::string unit;  // "s" or "B/s"
  std::vector<double> samples;
  // Appended to the id after the bytes when one (test, variant, ranks, bytes) has several records, e.g. "b8".
  std::string id_suffix;
  std::vector<std::pair<std::string, ExtraValue>> extras;

  Record& extra(std::string key, ExtraValue value) {
    extras.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  // "family/test/variant/r0-r1/bytes[/suffix]": stable across captures of the same configuration.
  std::string id() const;
};

// Where a rank writes its records: a file descriptor (a pipe to the parent process, which owns the trace file).
class RecordSink {
 public:
  RecordSink(int fd, std::size_t samples_cap) : fd_(fd), samples_cap_(samples_cap) {}

  // Summarises, serialises and writes one record as one line. Samples beyond the cap are dropped from the
  // line (statistics use all of them; `reps` counts all of them). Throws on a duplicate id.
  void emit(const Record& record);
  // Also echoes a one-line human summary to stderr when verbose.
  void set_verbose(bool verbose) { verbose_ = verbose; }
  std::size_t emitted() const { return ids_.size(); }

 private:
  int fd_;
  std::size_t samples_cap_;
  bool verbose_ = true;
  std::set<std::string> ids_;
};

// The line that ends a capture whose family failed, in place of the completion line (validation/trace.hpp):
// {"incomplete": true, "family": F, "error": E, "records": N}, N the records written to the file before it.
std::string failure_line(const std::string& family, const std::string& error, std::uint64_t records);

// Writes all of `data` to `fd`, retrying on short writes and EINTR. Throws ProbeError on failure.
void write_all(int fd, const std::string& data);

}  // namespace probe
