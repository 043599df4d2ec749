// cuda-samples p2pBandwidthLatencyTest output (NVIDIA/cuda-samples, Samples/.../p2pBandwidthLatencyTest.cu).
//
// Fixed sections, each a square matrix over the GPUs: unidirectional and bidirectional bandwidth (GB/s) with peer
// access disabled and enabled, then latency (us). Two generations print them:
// - since CUDA 10 (2018): "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix", with "(P2P Reads)" sections
//   under --p2p_read, and each latency section as a "GPU" table (events) and a "CPU" table (host enqueue time). Cell
//   [i][j] runs on GPU i's stream; writes and the P2P=Disabled copies go from i (row) to j (column), reads from j to
//   i. Copies are 40,000,000 ints (160 MB) repeated 5 times; latency copies are 16 bytes repeated 100 times.
// - before: "Unidirectional P2P=Enabled Bandwidth Matrix", one "D\D" latency table; every copy goes from j (column)
//   into i (row): 10,000,000 ints (40 MB) repeated 10 times, latency copies of 1 byte repeated 10,000 times.
// A bidirectional cell is both directions summed; a diagonal cell is a copy within the GPU counting its read and its
// write. --numElems and --sm_copy change the size and the engine without saying so in the output: records say the
// size and the engine were assumed.
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

/// What a section of the output measures, from its title line.
struct Section {
  int line = 0;
  bool latency = false;
  bool bidirectional = false;
  std::string peer_access;  // "p2p_disabled", "p2p_enabled", "p2p_writes", "p2p_reads"
  bool reads = false;       // the row's GPU reads from the column's
};

std::optional<Section> section_of(std::string_view title, int line) {
  if (title.find("Matrix") == std::string_view::npos) return std::nullopt;
  const bool bandwidth = title.find("Bandwidth") != std::string_view::npos;
  const bool latency = title.find("Latency") != std::string_view::npos;
  if (!bandwidth && !latency) return std::nullopt;  // the connectivity matrix: not a measurement
  Section s;
  s.line = line;
  s.latency = latency && !bandwidth;
  s.bidirectional = title.find("Bidirectional") != std::string_view::npos;
  if (title.find("P2P=Disabled") != std::string_view::npos)
    s.peer_access = "p2p_disabled";
  else if (title.find("P2P Writes") != std::string_view::npos)
    s.peer_access = "p2p_writes";
  else if (title.find("P2P Reads") != std::string_view::npos)
    s.peer_access = "p2p_reads", s.reads = true;
  else
    s.peer_access = "p2p_enabled";
  return s;
}

}  // namespace

