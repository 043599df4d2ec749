#include "sim/error.hpp"

#include <fmt/format.h>

namespace snsim {

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string format_input_error(const SourceLocation& where, std::string_view key, std::string_view message) {
  if (key.empty()) return fmt::format("{}: {}", where.to_string(), message);
  return fmt::format("{}: {}: {}", where.to_string(), key, message);
}

void throw_input_error(const SourceLocation& where, std::string_view key, std::string_view message) {
  throw InputError(format_input_error(where, key, message));
}

}  // namespace snsim
