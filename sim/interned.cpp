#include "sim/interned.hpp"

#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

namespace snsim {
namespace {

struct Hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

}  // namespace

std::string_view interned(std::string_view text) {
  if (text.empty()) return {};
  static std::mutex mutex;
  // Node-based: a stored string never moves when the set grows.
  static std::unordered_set<std::string, Hash, std::equal_to<>> stored;
  const std::scoped_lock lock{mutex};
  auto it = stored.find(text);
  if (it == stored.end()) it = stored.emplace(text).first;
  return *it;
}

}  // namespace snsim
