// NVSHMEM perftest output (NVIDIA/nvshmem, perftest/common/utils.cu): tables and machine-readable "&&&& PERF" lines.
//
// A table is "#<test>" on its own line, a column header ("size(B)  scope  latency (us)", "BW (GB/sec)", "msgrate
// (MMPS)", or for collectives "size(B) count type redop scope latency(us) algbw(GB/s) busbw(GB/s)", with
// min_lat/max_lat in newer versions), then one row per size. Older perftests print the header "latency(us)" even
// above bandwidth tables; a test whose name contains "_bw" is therefore read as GB/s whatever its header says.
// Ping-pong tests time a round trip. A bandwidth test run with --msgrate prints a second table of the same name in
// millions of messages per second; a trace has no unit for that, so those records hold the time per message
// (1 / rate, in s) and keep the rate as `msgrate`. The options preamble ("number of ctas: 32, threads per cta: 256,
// iterations: 50, ...") is the issuer configuration: perftest prints all options and each test uses some of them.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "validation/importers/import.hpp"
#include "validation/importers/platform.hpp"
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

/// Millions of messages per second, turned into seconds per message.
constexpr double messages_per_mmps = 1e6;

std::optional<ValueUnit> value_unit(std::string_view unit) {
  if (unit == "us") return ValueUnit{MeasureUnit::seconds, 1e-6};
  if (unit == "ms") return ValueUnit{MeasureUnit::seconds, 1e-3};
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
  std::string metric;  // "latency", "bw" or "msgrate"
};

constexpr std::string_view known_columns =
    "size(B), scope, count, type, redop, latency(us), BW(GB/sec), msgrate(MMPS), min_lat(us), max_lat(us), "
    "algbw(GB/s), busbw(GB/s)";

/// Reads a column header.
Table read_table_header(std::string test, std::string_view line, const SourceLocation& where) {
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
    else if (name == "msgrate") {
      if (unit != "MMPS") throw_input_error(where, t.columns[i], fmt::format("unknown unit \"{}\"; known: MMPS", unit));
      t.value = i;
      t.metric = "msgrate";
    } else if (name == "latency" || name == "BW" || name == "bw") {
      const auto vu = value_unit(unit);
      if (!vu) throw_input_error(where, t.columns[i], fmt::format("unknown unit \"{}\"; known: us, ns, GB/sec", unit));
      t.value = i;
      t.unit = *vu;
    } else {
      throw_input_error(where, t.columns[i], fmt::format("unknown column; known: {}", known_columns));
    }
  }
  if (!t.size || !t.value)
    throw_input_error(where, "", "a perftest table header needs size(B) and a latency, BW or msgrate column");
  if (t.metric == "msgrate") return t;
  // Old perftests print "latency(us)" above every table, bandwidth ones included.
  if (t.test.find("_bw") != std::string::npos && t.unit.unit == MeasureUnit::seconds)
    t.unit = {MeasureUnit::bytes_per_second, 1e9};
  t.metric = t.unit.unit == MeasureUnit::seconds ? "latency" : "bw";
  return t;
}

/// "min_size: 4, max_size: 33554432, ..., number of ctas: 32, threads per cta: 256 stride: 1, ..., putget_issue
/// :on_stream, ..." -> {"min_size": 4, ..., "number_of_ctas": 32, "threads_per_cta": 256, ...}.
Json options_of(std::string_view line) {
  static const std::regex option_re{R"(([A-Za-z_][A-Za-z_ ]*?)\s*:\s*([^,\s]+))"};
  Json options = Json::object();
  const std::string s(line);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), option_re); it != std::sregex_iterator(); ++it) {
    std::string key = (*it)[1].str();
    std::ranges::replace(key, ' ', '_');
    const std::string value = (*it)[2].str();
    if (const auto number = detail::to_number(value))
      options[key] = *number;
    else
      options[key] = value;
  }
  return options;
}

bool is_round_trip(std::string_view test) {
  return test.find("ping_pong") != std::string_view::npos || test.find("ping_lat") != std::string_view::npos;
}

}  // namespace

