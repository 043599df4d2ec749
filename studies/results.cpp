#include "studies/results.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace snsim::studies {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<ResultLine> read_results(const std::string& path, std::size_t* valid_bytes) {
  const std::string text = read_file_if_exists(path).value_or("");
  std::vector<ResultLine> lines;
  std::size_t start = 0, good = 0;
  int number = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::size_t next = end == std::string::npos ? text.size() : end + 1;
    ++number;
    const bool last = next >= text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      start = next;
      if (!last) good = next;
      continue;
    }
    std::string problem;
    json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded())
      problem = "not JSON";
    else if (!value.is_object() || !value.contains("key") || !value["key"].is_string() || !value.contains("point") ||
             !value["point"].is_number_unsigned() || !value.contains("trial") || !value["trial"].is_number_unsigned() ||
             !value.contains("outcome") || !value.contains("metrics") || !value["metrics"].is_object())
      problem = "not a sweep result (an object with key, point, trial, outcome and metrics)";
    if (!problem.empty()) {
      if (last) {
        std::cerr << fmt::format(
            "{}:{}: warning: dropped a torn last line ({}: a write cut short, as by kill -9); "
            "its run will run again\n",
            path, number, problem);
        break;
      }
      throw_input_error({path, number, 0}, "", fmt::format("corrupted line: {}", problem));
    }
    lines.push_back({std::move(value), fmt::format("{}:{}", path, number)});
    start = next;
    good = next;
  }
  if (valid_bytes) *valid_bytes = good;
  return lines;
}

std::vector<json> merge_results(const std::vector<ResultLine>& lines, std::size_t* duplicates) {
  std::map<std::string, const ResultLine*> by_key;
  std::size_t dropped = 0;
  auto without_wall = [](json v) {
    v.erase("wall_s");
    return v;
  };
  for (const auto& line : lines) {
    const std::string key = line.value["key"];
    const auto [it, inserted] = by_key.emplace(key, &line);
    if (inserted) continue;
    if (without_wall(it->second->value) == without_wall(line.value)) {
      ++dropped;
      continue;
    }
    throw_input_error({line.where, 0, 0}, "",
                      fmt::format("result {} (point {}, trial {}) conflicts with {}: the same scenario and seed gave "
                                  "different results",
                                  key, line.value["point"].dump(), line.value["trial"].dump(), it->second->where));
  }
  std::vector<json> out;
  for (const auto& [key, line] : by_key) out.push_back(line->value);
  std::ranges::sort(out, [](const json& a, const json& b) {
    return std::tuple{a["point"].get<std::size_t>(), a["trial"].get<std::size_t>(), a["key"].get<std::string>()} <
           std::tuple{b["point"].get<std::size_t>(), b["trial"].get<std::size_t>(), b["key"].get<std::string>()};
  });
  if (duplicates) *duplicates = dropped;
  return out;
}

std::string results_path(const std::string& input) {
  return fs::is_directory(input) ? (fs::path(input) / "results.jsonl").string() : input;
}

ResultsLog::ResultsLog(const std::string& path, std::size_t valid_bytes) : file_{path} {
  if (!file_.try_lock()) throw_input_error({path, 0, 0}, "", "another sweep is writing this file (use another --out)");
  file_.truncate(valid_bytes);
}

void ResultsLog::append(const json& line) {
  file_.append(line.dump() + "\n");
}

}  // namespace snsim::studies
