// cuda-samples p2pBandwidthLatencyTest output (docs/hardware.md#p2pbandwidthlatencytest).
//
// Fixed sections, each a square matrix over the GPUs: unidirectional and bidirectional bandwidth (GB/s) with peer
// access disabled and enabled (writes, and reads with --p2p_read), then latency (us) measured by GPU events
// ("GPU" table) and as host enqueue time ("CPU" table). The sample copies from the column's device into the row's
// (cudaMemcpyPeerAsync(row buffer, row, column buffer, column)), so bytes flow column -> row. A bidirectional cell
// is both directions summed; a diagonal cell counts the read and the write of a local copy.
#include <regex>

#include <fmt/format.h>

#include "validation/importers/import.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

using detail::split_words;
using detail::trim;

// The sample's default copy size (numElems = 40,000,000 ints); not printed, so records say it was assumed.
constexpr std::uint64_t default_copy_bytes = 40'000'000ull * 4;

/// What a section of the output measures, from its title line.
struct Section {
  bool latency = false;
  bool bidirectional = false;
  std::string peer_access;  // "p2p_disabled", "p2p_enabled", "p2p_writes", "p2p_reads"
};

std::optional<Section> section_of(std::string_view title) {
  if (title.find("Matrix") == std::string_view::npos) return std::nullopt;
  const bool bandwidth = title.find("Bandwidth") != std::string_view::npos;
  const bool latency = title.find("Latency") != std::string_view::npos;
  if (!bandwidth && !latency) return std::nullopt;  // the connectivity matrix: not a measurement
  Section s;
  s.latency = latency;
  s.bidirectional = title.find("Bidirectional") != std::string_view::npos;
  if (title.find("P2P=Disabled") != std::string_view::npos)
    s.peer_access = "p2p_disabled";
  else if (title.find("P2P Writes") != std::string_view::npos)
    s.peer_access = "p2p_writes";
  else if (title.find("P2P Reads") != std::string_view::npos)
    s.peer_access = "p2p_reads";
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

  std::optional<Section> section;
  std::string timer;               // "gpu" or "cpu" for latency tables
  std::vector<int> column_labels;  // of the matrix being read
  int labels_line = 0;
  std::size_t rows_read = 0;
  bool enabled_latency_done = false;  // the last section: its presence means the run finished
  bool any_matrix = false;
  for (const detail::TextLine& line : detail::text_lines(text, trace.source)) {
    const std::string s(trim(line.text));
    const auto words = split_words(s);
    std::smatch m;
    if (std::regex_search(s, m, device_re)) {
      trace.header.gpus.push_back({detail::index_at(m[1].str(), at(line.number), "device"), m[2].str(),
                                   fmt::format("{:0>4}:{:0>2}:{:0>2}", m[5].str(), m[3].str(), m[4].str())});
      continue;
    }
    if (auto found = section_of(s)) {
      section = found;
      column_labels.clear();
      continue;
    }
    if (s.find("Connectivity Matrix") != std::string::npos) {
      section.reset();
      continue;
    }
    if (!section || words.empty()) continue;
    if (words[0] == "D\\D" || words[0] == "GPU" || words[0] == "CPU") {
      column_labels.clear();
      for (std::size_t i = 1; i < words.size(); ++i)
        column_labels.push_back(static_cast<int>(detail::count_at(words[i], at(line.number), "column")));
      timer = words[0] == "CPU" ? "cpu" : "gpu";
      labels_line = line.number;
      rows_read = 0;
      continue;
    }
    if (column_labels.empty() || !detail::is_unsigned_integer(words[0])) continue;
    if (words.size() != column_labels.size() + 1)
      throw_input_error(at(line.number), "",
                        fmt::format("expected {} cells as in the column labels on line {}, found {}",
                                    column_labels.size(), labels_line, words.size() - 1));
    const int row = static_cast<int>(detail::count_at(words[0], at(line.number), "row"));
    for (std::size_t c = 0; c < column_labels.size(); ++c) {
      const int column = column_labels[c];
      const SourceLocation where = at(line.number);
      detail::SingleValue v;
      v.test = "p2pBandwidthLatencyTest";
      v.ranks = row == column ? std::vector<int>{row} : std::vector<int>{column, row};  // source first
      v.statistic = "mean";
      const double value = detail::number_at(words[c + 1], where, fmt::format("[{}][{}]", row, column));
      if (section->latency) {
        v.family = Family::latency;
        v.variant = fmt::format("{}_{}", section->peer_access, timer);
        v.unit = MeasureUnit::seconds;
        v.value = value * 1e-6;
      } else {
        v.family = Family::copy;
        v.variant = fmt::format("{}_{}", section->bidirectional ? "bidir" : "unidir", section->peer_access);
        v.unit = MeasureUnit::bytes_per_second;
        v.value = value * 1e9;
        v.bytes = Bytes{default_copy_bytes};
      }
      TraceRecord& r =
          records.add(fmt::format("p2pBandwidthLatencyTest/{}/gpu{}-gpu{}", v.variant, column, row), v, where);
      r.extra["src"] = fmt::format("gpu{}", column);
      r.extra["dst"] = fmt::format("gpu{}", row);
      if (section->latency) {
        r.extra["timer"] = timer == "gpu" ? "gpu_events" : "cpu_enqueue";
      } else {
        r.extra["engine"] = "ce";
        r.extra["direction"] = section->bidirectional ? "bidir_sum" : "uni";
        r.extra["assumed"] = Json::array({"bytes"});
      }
    }
    any_matrix = true;
    if (++rows_read == column_labels.size() && section->latency && section->peer_access != "p2p_disabled")
      enabled_latency_done = true;
  }
  if (!any_matrix)
    throw_input_error({trace.source, 0, 0}, "",
                      "p2pBandwidthLatencyTest: no bandwidth or latency matrix (a title line like \"Unidirectional "
                      "P2P=Disabled Bandwidth Matrix (GB/s)\" followed by \"   D\\D     0      1\")");
  if (!enabled_latency_done) {
    trace.complete = false;
    trace.notes.push_back(
        fmt::format("{}: incomplete: the P2P=Enabled latency matrix is missing or cut short; read "
                    "{} records",
                    trace.source, trace.records.size()));
  }
  detail::check_imported(trace);
  return trace;
}

}  // namespace snsim::validation
