#include "validation/trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/files.hpp"
#include "sim/text.hpp"

namespace snsim::validation {

namespace {

constexpr std::array<Family, 9> families{Family::copy,   Family::latency,    Family::launch,
                                         Family::jitter, Family::collective, Family::nvshmem,
                                         Family::uvm,    Family::step,       Family::compute};

// The record fields of the schema, in the order the writer puts them.
constexpr std::array<std::string_view, 14> record_fields{"id",    "family", "test", "variant", "ranks",
                                                         "bytes", "reps",   "unit", "median",  "p01",
                                                         "p99",   "min",    "max",  "samples"};
constexpr std::array<std::string_view, 11> header_fields{"schema", "probe",   "host", "gpus", "driver", "cuda",
                                                         "nccl",   "nvshmem", "topo", "env",  "started"};

/// A JSON value as it appears in a message, shortened: long arrays would drown the message.
std::string shown(const Json& value) {
  std::string text = value.dump();
  constexpr std::size_t longest = 40;
  if (text.size() > longest) text = text.substr(0, longest - 3) + "...";
  return text;
}

bool is_known(std::string_view key, std::span<const std::string_view> known) {
  return std::find(known.begin(), known.end(), key) != known.end();
}

/// Reads the fields of one JSON object line, naming `file:line` and the field in every error.
class LineReader {
 public:
  /// `key_prefix` names where the object sits inside the line ("gpus[1]."), so that keys in errors are full paths.
  LineReader(const Json& object, SourceLocation where, std::string_view missing_hint, std::string key_prefix = "")
      : object_{object}, where_{std::move(where)}, missing_hint_{missing_hint}, key_prefix_{std::move(key_prefix)} {}

  [[noreturn]] void fail(std::string_view key, std::string_view message) const {
    throw_input_error(where_, key_prefix_ + std::string(key), message);
  }

  const Json& field(std::string_view key) const {
    auto it = object_.find(key);
    if (it == object_.end()) fail(key, fmt::format("missing; {}", missing_hint_));
    return *it;
  }

  std::string string(std::string_view key) const {
    const Json& v = field(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, found {}", shown(v)));
    return v.get<std::string>();
  }

  /// A string that may be null for "not known": null reads as empty.
  std::string string_or_null(std::string_view key) const {
    const Json& v = field(key);
    if (v.is_null()) return {};
    if (!v.is_string()) fail(key, fmt::format("expected a string or null, found {}", shown(v)));
    return v.get<std::string>();
  }

  double number(std::string_view key) const {
    const Json& v = field(key);
    if (!v.is_number()) fail(key, fmt::format("expected a number, found {}", shown(v)));
    return v.get<double>();
  }

  /// A whole number >= 0. JSON writers sometimes print 1024 as 1024.0: accepted when it is whole.
  std::uint64_t count(std::string_view key, std::string_view what) const {
    const Json& v = field(key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) fail(key, fmt::format("must be >= 0, found {}", v.get<std::int64_t>()));
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (d < 0) fail(key, fmt::format("must be >= 0, found {}", d));
      if (d == std::floor(d) && d < 0x1p64) return static_cast<std::uint64_t>(d);
    }
    fail(key, fmt::format("expected {}, found {}", what, shown(v)));
  }

  const Json& array(std::string_view key, std::string_view what) const {
    const Json& v = field(key);
    if (!v.is_array()) fail(key, fmt::format("expected {}, found {}", what, shown(v)));
    return v;
  }

  const SourceLocation& where() const { return where_; }

