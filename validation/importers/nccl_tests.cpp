// nccl-tests output (all_reduce_perf, all_gather_perf, ...): the text every version prints and the -J JSON file of
// 2.17.3 and later (src/util.cu of NVIDIA/nccl-tests).
//
// A log holds one or more runs. A run prints a preamble ("# nccl-tests version ...", "# Collective test starting:
// ...", "# nThread ... iters: 20 ... graph: 0", "#  Rank  0 Group  0 Pid ... on HOST device  0 [pci] NAME"), a result
// table whose column header names the columns ("#  size  count  type  redop  root  time  algbw  busbw  #wrong
// time ..."; before 2.13 each test printed its own, with `error` for `#wrong` and without the columns a test does
// not use), one row per size, and a footer ("# Out of bounds values", "# Avg bus bandwidth"). Launchers prefix
// lines ("[1,0]<stdout>:", "0: "), NCCL's INFO and WARN lines fall anywhere, and users paste parts: the table is
// found by its header, or by the shape of its rows when the header is missing. Each row gives an out-of-place and
// an in-place record (`collective` family, time in seconds as the value, algbw/busbw in B/s as extras).
//
// Which collective a run measured is printed only since 2.16.7 ("Collective test starting"). Before that it comes from
// `ImportOptions::collective` (snsim traces import --op), a command line in the log naming a *_perf binary, the file
// name, or the columns: redop/root and busbw/algbw (2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter) tell some
// collectives apart; a log that fits several is an error asking for --op.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "validation/importers/import.hpp"
#include "validation/importers/platform.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

/// nccl-tests' binaries, longest first so that a name is not taken for a part of another ("reduce" in
/// "reduce_scatter").
constexpr std::array<std::string_view, 11> collectives{"reduce_scatter", "all_reduce", "all_gather", "alltoallv",
                                                       "alltoall",       "broadcast",  "sendrecv",   "hypercube",
                                                       "scatter",        "gather",     "reduce"};

