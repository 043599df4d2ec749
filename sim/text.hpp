// Checks on text a user gives before anything parses it further: that it is UTF-8 (every name snsim takes from it
// may end up in a JSON string, which must be) and, for JSON, that it nests no deeper than a cap (parsers and the
// code that walks their trees recurse, and 100,000 open brackets would overflow the stack). One place each, for the
// YAML layer, the trace reader and the importers alike.
#pragma once

#include <cstddef>
#include <string_view>

#include "sim/error.hpp"

namespace snsim {

/// Where `text` stops being UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t first_invalid_utf8(std::string_view text);

/// An InputError "FILE:LINE:COL: not UTF-8 text: byte 0xE9" at the first byte of `text` that is not UTF-8;
/// `where` is the file, and the line and column `text` starts at (1:1 when unknown).
void check_utf8(std::string_view text, const SourceLocation& where);

/// How deep JSON (and YAML flow collections) may nest: far beyond any record or scenario snsim reads (they nest
/// 4-6 deep), far below what a recursive walk can take on an 8 MiB stack.
inline constexpr std::size_t MAX_NESTING = 512;

/// An InputError "WHERE: nested deeper than 512 levels (at column C)" when JSON `text` opens more than MAX_NESTING
/// arrays and objects inside each other; brackets inside strings do not count.
void check_json_nesting(std::string_view text, const SourceLocation& where);

}  // namespace snsim
