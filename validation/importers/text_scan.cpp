#include "validation/importers/text_scan.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "sim/text.hpp"

namespace snsim::validation::detail {

std::vector<TextLine> text_lines(std::string_view text, std::string_view source_name) {
  check_utf8(text, {std::string(source_name), 1, 1});
  std::vector<TextLine> lines;
  std::size_t start = 0;
  int number = 1;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({number++, line});
    start = end + 1;
  }
  return lines;
}

Unprefixed strip_launcher_prefix(std::string_view line) {
  auto digits_at = [&](std::size_t i) {
    std::size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    return j;
  };
  auto rank_of = [&](std::size_t from, std::size_t to) {
    int value = 0;
    std::from_chars(line.data() + from, line.data() + to, value);
    return value;
  };
  if (line.starts_with('[')) {
    std::size_t first_end = digits_at(1);
    if (first_end == 1) return {line, std::nullopt};
    std::size_t rank_begin = 1, rank_end = first_end, i = first_end;
    if (i < line.size() && line[i] == ',') {  // Open MPI: [jobid,rank]
      const std::size_t second_end = digits_at(i + 1);
      if (second_end == i + 1) return {line, std::nullopt};
      rank_begin = i + 1;
      rank_end = second_end;
      i = second_end;
    }
    if (i >= line.size() || line[i] != ']') return {line, std::nullopt};
    ++i;
    bool tagged = false;
    for (std::string_view stream : {"<stdout>", "<stderr>"})
      if (line.substr(i).starts_with(stream)) {
        i += stream.size();
        tagged = true;
      }
    if (i < line.size() && line[i] == ':') {
      ++i;
      tagged = true;
    }
    if (i < line.size() && line[i] == ' ') {
      ++i;
      tagged = true;
    }
    if (!tagged && i != line.size()) return {line, std::nullopt};
    return {line.substr(i), rank_of(rank_begin, rank_end)};
  }
  // srun --label: optional padding, the task number, ": ".
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) return {line, std::nullopt};
  const std::size_t end = digits_at(i);
  if (end == i || end >= line.size() || line[end] != ':' || (end + 1 < line.size() && line[end + 1] != ' '))
    return {line, std::nullopt};
  return {line.substr(std::min(end + 2, line.size())), rank_of(i, end)};
}

std::vector<std::pair<std::string, std::string>> assignments(std::string_view text,
                                                             std::initializer_list<std::string_view> prefixes) {
  std::vector<std::pair<std::string, std::string>> found;
  for (std::string_view word : split_words(text)) {
    const auto equals = word.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    const std::string_view name = word.substr(0, equals);
    if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string_view::npos) continue;
    if (std::none_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); }))
      continue;
    std::string_view value = word.substr(equals + 1);
    while (!value.empty() && (value.front() == '"' || value.front() == '\'')) value.remove_prefix(1);
    while (!value.empty() &&
           (value.back() == '"' || value.back() == '\'' || value.back() == ';' || value.back() == ','))
      value.remove_suffix(1);
    found.emplace_back(std::string(name), std::string(value));
  }
  return found;
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

bool is_unsigned_integer(std::string_view word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string_view::npos;
}

std::optional<double> to_number(std::string_view word) {
  if (!word.empty() && word.front() == '+') word.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc{} || end != word.data() + word.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

double number_at(std::string_view word, const SourceLocation& where, std::string_view key) {
  const auto value = to_number(word);
  if (!value) throw_input_error(where, key, fmt::format("expected a number, found '{}'", word));
  return *value;
}

std::uint64_t count_at(std::string_view word, const SourceLocation& where, std::string_view key) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc{} || end != word.data() + word.size())
    throw_input_error(where, key, fmt::format("expected a whole number >= 0, found '{}'", word));
  return value;
}

int index_at(std::string_view word, const SourceLocation& where, std::string_view key) {
  const std::uint64_t value = count_at(word, where, key);
  if (value > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw_input_error(where, key, fmt::format("must be at most {}, found {}", std::numeric_limits<int>::max(), word));
  return static_cast<int>(value);
}

Json parse_json_at(std::string_view text, const SourceLocation& file) {
  check_json_nesting(text, file);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw_input_error(file, "", fmt::format("malformed JSON at byte {}", e.byte));
  } catch (const nlohmann::json::out_of_range& e) {
    const std::string what = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
    throw_input_error(file, "", fmt::format("malformed JSON: {}", what.substr(what.find("] ") + 2)));
  }
}

Trace imported_trace(std::string_view source_name, std::string_view format_name) {
  Trace trace;
  trace.source = std::string(source_name);
  trace.header.extra["source"] = format_name;
  trace.complete = true;  // importers clear it when the log shows it was cut short
  return trace;
}

TraceRecord& RecordCollector::add(std::string id, const SingleValue& value, const SourceLocation& where) {
  const int use = ++uses_[id];
  if (use > 1) id += fmt::format("~{}", use);
  TraceRecord r;
  r.id = std::move(id);
  r.family = value.family;
  r.test = value.test;
  r.variant = value.variant;
  r.ranks = value.ranks;
  r.bytes = value.bytes;
  r.reps = value.reps;
  r.unit = value.unit;
  r.median = r.p01 = r.p99 = r.min = r.max = value.value;
  r.extra["statistic"] = value.statistic;
  r.line = where.line;
  trace_.records.push_back(std::move(r));
  return trace_.records.back();
}

void check_imported(const Trace& trace) {
  for (const TraceRecord& r : trace.records) check_record(r, {trace.source, r.line, 0});
}

}  // namespace snsim::validation::detail
