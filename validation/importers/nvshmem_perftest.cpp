// NVSHMEM perftest output (docs/hardware.md#nvshmem-perftest): tables and machine-readable "&&&& PERF" lines.
//
// A table is "#<test>" on its own line, a column header ("size(B)  scope  latency (us)", or for collectives
// "size(B) count type redop scope latency(us) algbw(GB/s) busbw(GB/s)", with min_lat/max_lat in newer versions),
// then one row per size. Older perftests print the header "latency(us)" even above bandwidth tables; a test whose
// name contains "_bw" is therefore read as GB/s whatever its header says. Ping-pong tests time a round trip.
#include <regex>

#include <fmt/format.h>

#include "validation/importers/import.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

/// How a value column converts to SI, from the unit in its parentheses.
struct ValueUnit {
  MeasureUnit unit;
  double scale;
};

std::optional<ValueUnit> value_unit(std::string_view unit) {
  if (unit == "us") return ValueUnit{MeasureUnit::seconds, 1e-6};
  if (unit == "ns") return ValueUnit{MeasureUnit::seconds, 1e-9};
  if (unit == "GB/sec" || unit == "GB/s") return ValueUnit{MeasureUnit::bytes_per_second, 1e9};  // B_TO_GB = 1e9
  return std::nullopt;
}

/// "latency(us)" -> {"latency", "us"}; a name without parentheses has an empty unit.
std::pair<std::string, std::string> split_column(std::string_view column) {
  const auto open = column.find('(');
  if (open == std::string_view::npos || column.back() != ')') return {std::string(column), ""};
  return {std::string(column.substr(0, open)), std::string(column.substr(open + 1, column.size() - open - 2))};
}

/// The columns of a table, by position.
struct Table {
  std::string test;
  int header_line = 0;
  std::vector<std::string> columns;  // "size(B)", "scope", "latency(us)", ...
  std::optional<std::size_t> size, scope, value, min, max, algbw, busbw, count, type, redop;
  ValueUnit unit{MeasureUnit::seconds, 1e-6};
  std::string metric;  // "latency" or "bw"
};

constexpr std::string_view known_columns =
    "size(B), scope, count, type, redop, latency(us), BW(GB/sec), msgrate(MMPS), min_lat(us), max_lat(us), "
    "algbw(GB/s), busbw(GB/s)";

/// Reads a column header; nullopt means "a table we deliberately skip" (message rates have no SI unit here).
std::optional<Table> read_table_header(std::string test, std::string_view line, const SourceLocation& where) {
  // "latency (us)" and "BW (GB/sec)" carry a space before the unit: join them so that words are columns.
  static const std::regex space_before_unit{R"(\s+\()"};
  const std::string joined = std::regex_replace(std::string(line), space_before_unit, "(");
  Table t;
  t.test = std::move(test);
  t.header_line = where.line;
  for (auto w : split_words(joined)) t.columns.emplace_back(w);
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const auto [name, unit] = split_column(t.columns[i]);
    if (name == "size")
      t.size = i;
    else if (name == "scope")
      t.scope = i;
    else if (name == "count")
      t.count = i;
    else if (name == "type")
      t.type = i;
    else if (name == "redop")
      t.redop = i;
    else if (name == "min_lat")
      t.min = i;
    else if (name == "max_lat")
      t.max = i;
    else if (name == "algbw")
      t.algbw = i;
    else if (name == "busbw")
      t.busbw = i;
    else if (name == "msgrate")
      return std::nullopt;
    else if (name == "latency" || name == "BW" || name == "bw") {
      const auto vu = value_unit(unit);
      if (!vu) throw_input_error(where, t.columns[i], fmt::format("unknown unit \"{}\"; known: us, ns, GB/sec", unit));
      t.value = i;
      t.unit = *vu;
    } else {
      throw_input_error(where, t.columns[i], fmt::format("unknown column; known: {}", known_columns));
    }
  }
  if (!t.size || !t.value)
    throw_input_error(where, "", "a perftest table header needs size(B) and a latency or BW column");
  // Old perftests print "latency(us)" above every table, bandwidth ones included.
  if (t.test.find("_bw") != std::string::npos && t.unit.unit == MeasureUnit::seconds)
    t.unit = {MeasureUnit::bytes_per_second, 1e9};
  t.metric = t.unit.unit == MeasureUnit::seconds ? "latency" : "bw";
  return t;
}

bool is_round_trip(std::string_view test) {
  return test.find("ping_pong") != std::string_view::npos || test.find("ping_lat") != std::string_view::npos;
}

}  // namespace

