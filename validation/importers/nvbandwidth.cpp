// nvbandwidth output, plain text and JSON (-j) (docs/hardware.md#nvbandwidth).
//
// Each testcase prints one matrix per measured quantity, labelled by a description such as
// "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)"; the arrow says which way the bytes flow. Every measured
// cell becomes one record (N/A cells are skipped). Device-to-device bidirectional tests print three matrices:
// Read1/Read2 (or Write1/Write2), one per direction, and Total, their sum; the JSON output appends the three into
// one 3N-row matrix and keeps only the Total description, so it is split back here.
#include <regex>

#include <fmt/format.h>

#include "validation/importers/import.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

// nvbandwidth's defaults (README: 512 MiB buffers, median of 3 samples); neither is printed, so records say
// they were assumed.
constexpr std::uint64_t default_buffer_bytes = 512ull << 20;
constexpr std::uint64_t default_samples = 3;

/// What a matrix measures, read from its description line.
struct MatrixMeaning {
  bool latency = false;  // (ns) rather than (GB/s)
  std::string engine;    // "ce", "sm" or ""
  std::string row_kind;  // "cpu" or "gpu"
  std::string column_kind;
  std::string arrow;  // "->" (row to column), "<-" (column to row), "<->" (both), "" (local copy)
  std::string tag;    // "read1", "read2", "write1", "write2", "total" or ""
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<MatrixMeaning> matrix_meaning(std::string_view description) {
  const std::string text(trim(description));
  static const std::regex unit_re{R"(\((GB/s|ns)\)$)"};
  static const std::regex engine_re{R"(\b(CE|SM)\b)"};
  static const std::regex ends_re{R"((CPU|GPU)\(row\)\s*(<->|->|<-)\s*(CPU|GPU)\(column\))"};
  static const std::regex local_re{R"(local GPU\(column\))"};
  static const std::regex tag_re{R"(\b(Read1|Read2|Write1|Write2|Total)\b)"};
  std::smatch m;
  if (!std::regex_search(text, m, unit_re)) return std::nullopt;
  MatrixMeaning meaning;
  meaning.latency = m[1] == "ns";
  if (std::regex_search(text, m, engine_re)) meaning.engine = lower(m[1].str());
  if (std::regex_search(text, m, ends_re)) {
    meaning.row_kind = lower(m[1].str());
    meaning.arrow = m[2].str();
    meaning.column_kind = lower(m[3].str());
  } else if (std::regex_search(text, local_re)) {
    meaning.row_kind = meaning.column_kind = "gpu";
  } else {
    return std::nullopt;
  }
  if (std::regex_search(text, m, tag_re)) meaning.tag = lower(m[1].str());
  return meaning;
}

/// Turns the cells of one matrix into records.
class MatrixImporter {
 public:
  explicit MatrixImporter(detail::RecordCollector& records) : records_{records} {}

  /// `cell` is the text of row `row`, column `column`; "N/A" is skipped.
  void add_cell(const std::string& test, const MatrixMeaning& m, int row, int column, std::string_view cell,
                const SourceLocation& where, std::string_view key) {
    if (cell == "N/A") return;
    const double value = detail::number_at(cell, where, key);
    struct End {
      std::string kind;
      int index;
    };
    End src{m.row_kind, row}, dst{m.column_kind, column};
    if (m.arrow == "<-") std::swap(src, dst);
    if (m.arrow.empty()) src = dst;  // a local copy: the row label is not a device
    const std::string src_name = fmt::format("{}{}", src.kind, src.index);
    const std::string dst_name = fmt::format("{}{}", dst.kind, dst.index);

    detail::SingleValue v;
    v.test = test;
    v.variant = m.tag;
    if (src.kind == "gpu") v.ranks.push_back(src.index);
    if (dst.kind == "gpu" && dst_name != src_name) v.ranks.push_back(dst.index);
    v.reps = default_samples;
    v.statistic = "median";
    if (m.latency) {
      v.family = Family::latency;
      v.unit = MeasureUnit::seconds;
      v.value = value * 1e-9;
    } else {
      v.family = Family::copy;
      v.unit = MeasureUnit::bytes_per_second;
      v.value = value * 1e9;
      v.bytes = Bytes{default_buffer_bytes};
    }
    const std::string id =
        fmt::format("nvbandwidth/{}{}/{}-{}", test, m.tag.empty() ? "" : "/" + m.tag, src_name, dst_name);
    TraceRecord& r = records_.add(id, v, where);
    if (!m.engine.empty()) r.extra["engine"] = m.engine;
    r.extra["src"] = src_name;
    r.extra["dst"] = dst_name;
    if (!m.latency) {
      r.extra["direction"] = direction(test, m);
      r.extra["assumed"] = Json::array({"bytes", "reps"});
    } else {
      r.extra["assumed"] = Json::array({"reps"});
    }
  }