 private:
  const Json& object_;
  SourceLocation where_;
  std::string_view missing_hint_;
  std::string key_prefix_;
};

constexpr std::string_view header_hint =
    "the first line must be the header {\"schema\": \"snsim-trace/1\", \"probe\", \"host\", \"gpus\", \"driver\", "
    "\"cuda\", \"nccl\", \"nvshmem\", \"topo\", \"env\", \"started\"}";
constexpr std::string_view record_hint =
    "a record needs id, family, test, variant, ranks, bytes, reps, unit, median, p01, p99, min, max, samples";

TraceHeader read_header(const Json& object, const SourceLocation& where) {
  LineReader in{object, where, header_hint};
  const std::string schema = in.string("schema");
  if (schema != trace_schema) in.fail("schema", fmt::format("expected \"{}\", found \"{}\"", trace_schema, schema));
  TraceHeader header;
  header.probe = in.string_or_null("probe");
  header.host = in.string_or_null("host");
  const Json& gpus = in.array("gpus", "an array of {index, name, pci}");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::string key = fmt::format("gpus[{}]", i);
    if (!gpus[i].is_object()) in.fail(key, fmt::format("expected {{index, name, pci}}, found {}", shown(gpus[i])));
    LineReader gpu{gpus[i], where, "a GPU needs index, name, pci", key + "."};
    const std::uint64_t index = gpu.count("index", "a GPU index (an integer >= 0)");
    if (index > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      gpu.fail("index", fmt::format("too large: {}", index));
    TraceGpu entry{static_cast<int>(index), gpu.string("name"), gpu.string("pci")};
    for (const auto& [gpu_key, value] : gpus[i].items())
      if (gpu_key != "index" && gpu_key != "name" && gpu_key != "pci") entry.extra[gpu_key] = value;
    header.gpus.push_back(std::move(entry));
  }
  header.driver = in.string_or_null("driver");
  header.cuda = in.string_or_null("cuda");
  header.nccl = in.string_or_null("nccl");
  header.nvshmem = in.string_or_null("nvshmem");
  header.topo = in.string_or_null("topo");
  header.env = in.field("env");
  if (!header.env.is_object()) in.fail("env", fmt::format("expected an object, found {}", shown(header.env)));
  header.started = in.string_or_null("started");
  for (const auto& [key, value] : object.items())
    if (!is_known(key, header_fields)) header.extra[key] = value;
  return header;
}

TraceRecord read_record(const Json& object, const SourceLocation& where) {
  LineReader in{object, where, record_hint};
  TraceRecord record;
  record.line = where.line;
  record.id = in.string("id");
  const std::string family = in.string("family");
  const auto parsed_family = family_from_string(family);
  if (!parsed_family) in.fail("family", fmt::format("unknown family \"{}\"; known: {}", family, known_family_names()));
  record.family = *parsed_family;
  record.test = in.string("test");
  record.variant = in.string("variant");
  const Json& ranks = in.array("ranks", "an array of GPU indices");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Json& rank = ranks[i];
    if (!rank.is_number_integer() || rank.get<std::int64_t>() < 0 ||
        rank.get<std::int64_t>() > std::numeric_limits<int>::max())
      in.fail(fmt::format("ranks[{}]", i),
              fmt::format("expected a GPU index (an integer >= 0), found {}", shown(rank)));
    record.ranks.push_back(rank.get<int>());
  }
  record.bytes = Bytes{in.count("bytes", "a whole number of bytes")};
  const Json& reps = in.field("reps");
  // A count beyond 2^63 is stored unsigned: it is large, not negative (read as int64 it would wrap).
  if (reps.is_number_integer() && !reps.is_number_unsigned() && reps.get<std::int64_t>() <= 0)
    in.fail("reps", fmt::format("must be >= 1, found {}", reps.get<std::int64_t>()));
  record.reps = in.count("reps", "a whole number of repetitions");
  const std::string unit = in.string("unit");
  if (unit == "s") {
    record.unit = MeasureUnit::seconds;
  } else if (unit == "B/s") {
    record.unit = MeasureUnit::bytes_per_second;
  } else {
    in.fail("unit", fmt::format("expected \"s\" or \"B/s\", found \"{}\"", unit));
  }
  record.median = in.number("median");
  record.p01 = in.number("p01");
  record.p99 = in.number("p99");
  record.min = in.number("min");
  record.max = in.number("max");
  const Json& samples = in.array("samples", "an array of numbers");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!samples[i].is_number())
      in.fail(fmt::format("samples[{}]", i), fmt::format("expected a number, found {}", shown(samples[i])));
    record.samples.push_back(samples[i].get<double>());
  }
  for (const auto& [key, value] : object.items())
    if (!is_known(key, record_fields)) record.extra[key] = value;
  check_record(record, where);
  return record;
}

