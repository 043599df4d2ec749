// nccl-tests text output (all_reduce_perf, all_gather_perf, ...; docs/hardware.md#nccl-tests).
//
// The result table is found by its column header ("#  size  count  type  redop  root  time  algbw  busbw  #wrong
// time ..."): columns are matched by name, the first time/algbw/busbw/#wrong group being out-of-place and the second
// in-place, so older versions without `redop` or `root` and newer ones with extra columns read alike. Each data row
// gives two records (out_of_place, in_place) in the `collective` family, time in seconds as the value (nccl-tests
// prints the mean over its iterations) and algbw/busbw in B/s as extra fields.
#include <regex>

#include <fmt/format.h>

#include "validation/importers/import.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

/// "22703" (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch) -> "2.27.3".
std::string nccl_version_from_code(std::string_view code) {
  const auto value = detail::to_number(code);
  if (!value || *value < 10000) return std::string(code);
  const auto v = static_cast<long>(*value);
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

/// The timed iterations from "# nThread 1 ... warmup iters: 5 iters: 20 agg iters: 1 ...": the "iters:" that is
/// neither warmup nor aggregation.
std::uint64_t timed_iterations(const detail::TextLine& line, const SourceLocation& where, std::uint64_t otherwise) {
  const auto words = split_words(line.text);
  for (std::size_t i = 1; i + 1 < words.size(); ++i)
    if (words[i] == "iters:" && words[i - 1] != "warmup" && words[i - 1] != "agg")
      return std::max<std::uint64_t>(1, detail::count_at(words[i + 1], where, "iters"));
  return otherwise;
}

/// Where each named column sits in a data row of the result table.
struct ResultColumns {
  int line = 0;  // the header line, for messages
  std::size_t count = 0;
  std::optional<std::size_t> size, elements, type, redop, root;
  struct Half {
    std::optional<std::size_t> time, algbw, busbw, wrong;
  };
  Half halves[2];  // out-of-place, in-place
};

std::optional<ResultColumns> result_columns(const detail::TextLine& line) {
  std::string_view text = trim(line.text);
  if (!text.starts_with('#')) return std::nullopt;
  text.remove_prefix(1);
  const auto names = split_words(text);
  ResultColumns columns;
  columns.line = line.number;
  columns.count = names.size();
  int half = -1;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string_view n = names[i];
    if (n == "size" || n == "bytes")
      columns.size = i;
    else if (n == "count" || n == "N")
      columns.elements = i;
    else if (n == "type")
      columns.type = i;
    else if (n == "redop" || n == "op")
      columns.redop = i;
    else if (n == "root")
      columns.root = i;
    else if (n == "time" || n == "cputime") {
      if (++half > 1) return std::nullopt;
      columns.halves[half].time = i;
    } else if (half >= 0 && n == "algbw")
      columns.halves[half].algbw = i;
    else if (half >= 0 && n == "busbw")
      columns.halves[half].busbw = i;
    else if (half >= 0 && (n == "#wrong" || n == "error" || n == "res"))
      columns.halves[half].wrong = i;
  }
  if (!columns.size || !columns.halves[0].time || !columns.halves[0].algbw || !columns.halves[0].busbw)
    return std::nullopt;
  return columns;
}

}  // namespace