Trace import_p2p_bandwidth_latency(std::string_view text, std::string_view source_name) {
  Trace trace = detail::imported_trace(source_name, "p2pBandwidthLatencyTest");
  detail::RecordCollector records{trace};
  auto at = [&](int line) { return SourceLocation{trace.source, line, 0}; };
  static const std::regex device_re{
      R"(Device:\s*(\d+),\s*(.*?),\s*pciBusID:\s*([0-9a-fA-F]+),\s*pciDeviceID:\s*([0-9a-fA-F]+),\s*pciDomainID:\s*([0-9a-fA-F]+))"};
  static const std::regex access_re{R"(Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+))"};
  const auto lines = detail::text_lines(text, trace.source);

  // The generation decides the direction of the copies and their size: look for its titles first.
  bool writes_generation = false;
  for (const auto& line : lines)
    if (line.text.find("(P2P Writes)") != std::string_view::npos || trim(line.text).starts_with("GPU "))
      writes_generation = true;
  const std::uint64_t copy_bytes = writes_generation ? 40'000'000ull * 4 : 10'000'000ull * 4;
  const std::uint64_t bandwidth_repeats = writes_generation ? 5 : 10;
  const std::uint64_t latency_bytes = writes_generation ? 16 : 1;
  const std::uint64_t latency_repeats = writes_generation ? 100 : 10000;

  detail::PlatformFacts platform;
  std::map<std::pair<int, int>, bool> peer_access;  // from "Device=i CAN Access Peer Device=j" and the matrix
  std::optional<Section> section;
  bool in_connectivity = false;
  std::vector<int> connectivity_columns;
  std::string timer;               // "gpu" or "cpu" for latency tables
  std::vector<int> column_labels;  // of the matrix being read
  int labels_line = 0;
  std::size_t rows_read = 0;
  bool enabled_latency_done = false;
  bool final_note = false;
  bool any_matrix = false;
  for (const detail::TextLine& line : lines) {
    const std::string s(trim(line.text));
    const auto words = split_words(s);
    const SourceLocation where = at(line.number);
    std::smatch m;
    if (std::regex_search(s, m, device_re)) {
      const int index = detail::index_at(m[1].str(), where, "device");
      trace.header.gpus.push_back(
          {index, m[2].str(), fmt::format("{:0>4}:{:0>2}:{:0>2}", m[5].str(), m[3].str(), m[4].str())});
      platform.add_rank(index, "", m[2].str(), line.number);
      continue;
    }
    if (std::regex_search(s, m, access_re)) {
      peer_access[{detail::index_at(m[1].str(), where, "device"), detail::index_at(m[3].str(), where, "device")}] =
          m[2] == "CAN";
      continue;
    }
    if (s.starts_with("NOTE: The CUDA Samples are not meant for performance measurements")) final_note = true;
    if (auto found = section_of(s, line.number)) {
      section = found;
      in_connectivity = false;
      column_labels.clear();
      continue;
    }
    if (s.find("Connectivity Matrix") != std::string::npos) {
      section.reset();
      in_connectivity = true;
      connectivity_columns.clear();
      continue;
    }
    if (words.empty()) continue;
    if (in_connectivity) {
      if (words[0] == "D\\D") {
        for (std::size_t i = 1; i < words.size(); ++i)
          connectivity_columns.push_back(detail::index_at(words[i], where, "column"));
      } else if (detail::is_unsigned_integer(words[0])) {
        if (words.size() != connectivity_columns.size() + 1)
          throw_input_error(where, "",
                            fmt::format("expected {} cells in the connectivity matrix, found {}",
                                        connectivity_columns.size(), words.size() - 1));
        const int row = detail::index_at(words[0], where, "row");
        for (std::size_t c = 0; c < connectivity_columns.size(); ++c)
          peer_access[{row, connectivity_columns[c]}] = words[c + 1] == "1";
      }
      continue;
    }
    if (!section) continue;
    if (words[0] == "D\\D" || words[0] == "GPU" || words[0] == "CPU") {
      column_labels.clear();
      for (std::size_t i = 1; i < words.size(); ++i)
        column_labels.push_back(detail::index_at(words[i], at(line.number), "column"));
      timer = words[0] == "CPU" ? "cpu" : "gpu";
      labels_line = line.number;
      rows_read = 0;
      continue;
    }
    if (!detail::is_unsigned_integer(words[0])) continue;
    if (column_labels.empty())
      throw_input_error(where, "",
                        fmt::format("a matrix row without the column labels (\"   D\\D     0      1\") of the section "
                                    "on line {}",
                                    section->line));
    if (words.size() != column_labels.size() + 1)
      throw_input_error(where, "",
                        fmt::format("expected {} cells as in the column labels on line {}, found {}",
                                    column_labels.size(), labels_line, words.size() - 1));
    const int row = detail::index_at(words[0], where, "row");
    for (std::size_t c = 0; c < column_labels.size(); ++c) {
      const int column = column_labels[c];
      // Which way the bytes go (see the top of this file).
      const bool row_to_column = writes_generation && !section->reads;
      const int src = row == column ? row : row_to_column ? row : column;
      const int dst = row == column ? row : row_to_column ? column : row;
      detail::SingleValue v;
      v.test = "p2pBandwidthLatencyTest";
      v.ranks = src == dst ? std::vector<int>{src} : std::vector<int>{src, dst};
      v.statistic = "mean";
      const double value = detail::number_at(words[c + 1], where, fmt::format("[{}][{}]", row, column));
      if (section->latency) {
        v.family = Family::latency;
        v.variant = writes_generation ? fmt::format("{}_{}", section->peer_access, timer) : section->peer_access;
        v.unit = MeasureUnit::seconds;
        v.value = value * 1e-6;
        v.bytes = Bytes{latency_bytes};
        v.reps = latency_repeats;
      } else {
        v.family = Family::copy;
        v.variant = fmt::format("{}_{}", section->bidirectional ? "bidir" : "unidir", section->peer_access);
        v.unit = MeasureUnit::bytes_per_second;
        v.value = value * 1e9;
        v.bytes = Bytes{copy_bytes};
        v.reps = bandwidth_repeats;
      }
      TraceRecord& r =
          records.add(fmt::format("p2pBandwidthLatencyTest/{}/gpu{}-gpu{}", v.variant, src, dst), v, where);
      r.extra["src"] = fmt::format("gpu{}", src);
      r.extra["dst"] = fmt::format("gpu{}", dst);
      r.extra["issuer"] = fmt::format("gpu{}", row);  // every cell runs on the row's stream
      if (section->peer_access != "p2p_disabled" && src != dst) {
        const auto access = peer_access.find({row, column});
        if (access != peer_access.end()) r.extra["peer_access"] = access->second;
      }
      if (section->latency) {
        r.extra["timer"] = timer == "gpu" ? "gpu_events" : "cpu_enqueue";
        r.extra["assumed"] = Json::array({"engine"});
      } else {
        r.extra["direction"] = section->bidirectional ? "bidir_sum" : "uni";
        r.extra["assumed"] = Json::array({"bytes", "engine"});
      }
      r.extra["engine"] = "ce";
    }
    any_matrix = true;
    // The last section: its last table full means the run finished.
    if (++rows_read == column_labels.size() && section->latency && section->peer_access != "p2p_disabled" &&
        (!writes_generation || timer == "cpu"))
      enabled_latency_done = true;
  }
  if (!any_matrix)
    throw_input_error({trace.source, 0, 0}, "",
                      "p2pBandwidthLatencyTest: no bandwidth or latency matrix (a title line like \"Unidirectional "
                      "P2P=Disabled Bandwidth Matrix (GB/s)\" followed by \"   D\\D     0      1\")");
  if (!enabled_latency_done && !final_note) {
    trace.complete = false;
    trace.notes.push_back(
        fmt::format("{}: incomplete: the P2P=Enabled latency matrix is missing or cut short; read "
                    "{} records",
                    trace.source, trace.records.size()));
  }
  trace.header.extra["source_version"] = writes_generation ? "CUDA 10 or later" : "before CUDA 10";
  platform.set_nodes(1, "one process");
  platform.write(trace);
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