/// Strips nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 7: " prefix: the file, line
/// and column are ours to say.
std::string parse_error_reason(const nlohmann::json::exception& e) {
  std::string what = e.what();
  const auto column = what.find("column");
  const auto cut = column == std::string::npos ? what.find("] ") : what.find(": ", column);
  if (cut != std::string::npos) what = what.substr(cut + 2);
  return what;
}

/// Splits text into lines; `ends_with_newline` tells whether the last line was finished.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

}  // namespace

std::span<const Family> all_families() {
  return families;
}

std::string_view to_string(Family family) {
  switch (family) {
    case Family::copy:
      return "copy";
    case Family::latency:
      return "latency";
    case Family::launch:
      return "launch";
    case Family::jitter:
      return "jitter";
    case Family::collective:
      return "collective";
    case Family::nvshmem:
      return "nvshmem";
    case Family::uvm:
      return "uvm";
    case Family::step:
      return "step";
    case Family::compute:
      return "compute";
  }
  return "?";
}

std::optional<Family> family_from_string(std::string_view name) {
  for (Family f : families)
    if (to_string(f) == name) return f;
  return std::nullopt;
}

std::string known_family_names() {
  std::vector<std::string_view> names;
  for (Family f : families) names.push_back(to_string(f));
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string_view to_string(MeasureUnit unit) {
  return unit == MeasureUnit::seconds ? "s" : "B/s";
}

std::string TraceRecord::format_value(double value) const {
  return unit == MeasureUnit::seconds ? to_string(Seconds{value}) : to_string(BytesPerSecond{value});
}

std::optional<BytesPerSecond> record_rate(const TraceRecord& r) {
  if (r.unit == MeasureUnit::bytes_per_second) return BytesPerSecond{r.median};
  for (const char* key : {"bw", "sum_bw", "algbw"}) {
    const auto it = r.extra.find(key);
    if (it != r.extra.end() && it->is_number()) return BytesPerSecond{it->get<double>()};
  }
  if ((r.family == Family::copy || r.family == Family::uvm) && r.bytes.count() > 0 && r.median > 0)
    return r.bytes / Seconds{r.median};
  return std::nullopt;
}

bool is_record_field(std::string_view key) {
  return is_known(key, record_fields);
}

double extra_number(const TraceRecord& r, const char* key, double fallback) {
  const auto it = r.extra.find(key);
  return it != r.extra.end() && it->is_number() ? it->get<double>() : fallback;
}

bool operator==(const TraceRecord& a, const TraceRecord& b) {
  return a.id == b.id && a.family == b.family && a.test == b.test && a.variant == b.variant && a.ranks == b.ranks &&
         a.bytes == b.bytes && a.reps == b.reps && a.unit == b.unit && a.median == b.median && a.p01 == b.p01 &&
         a.p99 == b.p99 && a.min == b.min && a.max == b.max && a.samples == b.samples && a.extra == b.extra;
}

void check_record(const TraceRecord& r, const SourceLocation& where) {
  auto fail = [&](std::string_view key, std::string_view message) { throw_input_error(where, key, message); };
  if (r.id.empty()) fail("id", "must not be empty");
  if (r.test.empty()) fail("test", "must not be empty");
  for (std::size_t i = 0; i < r.ranks.size(); ++i)
    if (r.ranks[i] < 0) fail(fmt::format("ranks[{}]", i), fmt::format("must be >= 0, found {}", r.ranks[i]));
  if (r.reps < 1) fail("reps", fmt::format("must be >= 1, found {}", r.reps));
  const std::array<std::pair<std::string_view, double>, 5> stats{
      {{"min", r.min}, {"p01", r.p01}, {"median", r.median}, {"p99", r.p99}, {"max", r.max}}};
  for (auto [name, value] : stats) {
    if (!std::isfinite(value)) fail(name, fmt::format("must be finite, found {}", value));
    if (value < 0) fail(name, fmt::format("must be >= 0, found {}", value));
  }
  // Order: each statistic against its neighbour, named from the median outwards so the message points at the
  // value that is more likely wrong.
  if (r.p01 > r.median) fail("p01", fmt::format("must be <= median ({}), found {}", r.median, r.p01));
  if (r.p99 < r.median) fail("p99", fmt::format("must be >= median ({}), found {}", r.median, r.p99));
  if (r.min > r.p01) fail("min", fmt::format("must be <= p01 ({}), found {}", r.p01, r.min));
  if (r.max < r.p99) fail("max", fmt::format("must be >= p99 ({}), found {}", r.p99, r.max));
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const double s = r.samples[i];
    if (!std::isfinite(s) || s < r.min * (1 - sample_rounding) || s > r.max * (1 + sample_rounding))
      fail(fmt::format("samples[{}]", i),
           fmt::format("must lie within [min, max] = [{}, {}], found {}", r.min, r.max, s));
  }
}