Trace import_nvshmem_perftest(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvshmem-perftest");
  detail::RecordCollector records{trace};
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };
  static const std::regex pe_re{R"(mype:\s*(\d+).*device name:\s*(.*?)\s+bus id:\s*(\S+))"};
  static const std::regex iterations_re{R"((?:^|,)\s*iterations:\s*(\d+))"};
  static const std::regex perf_re{R"(&&&& PERF (\S+?)___(\S+?)___size__(\d+)___(\S+)\s+(\S+)\s+[+-](\S+))"};

  std::vector<int> pes;
  std::uint64_t iterations = 1;
  std::string pending_test;  // after "#<test>", until its column header
  std::optional<Table> table;
  bool any = false;

  auto add = [&](const std::string& test, std::string scope, const std::string& metric, Bytes bytes, double value,
                 MeasureUnit unit, const SourceLocation& where) -> TraceRecord& {
    detail::SingleValue v;
    v.family = Family::nvshmem;
    v.test = test;
    const std::string scope_lower = [&] {
      std::string s = scope;
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s == "none" ? std::string() : s;
    }();
    v.variant = is_round_trip(test) ? "round_trip" : scope_lower;
    v.ranks = pes;
    v.bytes = bytes;
    v.reps = iterations;
    v.unit = unit;
    v.value = value;
    v.statistic = "mean";  // perftest divides the total time of its iterations by their number
    TraceRecord& r = records.add(
        fmt::format("perftest/{}/{}/{}/{}", test, scope_lower.empty() ? "none" : scope_lower, metric, bytes.count()), v,
        where);
    if (!scope_lower.empty()) r.extra["scope"] = scope_lower;
    if (test.find("bidi") != std::string::npos) r.extra["direction"] = "bidir_sum";
    any = true;
    return r;
  };

  for (const detail::TextLine& line : detail::text_lines(text, trace.source)) {
    const std::string s(trim(line.text));
    const auto words = split_words(s);
    const SourceLocation where = at(line.number);
    std::smatch m;
    if (std::regex_search(s, m, pe_re)) {
      const int pe = detail::index_at(m[1].str(), where, "pe");
      pes.push_back(pe);
      trace.header.gpus.push_back({pe, m[2].str(), m[3].str()});
      continue;
    }
    if (std::regex_search(s, m, iterations_re) && s.find("size(B)") == std::string::npos) {
      iterations = std::max<std::uint64_t>(1, detail::count_at(m[1].str(), where, "iterations"));
      continue;
    }
    if (std::regex_search(s, m, perf_re)) {
      const std::string metric = m[4].str();
      const auto vu = value_unit(m[6].str());
      if (!vu) continue;  // message rates (MMPS) have no SI unit in a trace
      const double value = detail::number_at(m[5].str(), where, metric);
      add(m[1].str(), m[2].str(), vu->unit == MeasureUnit::seconds ? "latency" : "bw",
          Bytes{detail::count_at(m[3].str(), where, "size")}, value * vu->scale, vu->unit, where);
      continue;
    }
    // "#%10s": the test name, right-aligned after the '#'.
    if (const std::string_view name = trim(std::string_view(s).substr(std::min<std::size_t>(1, s.size())));
        s.starts_with('#') && split_words(name).size() == 1) {
      pending_test = std::string(name);
      table.reset();
      continue;
    }
    if (s.starts_with("size(B)")) {
      if (pending_test.empty()) throw_input_error(where, "", "a table header without its \"#<test>\" line before it");
      table = read_table_header(pending_test, s, where);
      if (!table) trace.notes.push_back(fmt::format("{}: message-rate table skipped", where.to_string()));
      pending_test.clear();
      continue;
    }
    if (!table || words.empty() || !detail::is_unsigned_integer(words[0])) {
      if (words.empty()) table.reset();  // a blank line ends a table
      continue;
    }
    if (words.size() != table->columns.size())
      throw_input_error(where, "",
                        fmt::format("expected {} columns as in the table header on line {}, found {}",
                                    table->columns.size(), table->header_line, words.size()));
    const Table& t = *table;
    const double value = detail::number_at(words[*t.value], where, t.columns[*t.value]) * t.unit.scale;
    TraceRecord& r = add(t.test, t.scope ? std::string(words[*t.scope]) : std::string(), t.metric,
                         Bytes{detail::count_at(words[*t.size], where, "size(B)")}, value, t.unit.unit, where);
    if (t.min) r.min = detail::number_at(words[*t.min], where, t.columns[*t.min]) * t.unit.scale;
    if (t.max) r.max = detail::number_at(words[*t.max], where, t.columns[*t.max]) * t.unit.scale;
    if (t.count) r.extra["count"] = detail::count_at(words[*t.count], where, "count");
    if (t.type) r.extra["type"] = std::string(words[*t.type]);
    if (t.redop) r.extra["redop"] = std::string(words[*t.redop]);
    if (t.algbw) r.extra["algbw"] = detail::number_at(words[*t.algbw], where, t.columns[*t.algbw]) * 1e9;
    if (t.busbw) r.extra["busbw"] = detail::number_at(words[*t.busbw], where, t.columns[*t.busbw]) * 1e9;
  }
  if (!any)
    throw_input_error({trace.source, 0, 0}, "",
                      "NVSHMEM perftest: no result table (\"#<test>\", then \"size(B)  scope  latency (us)\") and no "
                      "\"&&&& PERF\" lines");
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