Trace import_nvshmem_perftest(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvshmem-perftest");
  detail::RecordCollector records{trace};
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };
  detail::PlatformFacts platform;
  static const std::regex pe_re{R"(mype:\s*(\d+).*device name:\s*(.*?)\s+bus id:\s*(\S+))"};
  static const std::regex iterations_re{R"((?:^|,)\s*iterations:\s*(\d+))"};
  static const std::regex perf_re{R"(&&&& PERF (\S+?)___(\S+?)___size__(\d+)___(\S+)\s+(\S+)\s+[+-](\S+))"};

  std::map<int, int> pes;  // PE -> its index on its node
  std::uint64_t iterations = 1;
  Json options = Json::object();
  int options_line = 0;
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
    v.bytes = bytes;
    v.reps = iterations;
    v.unit = unit;
    v.value = value;
    v.statistic = "mean";  // perftest divides the total time of its iterations by their number
    TraceRecord& r = records.add(
        fmt::format("perftest/{}/{}/{}/{}", test, scope_lower.empty() ? "none" : scope_lower, metric, bytes.count()), v,
        where);
    if (!scope_lower.empty()) r.extra["scope"] = scope_lower;
    if (test.find("bidi") != std::string::npos)
      r.extra["direction"] = "bidir_sum";
    else if (test.ends_with("_uni"))
      r.extra["direction"] = "uni";
    // The issuer configuration the test ran with (perftest prints every option; a test uses some of them).
    for (const auto& [key, name] :
         {std::pair{"number_of_ctas", "blocks"}, std::pair{"threads_per_cta", "threads"},
          std::pair{"iterations", "iterations"}, std::pair{"warmup_iterations", "warmup_iterations"}})
      if (options.contains(key)) r.extra[name] = options[key];
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
      static const std::regex node_re{R"(mype_node:\s*(\d+))"};
      std::smatch n;
      const int on_node = std::regex_search(s, n, node_re) ? detail::index_at(n[1].str(), where, "mype_node") : -1;
      if (pes.emplace(pe, on_node).second) {
        trace.header.gpus.push_back({pe, m[2].str(), m[3].str()});
        if (on_node >= 0) trace.header.gpus.back().extra["pe_on_node"] = on_node;
        platform.add_rank(pe, "", m[2].str(), line.number);
      }
      continue;
    }
    if (std::regex_search(s, m, iterations_re) && s.find("size(B)") == std::string::npos) {
      iterations = std::max<std::uint64_t>(1, detail::count_at(m[1].str(), where, "iterations"));
      Json found = options_of(s);
      if (options_line == 0) {
        options = std::move(found);
        options_line = line.number;
      } else if (found != options) {
        trace.notes.push_back(
            fmt::format("{}: the options differ from those on line {} (PEs started with different "
                        "arguments?); the first are kept",
                        where.to_string(), options_line));
      }
      continue;
    }
    if (std::regex_search(s, m, perf_re)) {
      const std::string metric = m[4].str();
      const double value = detail::number_at(m[5].str(), where, metric);
      const Bytes bytes{detail::count_at(m[3].str(), where, "size")};
      if (m[6].str() == "MMPS") {
        TraceRecord& r =
            add(m[1].str(), m[2].str(), "msgrate", bytes, 1 / (value * messages_per_mmps), MeasureUnit::seconds, where);
        r.extra["msgrate"] = value * messages_per_mmps;
        continue;
      }
      const auto vu = value_unit(m[6].str());
      if (!vu)
        throw_input_error(where, metric,
                          fmt::format("unknown unit \"{}\"; known: us, ms, ns, GB/sec, MMPS", m[6].str()));
      add(m[1].str(), m[2].str(), vu->unit == MeasureUnit::seconds ? "latency" : "bw", bytes, value * vu->scale,
          vu->unit, where);
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
    const Bytes bytes{detail::count_at(words[*t.size], where, "size(B)")};
    const std::string scope = t.scope ? std::string(words[*t.scope]) : std::string();
    if (t.metric == "msgrate") {
      const double rate = detail::number_at(words[*t.value], where, t.columns[*t.value]) * messages_per_mmps;
      if (rate <= 0) throw_input_error(where, t.columns[*t.value], "a message rate must be > 0");
      TraceRecord& r = add(t.test, scope, t.metric, bytes, 1 / rate, MeasureUnit::seconds, where);
      r.extra["msgrate"] = rate;
      continue;
    }
    const double value = detail::number_at(words[*t.value], where, t.columns[*t.value]) * t.unit.scale;
    TraceRecord& r = add(t.test, scope, t.metric, bytes, value, t.unit.unit, where);
    // min_lat and max_lat are printed with 3 decimals, the mean with 6 ("7.193600" beside a min of "7.194"): a bound
    // that passes the mean by less than its rounding is the mean.
    auto bound = [&](std::size_t column) {
      const std::string_view w = words[column];
      const double printed = detail::number_at(w, where, t.columns[column]) * t.unit.scale;
      const auto dot = w.find('.');
      const auto decimals = dot == std::string_view::npos ? 0 : static_cast<int>(w.size() - dot - 1);
      const double half_unit = 0.5 * std::pow(10.0, -decimals) * t.unit.scale;
      return std::abs(printed - r.median) <= half_unit * (1 + 1e-9) ? r.median : printed;
    };
    if (t.min) r.min = bound(*t.min);
    if (t.max) r.max = bound(*t.max);
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
  // Every record involves every PE that reported itself (the lines of PEs other than 0 may follow the table).
  std::vector<int> all_pes;
  for (const auto& [pe, on_node] : pes) all_pes.push_back(pe);
  for (TraceRecord& r : trace.records) r.ranks = all_pes;
  if (!options.empty()) trace.header.extra["perftest_options"] = options;
  // PEs that are the first of their node: one per node (mype_node counts from 0 on each node).
  int first_on_node = 0, largest_on_node = -1;
  for (const auto& [pe, on_node] : pes) {
    if (on_node == 0) ++first_on_node;
    largest_on_node = std::max(largest_on_node, on_node);
  }
  if (first_on_node > 0) {
    platform.set_nodes(first_on_node, "PEs with mype_node 0");
    platform.set_gpus_per_node(largest_on_node + 1, "largest mype_node + 1");
  }
  platform.write(trace);
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