Trace parse_trace(std::string_view text, std::string_view source_name) {
  Trace trace;
  trace.source = std::string(source_name);
  const std::vector<std::string_view> lines = split_lines(text);
  const bool last_line_unfinished = !text.empty() && text.back() != '\n';
  auto at = [&](std::size_t index) { return SourceLocation{trace.source, static_cast<int>(index + 1), 0}; };

  bool have_header = false;
  std::optional<std::size_t> completion_line;
  std::map<std::string, int, std::less<>> first_line_of_id;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_blank(lines[i])) continue;
    if (completion_line)
      throw_input_error(at(i), "", fmt::format("content after the completion line (line {})", *completion_line + 1));
    Json object;
    check_json_nesting(lines[i], at(i));
    try {
      object = Json::parse(lines[i]);
    } catch (const nlohmann::json::parse_error& e) {
      // A capture killed while writing leaves half a line at the end: that is an incomplete trace, not a bad one.
      if (have_header && i + 1 == lines.size() && last_line_unfinished) {
        trace.notes.push_back(fmt::format("{}: the last line is cut off and was ignored", at(i).to_string()));
        break;
      }
      SourceLocation where = at(i);
      where.column = static_cast<int>(e.byte);
      throw_input_error(where, "", fmt::format("malformed JSON: {}", parse_error_reason(e)));
    } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double (1e999): found by fuzz/ (trace)
      throw_input_error(at(i), "", fmt::format("malformed JSON: {}", parse_error_reason(e)));
    }
    if (!object.is_object())
      throw_input_error(at(i), "", fmt::format("expected a JSON object, found {}", shown(object)));

    if (!have_header) {
      trace.header = read_header(object, at(i));
      have_header = true;
      continue;
    }
    if (object.contains("complete")) {
      LineReader in{object, at(i), "the completion line is {\"complete\": true, \"records\": N}"};
      const Json& complete = in.field("complete");
      if (complete != true) in.fail("complete", fmt::format("expected true, found {}", shown(complete)));
      const std::uint64_t count = in.count("records", "a whole number of records");
      if (count != trace.records.size())
        in.fail("records",
                fmt::format("the completion line says {} records, the file has {}", count, trace.records.size()));
      if (!trace.failures.empty())
        in.fail("complete",
                fmt::format("a trace with a failure line (line {}) cannot be complete", trace.failures.front().line));
      trace.complete = true;
      completion_line = i;
      continue;
    }
    if (object.contains("incomplete")) {
      LineReader in{object, at(i), R"(a failure line is {"incomplete": true, "family": F, "error": E, "records": N})"};
      const Json& incomplete = in.field("incomplete");
      if (incomplete != true) in.fail("incomplete", fmt::format("expected true, found {}", shown(incomplete)));
      TraceFailure failure{in.string("family"), in.string("error"), static_cast<int>(i + 1)};
      const std::uint64_t count = in.count("records", "a whole number of records");
      if (count != trace.records.size())
        in.fail("records", fmt::format("the failure line says {} records before it, the file has {}", count,
                                       trace.records.size()));
      trace.notes.push_back(fmt::format("{}: incomplete: family {} failed: {}; {} records before it", at(i).to_string(),
                                        failure.family, failure.error, count));
      trace.failures.push_back(std::move(failure));
      continue;
    }
    if (!object.contains("id"))
      throw_input_error(at(i), "",
                        "expected a record (with \"id\"), the completion line (with \"complete\") or a failure line "
                        "(with \"incomplete\")");
    TraceRecord record = read_record(object, at(i));
    auto [it, inserted] = first_line_of_id.emplace(record.id, record.line);
    if (!inserted)
      throw_input_error(at(i), "id", fmt::format("duplicate id \"{}\", first on line {}", record.id, it->second));
    trace.records.push_back(std::move(record));
  }
  if (!have_header) throw_input_error({trace.source, 0, 0}, "", fmt::format("empty trace; {}", header_hint));
  if (!trace.complete && trace.failures.empty())
    trace.notes.push_back(fmt::format(
        "{}: incomplete: no completion line {{\"complete\": true, \"records\": N}} (capture cut short?); read {} "
        "records",
        trace.source, trace.records.size()));
  return trace;
}

