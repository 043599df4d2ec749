// nvbandwidth output, plain text and JSON (-j), versions 0.1 to 0.10 (NVIDIA/nvbandwidth).
//
// Each testcase prints one matrix per measured quantity under a description such as "memcpy CE GPU(row) <-
// GPU(column) bandwidth (GB/s)". The description's arrow does not say which way the bytes flow for every testcase
// (device_to_device_memcpy_read_ce prints "GPU(row) -> GPU(column)" and copies from the column's GPU into the row's:
// testcases_ce.cpp, DeviceToDeviceReadCE::run), so the flow comes from the testcase, as its source and `nvbandwidth
// -l` describe it:
//   host_to_device / host_to_all       CPU -> GPU(column)          (host_to_all: every GPU copies at once)
//   device_to_host / all_to_host       GPU(column) -> CPU
//   *_bidirectional_* (host)           the named direction, measured while the opposite one runs
//   device_to_device_memcpy_read       GPU(column) -> GPU(row), in the row's context (the row reads)
//   device_to_device_memcpy_write      GPU(row) -> GPU(column), in the row's context (the row writes)
//   device_to_device_bidirectional_*   Read1/Write1: column -> row, Read2/Write2: row -> column, Total: both summed
//   all_to_one_write / one_to_all_read every other GPU -> GPU(column) (total inbound)
//   all_to_one_read / one_to_all_write GPU(column) -> every other GPU (total outbound)
//   device_local_copy                  within GPU(column), the bytes copied (the HBM traffic is twice them)
//   device_to_device_latency_sm        GPU(row) loads from GPU(column)'s memory (ns); named and ranked reader first
//   host_device_latency_sm             GPU(column) loads from host memory (ns)
//   multinode_*                        the same between processes (one GPU each); broadcast tests multicast
//   multinode_bisect_write_ce          every process i writes to i + n/2 at once (rows "i->j")
// Every measured cell is a record; N/A cells (pairs without peer access, the diagonal) are counted in a note.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "validation/importers/import.hpp"
#include "validation/importers/platform.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

/// How the bytes of a cell move.
enum class Flow {
  host_to_gpu,     // CPU -> GPU(column)
  gpu_to_host,     // GPU(column) -> CPU
  column_to_row,   // GPU(column) -> GPU(row)
  row_to_column,   // GPU(row) -> GPU(column)
  local,           // within GPU(column)
  all_to_column,   // every other GPU -> GPU(column)
  column_to_all,   // GPU(column) -> every other GPU
  all_to_all,      // every GPU multicasts to every GPU (one cell)
  row_label_pair,  // the row label says "i->j"
};

struct Testcase {
  Flow flow;
  bool latency = false;
  bool bidirectional = false;  // measured while the opposite direction runs
  std::string pattern;         // "pair", "all_to_host", "host_to_all", "all_to_one", ...
  std::string issuer;          // whose context runs the copy: "row", "column", "source", "destination", "others"
};

