// The documentation's relative links resolve: every link and image in README.md and docs/ names a file or folder of
// the repository, and every #fragment names a heading (or an explicit <a id>) of the file it points into, with
// heading anchors made the way GitHub makes them. Web links are not followed. Fenced code blocks and inline code
// are not links.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path ROOT{SNSIM_SOURCE_DIR};

struct Line {
  int number;
  std::string text;  // with inline code blanked
  bool heading;
};

/// The lines of a Markdown file outside fenced code blocks, inline code spans replaced by nothing.
std::vector<Line> prose_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<Line> lines;
  std::string text;
  std::string fence;  // the open fence's marker, empty outside a block
  int number = 0;
  static const std::regex code_span("`+[^`]*`+");
  while (std::getline(in, text)) {
    ++number;
    const auto start = text.find_first_not_of(' ');
    const std::string trimmed = start == std::string::npos ? "" : text.substr(start);
    if (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
      const std::string marker = trimmed.substr(0, 3);
      if (fence.empty())
        fence = marker;
      else if (fence == marker)
        fence.clear();
      continue;
    }
    if (!fence.empty()) continue;
    lines.push_back({number, std::regex_replace(text, code_span, ""), trimmed.starts_with("#")});
  }
  return lines;
}

/// Appends the UTF-8 encoding of a code point.
void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

/// Letters GitHub keeps in an anchor besides ASCII: Latin-1 and Latin Extended letters, Greek (µ included). Other
/// non-ASCII characters (dashes, ×, ±, arrows) are punctuation or symbols, which it drops.
bool kept_non_ascii(char32_t c) {
  if (c == 0xB5) return true;
  if (c >= 0xC0 && c <= 0x24F) return c != 0xD7 && c != 0xF7;
  return c >= 0x370 && c <= 0x3FF;
}

/// GitHub's anchor for a heading's text: links reduced to their text, lower case, every character but letters,
/// digits, spaces, hyphens and underscores dropped, spaces turned into hyphens.
std::string github_slug(const std::string& heading) {
  static const std::regex link(R"(!?\[([^\]]*)\]\([^)]*\))");
  const std::string text = std::regex_replace(heading, link, "$1");
  std::string slug;
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      const char c = static_cast<char>(std::tolower(byte));
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
        slug += c;
      else if (c == ' ')
        slug += '-';
      ++i;
      continue;
    }
    const int length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
    char32_t c = byte & (0x3F >> (length - 1));
    for (int k = 1; k < length && i + k < text.size(); ++k) c = (c << 6) | (text[i + k] & 0x3F);
    if (kept_non_ascii(c)) {
      // Lower-case the Latin-1 capitals (U+00C0-U+00DE) and basic Greek capitals, as GitHub does.
      if ((c >= 0xC0 && c <= 0xDE) || (c >= 0x391 && c <= 0x3AB)) c += 0x20;
      append_utf8(slug, c);
    }
    i += length;
  }
  return slug;
}

/// Every anchor a Markdown file defines: its headings' slugs (repeats numbered -1, -2, ...) and explicit ids.
std::set<std::string> anchors_of(const fs::path& file) {
  static std::map<fs::path, std::set<std::string>> cache;
  if (const auto it = cache.find(file); it != cache.end()) return it->second;
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  static const std::regex heading(R"(^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$)");
  static const std::regex explicit_id(R"(<a\s+(?:id|name)=\"([^\"]+)\")");
  for (const auto& line : prose_lines(file)) {
    std::smatch m;
    if (line.heading && std::regex_match(line.text, m, heading)) {
      const std::string slug = github_slug(m[1].str());
      const int n = seen[slug]++;
      anchors.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
    }
    for (std::sregex_iterator it(line.text.begin(), line.text.end(), explicit_id), end; it != end; ++it)
      anchors.insert((*it)[1].str());
  }
  cache[file] = anchors;
  return anchors;
}

struct Link {
  fs::path file;
  int line;
  std::string target;
};

/// README.md and every Markdown file under docs/.
std::vector<fs::path> documents() {
  std::vector<fs::path> files{ROOT / "README.md"};
  for (const auto& entry : fs::recursive_directory_iterator(ROOT / "docs"))
    if (entry.is_regular_file() && entry.path().extension() == ".md") files.push_back(entry.path());
  std::sort(files.begin() + 1, files.end());
  return files;
}

/// Every relative link of the documents: Markdown links and images, reference definitions, HTML src and href.
std::vector<Link> relative_links() {
  static const std::regex markdown(R"(!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\))");
  static const std::regex reference(R"(^\s{0,3}\[[^\]]+\]:\s*(\S+))");
  static const std::regex html(R"((?:src|href)=\"([^\"]+)\")");
  std::vector<Link> links;
  for (const auto& file : documents())
    for (const auto& line : prose_lines(file))
      for (const auto* pattern : {&markdown, &reference, &html})
        for (std::sregex_iterator it(line.text.begin(), line.text.end(), *pattern), end; it != end; ++it) {
          const std::string target = (*it)[1].str();
          if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
          links.push_back({file, line.number, target});
        }
  return links;
}

std::string where(const Link& link) {
  return fs::relative(link.file, ROOT).string() + ":" + std::to_string(link.line) + ": " + link.target;
}

/// The file a link points into: relative to its document, or to the repository root when it starts with '/'.
fs::path resolve(const Link& link) {
  const std::string path = link.target.substr(0, link.target.find('#'));
  if (path.empty()) return link.file;
  return path.starts_with("/") ? ROOT / path.substr(1) : link.file.parent_path() / path;
}

}  // namespace

TEST_CASE("docs links: GitHub's heading anchors are made as the link check makes them") {
  CHECK(github_slug("SimGrid 3.32: the engine facts") == "simgrid-332-the-engine-facts");
  CHECK(github_slug("snsim — a simulator of GPU supernodes") == "snsim--a-simulator-of-gpu-supernodes");
  CHECK(github_slug("Validate before the run") == "validate-before-the-run");
  CHECK(github_slug("`tools/` is thin, [studies](studies.md) are not") == "tools-is-thin-studies-are-not");
  CHECK(github_slug("HGX (H100, H200) × 8 µs") == "hgx-h100-h200--8-µs");
  CHECK(github_slug("one_shot and two-shot") == "one_shot-and-two-shot");
}

TEST_CASE("docs links: every relative link in README.md and docs/ names a file or folder that exists") {
  const auto links = relative_links();
  REQUIRE(documents().size() >= 5);
  REQUIRE(links.size() >= 20);  // the check must have found the links it is there to check
  for (const auto& link : links) {
    CAPTURE(where(link));
    CHECK(fs::exists(resolve(link)));
  }
}

TEST_CASE("docs links: every #fragment in README.md and docs/ names a heading or an id of its target") {
  int fragments = 0;
  for (const auto& link : relative_links()) {
    const auto hash = link.target.find('#');
    if (hash == std::string::npos) continue;
    const fs::path target = resolve(link);
    if (target.extension() != ".md" || !fs::exists(target)) continue;  // the file check reports a missing file
    ++fragments;
    CAPTURE(where(link));
    CHECK(anchors_of(target).count(link.target.substr(hash + 1)) == 1);
  }
  CHECK(fragments >= 20);
}