 private:
  static std::string_view direction(const std::string& test, const MatrixMeaning& m) {
    if (m.tag == "total") return "bidir_sum";
    if (!m.tag.empty() || m.arrow == "<->" || test.find("bidirectional") != std::string::npos) return "bidir_one";
    return "uni";
  }

  detail::RecordCollector& records_;
};

/// "12040" -> "12.4" (CUDA's version integers: 1000*major + 10*minor).
std::string cuda_version(std::string_view code) {
  const auto value = detail::to_number(code);
  if (!value || *value < 1000) return std::string(code);
  const auto v = static_cast<long>(*value);
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

}  // namespace

Trace import_nvbandwidth_text(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvbandwidth");
  detail::RecordCollector records{trace};
  MatrixImporter matrices{records};
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };

  static const std::regex version_re{R"(nvbandwidth Version:\s*(\S+))"};
  static const std::regex cuda_re{R"(CUDA Runtime Version:\s*(\d+))"};
  static const std::regex driver_re{R"((?:^|\s)Driver Version:\s*(\S+))"};
  static const std::regex device_re{R"(Device (\d+):\s*(.*?)\s*\(([^()]*)\)\s*$)"};
  static const std::regex running_re{R"(Running (\S+?)\.?\s*$)"};

  std::string testcase;
  std::optional<MatrixMeaning> meaning;
  int description_line = 0;
  std::vector<int> column_labels;
  int labels_line = 0;
  bool seen_version = false;
  for (const detail::TextLine& line : detail::text_lines(text, trace.source)) {
    const std::string s(trim(line.text));
    const auto words = split_words(s);
    std::smatch m;
    // Inside a matrix: column labels, then rows, until a line that is neither.
    if (meaning && column_labels.empty() && !words.empty() &&
        std::all_of(words.begin(), words.end(), detail::is_unsigned_integer)) {
      for (auto w : words) column_labels.push_back(static_cast<int>(detail::count_at(w, at(line.number), "column")));
      labels_line = line.number;
      continue;
    }
    if (meaning && !column_labels.empty() && !words.empty() && detail::is_unsigned_integer(words[0])) {
      if (words.size() != column_labels.size() + 1)
        throw_input_error(at(line.number), testcase,
                          fmt::format("expected {} cells as in the column labels on line {}, found {}",
                                      column_labels.size(), labels_line, words.size() - 1));
      const int row = static_cast<int>(detail::count_at(words[0], at(line.number), "row"));
      for (std::size_t c = 0; c < column_labels.size(); ++c)
        matrices.add_cell(testcase, *meaning, row, column_labels[c], words[c + 1], at(line.number), testcase);
      continue;
    }
    if (meaning && column_labels.empty() && !s.empty())
      throw_input_error(
          at(line.number), testcase,
          fmt::format("expected column labels after the matrix description on line {}", description_line));
    meaning.reset();
    column_labels.clear();

    if (std::regex_search(s, m, version_re)) {
      trace.header.extra["source_version"] = m[1].str();
      seen_version = true;
    }
    if (std::regex_search(s, m, cuda_re)) trace.header.cuda = cuda_version(m[1].str());
    if (std::regex_search(s, m, driver_re)) trace.header.driver = m[1].str();
    if (std::regex_search(s, m, device_re)) {
      trace.header.gpus.push_back({detail::index_at(m[1].str(), at(line.number), "device"), m[2].str(), m[3].str()});
    } else if (std::regex_search(s, m, running_re)) {
      testcase = m[1].str();
    } else if (auto found = matrix_meaning(s); found && !testcase.empty()) {
      meaning = found;
      description_line = line.number;
    } else if (seen_version && trace.header.gpus.empty() && trace.header.host.empty() && words.size() == 1 &&
               s.find(':') == std::string::npos) {
      trace.header.host = s;  // the hostname sits alone on its line before the device list
    }
  }
  if (trace.header.extra.find("source_version") == trace.header.extra.end() && trace.records.empty())
    throw_input_error({trace.source, 0, 0}, "", "nvbandwidth: no \"nvbandwidth Version\" line and no result matrix");
  detail::check_imported(trace);
  return trace;
}