/// The testcases nvbandwidth 0.1-0.10 define (testcase.h), by name without the engine suffix and "multinode_".
std::optional<Testcase> testcase_of(std::string_view name) {
  std::string base(name);
  if (base.starts_with("multinode_")) base = base.substr(10);
  for (std::string_view suffix : {"_ce", "_sm"})
    if (base.ends_with(suffix)) base.resize(base.size() - suffix.size());
  static const std::map<std::string, Testcase, std::less<>> table{
      {"host_to_device_memcpy", {Flow::host_to_gpu, false, false, "pair", "source"}},
      {"device_to_host_memcpy", {Flow::gpu_to_host, false, false, "pair", "source"}},
      {"host_to_device_bidirectional_memcpy", {Flow::host_to_gpu, false, true, "pair", "source"}},
      {"device_to_host_bidirectional_memcpy", {Flow::gpu_to_host, false, true, "pair", "source"}},
      {"device_to_device_memcpy_read", {Flow::column_to_row, false, false, "pair", "destination"}},
      {"device_to_device_memcpy_write", {Flow::row_to_column, false, false, "pair", "source"}},
      {"device_to_device_bidirectional_memcpy_read", {Flow::column_to_row, false, true, "pair", "destination"}},
      {"device_to_device_bidirectional_memcpy_write", {Flow::row_to_column, false, true, "pair", "source"}},
      {"device_local_copy", {Flow::local, false, false, "local", "source"}},
      {"all_to_host_memcpy", {Flow::gpu_to_host, false, false, "all_to_host", "source"}},
      {"all_to_host_bidirectional_memcpy", {Flow::gpu_to_host, false, true, "all_to_host", "source"}},
      {"host_to_all_memcpy", {Flow::host_to_gpu, false, false, "host_to_all", "source"}},
      {"host_to_all_bidirectional_memcpy", {Flow::host_to_gpu, false, true, "host_to_all", "source"}},
      {"all_to_one_write", {Flow::all_to_column, false, false, "all_to_one", "source"}},
      {"all_to_one_read", {Flow::column_to_all, false, false, "all_to_one", "destination"}},
      {"one_to_all_write", {Flow::column_to_all, false, false, "one_to_all", "source"}},
      {"one_to_all_read", {Flow::all_to_column, false, false, "one_to_all", "destination"}},
      {"host_device_latency", {Flow::host_to_gpu, true, false, "latency", "destination"}},
      {"device_to_device_latency", {Flow::column_to_row, true, false, "latency", "destination"}},
      {"device_to_device_all_to_one_write", {Flow::all_to_column, false, false, "all_to_one", "source"}},
      {"device_to_device_all_from_one_read", {Flow::column_to_all, false, false, "all_from_one", "destination"}},
      {"device_to_device_broadcast_one_to_all", {Flow::column_to_all, false, false, "multicast", "source"}},
      {"device_to_device_broadcast_all_to_all", {Flow::all_to_all, false, false, "multicast", "source"}},
      {"bisect_write", {Flow::row_label_pair, false, false, "bisect", "source"}},
  };
  const auto it = table.find(base);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::string known_testcases() {
  return "host_to_device, device_to_host, device_to_device (read, write, bidirectional), device_local_copy, "
         "all_to_host, host_to_all, all_to_one, one_to_all, *_latency_sm, multinode_* (nvbandwidth 0.1-0.10)";
}

/// What one matrix of a testcase holds, from its description line.
struct Matrix {
  std::string testcase;
  Testcase kind;
  bool latency = false;  // (ns) rather than (GB/s)
  std::string engine;    // "ce", "sm", "multicast"
  std::string tag;       // "read1", "read2", "write1", "write2", "total" or ""
};

/// The description line of a matrix: ends in "(GB/s)" or "(ns)", or is the bisect test's "... BW".
std::optional<std::pair<bool, std::string>> description_unit(std::string_view text) {
  text = trim(text);
  if (text.ends_with("(GB/s)")) return std::pair{false, std::string("GB/s")};
  if (text.ends_with("(ns)")) return std::pair{true, std::string("ns")};
  if (text.starts_with("Bisect benchmarking")) return std::pair{false, std::string("GB/s")};
  return std::nullopt;
}

std::optional<Matrix> matrix_of(const std::string& testcase, std::string_view description) {
  const auto unit = description_unit(description);
  if (!unit) return std::nullopt;
  const auto kind = testcase_of(testcase);
  if (!kind) return std::nullopt;
  const std::string text(description);
  static const std::regex engine_re{R"(\b(CE|SM)\b)"};
  static const std::regex tag_re{R"(\b(Read1|Read2|Write1|Write2|Total)\b)"};
  Matrix m{testcase, *kind, unit->first, "", ""};
  std::smatch match;
  if (std::regex_search(text, match, engine_re)) m.engine = match[1] == "CE" ? "ce" : "sm";
  if (testcase.ends_with("_ce")) m.engine = "ce";
  if (testcase.ends_with("_sm")) m.engine = "sm";
  if (text.starts_with("multicast")) m.engine = "multicast";
  if (std::regex_search(text, match, tag_re)) {
    m.tag = match[1].str();
    std::ranges::transform(m.tag, m.tag.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  return m;
}

/// The buffer nvbandwidth copies when not told otherwise: 64 MiB before 0.7, 512 MiB since (nvbandwidth.cpp,
/// defaultBufferSize); neither it nor the 3 samples (defaultAverageLoopCount) are printed.
std::uint64_t default_buffer_bytes(const std::string& version) {
  static const std::regex version_re{R"(v?(\d+)\.(\d+))"};
  std::smatch m;
  // Compared as digits, not converted: a version number beyond int (v99999999999.1) is not 0.x either.
  if (std::regex_search(version, m, version_re) && m[1].str().find_first_not_of('0') == std::string::npos &&
      m[2].str().size() <= 2 && std::stoi(m[2].str()) < 7)
    return 64ull << 20;
  return 512ull << 20;
}
constexpr std::uint64_t default_samples = 3;

/// Turns the cells of the matrices into records.
class Cells {
 public:
  Cells(detail::RecordCollector& records, std::uint64_t buffer_bytes) : records_{records}, buffer_{buffer_bytes} {}

  /// `columns` is the number of columns of the matrix (the GPUs of an aggregate test); `row_label` is the bisect
  /// test's "i->j".
  void add(const Matrix& m, int row, int column, int columns, std::string_view cell, const SourceLocation& where,
           std::string_view key, std::string_view row_label = {}) {
    if (cell == "N/A") {
      // The diagonal of a GPU-to-GPU matrix is always N/A; elsewhere N/A is a pair without peer access.
      const bool pair = m.kind.flow == Flow::column_to_row || m.kind.flow == Flow::row_to_column;
      if (!pair || row != column) ++not_measured_;
      return;
    }
    const double value = detail::number_at(cell, where, key);
    std::string src, dst;
    std::vector<int> ranks;
    auto gpu = [](int i) { return fmt::format("gpu{}", i); };
    auto others = [&](int one) {
      std::vector<int> out;
      for (int i = 0; i < columns; ++i)
        if (i != one) out.push_back(i);
      return out;
    };
    Flow flow = m.kind.flow;
    // Read1/Write1 copy from the column's GPU into the row's; a Total cell is named after that direction.
    if (m.tag == "read1" || m.tag == "write1" || m.tag == "total") flow = Flow::column_to_row;
    if (m.tag == "read2" || m.tag == "write2") flow = Flow::row_to_column;
    switch (flow) {
      case Flow::host_to_gpu:
        src = "cpu0", dst = gpu(column), ranks = {column};
        break;
      case Flow::gpu_to_host:
        src = gpu(column), dst = "cpu0", ranks = {column};
        break;
      case Flow::column_to_row:
        src = gpu(column), dst = gpu(row), ranks = {column, row};
        // A latency test's row loads from the column's memory: named and ranked reader first, as the probe's
        // latency/peer_load records are.
        if (m.latency) src = gpu(row), dst = gpu(column), ranks = {row, column};
        break;
      case Flow::row_to_column:
        src = gpu(row), dst = gpu(column), ranks = {row, column};
        break;
      case Flow::local:
        src = dst = gpu(column), ranks = {column};
        break;
      case Flow::all_to_column:
        src = "others", dst = gpu(column), ranks = others(column), ranks.push_back(column);
        break;
      case Flow::column_to_all:
        src = gpu(column), dst = "others", ranks = others(column), ranks.insert(ranks.begin(), column);
        break;
      case Flow::all_to_all:  // one cell for the whole job
        src = dst = "all";
        for (int i = 0; i < std::max(columns, world_); ++i) ranks.push_back(i);
        break;
      case Flow::row_label_pair: {
        static const std::regex pair_re{R"(^\s*(\d+)\s*->\s*(\d+)\s*$)"};
        const std::string label(row_label);
        std::smatch p;
        if (!std::regex_match(label, p, pair_re))
          throw_input_error(where, key, fmt::format("expected a row label \"i->j\", found '{}'", row_label));
        const int a = detail::index_at(p[1].str(), where, key), b = detail::index_at(p[2].str(), where, key);
        src = gpu(a), dst = gpu(b), ranks = {a, b};
        break;
      }
    }
    detail::SingleValue v;
    v.test = m.testcase;
    v.variant = m.tag;
    v.ranks = ranks;
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
      v.bytes = Bytes{buffer_};
    }
    const std::string id =
        fmt::format("nvbandwidth/{}{}/{}-{}", m.testcase, m.tag.empty() ? "" : "/" + m.tag, src, dst);
    TraceRecord& r = records_.add(id, v, where);
    if (!m.engine.empty()) r.extra["engine"] = m.engine;
    r.extra["src"] = src;
    r.extra["dst"] = dst;
    r.extra["pattern"] = m.kind.pattern;
    // Whose context runs a copy between two GPUs (an SM copy runs its kernel there); who loads whose memory in a
    // latency test.
    if (m.kind.pattern == "pair") {
      const std::string& who = m.kind.issuer == "destination" ? dst : src;
      if (who.starts_with("gpu")) r.extra["issuer"] = who;
    }
    if (m.latency) {
      r.extra["reader"] = flow == Flow::host_to_gpu ? dst : src;
      r.extra["owner"] = flow == Flow::host_to_gpu ? src : dst;
    }
    if (!m.latency) {
      r.extra["direction"] = m.tag == "total" ? "bidir_sum" : m.kind.bidirectional ? "bidir_one" : "uni";
      // These report the bandwidth summed over all the copies of a cell (MemcpyOperation::TOTAL_BW / SUM_BW).
      if (m.kind.pattern == "all_to_one" || m.kind.pattern == "one_to_all" || m.kind.pattern == "all_from_one" ||
          m.kind.pattern == "multicast")
        r.extra["aggregate"] = "total";
      r.extra["assumed"] = Json::array({"bytes", "reps"});
    } else {
      r.extra["access"] = "pointer_chase";
      r.extra["assumed"] = Json::array({"reps"});
    }
  }

  int not_measured() const { return not_measured_; }
  /// The GPUs (processes) of the run, for the cells that stand for all of them.
  void set_world(int gpus) { world_ = gpus; }

 private:
  detail::RecordCollector& records_;
  std::uint64_t buffer_;
  int not_measured_ = 0;
  int world_ = 0;
};

/// "12040" -> "12.4" (CUDA's version integers: 1000*major + 10*minor); "13.2 (13020)" -> "13.2".
std::string cuda_version(std::string_view text) {
  text = trim(text);
  if (const auto paren = text.find(" ("); paren != std::string_view::npos) return std::string(text.substr(0, paren));
  const auto value = detail::to_number(text);
  // Beyond 1000 * 999 (or not a whole number) it is no version integer: shown as written.
  if (!value || *value < 1000 || *value >= 1e6 || *value != std::floor(*value)) return std::string(text);
  const auto v = static_cast<long>(*value);
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

}  // namespace

Trace import_nvbandwidth_text(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvbandwidth");
  detail::RecordCollector records{trace};
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };
  const auto lines = detail::text_lines(text, trace.source);

  static const std::regex version_re{R"(nvbandwidth Version:\s*(\S+))"};
  static const std::regex cuda_re{R"(^CUDA Runtime Version:\s*(.+)$)"};
  static const std::regex driver_re{R"(^Driver Version:\s*(\S+))"};
  static const std::regex device_re{R"(^Device (\d+):\s*(.*?)(?:\s*\(([0-9a-fA-F:.]+)\))?\s*$)"};
  static const std::regex process_re{
      R"(^Process\s+(\d+)\s+\((.*)\):\s*device\s+(\d+):\s*(.*?)(?:\s*\(([0-9a-fA-F:.]+)\))?\s*$)"};
  static const std::regex running_re{R"(^Running (\S+?)\.?\s*$)"};
  static const std::regex status_re{R"(^(Waived|ERROR|Error|Not Found):\s*(.*)$)"};

  // First pass: the header lines, so that the buffer size (which depends on the version) is known for the cells.
  std::string version;
  for (const auto& line : lines) {
    std::smatch m;
    const std::string s(trim(line.text));
    if (std::regex_search(s, m, version_re)) {
      version = m[1].str();
      break;
    }
  }
  // A pasted part may lack the "Running <testcase>." line; the "SUM <key> <value>" line after the matrix names the
  // testcase too (the key of a bidirectional matrix ends in _read1, _total, ...).
  std::map<int, std::string> named_by_sum;  // description line -> testcase
  {
    static const std::regex sum_re{R"(^(?:SUM|&&&& PERF)\s+(\S+?)(?:_read1|_read2|_write1|_write2|_total)?\s+\S+)"};
    int pending = 0;
    for (const auto& line : lines) {
      const std::string s(trim(line.text));
      std::smatch m;
      if (description_unit(s)) pending = line.number;
      if (pending && std::regex_search(s, m, sum_re)) {
        named_by_sum[pending] = m[1].str();
        pending = 0;
      }
    }
  }
  Cells cells{records, default_buffer_bytes(version)};
  detail::PlatformFacts platform;
  std::map<int, TraceGpu> gpus;
  std::vector<std::string> skipped;
  std::string testcase;
  int testcase_line = 0;
  std::optional<Matrix> matrix;
  int description_line = 0;
  std::vector<int> column_labels;
  int labels_line = 0;
  int rows_read = 0;
  bool multinode = false;
  int largest_gpu = -1;
  int waived = 0;
  auto end_matrix = [&] {
    matrix.reset();
    column_labels.clear();
    rows_read = 0;
  };

  for (const detail::TextLine& line : lines) {
    const std::string s(trim(line.text));
    const auto words = split_words(s);
    const SourceLocation where = at(line.number);
    std::smatch m;
    if (matrix) {
      if (column_labels.empty()) {
        if (!words.empty() && std::ranges::all_of(words, detail::is_unsigned_integer)) {
          for (auto w : words) column_labels.push_back(detail::index_at(w, where, "column"));
          labels_line = line.number;
          continue;
        }
        throw_input_error(
            where, testcase,
            fmt::format("expected the column labels of the matrix described on line {}", description_line));
      }
      if (matrix->kind.flow == Flow::row_label_pair) {  // " 0-> 8     123.45"
        static const std::regex bisect_row{R"(^\s*(\d+\s*->\s*\d+)\s+(\S+)\s*$)"};
        if (std::regex_match(s, m, bisect_row)) {
          cells.add(*matrix, rows_read, column_labels.front(), 1, m[2].str(), where, testcase, m[1].str());
          ++rows_read;
          continue;
        }
      } else if (!words.empty() && detail::is_unsigned_integer(words[0])) {
        if (words.size() != column_labels.size() + 1)
          throw_input_error(where, testcase,
                            fmt::format("expected {} cells as in the column labels on line {}, found {}",
                                        column_labels.size(), labels_line, words.size() - 1));
        const int row = detail::index_at(words[0], where, "row");
        for (std::size_t c = 0; c < column_labels.size(); ++c) {
          largest_gpu = std::max(largest_gpu, column_labels[c]);
          if (matrix->kind.flow == Flow::column_to_row || matrix->kind.flow == Flow::row_to_column)
            largest_gpu = std::max(largest_gpu, row);
          cells.add(*matrix, row, column_labels[c], static_cast<int>(column_labels.size()), words[c + 1], where,
                    testcase);
        }
        ++rows_read;
        continue;
      }
      if (rows_read == 0)
        throw_input_error(
            where, testcase,
            fmt::format("expected the rows of the matrix whose column labels are on line {}", labels_line));
      end_matrix();
    }

    if (std::regex_search(s, m, version_re)) {
      trace.header.extra["source_version"] = m[1].str();
      continue;
    }
    if (std::regex_search(s, m, cuda_re)) {
      trace.header.cuda = cuda_version(m[1].str());
      continue;
    }
    if (std::regex_search(s, m, driver_re)) {
      trace.header.driver = m[1].str();
      continue;
    }
    if (s.starts_with("MPI version:")) {
      multinode = true;
      continue;
    }
    if (std::regex_match(s, m, process_re)) {  // multinode: one process per GPU
      multinode = true;
      const int process = detail::index_at(m[1].str(), where, "process");
      TraceGpu gpu{process, m[4].str(), m[5].str()};
      gpu.extra["host"] = m[2].str();
      gpu.extra["device"] = detail::index_at(m[3].str(), where, "device");
      gpus.emplace(process, gpu);
      platform.add_rank(process, m[2].str(), m[4].str(), line.number);
      cells.set_world(static_cast<int>(gpus.size()));
      continue;
    }
    if (std::regex_match(s, m, device_re)) {
      const int index = detail::index_at(m[1].str(), where, "device");
      gpus.emplace(index, TraceGpu{index, m[2].str(), m[3].str()});
      cells.set_world(static_cast<int>(gpus.size()));
      platform.add_rank(index, trace.header.host, m[2].str(), line.number);
      continue;
    }
    if (std::regex_match(s, m, running_re)) {
      testcase = m[1].str();
      testcase_line = line.number;
      continue;
    }
    if (std::regex_match(s, m, status_re)) {
      // A waived testcase prints "Waived: " without its name (Output::addTestcase): only the count is known.
      if (m[1] == "Waived")
        ++waived;
      else
        trace.notes.push_back(fmt::format("{}: {}: {}", where.to_string(), m[1].str(), m[2].str()));
      continue;
    }
    if (description_unit(s)) {
      if (const auto named = named_by_sum.find(line.number); named != named_by_sum.end() && named->second != testcase) {
        trace.notes.push_back(fmt::format("{}: {}; its \"SUM {}\" line names the testcase", where.to_string(),
                                          testcase.empty()
                                              ? "no \"Running <testcase>.\" line before this matrix"
                                              : fmt::format("the matrix follows \"Running {}.\"", testcase),
                                          named->second));
        testcase = named->second;
        testcase_line = line.number;
      }
      if (testcase.empty())
        throw_input_error(where, "",
                          "a matrix description without its testcase: no \"Running <testcase>.\" line before it and no "
                          "\"SUM <testcase> <value>\" line after it");
      if (!testcase_of(testcase)) {
        skipped.push_back(testcase);
        matrix.reset();
        // Its rows are read as a matrix of an unknown kind only to skip them: an unknown testcase is noted, not
        // guessed at.
        continue;
      }
      matrix = matrix_of(testcase, s);
      description_line = line.number;
      continue;
    }
    if (!words.empty() && detail::is_unsigned_integer(words[0]) && !testcase.empty() &&
        std::ranges::find(skipped, testcase) == skipped.end() && testcase_line > 0)
      throw_input_error(where, testcase,
                        "a matrix row without a description line (\"memcpy CE GPU(row) <- GPU(column) bandwidth "
                        "(GB/s)\") before it");
    // The host name sits alone on its line before the device list (0.8 and later).
    if (!version.empty() && gpus.empty() && trace.header.host.empty() && words.size() == 1 &&
        s.find(':') == std::string::npos && !s.starts_with("#") && testcase.empty())
      trace.header.host = s;
  }
  if (trace.header.extra.find("source_version") == trace.header.extra.end() && trace.records.empty())
    throw_input_error({trace.source, 0, 0}, "", "nvbandwidth: no \"nvbandwidth Version\" line and no result matrix");
  if (!skipped.empty())
    trace.notes.push_back(fmt::format("{}: testcases snsim does not know were left out: {} (known: {})", trace.source,
                                      fmt::join(skipped, ", "), known_testcases()));
  if (cells.not_measured() > 0)
    trace.notes.push_back(fmt::format("{}: {} matrix cells are N/A (not measured: pairs without peer access?)",
                                      trace.source, cells.not_measured()));
  if (waived > 0)
    trace.notes.push_back(
        fmt::format("{}: {} testcases were waived (not run: this machine lacks what they need)", trace.source, waived));
  for (auto& [index, gpu] : gpus) {
    if (!multinode && !trace.header.host.empty()) gpu.extra["host"] = trace.header.host;
    trace.header.gpus.push_back(gpu);
  }
  if (gpus.empty() && largest_gpu >= 0)
    platform.set_ranks(largest_gpu + 1, "matrix columns");  // the file lists no devices; its matrices count them
  if (!multinode && !gpus.empty()) platform.set_nodes(1, "one process (nvbandwidth without MULTINODE)");
  if (!multinode && gpus.empty() && largest_gpu >= 0) platform.set_nodes(1, "one process (no \"Process\" lines)");
  platform.write(trace);
  detail::check_imported(trace);
  return trace;
}

Trace import_nvbandwidth_json(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "nvbandwidth");
  detail::RecordCollector records{trace};
  const SourceLocation file{trace.source, 0, 0};

  Json root = detail::parse_json_at(text, file);
  if (!root.is_object() || !root.contains("nvbandwidth") || !root["nvbandwidth"].is_object())
    throw_input_error(file, "nvbandwidth", "expected an object {\"nvbandwidth\": {...}}");
  const Json& nvb = root["nvbandwidth"];
  auto string_of = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  std::string version;
  if (nvb.contains("version")) version = string_of(nvb["version"]);
  if (!version.empty()) trace.header.extra["source_version"] = version;
  if (nvb.contains("Driver Version")) trace.header.driver = string_of(nvb["Driver Version"]);
  if (nvb.contains("CUDA Runtime Version")) trace.header.cuda = cuda_version(string_of(nvb["CUDA Runtime Version"]));
  if (nvb.contains("error"))
    trace.notes.push_back(fmt::format("{}: nvbandwidth reports an error: {}", trace.source, string_of(nvb["error"])));
  if (nvb.contains("warning"))
    trace.notes.push_back(fmt::format("{}: nvbandwidth warns: {}", trace.source, string_of(nvb["warning"])));
  detail::PlatformFacts platform;
  // "0: NVIDIA H200 (00000000:18:00): (gpunode)": index, name, PCI id, host (0.8 and later).
  static const std::regex gpu_re{R"((\d+):\s*(.*?)(?:\s*\(([0-9a-fA-F:.]+)\))?(?::\s*\((.*)\))?\s*$)"};
  if (nvb.contains("GPU Device list") && nvb["GPU Device list"].is_array()) {
    for (std::size_t i = 0; i < nvb["GPU Device list"].size(); ++i) {
      std::smatch m;
      const std::string s = string_of(nvb["GPU Device list"][i]);
      const std::string key = fmt::format("nvbandwidth.GPU Device list[{}]", i);
      if (!std::regex_match(s, m, gpu_re))
        throw_input_error(file, key, fmt::format("expected \"N: NAME (PCI): (HOST)\", found \"{}\"", s));
      const int index = detail::index_at(m[1].str(), file, key);
      TraceGpu gpu{index, m[2].str(), m[3].str()};
      if (m[4].matched) {
        gpu.extra["host"] = m[4].str();
        if (trace.header.host.empty()) trace.header.host = m[4].str();
      }
      platform.add_rank(index, m[4].matched ? m[4].str() : std::string(), m[2].str(), 0);
      trace.header.gpus.push_back(std::move(gpu));
    }
  }
  if (!nvb.contains("testcases") || !nvb["testcases"].is_array())
    throw_input_error(file, "nvbandwidth.testcases", "missing; expected an array of testcases");
  Cells cells{records, default_buffer_bytes(version)};
  cells.set_world(static_cast<int>(trace.header.gpus.size()));
  std::vector<std::string> skipped;
  int largest_gpu = -1;
  const Json& testcases = nvb["testcases"];
  for (std::size_t t = 0; t < testcases.size(); ++t) {
    const Json& tc = testcases[t];
    const std::string key = fmt::format("nvbandwidth.testcases[{}]", t);
    if (!tc.is_object() || !tc.contains("name") || !tc["name"].is_string())
      throw_input_error(file, key + ".name", "missing; each testcase needs a name");
    const std::string name = tc["name"].get<std::string>();
    const std::string status = tc.contains("status") ? string_of(tc["status"]) : "Passed";
    if (status != "Passed") {
      trace.notes.push_back(fmt::format("{}: testcase {} skipped: status {}{}", trace.source, name, status,
                                        tc.contains("error") ? " (" + string_of(tc["error"]) + ")" : ""));
      continue;
    }
    if (!testcase_of(name)) {
      skipped.push_back(name);
      continue;
    }
    if (!tc.contains("bandwidth_description") || !tc["bandwidth_description"].is_string())
      throw_input_error(file, key + ".bandwidth_description", "missing; a passed testcase needs its description");
    const std::string description = tc["bandwidth_description"].get<std::string>();
    const auto meaning = matrix_of(name, description);
    if (!meaning)
      throw_input_error(file, key + ".bandwidth_description",
                        fmt::format("cannot tell what \"{}\" measures", description));
    if (!tc.contains("bandwidth_matrix") || !tc["bandwidth_matrix"].is_array())
      throw_input_error(file, key + ".bandwidth_matrix", "missing; expected an array of rows");
    const Json& matrix = tc["bandwidth_matrix"];
    // Bidirectional device-to-device tests append three matrices (per direction, then Total) into one.
    std::vector<Matrix> parts{*meaning};
    if (meaning->tag == "total" && matrix.size() % 3 == 0 && !matrix.empty()) {
      const std::string kind = name.find("write") != std::string::npos ? "write" : "read";
      Matrix first = *meaning, second = *meaning;
      first.tag = kind + "1";
      second.tag = kind + "2";
      parts = {first, second, *meaning};
    }
    const std::size_t rows_per_part = matrix.size() / parts.size();
    for (std::size_t row = 0; row < matrix.size(); ++row) {
      const Matrix& part = parts[row / rows_per_part];
      if (!matrix[row].is_array())
        throw_input_error(file, fmt::format("{}.bandwidth_matrix[{}]", key, row), "expected an array of cells");
      for (std::size_t column = 0; column < matrix[row].size(); ++column) {
        const Json& cell = matrix[row][column];
        const std::string cell_key = fmt::format("{}.bandwidth_matrix[{}][{}]", key, row, column);
        if (!cell.is_string() && !cell.is_number())
          throw_input_error(file, cell_key, fmt::format("expected a number or \"N/A\", found {}", cell.dump()));
        largest_gpu = std::max(largest_gpu, static_cast<int>(column));
        cells.add(part, static_cast<int>(row % rows_per_part), static_cast<int>(column),
                  static_cast<int>(matrix[row].size()), string_of(cell), file, cell_key);
      }
    }
  }
  if (!skipped.empty())
    trace.notes.push_back(fmt::format("{}: testcases snsim does not know were left out: {} (known: {})", trace.source,
                                      fmt::join(skipped, ", "), known_testcases()));
  if (cells.not_measured() > 0)
    trace.notes.push_back(fmt::format("{}: {} matrix cells are N/A (not measured: pairs without peer access?)",
                                      trace.source, cells.not_measured()));
  if (trace.header.gpus.empty() && largest_gpu >= 0) platform.set_ranks(largest_gpu + 1, "matrix columns");
  platform.set_nodes(1, "one process");
  platform.write(trace);
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