std::string known_collectives() {
  std::vector<std::string> names;
  for (auto c : collectives) names.push_back(std::string(c) + "_perf");
  std::ranges::sort(names);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// "all_reduce", "allreduce", "all-reduce", "all_reduce_perf", "AllReduce" -> "all_reduce_perf"; nullopt otherwise.
std::optional<std::string> canonical_collective(std::string_view name) {
  std::string squeezed;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      squeezed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (squeezed.ends_with("perf")) squeezed.resize(squeezed.size() - 4);
  if (squeezed == "a2a" || squeezed == "alltoall") return "alltoall_perf";
  if (squeezed == "bcast") return "broadcast_perf";
  for (auto c : collectives) {
    std::string plain;
    for (char ch : c)
      if (ch != '_') plain += ch;
    if (squeezed == plain) return std::string(c) + "_perf";
  }
  return std::nullopt;
}

/// The collective a file name names ("nccl-allreduce-16xh100.txt" -> all_reduce_perf), if exactly one.
std::optional<std::string> collective_in_file_name(std::string_view source_name) {
  std::string name;
  for (char c : std::filesystem::path(std::string(source_name)).filename().string())
    if (std::isalnum(static_cast<unsigned char>(c)))
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> found;
  for (auto c : collectives) {
    std::string plain;
    for (char ch : c)
      if (ch != '_') plain += ch;
    for (auto at = name.find(plain); at != std::string::npos; at = name.find(plain)) {
      name = name.substr(0, at) + " " + name.substr(at + plain.size());  // taken: "reduce" stays out of "allreduce"
      if (std::ranges::find(found, std::string(c)) == found.end()) found.emplace_back(c);
    }
  }
  if (found.size() != 1) return std::nullopt;
  return found.front() + "_perf";
}

/// "22703" (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch) -> "2.27.3".
std::string nccl_version_from_code(std::string_view code) {
  // Whole numbers of 5 to 9 digits only: anything else is kept as printed.
  if (!detail::is_unsigned_integer(code) || code.size() < 5 || code.size() > 9) return std::string(code);
  const auto v = std::stol(std::string(code));
  if (v < 10000) return std::string(code);
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

/// What a column of the result table holds. `half` is 0 for out-of-place, 1 for in-place, -1 for the row's own.
struct Column {
  std::string name;  // as printed: "size", "time", "algbw", "#wrong", "i_p99", "timestamp", ...
  int half = -1;
};

struct Layout {
  int line = 0;  // the header line, or the first row when the layout was inferred
  bool inferred = false;
  std::vector<Column> columns;
  /// Words a data row has: the timestamp column ("2026-01-06 10:00:00") is two.
  std::size_t row_words() const {
    const bool stamped = !columns.empty() && columns.back().name == "timestamp";
    return columns.size() + (stamped ? 1 : 0);
  }
  std::optional<std::size_t> find(std::string_view name, int half = -1) const {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (columns[i].name == name && columns[i].half == half) return i;
    return std::nullopt;
  }
};

bool is_time_column(std::string_view n) {
  return n == "time" || n == "cputime";
}

/// The extra field a column the importer does not know is kept under: its own name, unless that is one of the
/// record's fields (a column "median" must not replace the record's median).
std::string column_key(const std::string& n) {
  return is_record_field(n) ? "column_" + n : n;
}

/// A column header line ("#  size  count  type  redop  root  time  algbw ..."), or nullopt.
std::optional<Layout> header_layout(std::string_view text, int line) {
  text = trim(text);
  if (!text.starts_with('#')) return std::nullopt;
  text.remove_prefix(1);
  const auto names = split_words(text);
  if (names.empty() || (names[0] != "size" && names[0] != "bytes")) return std::nullopt;
  Layout layout;
  layout.line = line;
  int half = -1;
  for (auto n : names) {
    if (is_time_column(n)) ++half;
    const bool per_row = n == "size" || n == "bytes" || n == "count" || n == "type" || n == "redop" || n == "op" ||
                         n == "root" || n == "timestamp";
    layout.columns.push_back({std::string(n == "bytes" ? "size" : n == "op" ? "redop" : n), per_row ? -1 : half});
  }
  const bool timed = layout.find("time", 0) || layout.find("cputime", 0);
  if (half < 0 || half > 1 || !timed || !layout.find("algbw", 0) || !layout.find("busbw", 0)) return std::nullopt;
  return layout;
}

/// The layout of a row printed without its column header, judged by its number of words (the headers each version
/// of nccl-tests prints: 2.13 and later, with and without copybw or per-iteration columns; before 2.13, per test).
std::optional<Layout> inferred_layout(const std::vector<std::string_view>& words, int line) {
  auto make = [&](std::vector<std::string> lead, std::vector<std::string> half) {
    Layout layout;
    layout.line = line;
    layout.inferred = true;
    for (auto& n : lead) layout.columns.push_back({n, -1});
    for (int h = 0; h < 2; ++h)
      for (auto& n : half) layout.columns.push_back({n, h});
    return layout;
  };
  const std::vector<std::string> modern{"time", "algbw", "busbw", "#wrong"};
  switch (words.size()) {
    case 13:
      return make({"size", "count", "type", "redop", "root"}, modern);
    case 15:
      return make({"size", "count", "type", "redop", "root"}, {"time", "algbw", "busbw", "copybw", "#wrong"});
    case 21:
      return make({"size", "count", "type", "redop", "root"},
                  {"time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"});
    case 12:  // before 2.13: redop (all_reduce, reduce_scatter, alltoall) or root (broadcast)
      return make({"size", "count", "type", detail::to_number(words[3]) ? "root" : "redop"},
                  {"time", "algbw", "busbw", "error"});
    case 11:  // before 2.13: all_gather
      return make({"size", "count", "type"}, {"time", "algbw", "busbw", "error"});
    default:
      return std::nullopt;
  }
}

/// The `#wrong` column: a count of elements, printed with %g by nccl-tests (so "1e+06" for a million).
std::uint64_t wrong_count(std::string_view word, const SourceLocation& where) {
  const double value = detail::number_at(word, where, "#wrong");
  // 2^64 is the first double beyond the range of a uint64_t.
  if (value < 0 || value != std::floor(value) || value >= 18446744073709551616.0)
    throw_input_error(where, "#wrong", fmt::format("expected a whole number >= 0, found '{}'", word));
  return static_cast<std::uint64_t>(value);
}

/// One measured half of a row (out-of-place or in-place), in the units nccl-tests prints.
struct Half {
  double time_us = 0;
  double algbw = 0;  // GB/s
  double busbw = 0;
  Json wrong = nullptr;  // elements found wrong; null when validation was off
  Json extra = Json::object();
};

struct Row {
  int line = 0;
  std::uint64_t bytes = 0;
  std::optional<std::uint64_t> count;
  std::string type, redop;
  std::optional<long long> root;
  std::optional<Half> halves[2];
  Json extra = Json::object();
};

/// One run of a test: its preamble, table and footer.
struct Run {
  int first_line = 0;
  std::string test, test_from;  // the collective and how it was known
  std::string starting_test;    // from "# Collective test starting:"
  int starting_line = 0;
  std::optional<std::uint64_t> iters, warmup, agg, graph, validation, threads, gpus, min_bytes, max_bytes;
  int preamble_line = 0;
  bool blocking = false;
  detail::PlatformFacts platform;
  std::vector<int> rank_numbers;
  std::optional<Layout> layout;
  std::vector<Row> rows;
  std::optional<double> avg_busbw;
  std::optional<std::uint64_t> out_of_bounds;
  bool footer = false;
  int skipped_halves = 0;
  bool has_started() const { return preamble_line != 0 || starting_line != 0 || layout || !rows.empty(); }
};

/// A command line in the log that names a *_perf binary ("mpirun ... ./build/all_reduce_perf -b 8 -e 8G -g 1").
struct CommandLine {
  int line = 0;
  std::string collective;
  std::string text;
  bool looks_like_command = false;  // options follow the binary
};

std::optional<CommandLine> command_line(std::string_view text, int line) {
  static const std::regex binary_re{
      R"((?:^|[\s/=])(reduce_scatter|all_reduce|all_gather|alltoallv|alltoall|broadcast|sendrecv|hypercube|scatter|gather|reduce)_perf(?:_mpi)?(\s+-|\s*$|\s))"};
  const std::string s(text);
  std::smatch m;
  if (!std::regex_search(s, m, binary_re)) return std::nullopt;
  return CommandLine{line, m[1].str() + "_perf", std::string(trim(text)), m[2].str().find('-') != std::string::npos};
}

/// The value of option `-x VALUE` / `--long VALUE` / `--long=VALUE` on a command line.
std::optional<std::string> option_value(std::string_view command, std::string_view short_name,
                                        std::string_view long_name) {
  const auto words = split_words(command);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if ((w == short_name || w == long_name) && i + 1 < words.size()) return std::string(words[i + 1]);
    if (w.starts_with(std::string(long_name) + "=")) return std::string(w.substr(long_name.size() + 1));
  }
  return std::nullopt;
}

std::string registration_name(std::string_view value) {
  if (value == "0") return "none";
  if (value == "1") return "local";
  if (value == "2") return "symmetric";
  return std::string(value);
}

/// Reads one data row against `layout`; every unreadable cell is an error at the row's line.
Row read_row(const std::vector<std::string_view>& words, const Layout& layout, const SourceLocation& where) {
  Row row;
  row.line = where.line;
  const std::size_t expected = layout.row_words();
  if (words.size() != expected) {
    if (layout.inferred)
      throw_input_error(
          where, "",
          fmt::format("expected {} columns like the row on line {}, found {}", expected, layout.line, words.size()));
    throw_input_error(where, "",
                      fmt::format("expected {} columns as in the table header on line {}, found {}", expected,
                                  layout.line, words.size()));
  }
  bool half_present[2] = {false, false};
  Half halves[2];
  for (std::size_t i = 0; i < layout.columns.size(); ++i) {
    const Column& c = layout.columns[i];
    const std::string_view w = words[i];
    const std::string& n = c.name;
    if (c.half < 0) {
      if (n == "size")
        row.bytes = detail::count_at(w, where, "size");
      else if (n == "count")
        row.count = detail::count_at(w, where, "count");
      else if (n == "type")
        row.type = std::string(w);
      else if (n == "redop")
        row.redop = std::string(w);
      else if (n == "root")
        row.root = w == "-1" ? -1 : detail::index_at(w, where, "root");  // -1: the collective has no root
      else if (n == "timestamp")
        row.extra["timestamp"] = fmt::format("{} {}", w, words[i + 1]);
      continue;
    }
    Half& h = halves[c.half];
    if (is_time_column(n)) {
      if (w == "N/A") continue;  // a half this test does not run
      half_present[c.half] = true;
      h.time_us = detail::number_at(w, where, n);
      if (n == "cputime") h.extra["timer"] = "cpu";
      continue;
    }
    if (!half_present[c.half]) continue;
    if (n == "#wrong") {
      if (w != "N/A") h.wrong = wrong_count(w, where);
    } else if (n == "error") {  // before 2.13: the largest deviation found, not a count
      if (w != "N/A") h.extra["error"] = detail::number_at(w, where, "error");
    } else if (w == "N/A") {
      h.extra[column_key(n)] = nullptr;
    } else {
      const double value = detail::number_at(w, where, n);
      if (n == "algbw")
        h.algbw = value;
      else if (n == "busbw")
        h.busbw = value;
      else if (n == "copybw")
        h.extra["copybw"] = value * 1e9;
      else if (n == "i_min" || n == "i_max" || n == "i_p99")
        h.extra["iter_" + n.substr(2)] = value * 1e-6;
      else if (n == "i_cv%")
        h.extra["iter_cv_percent"] = value;
      else
        h.extra[column_key(n)] = value;
    }
  }
  for (int k = 0; k < 2; ++k)
    if (half_present[k]) row.halves[k] = halves[k];
  return row;
}

struct RecordSettings {
  std::string test;
  std::vector<int> ranks;
  std::uint64_t reps = 1;
  std::optional<std::uint64_t> graph_launches, agg;
  std::optional<std::string> registration;
};

/// The out-of-place and in-place records of one row.
void add_row_records(detail::RecordCollector& records, const RecordSettings& s, const Row& row,
                     const SourceLocation& where) {
  for (int k = 0; k < 2; ++k) {
    if (!row.halves[k]) continue;
    const Half& h = *row.halves[k];
    const std::string variant = k == 0 ? "out_of_place" : "in_place";
    detail::SingleValue value;
    value.family = Family::collective;
    value.test = s.test;
    value.variant = variant;
    value.ranks = s.ranks;
    value.bytes = Bytes{row.bytes};
    value.reps = s.reps;
    value.unit = MeasureUnit::seconds;
    value.value = h.time_us * 1e-6;
    value.statistic = "mean";
    const std::string id = fmt::format("nccl-tests/{}/{}/{}{}/{}", s.test, variant, row.type,
                                       row.redop.empty() ? "" : "/" + row.redop, row.bytes);
    TraceRecord& r = records.add(id, value, where);
    if (row.count) r.extra["count"] = *row.count;
    if (!row.type.empty()) r.extra["type"] = row.type;
    if (!row.redop.empty()) r.extra["redop"] = row.redop;
    if (row.root) r.extra["root"] = *row.root;
    r.extra["algbw"] = h.algbw * 1e9;
    r.extra["busbw"] = h.busbw * 1e9;
    r.extra["wrong"] = h.wrong;
    r.extra["launch"] = s.graph_launches && *s.graph_launches > 0 ? "graph" : "stream";
    if (s.graph_launches && *s.graph_launches > 0) r.extra["graph_launches"] = *s.graph_launches;
    if (s.agg) r.extra["agg_iters"] = *s.agg;
    if (s.registration) r.extra["registration"] = *s.registration;
    for (const auto& [key, v] : h.extra.items()) r.extra[key] = v;
    for (const auto& [key, v] : row.extra.items()) r.extra[key] = v;
    // Per-iteration statistics (-I 1) bound the mean where they are consistent with it.
    const double mean = r.median;
    const double lo = extra_number(r, "iter_min", -1), hi = extra_number(r, "iter_max", -1);
    if (lo >= 0 && hi >= 0 && lo <= mean && mean <= hi) {
      r.min = r.p01 = lo;
      r.max = hi;
      if (const double p99 = extra_number(r, "iter_p99", -1); p99 >= mean && p99 <= hi) r.p99 = p99;
    }
  }
}

/// Which collective a run measured, when the log does not print it.
struct Resolution {
  std::string test;
  std::string from;
};

/// From the columns: the reduction operator and root tell reductions from copies and rooted from unrooted ones;
/// busbw/algbw, which nccl-tests computes with the collective's bus factor, tells all_reduce from reduce_scatter.
std::variant<Resolution, std::string> collective_from_columns(const Run& run) {
  if (run.rows.empty()) return std::string("no rows");
  const Row& first = run.rows.front();
  const bool has_redop = run.layout && run.layout->find("redop");
  const bool has_root = run.layout && run.layout->find("root");
  const bool reduces = has_redop && first.redop != "none";
  const bool rooted = has_root && first.root && *first.root >= 0;
  // The ratio from the rows that carry enough digits (algbw is printed with 2 decimals).
  double ratio = -1;
  for (auto it = run.rows.rbegin(); it != run.rows.rend(); ++it)
    if (it->halves[0] && it->halves[0]->algbw >= 1) {
      ratio = it->halves[0]->busbw / it->halves[0]->algbw;
      break;
    }
  const int n = run.platform.ranks();
  const std::string columns = fmt::format("redop {}, root {}", has_redop ? first.redop : "(none printed)",
                                          has_root && first.root ? std::to_string(*first.root) : "(none printed)");
  if (reduces && rooted) return Resolution{"reduce_perf", fmt::format("columns ({})", columns)};
  if (reduces && !rooted && ratio >= 0) {
    if (n >= 2) {
      const double all_reduce = 2.0 * (n - 1) / n, reduce_scatter = (n - 1.0) / n;
      if (std::abs(ratio - all_reduce) <= 0.02 * all_reduce)
        return Resolution{"all_reduce_perf",
                          fmt::format("columns ({}, busbw/algbw {:.3f} = 2(n-1)/n for {} ranks)", columns, ratio, n)};
      if (std::abs(ratio - reduce_scatter) <= 0.02 * reduce_scatter)
        return Resolution{"reduce_scatter_perf",
                          fmt::format("columns ({}, busbw/algbw {:.3f} = (n-1)/n for {} ranks)", columns, ratio, n)};
    } else if (n == 0 && ratio > 0) {  // no rank list: 2(n-1)/n >= 1 > (n-1)/n for any n >= 2
      return Resolution{ratio >= 1 ? "all_reduce_perf" : "reduce_scatter_perf",
                        fmt::format("columns ({}, busbw/algbw {:.3f} {} 1)", columns, ratio, ratio >= 1 ? ">=" : "<")};
    }
  }
  std::vector<std::string> fits;
  if (reduces)
    fits = {"all_reduce_perf", "reduce_scatter_perf"};
  else if (rooted)
    fits = {"broadcast_perf", "gather_perf", "scatter_perf"};
  else
    fits = {"all_gather_perf", "alltoall_perf", "sendrecv_perf"};
  return fmt::format("the columns ({}) fit {}", columns, fmt::join(fits, ", "));
}

/// Ranks the bus bandwidth implies when the log lists none: busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for
/// all_gather, reduce_scatter and alltoall.
std::optional<int> ranks_from_bus_factor(const Run& run) {
  const bool twice = run.test == "all_reduce_perf";
  const bool once = run.test == "all_gather_perf" || run.test == "reduce_scatter_perf" || run.test == "alltoall_perf";
  if (!twice && !once) return std::nullopt;
  const Row* best = nullptr;  // the row with the most digits
  for (const Row& r : run.rows)
    if (r.halves[0] && (!best || r.halves[0]->algbw > best->halves[0]->algbw)) best = &r;
  if (!best || best->halves[0]->algbw < 1) return std::nullopt;
  const double ratio = best->halves[0]->busbw / best->halves[0]->algbw / (twice ? 2 : 1);  // (n-1)/n
  if (ratio <= 0 || ratio >= 0.999) return std::nullopt;
  return static_cast<int>(std::lround(1 / (1 - ratio)));
}

/// Facts NCCL's INFO lines give about the machine (NCCL_DEBUG=INFO).
void read_nccl_info(std::string_view text, const SourceLocation& at, detail::PlatformFacts& platform, Json& env,
                    std::string& nccl_version) {
  // "NCCL INFO NCCL_ALGO set by environment to Ring." (src/misc/param.cc prints the period).
  static const std::regex set_by_env{R"(NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+?)\.?\s*$)"};
  static const std::regex comm_re{R"(nRanks (\d+) nNodes (\d+) localRanks (\d+))"};
  static const std::regex version_re{R"(NCCL INFO NCCL version (\S+))"};
  // "Using network IB" names the transport NCCL chose; the NET/... lines only list what it found.
  static const std::regex net_re{R"(NCCL INFO Using network (\S+))"};
  static const std::regex channels_re{R"((\d+) nvls channels)"};
  const std::string s(text);
  const std::string where = fmt::format("line {}", at.line);
  std::smatch m;
  if (std::regex_search(s, m, set_by_env)) env[m[1].str()] = m[2].str();
  if (std::regex_search(s, m, comm_re)) {
    platform.set_ranks(detail::index_at(m[1].str(), at, "nRanks"), where);
    platform.set_nodes(detail::index_at(m[2].str(), at, "nNodes"), where);
    platform.set_gpus_per_node(detail::index_at(m[3].str(), at, "localRanks"), where);
  }
  if (nccl_version.empty() && std::regex_search(s, m, version_re)) nccl_version = m[1].str();
  if (std::regex_search(s, m, net_re)) {
    std::string net = m[1].str();
    std::ranges::transform(net, net.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    platform.set_network(net, where);
  }
  if (s.find("NCCL INFO NET/IB") != std::string::npos && s.find("/RoCE") != std::string::npos)
    platform.set_network("roce", where);
  if (std::regex_search(s, m, channels_re))
    platform.set_collective("nvls_channels", detail::index_at(m[1].str(), at, "nvls channels"), where);
  if (s.find("NVLS multicast support is available") != std::string::npos)
    platform.set_collective("nvls_available", true, where);
  if (s.find("NVLS multicast support is not available") != std::string::npos)
    platform.set_collective("nvls_available", false, where);
}

/// Writes the NCCL settings that decide the algorithm into the platform (the twins read the same from `env`).
void collective_settings(const Json& env, const Json& env_from, detail::PlatformFacts& platform) {
  auto setting = [&](const char* var, const char* key, auto convert) {
    if (env.contains(var)) platform.set_collective(key, convert(env[var].get<std::string>()), env_from.value(var, ""));
  };
  auto text = [](const std::string& v) { return Json(v); };
  setting("NCCL_ALGO", "algorithm", text);
  setting("NCCL_PROTO", "protocol", text);
  setting("NCCL_NVLS_ENABLE", "nvls", [](const std::string& v) { return Json(v != "0"); });
  setting("NCCL_COLLNET_ENABLE", "collnet", [](const std::string& v) { return Json(v != "0"); });
}

class TextImporter {
 public:
  TextImporter(std::string_view text, std::string_view source_name, const ImportOptions& options)
      : trace_{detail::imported_trace(source_name, "nccl-tests")}, options_{options} {
    lines_ = detail::text_lines(text, trace_.source);
  }

  Trace run() {
    runs_.emplace_back();
    for (const detail::TextLine& line : lines_) read_line(line);
    std::erase_if(runs_, [](const Run& r) { return !r.layout && r.rows.empty(); });
    if (runs_.empty())
      throw_input_error({trace_.source, 0, 0}, "",
                        "nccl-tests: no result table (a line like \"#  size  count  type  redop  root  time  algbw  "
                        "busbw  #wrong ...\", or rows of numbers after \"# nThread ...\")");
    finish();
    return std::move(trace_);
  }

 private:
  SourceLocation at(int line) const { return {trace_.source, line, 0}; }
  Run& current() { return runs_.back(); }

  /// A preamble line after a table starts the next run.
  Run& run_for_preamble(int line) {
    if (current().layout || !current().rows.empty() || current().footer) runs_.emplace_back();
    if (current().first_line == 0) current().first_line = line;
    return current();
  }

  void read_line(const detail::TextLine& line) {
    const auto stripped = detail::strip_launcher_prefix(line.text);
    const std::string_view text = stripped.text;
    const std::string s(text);
    const SourceLocation where = at(line.number);
    static const std::regex version_re{R"(^#\s*nccl-tests version (\S+)(?:.*nccl-library=(\d+))?)"};
    static const std::regex starting_re{R"(^#\s*Collective test starting:\s*(\S+))"};
    static const std::regex rank_re{
        R"(^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*\S)\s*$)"};
    static const std::regex plain_version_re{R"(^\s*NCCL version (\S+))"};
    std::smatch m;

    if (s.find(" NCCL INFO ") != std::string::npos || s.find(" NCCL WARN ") != std::string::npos) {
      read_nccl_info(text, where, platform_, env_, nccl_version_);
      note_env_from(line.number);
      return;
    }
    if (auto command = command_line(text, line.number)) commands_.push_back(*command);
    for (const auto& [name, value] : detail::assignments(text, {"NCCL_"})) {
      env_[name] = value;
      env_from_[name] = fmt::format("line {}", line.number);
    }

    if (std::regex_search(s, m, version_re)) {
      Run& run = run_for_preamble(line.number);
      (void)run;
      trace_.header.extra["source_version"] = m[1].str();
      if (m[2].matched) nccl_version_ = nccl_version_from_code(m[2].str());
      return;
    }
    if (std::regex_search(s, m, starting_re)) {
      Run& run = run_for_preamble(line.number);
      if (!run.starting_test.empty()) {  // two "starting" lines without a table between: a new run
        runs_.emplace_back();
        current().first_line = line.number;
      }
      current().starting_test = m[1].str();
      current().starting_line = line.number;
      return;
    }
    if (trim(text).starts_with('#') && s.find("nThread") != std::string::npos) {
      Run& run = run_for_preamble(line.number);
      if (run.preamble_line != 0) {  // a second preamble without a table: another run (or a second process)
        runs_.emplace_back();
        current().first_line = line.number;
      }
      read_preamble(s, current(), where);
      return;
    }
    if (trim(text).starts_with('#') && s.find("Blocking Enabled") != std::string::npos) {
      current().blocking = true;
      return;
    }
    static const std::regex any_rank_re{R"(^#\s*Rank\s+\d+)"};
    if (trim(text).starts_with('#') && std::regex_search(s, any_rank_re)) {
      if (!std::regex_match(s, m, rank_re))
        throw_input_error(where, "", "expected a rank line \"#  Rank N Group G Pid P on HOST device D [PCI] NAME\"");
      Run& run = current().layout || !current().rows.empty() ? run_for_preamble(line.number) : current();
      const int rank = detail::index_at(m[1].str(), where, "rank");
      if (auto dup = std::ranges::find(run.rank_numbers, rank); dup != run.rank_numbers.end())
        throw_input_error(where, "rank",
                          fmt::format("rank {} is listed twice in one run: the processes did not form one job (an "
                                      "nccl-tests binary built without MPI, started by mpirun?)",
                                      rank));
      run.rank_numbers.push_back(rank);
      run.platform.add_rank(rank, m[2].str(), m[5].str(), line.number);
      TraceGpu gpu{rank, m[5].str(), m[4].str()};
      gpu.extra["host"] = m[2].str();
      gpu.extra["device"] = detail::index_at(m[3].str(), where, "device");
      if (std::ranges::none_of(gpus_, [&](const TraceGpu& g) { return g.index == rank; }))
        gpus_.push_back(std::move(gpu));
      return;
    }
    if (std::regex_search(s, m, plain_version_re)) {
      if (nccl_version_.empty()) nccl_version_ = m[1].str();
      return;
    }
    if (trim(text).starts_with('#')) {
      read_comment(text, where);
      return;
    }
    const auto words = split_words(text);
    if (words.empty() || !detail::is_unsigned_integer(words[0])) return;  // warnings, launcher output, ...
    Run& run = current();
    if (run.footer) return;  // numbers after a finished run (another tool's output) are not this table's
    if (!run.layout) {
      if (run.preamble_line == 0 && run.rank_numbers.empty()) return;  // not an nccl-tests table
      run.layout = inferred_layout(words, line.number);
      if (!run.layout)
        throw_input_error(where, "",
                          fmt::format("a row of {} words without a table header: expected the 13 columns \"size count "
                                      "type redop root time algbw busbw #wrong time algbw busbw #wrong\" (or an "
                                      "older layout of 11 or 12)",
                                      words.size()));
      trace_.notes.push_back(fmt::format("{}: no table header before this row; assumed the columns {}",
                                         where.to_string(), column_names(*run.layout)));
    }
    Row row = read_row(words, *run.layout, where);
    for (int k = 0; k < 2; ++k)
      if (!row.halves[k] && run.layout->find("time", k)) ++run.skipped_halves;
    run.rows.push_back(std::move(row));
  }

  static std::string column_names(const Layout& layout) {
    std::vector<std::string> names;
    for (const auto& c : layout.columns) names.push_back(c.name);
    return fmt::format("\"{}\"", fmt::join(names, " "));
  }

  void note_env_from(int line) {
    for (const auto& [key, value] : env_.items())
      if (!env_from_.contains(key)) env_from_[key] = fmt::format("line {}", line);
  }

  static void read_preamble(const std::string& s, Run& run, const SourceLocation& where) {
    run.preamble_line = where.line;
    auto value = [&](const std::regex& re) -> std::optional<std::uint64_t> {
      std::smatch m;
      if (!std::regex_search(s, m, re)) return std::nullopt;
      return detail::count_at(m[1].str(), where, "nThread line");
    };
    static const std::regex threads_re{R"(nThread\s+(\d+))"}, gpus_re{R"(nGpus\s+(\d+))"},
        min_re{R"(minBytes\s+(\d+))"}, max_re{R"(maxBytes\s+(\d+))"}, warmup_re{R"(warmup iters:\s*(\d+))"},
        iters_re{R"((?:^|[^a-z] )iters:\s*(\d+))"}, agg_re{R"(agg iters:\s*(\d+))"},
        validation_re{R"(validation:\s*(\d+))"}, graph_re{R"(graph:\s*(\d+))"};
    run.threads = value(threads_re);
    run.gpus = value(gpus_re);
    run.min_bytes = value(min_re);
    run.max_bytes = value(max_re);
    run.warmup = value(warmup_re);
    run.agg = value(agg_re);
    run.validation = value(validation_re);
    run.graph = value(graph_re);
    // "iters:" that is neither "warmup iters:" nor "agg iters:".
    const auto words = split_words(s);
    for (std::size_t i = 1; i + 1 < words.size(); ++i)
      if (words[i] == "iters:" && words[i - 1] != "warmup" && words[i - 1] != "agg")
        run.iters = detail::count_at(words[i + 1], where, "iters");
  }

  void read_comment(std::string_view text, const SourceLocation& where) {
    const std::string s(text);
    static const std::regex bounds_re{R"(^#\s*Out of bounds values\s*:\s*(\d+))"};
    static const std::regex avg_re{R"(^#\s*Avg bus bandwidth\s*:\s*(\S+))"};
    static const std::regex concluded_re{R"(^#\s*Collective test concluded:\s*(\S+))"};
    std::smatch m;
    if (std::regex_search(s, m, bounds_re)) {
      current().out_of_bounds = detail::count_at(m[1].str(), where, "Out of bounds values");
    } else if (std::regex_search(s, m, avg_re)) {
      current().avg_busbw = detail::number_at(m[1].str(), where, "Avg bus bandwidth") * 1e9;
      current().footer = true;
    } else if (std::regex_search(s, m, concluded_re)) {
      current().footer = true;
    } else if (auto layout = header_layout(text, where.line)) {
      Run& run = current().footer || !current().rows.empty() ? run_for_preamble(where.line) : current();
      if (!run.layout || run.rows.empty()) run.layout = std::move(layout);
    }
  }

  /// The collective of `run`, from (in this order) the log's "starting" line, --op, a command line before the run,
  /// the file name, the columns.
  void resolve_test(Run& run, std::size_t index) {
    std::optional<std::string> wanted;
    if (!options_.collective.empty()) {
      wanted = canonical_collective(options_.collective);
      if (!wanted)
        throw_input_error(
            {trace_.source, 0, 0}, "--op",
            fmt::format("unknown collective \"{}\"; known: {}", options_.collective, known_collectives()));
    }
    const int first_row = run.rows.empty() ? 0 : run.rows.front().line;
    if (!run.starting_test.empty()) {
      auto named = canonical_collective(run.starting_test);
      run.test = named ? *named : run.starting_test;
      run.test_from = fmt::format("line {}", run.starting_line);
      if (wanted && *wanted != run.test)
        throw_input_error(at(run.starting_line), "test",
                          fmt::format("the log names {}, --op says {}", run.test, *wanted));
      return;
    }
    if (wanted) {
      run.test = *wanted;
      run.test_from = "--op";
      return;
    }
    // The nearest command line before this run's table and after the previous run's.
    const int previous_end = index == 0 ? 0 : runs_[index - 1].rows.empty() ? 0 : runs_[index - 1].rows.back().line;
    const CommandLine* nearest = nullptr;
    for (const CommandLine& c : commands_)
      if (c.line > previous_end && c.line < first_row && (c.looks_like_command || !nearest)) nearest = &c;
    if (nearest) {
      run.test = nearest->collective;
      run.test_from = fmt::format("line {}", nearest->line);
      run_commands_[index] = nearest->text;
      return;
    }
    if (auto named = collective_in_file_name(trace_.source); named && runs_.size() == 1) {
      run.test = *named;
      run.test_from = "file name";
      return;
    }
    const auto from_columns = collective_from_columns(run);
    if (const auto* found = std::get_if<Resolution>(&from_columns)) {
      run.test = found->test;
      run.test_from = found->from;
      return;
    }
    throw_input_error(at(first_row), "test",
                      fmt::format("cannot tell which collective this is: no \"# Collective test starting:\" line, no "
                                  "command line naming a *_perf binary, no collective in the file name, and {}; name "
                                  "it with --op (known: {})",
                                  std::get<std::string>(from_columns), known_collectives()));
  }

  void finish() {
    note_env_from(0);
    Json runs_json = Json::array();
    std::vector<int> all_ranks;
    const Run* platform_run = nullptr;
    int wrong_rows = 0;
    detail::RecordCollector records{trace_};
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      Run& run = runs_[i];
      resolve_test(run, i);
      RecordSettings settings;
      settings.test = run.test;
      int ranks = static_cast<int>(run.rank_numbers.size());
      std::string ranks_from = ranks > 0 ? "rank lines" : "";
      if (ranks == 0 && platform_.ranks() > 0) {
        ranks = platform_.ranks();
        ranks_from = "NCCL INFO";
      }
      if (ranks == 0)
        if (auto n = ranks_from_bus_factor(run)) {
          ranks = *n;
          ranks_from = "busbw/algbw";
          run.platform.set_ranks(*n, fmt::format("busbw/algbw of {}", run.test));
        }
      if (!run.rank_numbers.empty()) {
        settings.ranks = run.rank_numbers;
        std::ranges::sort(settings.ranks);
        // A pasted part of the rank list ("#  Rank 71 ..." alone): the run had at least the highest rank + 1.
        if (settings.ranks.back() + 1 != static_cast<int>(settings.ranks.size())) {
          ranks = settings.ranks.back() + 1;
          ranks_from = "highest rank listed + 1";
          run.platform.set_partial_rank_list(ranks, "highest rank listed + 1");
          trace_.notes.push_back(
              fmt::format("{}: the rank list shows {} of at least {} ranks; the records use ranks "
                          "0..{}",
                          trace_.source, settings.ranks.size(), ranks, ranks - 1));
          settings.ranks.clear();
          for (int r = 0; r < ranks; ++r) settings.ranks.push_back(r);
        }
      } else {
        for (int r = 0; r < ranks; ++r) settings.ranks.push_back(r);
      }
      settings.reps = std::max<std::uint64_t>(1, run.iters.value_or(1) * run.agg.value_or(1));
      settings.graph_launches = run.graph;
      settings.agg = run.agg;
      if (auto c = run_commands_.find(i); c != run_commands_.end())
        if (auto r = option_value(c->second, "-R", "--local_register")) settings.registration = registration_name(*r);
      const std::size_t records_before = trace_.records.size();
      for (const Row& row : run.rows) {
        add_row_records(records, settings, row, at(row.line));
        for (const auto& h : row.halves)
          if (h && h->wrong.is_number() && h->wrong.get<std::uint64_t>() > 0) ++wrong_rows;
      }
      if (run.skipped_halves > 0)
        trace_.notes.push_back(fmt::format("{}: {} table halves hold N/A (not run) and give no record", trace_.source,
                                           run.skipped_halves));
      if (!run.footer) {
        trace_.complete = false;
        trace_.notes.push_back(
            fmt::format("{}: incomplete: no \"# Avg bus bandwidth\" line after the table on line {} "
                        "(run cut short?); read {} records",
                        trace_.source, run.layout ? run.layout->line : 0, trace_.records.size() - records_before));
      }
      Json j = Json::object();
      j["test"] = run.test;
      j["test_from"] = run.test_from;
      j["line"] = run.layout ? run.layout->line : 0;
      j["rows"] = run.rows.size();
      j["ranks"] = ranks;
      j["ranks_from"] = ranks_from;
      auto put = [&](const char* key, const std::optional<std::uint64_t>& v) {
        if (v) j[key] = *v;
      };
      put("threads", run.threads);
      put("gpus_per_thread", run.gpus);
      put("min_bytes", run.min_bytes);
      put("max_bytes", run.max_bytes);
      put("warmup_iters", run.warmup);
      put("iters", run.iters);
      put("agg_iters", run.agg);
      put("validation", run.validation);
      put("graph_launches", run.graph);
      if (run.blocking) j["blocking"] = true;
      if (run.avg_busbw) j["avg_busbw"] = *run.avg_busbw;
      if (run.out_of_bounds) j["out_of_bounds"] = *run.out_of_bounds;
      if (auto c = run_commands_.find(i); c != run_commands_.end()) j["command"] = c->second;
      if (settings.registration) j["registration"] = *settings.registration;
      runs_json.push_back(std::move(j));
      if (!platform_run && (run.platform.has_rank_list() || run.platform.ranks() > 0)) platform_run = &run;
      if (all_ranks.empty()) all_ranks = settings.ranks;
    }
    if (wrong_rows > 0)
      trace_.notes.push_back(
          fmt::format("{}: {} results report wrong elements (#wrong > 0): the run computed "
                      "wrong data",
                      trace_.source, wrong_rows));
    trace_.header.gpus = gpus_;
    trace_.header.nccl = nccl_version_;
    trace_.header.env = env_;
    trace_.header.extra["nccl_tests"] = runs_json;

    // The platform: the first run's rank list, completed by what NCCL's INFO lines and the environment say.
    detail::PlatformFacts platform;
    if (platform_run && platform_run->platform.has_rank_list()) platform = platform_run->platform;
    platform.merge(platform_);  // NCCL's own counts before a count inferred from the bus bandwidth
    if (platform_run) platform.merge(platform_run->platform);
    collective_settings(env_, env_from_, platform);
    const Run& first = runs_.front();
    if (first.graph)
      platform.set_collective("launch", *first.graph > 0 ? "graph" : "stream",
                              fmt::format("line {}", first.preamble_line));
    if (auto c = run_commands_.find(0); c != run_commands_.end())
      if (auto r = option_value(c->second, "-R", "--local_register"))
        platform.set_collective("registration", registration_name(*r), "command line");
    platform.write(trace_);
    detail::check_imported(trace_);
  }

  Trace trace_;
  const ImportOptions& options_;
  std::vector<detail::TextLine> lines_;
  std::vector<Run> runs_;
  std::vector<CommandLine> commands_;
  std::map<std::size_t, std::string> run_commands_;
  std::vector<TraceGpu> gpus_;
  detail::PlatformFacts platform_;  // facts outside any run (NCCL INFO lines)
  Json env_ = Json::object();
  Json env_from_ = Json::object();
  std::string nccl_version_;
};

}  // namespace

