// Small helpers shared by the importers: lines with their numbers, words, numbers that fail with file:line, and
// the common shape of an imported trace and record.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "validation/trace.hpp"

namespace snsim::validation::detail {

/// One line of a text file and its number (from 1).
struct TextLine {
  int number = 0;
  std::string_view text;
};

/// A line without what a job launcher put in front of it: Open MPI's `--tag-output` ("[1,0]<stdout>:"), Intel MPI's
/// and MPICH's `-prepend-rank` ("[0] "), Slurm's `srun --label` ("0: ", "12: "). `rank` is the launcher's rank.
struct Unprefixed {
  std::string_view text;
  std::optional<int> rank;
};
Unprefixed strip_launcher_prefix(std::string_view line);

/// The lines of `text`, without line ends ("\n" or "\r\n"). Text that is not UTF-8 is an InputError naming the line
/// in `source_name`: what the importers take from it ends up in JSON strings, which must be UTF-8.
std::vector<TextLine> text_lines(std::string_view text, std::string_view source_name);
std::string_view trim(std::string_view text);
/// Words separated by spaces or tabs.
std::vector<std::string_view> split_words(std::string_view text);
bool is_unsigned_integer(std::string_view word);
/// A finite decimal number, or nullopt.
std::optional<double> to_number(std::string_view word);

/// `word` as a number; otherwise an InputError at `where`: "key: expected a number, found 'word'".
double number_at(std::string_view word, const SourceLocation& where, std::string_view key);
/// `word` as a whole number >= 0; otherwise an InputError at `where`.
std::uint64_t count_at(std::string_view word, const SourceLocation& where, std::string_view key);

/// `word` as a GPU index (a whole number that fits an int); otherwise an InputError at `where`.
int index_at(std::string_view word, const SourceLocation& where, std::string_view key);

/// `NAME=value` words of a command line or environment dump whose name starts with one of `prefixes` ("NCCL_"), in
/// order; quotes around the value are removed.
std::vector<std::pair<std::string, std::string>> assignments(std::string_view text,
                                                             std::initializer_list<std::string_view> prefixes);

/// `text` parsed as JSON; malformed JSON, a number beyond a double (1e999) included, is an InputError at `file`.
Json parse_json_at(std::string_view text, const SourceLocation& file);

/// An empty imported trace: the header names the source format; everything the source does not say is empty.
Trace imported_trace(std::string_view source_name, std::string_view format_name);

/// A record built from one reported value. The tools print one statistic per measurement (a mean or a median),
/// so every order statistic takes that value, `samples` stays empty and the extra field `statistic` says which.
struct SingleValue {
  Family family = Family::copy;
  std::string test;
  std::string variant;
  std::vector<int> ranks;
  Bytes bytes{0};
  std::uint64_t reps = 1;
  MeasureUnit unit = MeasureUnit::seconds;
  double value = 0;            ///< already in SI units
  std::string_view statistic;  ///< "mean" or "median"
};

/// Collects imported records: gives each a unique id, checks it, and remembers where it came from.
class RecordCollector {
 public:
  explicit RecordCollector(Trace& trace) : trace_{trace} {}

  /// Adds a record for `value` read at `where`; returns it so the caller can add extra fields. If `id` is
  /// taken (a log holding two runs of one test), "~2", "~3", ... is appended. The reference is valid until the
  /// next add.
  TraceRecord& add(std::string id, const SingleValue& value, const SourceLocation& where);

 private:
  Trace& trace_;
  std::map<std::string, int, std::less<>> uses_;
};

/// Runs check_record on every record of `trace` at its source line: importers call it once extras are set.
void check_imported(const Trace& trace);

}  // namespace snsim::validation::detail