Trace read_trace(const std::filesystem::path& file) {
  return parse_trace(read_file(file), file.string());
}

std::string write_trace(const Trace& trace) {
  const TraceHeader& h = trace.header;
  Json header = Json::object();
  header["schema"] = trace_schema;
  header["probe"] = h.probe;
  header["host"] = h.host;
  header["gpus"] = Json::array();
  for (const TraceGpu& gpu : h.gpus) {
    Json entry = {{"index", gpu.index}, {"name", gpu.name}, {"pci", gpu.pci}};
    for (const auto& [key, value] : gpu.extra.items()) entry[key] = value;
    header["gpus"].push_back(std::move(entry));
  }
  header["driver"] = h.driver;
  header["cuda"] = h.cuda;
  header["nccl"] = h.nccl;
  header["nvshmem"] = h.nvshmem;
  header["topo"] = h.topo;
  header["env"] = h.env;
  header["started"] = h.started;
  for (const auto& [key, value] : h.extra.items()) header[key] = value;

  std::string out = header.dump() + '\n';
  for (const TraceRecord& r : trace.records) {
    Json line = {{"id", r.id},         {"family", to_string(r.family)},
                 {"test", r.test},     {"variant", r.variant},
                 {"ranks", r.ranks},   {"bytes", r.bytes.count()},
                 {"reps", r.reps},     {"unit", to_string(r.unit)},
                 {"median", r.median}, {"p01", r.p01},
                 {"p99", r.p99},       {"min", r.min},
                 {"max", r.max},       {"samples", r.samples}};
    for (const auto& [key, value] : r.extra.items()) line[key] = value;
    out += line.dump();
    out += '\n';
  }
  for (const TraceFailure& f : trace.failures)
    out +=
        Json{{"incomplete", true}, {"family", f.family}, {"error", f.error}, {"records", trace.records.size()}}.dump() +
        '\n';
  if (trace.complete && trace.failures.empty())
    out += Json{{"complete", true}, {"records", trace.records.size()}}.dump() + '\n';
  return out;
}

void write_trace_file(const Trace& trace, const std::filesystem::path& file) {
  std::ofstream out(file, std::ios::binary);
  if (!out) throw_input_error({file.string(), 0, 0}, "", "cannot write the file");
  out << write_trace(trace);
  if (!out) throw_input_error({file.string(), 0, 0}, "", "cannot write the file");
}

}  // namespace snsim::validation
