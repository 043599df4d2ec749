#include "sim/text.hpp"

#include <string>

#include <doctest/doctest.h>

using namespace snsim;

TEST_CASE("text: UTF-8 is checked byte by byte, the first bad byte named at its line and column") {
  CHECK_NOTHROW(check_utf8("name: grüße, 名前 🚀\n", {"s.yaml", 1, 1}));
  CHECK_THROWS_WITH_AS(check_utf8("a: 1\nname: gr\xFC\xDF"
                                  "e\n",
                                  {"s.yaml", 1, 1}),
                       "s.yaml:2:9: not UTF-8 text: byte 0xFC", InputError);  // Latin-1
  CHECK_THROWS_WITH_AS(check_utf8("x\xED\xA0\x80", {"t", 1, 1}), "t:1:2: not UTF-8 text: byte 0xED", InputError);
  CHECK_THROWS_WITH_AS(check_utf8("\xC0\xAF", {"t", 1, 1}), "t:1:1: not UTF-8 text: byte 0xC0", InputError);
  CHECK_THROWS_WITH_AS(check_utf8("ab\xE2\x82", {"t", 1, 1}), "t:1:3: not UTF-8 text: byte 0xE2", InputError);
  // Text that starts inside a file counts from where it starts.
  CHECK_THROWS_WITH_AS(check_utf8("ab\xFF", {"t", 4, 7}), "t:4:9: not UTF-8 text: byte 0xFF", InputError);
}

TEST_CASE("text: JSON nested deeper than the cap is refused before it is parsed, brackets in strings do not count") {
  const std::string deep = std::string(MAX_NESTING, '[') + std::string(MAX_NESTING, ']');
  CHECK_NOTHROW(check_json_nesting(deep, {"t.jsonl", 3, 0}));
  CHECK_NOTHROW(check_json_nesting("{\"a\": \"" + std::string(100'000, '[') + "\"}", {"t.jsonl", 3, 0}));
  CHECK_NOTHROW(check_json_nesting("{\"a\": \"\\\"" + std::string(100'000, '{') + "\"}", {"t.jsonl", 3, 0}));
  const std::string deeper = "{\"a\": " + std::string(100'000, '[');
  CHECK_THROWS_WITH_AS(check_json_nesting(deeper, {"t.jsonl", 3, 0}),
                       "t.jsonl:3: nested deeper than 512 levels (at byte 518)", InputError);
}