Trace import_nccl_tests_with_options(std::string_view text, std::string_view source_name,
                                     const ImportOptions& options) {
  return TextImporter(text, source_name, options).run();
}

Trace import_nccl_tests(std::string_view text, std::string_view source_name) {
  return import_nccl_tests_with_options(text, source_name, {});
}

Trace import_nccl_tests_json(std::string_view text, std::string_view source_name) {
  return import_nccl_tests_json_with_options(text, source_name, {});
}

// The -J file: {"version", "start_time", "args": [argv], "env": ["K=V", ...], "nccl_version", "config": {nthreads,
// ngpus, iterations, aggregated_iterations, graph, devices: [{rank, hostname, device, device_hex, device_info}]},
// "results": [{size, count, type, redop, root, out_of_place: {time, alg_bw, bus_bw, nwrong} | null, in_place: {...},
// *_per_iter: {min_us, max_us, p99_us, cv_pct, times_us}}], "out_of_bounds", "average_bus_bandwidth" (spelt
// "average_bus_bandwidith" in the first version), "errors"}.
Trace import_nccl_tests_json_with_options(std::string_view text, std::string_view source_name,
                                          const ImportOptions& options) {
  Trace trace = detail::imported_trace(source_name, "nccl-tests");
  const SourceLocation file{trace.source, 0, 0};
  Json root = detail::parse_json_at(text, file);
  if (!root.is_object() || !root.contains("results") || !root["results"].is_array())
    throw_input_error(file, "results", "missing; expected the nccl-tests -J object {\"config\", \"results\": [...]}");
  auto number = [&](const Json& v, const std::string& key) -> double {
    if (v.is_number()) return v.get<double>();
    if (v.is_string())
      if (auto d = detail::to_number(detail::trim(v.get<std::string>()))) return *d;
    throw_input_error(file, key, fmt::format("expected a number, found {}", v.dump()));
  };
  // A whole number in [lowest, highest]: sizes, counts, ranks, the root.
  auto whole = [&](const Json& v, const std::string& key, double lowest,
                   double highest = 9223372036854774784.0) -> long long {  // the last double below 2^63
    const double value = number(v, key);
    if (value < lowest || value > highest || value != std::floor(value))
      throw_input_error(file, key,
                        fmt::format("expected a whole number from {} to {}, found {}", static_cast<long long>(lowest),
                                    static_cast<long long>(highest), v.dump()));
    return static_cast<long long>(value);
  };
  constexpr double INT = std::numeric_limits<int>::max();
  if (root.contains("version")) trace.header.extra["source_version"] = fmt::format("json {}", root["version"].dump());
  if (root.contains("nccl_version") && root["nccl_version"].is_number_integer())
    trace.header.nccl = nccl_version_from_code(std::to_string(root["nccl_version"].get<long long>()));
  if (root.contains("start_time") && root["start_time"].is_string()) trace.header.started = root["start_time"];

  // The collective: argv[0] names the binary.
  std::string test;
  std::string test_from;
  if (root.contains("args") && root["args"].is_array() && !root["args"].empty() && root["args"][0].is_string())
    if (auto c = command_line(root["args"][0].get<std::string>(), 0)) {
      test = c->collective;
      test_from = "args[0]";
    }
  if (!options.collective.empty()) {
    const auto wanted = canonical_collective(options.collective);
    if (!wanted)
      throw_input_error(file, "--op",
                        fmt::format("unknown collective \"{}\"; known: {}", options.collective, known_collectives()));
    if (!test.empty() && *wanted != test)
      throw_input_error(file, "args", fmt::format("the file names {}, --op says {}", test, *wanted));
    if (test.empty()) test_from = "--op";
    test = *wanted;
  }
  if (test.empty())
    throw_input_error(file, "args",
                      fmt::format("cannot tell which collective this is: args[0] names no *_perf binary; name it with "
                                  "--op (known: {})",
                                  known_collectives()));

  Json env = Json::object();
  Json env_from = Json::object();
  if (root.contains("env") && root["env"].is_array())
    for (std::size_t i = 0; i < root["env"].size(); ++i)
      if (root["env"][i].is_string())
        for (const auto& [k, v] :
             detail::assignments(root["env"][i].get<std::string>(), {"NCCL_", "CUDA_", "NVSHMEM_"})) {
          env[k] = v;
          env_from[k] = fmt::format("env[{}]", i);
        }
  trace.header.env = env;

  const Json config = root.value("config", Json::object());
  detail::PlatformFacts platform;
  std::vector<int> ranks;
  if (config.contains("devices") && config["devices"].is_array()) {
    for (std::size_t i = 0; i < config["devices"].size(); ++i) {
      const Json& d = config["devices"][i];
      const std::string key = fmt::format("config.devices[{}]", i);
      if (!d.is_object()) throw_input_error(file, key, "expected {rank, hostname, device, device_hex, device_info}");
      const int rank = static_cast<int>(whole(d.value("rank", Json()), key + ".rank", 0, INT));
      const std::string host = d.value("hostname", "");
      const std::string name = d.value("device_info", "");
      platform.add_rank(rank, host, name, 0);
      TraceGpu gpu{rank, name, d.value("device_hex", "")};
      gpu.extra["host"] = host;
      if (d.contains("device")) gpu.extra["device"] = d["device"];
      trace.header.gpus.push_back(std::move(gpu));
      ranks.push_back(rank);
    }
  }
  std::ranges::sort(ranks);
  collective_settings(env, env_from, platform);
  RecordSettings settings;
  settings.test = test;
  settings.ranks = ranks;
  const auto iters =
      static_cast<std::uint64_t>(whole(config.value("iterations", Json(1)), "config.iterations", 0, INT));
  const auto agg = static_cast<std::uint64_t>(
      whole(config.value("aggregated_iterations", Json(1)), "config.aggregated_iterations", 0, INT));
  settings.reps = std::max<std::uint64_t>(1, iters * agg);
  settings.agg = agg;
  if (config.contains("graph")) {
    settings.graph_launches = static_cast<std::uint64_t>(whole(config["graph"], "config.graph", 0, INT));
    platform.set_collective("launch", *settings.graph_launches > 0 ? "graph" : "stream", "config.graph");
  }
  if (root.contains("args") && root["args"].is_array()) {
    std::string args;
    for (const Json& a : root["args"])
      if (a.is_string()) args += a.get<std::string>() + " ";
    if (auto r = option_value(args, "-R", "--local_register")) {
      settings.registration = registration_name(*r);
      platform.set_collective("registration", *settings.registration, "args");
    }
  }

  detail::RecordCollector records{trace};
  const Json& results = root["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    const std::string key = fmt::format("results[{}]", i);
    if (!r.is_object()) throw_input_error(file, key, "expected an object {size, count, type, ...}");
    Row row;
    row.bytes = static_cast<std::uint64_t>(whole(r.value("size", Json()), key + ".size", 0));
    if (r.contains("count")) row.count = static_cast<std::uint64_t>(whole(r["count"], key + ".count", 0));
    row.type = r.value("type", "");
    row.redop = r.value("redop", "");
    if (r.contains("root")) row.root = whole(r["root"], key + ".root", -1);
    std::vector<double> samples[2];
    for (int k = 0; k < 2; ++k) {
      const char* name = k == 0 ? "out_of_place" : "in_place";
      if (!r.contains(name) || r[name].is_null()) continue;
      const Json& h = r[name];
      const std::string hk = key + "." + name;
      Half half;
      const bool cpu = h.contains("cpu_time");
      half.time_us = number(h.value(cpu ? "cpu_time" : "time", Json()), hk + ".time");
      if (cpu) half.extra["timer"] = "cpu";
      half.algbw = number(h.value("alg_bw", Json()), hk + ".alg_bw");
      half.busbw = number(h.value("bus_bw", Json()), hk + ".bus_bw");
      if (h.contains("nwrong") && !h["nwrong"].is_null())
        half.wrong = static_cast<std::uint64_t>(whole(h["nwrong"], hk + ".nwrong", 0));
      const std::string per_iter = std::string(name) + "_per_iter";
      if (r.contains(per_iter) && r[per_iter].is_object()) {
        const Json& p = r[per_iter];
        for (const char* stat : {"min", "max", "p99"})
          if (p.contains(fmt::format("{}_us", stat)))
            half.extra[fmt::format("iter_{}", stat)] = number(p[fmt::format("{}_us", stat)], per_iter) * 1e-6;
        if (p.contains("cv_pct")) half.extra["iter_cv_percent"] = number(p["cv_pct"], per_iter + ".cv_pct");
        if (p.contains("times_us") && p["times_us"].is_array())
          for (const Json& t : p["times_us"]) samples[k].push_back(number(t, per_iter + ".times_us") * 1e-6);
      }
      row.halves[k] = half;
    }
    const std::size_t before = trace.records.size();
    add_row_records(records, settings, row, file);
    // Keep the per-iteration times as samples where they sit within the bounds the record states.
    for (std::size_t n = before, k = 0; n < trace.records.size(); ++n) {
      while (k < 2 && !row.halves[k]) ++k;
      if (k >= 2) break;
      TraceRecord& rec = trace.records[n];
      if (!samples[k].empty()) {
        const auto [lo, hi] = std::ranges::minmax(samples[k]);
        if (lo <= rec.median && rec.median <= hi) {
          rec.min = std::min(rec.min, lo);
          rec.max = std::max(rec.max, hi);
          rec.p01 = std::max(rec.min, std::min(rec.p01, rec.median));
          rec.samples = samples[k];
        }
      }
      ++k;
    }
  }
  Json run = Json::object();
  run["test"] = test;
  run["test_from"] = test_from;
  run["rows"] = results.size();
  run["ranks"] = ranks.size();
  run["iters"] = iters;
  run["agg_iters"] = agg;
  if (settings.graph_launches) run["graph_launches"] = *settings.graph_launches;
  for (const char* avg : {"average_bus_bandwidth", "average_bus_bandwidith"})
    if (root.contains(avg) && root[avg].is_object()) {
      const Json& a = root[avg];
      const char* bw = a.contains("bandwidth") ? "bandwidth" : "bandwidith";
      if (a.contains(bw)) run["avg_busbw"] = number(a[bw], std::string(avg) + "." + bw) * 1e9;
    }
  if (root.contains("out_of_bounds") && root["out_of_bounds"].is_object() && root["out_of_bounds"].contains("count"))
    run["out_of_bounds"] = root["out_of_bounds"]["count"];
  trace.header.extra["nccl_tests"] = Json::array({run});
  if (!root.contains("end_time")) {
    trace.complete = false;
    trace.notes.push_back(fmt::format("{}: incomplete: no \"end_time\" (run cut short?); read {} records", trace.source,
                                      trace.records.size()));
  }
  platform.write(trace);
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
