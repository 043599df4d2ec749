#include "options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace probe {

std::vector<std::uint64_t> size_sweep(std::uint64_t from, std::uint64_t to, const Options& options) {
  if (options.max_bytes) to = std::min(to, options.max_bytes);
  const std::uint64_t step = options.size_step ? options.size_step : options.quick ? 16 : 2;
  if (options.quick) to = std::min<std::uint64_t>(to, 16 * MiB);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = from; size <= to; size *= step) sizes.push_back(size);
  return sizes;
}

namespace {

// "a-b" with a != b, both non-negative; false for anything else.
bool parse_pair(const std::string& text, int& a, int& b) {
  const std::size_t dash = text.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 >= text.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (i != dash && !std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  a = std::atoi(text.substr(0, dash).c_str());
  b = std::atoi(text.substr(dash + 1).c_str());
  return a != b;
}

template <typename Visit>
bool for_each_listed_pair(const std::string& pairs, Visit visit) {
  std::size_t start = 0;
  while (start <= pairs.size()) {
    const std::size_t comma = pairs.find(',', start);
    const std::string item = pairs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int a = 0, b = 0;
    if (!parse_pair(item, a, b)) return false;
    if (visit(a, b)) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

}  // namespace

bool valid_pairs_spec(const std::string& pairs) {
  if (pairs == "all" || pairs == "star" || pairs == "from0") return true;
  if (pairs.empty()) return false;
  bool valid = true;
  std::size_t start = 0;
  while (start <= pairs.size()) {
    const std::size_t comma = pairs.find(',', start);
    int a = 0, b = 0;
    valid =
        valid && parse_pair(pairs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), a, b);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return valid;
}

bool wants_pair(const Options& options, int a, int b) {
  if (a == b) return false;
  if (options.pairs == "all") return true;
  if (options.pairs == "star") return a == 0 || b == 0;
  if (options.pairs == "from0") return a == 0;
  return for_each_listed_pair(options.pairs, [&](int x, int y) { return x == a && y == b; });
}

bool wants_test(const Options& options, const std::string& test) {
  return options.tests.empty() || std::find(options.tests.begin(), options.tests.end(), test) != options.tests.end();
}

int reps(int full, const Options& options, int minimum_quick) {
  if (!options.quick) return full;
  return std::max(minimum_quick, full / 20);
}

}  // namespace probe
