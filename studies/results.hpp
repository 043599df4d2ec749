// A sweep's results store: DIR/results.jsonl, one JSON line per finished run, appended as runs end (one write() and
// an fsync per line, so that a kill -9 tears at most the last line), read back to resume, and merged across shards.
//
// A line: {"key", "point", "trial", "seed", "labels", "outcome", "metrics", "wall_s"}.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/files.hpp"

namespace snsim::studies {

/// One line of a results file, where it was read.
struct ResultLine {
  nlohmann::json value;
  std::string where;  // "DIR/results.jsonl:3"
};

/// Reads a results file: a corrupted line is an InputError naming file:line, except a torn last line (an
/// interrupted write), which is dropped with a warning on stderr. `valid_bytes` receives the length of the good
/// prefix (to cut the torn line off before appending). A missing file has no lines.
std::vector<ResultLine> read_results(const std::string& path, std::size_t* valid_bytes = nullptr);

/// Joins results: exact duplicates (the same key and results, wall time aside) are dropped, the same key with
/// different results is an InputError naming both lines. Sorted by point, then trial.
std::vector<nlohmann::json> merge_results(const std::vector<ResultLine>& lines, std::size_t* duplicates = nullptr);

/// The results file a command line names: the file itself, or results.jsonl inside a folder.
std::string results_path(const std::string& input);

/// The results file of a running sweep, which is the sweep's alone while it runs: a second sweep on the same folder
/// would run the same points twice.
class ResultsLog {
 public:
  /// Opens `path` for appending and takes it; an InputError when another sweep holds it. A torn last line is cut
  /// off first (`valid_bytes`: what read_results kept), so that the next line starts on a line of its own.
  ResultsLog(const std::string& path, std::size_t valid_bytes);
  /// Appends one result line, durably.
  void append(const nlohmann::json& line);

 private:
  AppendFile file_;
};

}  // namespace snsim::studies
