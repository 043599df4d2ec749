#include "validation/importers/import.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/files.hpp"
#include "validation/importers/text_scan.hpp"

namespace snsim::validation {

namespace {

constexpr std::array<TraceFormat, 7> formats{TraceFormat::snsim_trace,      TraceFormat::nccl_tests,
                                             TraceFormat::nccl_tests_json,  TraceFormat::nvbandwidth_text,
                                             TraceFormat::nvbandwidth_json, TraceFormat::p2p_bandwidth_latency,
                                             TraceFormat::nvshmem_perftest};

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

}  // namespace

std::string_view to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::snsim_trace:
      return "snsim trace (JSON Lines)";
    case TraceFormat::nccl_tests:
      return "nccl-tests";
    case TraceFormat::nccl_tests_json:
      return "nccl-tests (JSON)";
    case TraceFormat::nvbandwidth_text:
      return "nvbandwidth (text)";
    case TraceFormat::nvbandwidth_json:
      return "nvbandwidth (JSON)";
    case TraceFormat::p2p_bandwidth_latency:
      return "p2pBandwidthLatencyTest";
    case TraceFormat::nvshmem_perftest:
      return "NVSHMEM perftest";
  }
  return "?";
}

std::string known_format_names() {
  std::vector<std::string_view> names;
  for (TraceFormat f : formats) names.push_back(to_string(f));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::optional<TraceFormat> sniff_format(std::string_view text) {
  // JSON first: its content could mention any of the words the text formats are recognised by.
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    const auto end = text.find('\n', first);
    const std::string_view first_line = text.substr(first, end == std::string_view::npos ? end : end - first);
    if (contains(first_line, "\"schema\"") && contains(first_line, "snsim-trace")) return TraceFormat::snsim_trace;
    if (contains(text.substr(first, 200), "\"nvbandwidth\"")) return TraceFormat::nvbandwidth_json;
    if (contains(text, "\"nccl_version\"") && contains(text, "\"results\"")) return TraceFormat::nccl_tests_json;
  }
  if (contains(text, "nvbandwidth Version:")) return TraceFormat::nvbandwidth_text;
  if (contains(text, "P2P (Peer-to-Peer) GPU Bandwidth Latency Test") || contains(text, "P2P Connectivity Matrix") ||
      contains(text, "P2P=Disabled Bandwidth Matrix") || contains(text, "P2P=Enabled Bandwidth"))
    return TraceFormat::p2p_bandwidth_latency;
  // What only nccl-tests prints, then what only perftest prints, then the shape of an nccl-tests table (perftest's
  // collective tables also have algbw and busbw columns).
  if (contains(text, "# nThread ") || contains(text, "Collective test starting") ||
      contains(text, "# nccl-tests version") || contains(text, "# Avg bus bandwidth"))
    return TraceFormat::nccl_tests;
  if ((contains(text, "&&&& PERF ") && contains(text, "___size__")) || contains(text, "size(B)") ||
      contains(text, "Runtime options after parsing command line arguments"))
    return TraceFormat::nvshmem_perftest;
  if (contains(text, "algbw") && contains(text, "busbw") && (contains(text, "#wrong") || contains(text, "redop")))
    return TraceFormat::nccl_tests;
  return std::nullopt;
}

Trace import_text(std::string_view text, std::string_view source_name, const ImportOptions& options) {
  const auto format = sniff_format(text);
  if (!format)
    throw_input_error({std::string(source_name), 0, 0}, "",
                      fmt::format("unknown trace format; known: {}", known_format_names()));
  switch (*format) {
    case TraceFormat::snsim_trace:
      return parse_trace(text, source_name);
    case TraceFormat::nccl_tests:
      return import_nccl_tests_with_options(text, source_name, options);
    case TraceFormat::nccl_tests_json:
      return import_nccl_tests_json_with_options(text, source_name, options);
    case TraceFormat::nvbandwidth_text:
      return import_nvbandwidth_text(text, source_name);
    case TraceFormat::nvbandwidth_json:
      return import_nvbandwidth_json(text, source_name);
    case TraceFormat::p2p_bandwidth_latency:
      return import_p2p_bandwidth_latency(text, source_name);
    case TraceFormat::nvshmem_perftest:
      return import_nvshmem_perftest(text, source_name);
  }
  throw std::logic_error("import_text: unhandled format");
}

Trace import_any(const std::filesystem::path& file, const ImportOptions& options) {
  return import_text(read_file(file), file.string(), options);
}

}  // namespace snsim::validation
