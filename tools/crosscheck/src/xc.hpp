// Common pieces of snsim-crosscheck: error checks, clocks, statistics and the trace writer.
//
// The program writes one snsim-trace/1 file per timing method (validation/traces/README.md), so that each file's
// curves (test, variant, ranks along the size) hold one method only and `snsim validate` compares methods apart.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace xc {

inline constexpr const char* kVersion = "0.1.0";
inline constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

/// A failed CUDA (or library) call; what() names the call site.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string where(const std::source_location& at);

/// Throws Failure unless `status` is cudaSuccess; the message holds the call site and CUDA's own words.
inline void must(cudaError_t status, const char* what, std::source_location at = std::source_location::current()) {
  if (status != cudaSuccess)
    throw Failure(where(at) + ": " + what + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

/// After a <<<>>> launch: the launch error, if any.
inline void launched(const char* what, std::source_location at = std::source_location::current()) {
  must(cudaGetLastError(), what, at);
}

/// Host monotonic clock in seconds.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A deadline on the host clock: suites stop adding records once theirs has passed, so a capture always ends with
/// its files closed inside the device call.
class Deadline {
 public:
  explicit Deadline(double seconds_from_now) : end_(now_s() + seconds_from_now) {}
  bool passed() const { return now_s() > end_; }
  double left_s() const { return end_ - now_s(); }

 private:
  double end_;
};

/// Quantile with linear interpolation between order statistics (q in [0, 1]) of sorted values.
double quantile_sorted(const std::vector<double>& sorted, double q);

/// One field beyond the schema, already written as JSON text.
struct Extra {
  std::string key;
  std::string json;
};
std::string json_string(const std::string& text);
std::string json_number(double value);
Extra extra(std::string key, double value);
Extra extra(std::string key, std::int64_t value);
Extra extra(std::string key, int value);
Extra extra(std::string key, std::uint64_t value);
Extra extra(std::string key, const char* value);
Extra extra(std::string key, const std::string& value);
Extra extra_raw(std::string key, std::string json);

/// A measurement ready to be written: the statistics are computed from `samples` by the writer.
struct Result {
  std::string family, test, variant;
  std::vector<int> ranks;
  std::uint64_t bytes = 0;
  std::string unit = "s";
  std::string suffix;  // appended to the id after the method, e.g. the operand data of a GEMM
  std::vector<double> samples;
  std::vector<Extra> extras;
};

/// The trace files of one run: one per method, opened on first use, each with its header.
class TraceSet {
 public:
  TraceSet(std::string directory, std::string prefix, std::string header_json, std::size_t samples_cap);
  ~TraceSet();
  TraceSet(const TraceSet&) = delete;
  TraceSet& operator=(const TraceSet&) = delete;

  /// Writes `result` to the file of `method` (id: family/test/variant/ranks/bytes/method[-suffix]), flushed at once.
  /// A result with no samples is dropped with a note on stderr. `cap` overrides the samples kept in the file.
  void write(const std::string& method, Result result, std::size_t cap = 0);
  /// Closes every file with its completion line.
  void close();
  /// Adds a failure line for `family` to the file of `method` (the file stays incomplete).
  void fail(const std::string& method, const std::string& family, const std::string& error);

  std::size_t records() const;
  const std::string& directory() const { return directory_; }

 private:
  struct File {
    std::FILE* out = nullptr;
    std::size_t records = 0;
    bool failed = false;
  };
  File& file_of(const std::string& method);
  std::string directory_, prefix_, header_;
  std::size_t cap_;
  std::map<std::string, File> files_;
  std::map<std::string, int> ids_;  // duplicate ids get ~2, ~3 (a test run twice)
};

/// The header line shared by every file of a run (`method` is added per file).
std::string header_json(const std::vector<std::string>& argv, const std::string& nccl, const std::string& nvshmem);

}  // namespace xc
