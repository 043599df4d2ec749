#include "options.h"

#include <algorithm>

namespace probe {

std::vector<std::uint64_t> size_sweep(std::uint64_t from, std::uint64_t to, const Options& options) {
  if (options.max_bytes) to = std::min(to, options.max_bytes);
  const std::uint64_t step = options.quick ? 16 : 2;
  if (options.quick) to = std::min<std::uint64_t>(to, 16 * MiB);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = from; size <= to; size *= step) sizes.push_back(size);
  return sizes;
}

int reps(int full, const Options& options, int minimum_quick) {
  if (!options.quick) return full;
  return std::max(minimum_quick, full / 20);
}

}  // namespace probe