Trace import_nvbandwidth_json(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvbandwidth");
  detail::RecordCollector records{trace};
  MatrixImporter matrices{records};
  const SourceLocation file{trace.source, 0, 0};

  Json root;
  try {
    root = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw_input_error(file, "", fmt::format("malformed JSON at byte {}", e.byte));
  } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double (1e999), as the trace reader found
    const std::string what = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
    throw_input_error(file, "", fmt::format("malformed JSON: {}", what.substr(what.find("] ") + 2)));
  }
  if (!root.is_object() || !root.contains("nvbandwidth") || !root["nvbandwidth"].is_object())
    throw_input_error(file, "nvbandwidth", "expected an object {\"nvbandwidth\": {...}}");
  const Json& nvb = root["nvbandwidth"];
  auto string_of = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (nvb.contains("version")) trace.header.extra["source_version"] = string_of(nvb["version"]);
  if (nvb.contains("Driver Version")) trace.header.driver = string_of(nvb["Driver Version"]);
  if (nvb.contains("CUDA Runtime Version")) trace.header.cuda = cuda_version(string_of(nvb["CUDA Runtime Version"]));
  static const std::regex gpu_re{R"((\d+):\s*(.*?)\s*\(([^()]*)\)(?::\s*\((.*)\))?\s*$)"};
  if (nvb.contains("GPU Device list") && nvb["GPU Device list"].is_array()) {
    for (std::size_t i = 0; i < nvb["GPU Device list"].size(); ++i) {
      std::smatch m;
      const std::string s = string_of(nvb["GPU Device list"][i]);
      if (!std::regex_match(s, m, gpu_re)) continue;
      const int index = detail::index_at(m[1].str(), file, fmt::format("nvbandwidth.GPU Device list[{}]", i));
      trace.header.gpus.push_back({index, m[2].str(), m[3].str()});
      if (m[4].matched && trace.header.host.empty()) trace.header.host = m[4].str();
    }
  }
  if (!nvb.contains("testcases") || !nvb["testcases"].is_array())
    throw_input_error(file, "nvbandwidth.testcases", "missing; expected an array of testcases");
  const Json& testcases = nvb["testcases"];
  for (std::size_t t = 0; t < testcases.size(); ++t) {
    const Json& tc = testcases[t];
    const std::string key = fmt::format("nvbandwidth.testcases[{}]", t);
    if (!tc.is_object() || !tc.contains("name") || !tc["name"].is_string())
      throw_input_error(file, key + ".name", "missing; each testcase needs a name");
    const std::string name = tc["name"].get<std::string>();
    const std::string status = tc.contains("status") ? string_of(tc["status"]) : "Passed";
    if (status != "Passed") {
      trace.notes.push_back(fmt::format("{}: testcase {} skipped: status {}", trace.source, name, status));
      continue;
    }
    if (!tc.contains("bandwidth_description") || !tc["bandwidth_description"].is_string())
      throw_input_error(file, key + ".bandwidth_description", "missing; a passed testcase needs its description");
    const std::string description = tc["bandwidth_description"].get<std::string>();
    const auto meaning = matrix_meaning(description);
    if (!meaning)
      throw_input_error(file, key + ".bandwidth_description",
                        fmt::format("cannot tell what \"{}\" measures", description));
    if (!tc.contains("bandwidth_matrix") || !tc["bandwidth_matrix"].is_array())
      throw_input_error(file, key + ".bandwidth_matrix", "missing; expected an array of rows");
    const Json& matrix = tc["bandwidth_matrix"];
    // Bidirectional device-to-device tests append three matrices (per direction, then Total) into one.
    std::vector<MatrixMeaning> parts{*meaning};
    if (meaning->tag == "total" && matrix.size() % 3 == 0 && !matrix.empty()) {
      const std::string kind = name.find("write") != std::string::npos ? "write" : "read";
      MatrixMeaning first = *meaning, second = *meaning;
      first.tag = kind + "1";
      second.tag = kind + "2";
      parts = {first, second, *meaning};
    }
    const std::size_t rows_per_part = matrix.size() / parts.size();
    for (std::size_t row = 0; row < matrix.size(); ++row) {
      const MatrixMeaning& part = parts[row / rows_per_part];
      if (!matrix[row].is_array())
        throw_input_error(file, fmt::format("{}.bandwidth_matrix[{}]", key, row), "expected an array of cells");
      for (std::size_t column = 0; column < matrix[row].size(); ++column) {
        const Json& cell = matrix[row][column];
        const std::string cell_key = fmt::format("{}.bandwidth_matrix[{}][{}]", key, row, column);
        if (!cell.is_string() && !cell.is_number())
          throw_input_error(file, cell_key, fmt::format("expected a number or \"N/A\", found {}", cell.dump()));
        matrices.add_cell(name, part, static_cast<int>(row % rows_per_part), static_cast<int>(column), string_of(cell),
                          file, cell_key);
      }
    }
  }
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
