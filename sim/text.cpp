#include "sim/text.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace snsim {

std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = byte(i);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (c < 0x80)
      length = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      length = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k)
      if (byte(i + k) < (k == 1 ? low : 0x80) || byte(i + k) > (k == 1 ? high : 0xBF)) return i;
    i += length;
  }
  return std::string_view::npos;
}

void check_utf8(std::string_view text, const SourceLocation& where) {
  const auto bad = first_invalid_utf8(text);
  if (bad == std::string_view::npos) return;
  const std::string_view before = text.substr(0, bad);
  const auto newline = before.rfind('\n');
  const auto lines = std::ranges::count(before, '\n');
  SourceLocation at = where;
  at.line = std::max(where.line, 1) + static_cast<int>(lines);
  at.column = static_cast<int>(bad - (newline == std::string_view::npos ? 0 : newline + 1)) +
              (lines == 0 ? std::max(where.column, 1) : 1);
  throw_input_error(at, "", fmt::format("not UTF-8 text: byte 0x{:02X}", static_cast<unsigned char>(text[bad])));
}

void check_json_nesting(std::string_view text, const SourceLocation& where) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, a quote included
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > MAX_NESTING)
        throw_input_error(where, "", fmt::format("nested deeper than {} levels (at byte {})", MAX_NESTING, i + 1));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace snsim