Trace import_nccl_tests(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nccl-tests");
  detail::RecordCollector records{trace};
  const auto lines = detail::text_lines(text, trace.source);
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };

  static const std::regex version_re{R"(#\s*nccl-tests version (\S+)(?:.*nccl-library=(\d+))?)"};
  static const std::regex test_re{R"(#\s*Collective test starting:\s*(\S+))"};
  static const std::regex rank_re{
      R"(#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*\S))"};
  static const std::regex nccl_re{R"(NCCL version (\S+))"};

  std::string test;
  std::uint64_t iterations = 1;
  std::vector<int> ranks;
  std::optional<ResultColumns> columns;
  bool ended = false;
  for (const detail::TextLine& line : lines) {
    const std::string text_line(line.text);
    std::smatch m;
    if (std::regex_search(text_line, m, version_re)) {
      trace.header.extra["source_version"] = m[1].str();
      if (m[2].matched) trace.header.nccl = nccl_version_from_code(m[2].str());
    } else if (std::regex_search(text_line, m, test_re)) {
      test = m[1].str();
    } else if (text_line.find("nThread") != std::string::npos) {
      iterations = timed_iterations(line, at(line.number), iterations);
    } else if (std::regex_match(text_line, m, rank_re)) {
      const int rank = std::stoi(m[1].str());
      if (trace.header.host.empty()) trace.header.host = m[2].str();
      trace.header.gpus.push_back({rank, m[5].str(), m[4].str()});
      ranks.push_back(rank);
    } else if (trace.header.nccl.empty() && std::regex_search(text_line, m, nccl_re)) {
      trace.header.nccl = m[1].str();
    } else if (text_line.find("Avg bus bandwidth") != std::string::npos) {
      ended = true;
    } else if (auto found = result_columns(line); found && !columns) {
      columns = found;
    }
    if (!columns || trim(line.text).starts_with('#')) continue;

    const auto words = split_words(line.text);
    if (words.empty() || !detail::is_unsigned_integer(words[0])) continue;  // NCCL INFO lines, warnings, ...
    if (words.size() != columns->count)
      throw_input_error(at(line.number), "",
                        fmt::format("expected {} columns as in the table header on line {}, found {}", columns->count,
                                    columns->line, words.size()));
    if (test.empty())
      throw_input_error(at(line.number), "test",
                        "cannot tell which collective this is: no \"# Collective test starting: <name>\" line before "
                        "the results");
    const SourceLocation where = at(line.number);
    const Bytes bytes{detail::count_at(words[*columns->size], where, "size")};
    auto word = [&](const std::optional<std::size_t>& column) {
      return column ? std::string(words[*column]) : std::string();
    };
    for (int half = 0; half < 2; ++half) {
      const ResultColumns::Half& h = columns->halves[half];
      if (!h.time) continue;
      const std::string_view time_word = words[*h.time];
      if (time_word == "N/A") continue;  // a half the test does not run
      const std::string variant = half == 0 ? "out_of_place" : "in_place";
      detail::SingleValue value;
      value.family = Family::collective;
      value.test = test;
      value.variant = variant;
      value.ranks = ranks;
      value.bytes = bytes;
      value.reps = iterations;
      value.unit = MeasureUnit::seconds;
      value.value = detail::number_at(time_word, where, "time") * 1e-6;
      value.statistic = "mean";
      const double algbw = h.algbw ? detail::number_at(words[*h.algbw], where, "algbw") * 1e9 : 0;
      const double busbw = h.busbw ? detail::number_at(words[*h.busbw], where, "busbw") * 1e9 : 0;
      Json wrong = nullptr;
      if (h.wrong && words[*h.wrong] != "N/A") wrong = detail::count_at(words[*h.wrong], where, "#wrong");
      const std::string type = word(columns->type);
      const std::string redop = word(columns->redop);
      TraceRecord& r = records.add(
          fmt::format("nccl-tests/{}/{}/{}{}/{}", test, variant, type, redop.empty() ? "" : "/" + redop, bytes.count()),
          value, where);
      if (columns->elements) r.extra["count"] = detail::count_at(words[*columns->elements], where, "count");
      if (!type.empty()) r.extra["type"] = type;
      if (!redop.empty()) r.extra["redop"] = redop;
      if (columns->root)
        r.extra["root"] = static_cast<long long>(detail::number_at(word(columns->root), where, "root"));
      r.extra["algbw"] = algbw;
      r.extra["busbw"] = busbw;
      r.extra["wrong"] = wrong;
    }
  }
  if (!columns)
    throw_input_error({trace.source, 0, 0}, "",
                      "nccl-tests: no result table (a line like \"#  size  count  type  redop  root  time  algbw  "
                      "busbw  #wrong ...\")");
  if (!ended) {
    trace.complete = false;
    trace.notes.push_back(
        fmt::format("{}: incomplete: no \"# Avg bus bandwidth\" line (run cut short?); read {} "
                    "records",
                    trace.source, trace.records.size()));
  }
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
