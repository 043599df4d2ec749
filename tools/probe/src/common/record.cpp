#include "record.h"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "check.h"
#include "json.h"

namespace probe {

double percentile_sorted(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return NAN;
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * weight;
}

Summary summarize(std::vector<double> samples) {
  Summary summary;
  if (samples.empty()) {
    summary.median = summary.p01 = summary.p99 = summary.min = summary.max = NAN;
    return summary;
  }
  std::sort(samples.begin(), samples.end());
  summary.median = percentile_sorted(samples, 0.5);
  summary.p01 = percentile_sorted(samples, 0.01);
  summary.p99 = percentile_sorted(samples, 0.99);
  summary.min = samples.front();
  summary.max = samples.back();
  return summary;
}

std::string Record::id() const {
  std::string ranks_text;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) ranks_text += '-';
    ranks_text += std::to_string(ranks[i]);
  }
  std::string text = family + "/" + test + "/" + variant + "/" + ranks_text + "/" + std::to_string(bytes);
  if (!id_suffix.empty()) text += "/" + id_suffix;
  return text;
}

std::string failure_line(const std::string& family, const std::string& error, std::uint64_t records) {
  JsonWriter json;
  json.begin_object().field("incomplete", true).field("family", family).field("error", error);
  json.field("records", records).end_object();
  return json.str();
}

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t written = ::write(fd, data.data() + done, data.size() - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw ProbeError(std::string("writing a trace record failed: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(written);
  }
}

namespace {
std::string format_number(double value, const char* unit) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%10.3f %s", value, unit);
  return buffer;
}
}  // namespace

void RecordSink::emit(const Record& record) {
  const std::string id = record.id();
  PROBE_REQUIRE(ids_.insert(id).second, "duplicate record id " + id);
  PROBE_REQUIRE(!record.samples.empty(), "record " + id + " has no samples");
  const Summary summary = summarize(record.samples);

  std::vector<double> kept = record.samples;
  if (kept.size() > samples_cap_) kept.resize(samples_cap_);

  JsonWriter json;
  json.begin_object()
      .field("id", id)
      .field("family", record.family)
      .field("test", record.test)
      .field("variant", record.variant)
      .key("ranks")
      .int_array(record.ranks)
      .field("bytes", record.bytes)
      .field("reps", static_cast<std::uint64_t>(record.samples.size()))
      .field("unit", record.unit)
      .field("median", summary.median)
      .field("p01", summary.p01)
      .field("p99", summary.p99)
      .field("min", summary.min)
      .field("max", summary.max);
  for (const auto& [name, value] : record.extras) {
    json.key(name);
    std::visit(
        [&json](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            json.begin_array();
            for (double number : v) json.value(number);
            json.end_array();
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            json.begin_array();
            for (const std::string& text : v) json.value(text);
            json.end_array();
          } else {
            json.value(v);
          }
        },
        value);
  }
  json.key("samples").number_array(kept);
  json.end_object();
  write_all(fd_, json.str() + "\n");

  if (verbose_) {
    std::string line = record.unit == "s" ? "median " + format_number(summary.median * 1e6, "us") + "  p99 " +
                                                format_number(summary.p99 * 1e6, "us")
                                          : "median " + format_number(summary.median * 1e-9, "GB/s");
    // Rates derived from a time record (collective busbw, uvm bw) are what a reader wants to see first.
    for (const auto& [name, value] : record.extras)
      if ((name == "busbw" || name == "bw" || name == "sum_bw") && std::holds_alternative<double>(value))
        line += "  " + name + " " + format_number(std::get<double>(value) * 1e-9, "GB/s");
    std::fprintf(stderr, "  %-56s %s\n", id.c_str(), line.c_str());
  }
}

}  // namespace probe
