#include "sim/config.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "sim/files.hpp"
#include "sim/text.hpp"

namespace snsim {
namespace {

std::string kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "an undefined value";
  }
}

/// One step of a key path: a map key or a sequence index.
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};

/// Splits "a.b[2].c" into steps; nullopt if malformed.
std::optional<std::vector<PathStep>> split_path(std::string_view path) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const auto close = path.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      std::size_t index = 0;
      auto [end, ec] = std::from_chars(path.data() + i + 1, path.data() + close, index);
      if (ec != std::errc{} || end != path.data() + close) return std::nullopt;
      steps.push_back({"", index});
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    const auto end = path.find_first_of(".[", i);
    const auto key = path.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    if (key.empty()) return std::nullopt;
    steps.push_back({std::string(key), std::nullopt});
    if (end == std::string_view::npos) break;
    i = path[end] == '.' ? end + 1 : end;
  }
  if (steps.empty()) return std::nullopt;
  return steps;
}

/// Edit distance, for "did you mean" suggestions on unknown keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

template <class T>
T parse_integer(const ConfigNode& node, std::string_view expected) {
  const std::string text = node.scalar();
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) node.fail(fmt::format("{} is out of range", text));
  if (ec != std::errc{} || end != text.data() + text.size())
    node.fail(fmt::format("expected {}, found '{}'", expected, text));
  return value;
}

/// How many nodes a document may have once its aliases are expanded: every read, the unknown-key walk and the
/// effective configuration visit an alias as often as it is used, so a few lines of aliases of aliases (an "alias
/// bomb") would otherwise take minutes and gigabytes before any limit speaks. 2^22 is 4x what the largest program
/// (MAX_OPS_PER_RANK ops written out, one node each) needs; `repeat` writes more without expanding.
constexpr std::uint64_t MAX_EXPANDED_NODES = std::uint64_t{1} << 22;

/// The nodes under `node`, aliases counted each time they are used, without expanding them: an aliased node is one
/// node of yaml-cpp's graph, met again at the same mark, so its count is remembered by mark (linear time in the text).
/// Fails at the first node whose count goes beyond MAX_EXPANDED_NODES.
class ExpandedSize {
 public:
  explicit ExpandedSize(std::string file) : file_{std::move(file)} {}

  std::uint64_t of(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    const auto key = std::tuple{mark.pos, static_cast<int>(node.Type()), node.size()};
    if (!mark.is_null())
      if (auto it = known_.find(key); it != known_.end()) return it->second;
    // An anchor used inside its own node makes yaml-cpp's graph a cycle, and deep nesting a deep recursion: both are
    // refused here, before they exhaust the stack (one was found by fuzz_params under ASan).
    if (!mark.is_null() && !open_.insert(key).second)
      throw_input_error({file_, mark.line + 1, mark.column + 1}, "",
                        "an alias refers to the node that contains it (a cycle)");
    if (++depth_ > MAX_DEPTH)
      throw_input_error({file_, mark.line + 1, mark.column + 1}, "",
                        fmt::format("nested deeper than {} levels", MAX_DEPTH));
    std::uint64_t n = 1;
    for (const auto& entry : node) {
      // Every reader takes a key as a name: a map, list or empty key (`{a: 1}: 2`, `? [x]`, `~: 1`) would read as ""
      // in one place and throw yaml-cpp's bad conversion in another (one was found by fuzz_params).
      if (node.IsMap() && !entry.first.IsScalar()) {
        const YAML::Mark at = entry.first.Mark().is_null() ? mark : entry.first.Mark();
        throw_input_error({file_, at.line + 1, at.column + 1}, "",
                          fmt::format("a key must be a name, found {}", kind_of(entry.first)));
      }
      // The error points at the child that takes the count over (for a map's value, its key: a value read through
      // an iterator has no mark of its own).
      const YAML::Node& child = node.IsMap() ? entry.second : entry;
      n += (node.IsMap() ? of(entry.first) : 0) + of(child);
      if (n > MAX_EXPANDED_NODES) {
        const YAML::Mark where = node.IsMap() ? entry.first.Mark() : child.Mark();
        const YAML::Mark at = where.is_null() ? mark : where;
        throw_input_error({file_, at.line + 1, at.column + 1}, "",
                          fmt::format("more than {} nodes once the aliases in here are expanded (aliases of "
                                      "aliases?); a long program is written with `repeat`",
                                      MAX_EXPANDED_NODES));
      }
    }
    --depth_;
    if (!mark.is_null()) {
      open_.erase(key);
      known_.emplace(key, n);
    }
    return n;
  }

 private:
  static constexpr int MAX_DEPTH = 512;
  std::string file_;
  int depth_ = 0;
  std::set<std::tuple<std::size_t, int, std::size_t>> open_;  // nodes being counted: the path from the root
  std::map<std::tuple<std::size_t, int, std::size_t>, std::uint64_t> known_;
};

/// yaml-cpp's Load with the checks every document and --set value gets (ExpandedSize: depth, alias cycles and
/// expansion, keys that are names); a parse error says `invalid` and names `file`.
YAML::Node load_yaml(const std::string& text, const std::string& file, std::string_view invalid) {
  try {
    YAML::Node root = YAML::Load(text);
    ExpandedSize(file).of(root);
    return root;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser stops at its own depth limit with the message "bad file": say what is wrong.
    throw_input_error({file, e.mark.line + 1, e.mark.column + 1}, "",
                      fmt::format("{}: nested deeper than {} levels", invalid, e.depth()));
  } catch (const YAML::ParserException& e) {
    // yaml-cpp names the line but not the file; its message is e.msg.
    throw_input_error({file, e.mark.line + 1, e.mark.column + 1}, "", fmt::format("{}: {}", invalid, e.msg));
  }
}

}  // namespace

// ---- ConfigNode -------------------------------------------------------------------------------------------------

ConfigNode::ConfigNode(std::shared_ptr<ConfigDocument> doc, const YAML::Node& node, std::string path)
    : doc_{std::move(doc)}, node_{std::make_unique<YAML::Node>(node)}, path_{std::move(path)} {}
ConfigNode::~ConfigNode() = default;
ConfigNode::ConfigNode(const ConfigNode& other)
    : doc_{other.doc_}, node_{std::make_unique<YAML::Node>(*other.node_)}, path_{other.path_} {}
ConfigNode& ConfigNode::operator=(const ConfigNode& other) {
  if (this != &other) {
    doc_ = other.doc_;
    node_ = std::make_unique<YAML::Node>(*other.node_);
    path_ = other.path_;
  }
  return *this;
}

std::string ConfigNode::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

bool ConfigNode::is_map() const {
  return node_->IsMap();
}
bool ConfigNode::is_sequence() const {
  return node_->IsSequence();
}
bool ConfigNode::is_scalar() const {
  return node_->IsScalar();
}

std::string ConfigNode::scalar() const {
  if (!node_->IsScalar()) fail(fmt::format("expected a single value, found {}", kind_of(*node_)));
  return node_->Scalar();
}

SourceLocation ConfigNode::location() const {
  return doc_->location(path_, node_->Mark());
}

SourceLocation ConfigDocument::location(const std::string& key_path, const YAML::Mark& mark) const {
  // A value written by --set or copied from an overlay is reported where it came from.
  for (const auto& [path, where] : overrides_)
    if (key_path == path || key_path.starts_with(path + ".") || key_path.starts_with(path + "[")) return where;
  if (mark.is_null()) return {file_, 0, 0};
  return {file_, mark.line + 1, mark.column + 1};  // yaml-cpp counts from 0
}

void ConfigNode::fail(std::string_view message) const {
  throw_input_error(location(), path_, message);
}

void ConfigNode::fail_key(std::string_view key, std::string_view message) const {
  if (auto c = lookup(key)) c->fail(message);
  throw_input_error(location(), child_path(key), message);
}

std::optional<ConfigNode> ConfigNode::lookup(std::string_view key) const {
  doc_->known_keys_[path_].insert(std::string(key));
  if (node_->IsNull()) return std::nullopt;  // `topology:` with nothing after it behaves as an empty map
  if (!node_->IsMap()) fail(fmt::format("expected a map with key '{}', found {}", key, kind_of(*node_)));
  const YAML::Node& map = *node_;
  YAML::Node child = map[std::string(key)];
  if (!child.IsDefined()) return std::nullopt;
  return ConfigNode(doc_, child, child_path(key));
}

bool ConfigNode::has(std::string_view key) const {
  return lookup(key).has_value();
}

ConfigNode ConfigNode::child(std::string_view key) const {
  auto c = lookup(key);
  if (!c) throw_input_error(location(), child_path(key), "required key is missing");
  return *c;
}

std::optional<ConfigNode> ConfigNode::maybe_child(std::string_view key) const {
  return lookup(key);
}

ConfigNode ConfigNode::section(std::string_view key) const {
  if (auto c = lookup(key)) return *c;
  return ConfigNode(doc_, YAML::Node(YAML::NodeType::Null), child_path(key));
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!node_->IsSequence()) fail(fmt::format("expected a list, found {}", kind_of(*node_)));
  std::vector<ConfigNode> out;
  for (std::size_t i = 0; i < node_->size(); ++i)
    out.emplace_back(ConfigNode(doc_, (*node_)[i], fmt::format("{}[{}]", path_, i)));
  return out;
}

std::vector<std::string> ConfigNode::keys() const {
  if (!node_->IsMap()) fail(fmt::format("expected a map, found {}", kind_of(*node_)));
  std::vector<std::string> out;
  for (const auto& entry : *node_) out.push_back(entry.first.Scalar());
  doc_->known_keys_[path_].insert(out.begin(), out.end());
  return out;
}

void ConfigNode::record(const std::string& text) const {
  doc_->effective_.emplace_back(path_, text);
}

template <>
std::string ConfigNode::as<std::string>() const {
  auto v = scalar();
  record(v);
  return v;
}
template <>
bool ConfigNode::as<bool>() const {
  const auto text = scalar();
  bool value = false;
  if (!YAML::convert<bool>::decode(*node_, value)) fail(fmt::format("expected true or false, found '{}'", text));
  record(config_text(value));
  return value;
}
template <>
int ConfigNode::as<int>() const {
  auto v = parse_integer<int>(*this, "an integer");
  record(config_text(v));
  return v;
}
template <>
std::int64_t ConfigNode::as<std::int64_t>() const {
  auto v = parse_integer<std::int64_t>(*this, "an integer");
  record(config_text(v));
  return v;
}
template <>
std::uint64_t ConfigNode::as<std::uint64_t>() const {
  auto v = parse_integer<std::uint64_t>(*this, "a non-negative integer");
  record(config_text(v));
  return v;
}
template <>
double ConfigNode::as<double>() const {
  const std::string text = scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value))
    fail(fmt::format("expected a number, found '{}'", text));
  record(config_text(value));
  return value;
}
template <class T>
T ConfigNode::as_quantity(T (*parse)(std::string_view)) const {
  const std::string text = scalar();
  try {
    const T value = parse(text);
    record(text);
    return value;
  } catch (const UnitError& e) {
    fail(e.what());
  }
}

template <>
Bytes ConfigNode::as<Bytes>() const {
  return as_quantity<Bytes>(parse_bytes);
}
template <>
Seconds ConfigNode::as<Seconds>() const {
  return as_quantity<Seconds>(parse_seconds);
}
template <>
BytesPerSecond ConfigNode::as<BytesPerSecond>() const {
  return as_quantity<BytesPerSecond>(parse_bandwidth);
}
template <>
Flops ConfigNode::as<Flops>() const {
  return as_quantity<Flops>(parse_flops);
}
template <>
FlopsPerSecond ConfigNode::as<FlopsPerSecond>() const {
  return as_quantity<FlopsPerSecond>(parse_flop_rate);
}

template <class T>
T ConfigNode::required(std::string_view key) const {
  return child(key).as<T>();
}

template <class T>
T ConfigNode::optional(std::string_view key, T fallback) const {
  if (auto c = lookup(key)) return c->as<T>();
  doc_->effective_.emplace_back(child_path(key), config_text(fallback));
  return fallback;
}

template <class T>
std::optional<T> ConfigNode::maybe(std::string_view key) const {
  if (auto c = lookup(key)) return c->as<T>();
  return std::nullopt;
}

#define SNSIM_CONFIG_INSTANTIATE(T)                              \
  template T ConfigNode::required<T>(std::string_view) const;    \
  template T ConfigNode::optional<T>(std::string_view, T) const; \
  template std::optional<T> ConfigNode::maybe<T>(std::string_view) const;
SNSIM_CONFIG_INSTANTIATE(std::string)
SNSIM_CONFIG_INSTANTIATE(bool)
SNSIM_CONFIG_INSTANTIATE(int)
SNSIM_CONFIG_INSTANTIATE(std::int64_t)
SNSIM_CONFIG_INSTANTIATE(std::uint64_t)
SNSIM_CONFIG_INSTANTIATE(double)
SNSIM_CONFIG_INSTANTIATE(Bytes)
SNSIM_CONFIG_INSTANTIATE(Seconds)
SNSIM_CONFIG_INSTANTIATE(BytesPerSecond)
SNSIM_CONFIG_INSTANTIATE(Flops)
SNSIM_CONFIG_INSTANTIATE(FlopsPerSecond)
#undef SNSIM_CONFIG_INSTANTIATE

// ---- ConfigDocument ---------------------------------------------------------------------------------------------

ConfigDocument::ConfigDocument(std::unique_ptr<YAML::Node> root, std::string file)
    : root_{std::move(root)}, file_{std::move(file)} {}
ConfigDocument::~ConfigDocument() = default;

std::shared_ptr<ConfigDocument> ConfigDocument::load_string(const std::string& text, std::string file_name) {
  check_utf8(text, {file_name, 1, 1});
  auto root = std::make_unique<YAML::Node>(load_yaml(text, file_name, "invalid YAML"));
  if (!root->IsMap() && !root->IsNull())
    throw_input_error({file_name, root->Mark().line + 1, root->Mark().column + 1}, "",
                      fmt::format("expected a map of settings at the top, found {}", kind_of(*root)));
  return std::shared_ptr<ConfigDocument>(new ConfigDocument(std::move(root), std::move(file_name)));
}

std::shared_ptr<ConfigDocument> ConfigDocument::load_file(const std::string& path) {
  return load_string(read_file(path), path);
}

ConfigNode ConfigDocument::root() {
  return ConfigNode(shared_from_this(), *root_, "");
}

void ConfigDocument::set(std::string_view assignment, std::string origin) {
  const SourceLocation where{origin.empty() ? fmt::format("--set {}", assignment) : std::move(origin), 0, 0};
  check_utf8(assignment, {"--set", 0, 0});
  const auto eq = assignment.find('=');
  const auto steps = eq == std::string_view::npos ? std::nullopt : split_path(assignment.substr(0, eq));
  if (!steps) throw_input_error({"--set", 0, 0}, "", fmt::format("expected key.path=value, found '{}'", assignment));
  // The value gets a document's checks (depth, aliases, keys); its marks count from the value's first character.
  const YAML::Node value = load_yaml(std::string(assignment.substr(eq + 1)), where.file, "invalid YAML value");
  YAML::Node current(*root_);  // yaml-cpp nodes are handles: reset() moves the handle, `=` would assign
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const auto& step = (*steps)[i];
    const bool last = i + 1 == steps->size();
    if (step.index) {
      if (!current.IsSequence() || *step.index >= current.size())
        throw_input_error(where, "", fmt::format("there is no element [{}] to set", *step.index));
      if (last) {
        current[*step.index] = value;
        break;
      }
      YAML::Node next = current[*step.index];
      current.reset(next);
    } else {
      if (current.IsDefined() && !current.IsMap() && !current.IsNull())
        throw_input_error(where, "", fmt::format("cannot set key '{}' inside {}", step.key, kind_of(current)));
      if (last) {
        current[step.key] = value;
        break;
      }
      YAML::Node next = current[step.key];
      current.reset(next);
    }
  }
  overrides_.emplace(std::string(assignment.substr(0, eq)), where);
}

void ConfigDocument::overlay(const ConfigDocument& other, std::string_view section) {
  const YAML::Node& other_root = *other.root_;
  const YAML::Node from = other_root[std::string(section)];
  if (!from || !from.IsMap()) return;
  // yaml-cpp nodes are handles: `into` must be a fresh handle per level, never re-assigned with `=`.
  auto merge = [&](auto& self, YAML::Node into, const YAML::Node& source, const std::string& path) -> void {
    for (const auto& entry : source) {
      const auto key = entry.first.as<std::string>();
      const std::string child_path = path.empty() ? key : fmt::format("{}.{}", path, key);
      YAML::Node target = into[key];
      if (entry.second.IsMap()) {
        if (!target.IsDefined() || target.IsNull()) target = YAML::Node(YAML::NodeType::Map);
        // A distribution the document gives (a map with `dist:`) replaces the overlay's as a whole: merging them
        // would mix two distributions' keys (a constant's `value` with an empirical's `samples`).
        if (target.IsMap() && !std::as_const(target)["dist"].IsDefined()) self(self, target, entry.second, child_path);
        continue;  // the document set a scalar or a distribution here: it wins, and its own checks will speak
      }
      if (target.IsDefined() && !target.IsNull()) continue;
      target = YAML::Clone(entry.second);
      const YAML::Mark mark = entry.second.Mark();
      overrides_.emplace(child_path, mark.is_null() ? SourceLocation{other.file_, 0, 0}
                                                    : SourceLocation{other.file_, mark.line + 1, mark.column + 1});
    }
  };
  YAML::Node root(*root_);
  YAML::Node into = root[std::string(section)];
  if (!into.IsDefined() || into.IsNull()) into = YAML::Node(YAML::NodeType::Map);
  if (into.IsMap()) merge(merge, into, from, std::string(section));
}

void ConfigDocument::reject_unknown_keys() const {
  struct Walker {
    const ConfigDocument& doc;
    void walk(const YAML::Node& node, const std::string& path) const {
      if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], fmt::format("{}[{}]", path, i));
        return;
      }
      if (!node.IsMap()) return;
      auto known = doc.known_keys_.find(path);
      if (known == doc.known_keys_.end()) return;  // a map nobody opened: its parent key was handled
      // An op without parameters opens its map asking only for the empty key (has("")): every key there is unknown.
      std::set<std::string> known_keys = known->second;
      known_keys.erase("");
      std::set<std::string> seen;
      for (const auto& entry : node) {
        const std::string key = entry.first.Scalar();
        const std::string child = path.empty() ? key : fmt::format("{}.{}", path, key);
        const SourceLocation where = doc.location(child, entry.first.Mark());
        if (!seen.insert(key).second) throw_input_error(where, child, "duplicate key");
        if (!known_keys.contains(key)) {
          if (known_keys.empty()) throw_input_error(where, child, fmt::format("unknown key; '{}' takes no keys", path));
          std::string suggestion;
          std::size_t best = 3;  // suggest only close matches
          for (const auto& k : known_keys)
            if (auto d = edit_distance(key, k); d < best) {
              best = d;
              suggestion = fmt::format(" (did you mean '{}'?)", k);
            }
          throw_input_error(where, child,
                            fmt::format("unknown key{}; known keys: {}", suggestion, fmt::join(known_keys, ", ")));
        }
        walk(entry.second, child);
      }
    }
  };
  Walker{*this}.walk(*root_, "");
}

std::set<std::string> ConfigDocument::keys_asked(const std::string& path) const {
  std::set<std::string> out;
  auto it = known_keys_.find(path);
  if (it == known_keys_.end()) return out;
  for (const auto& key : it->second) {
    const std::string child = path.empty() ? key : fmt::format("{}.{}", path, key);
    if (known_keys_.contains(child))
      for (const auto& sub : keys_asked(child)) out.insert(fmt::format("{}.{}", key, sub));
    else
      out.insert(key);
  }
  return out;
}

nlohmann::json ConfigDocument::effective() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, value] : effective_) {
    auto steps = split_path(path);
    if (!steps) continue;
    nlohmann::json* at = &out;
    for (const auto& step : *steps) {
      if (step.index) {
        if (!at->is_array()) *at = nlohmann::json::array();
        while (at->size() <= *step.index) at->push_back(nlohmann::json::object());
        at = &(*at)[*step.index];
      } else {
        if (!at->is_object()) *at = nlohmann::json::object();
        at = &(*at)[step.key];
      }
    }
    *at = value;
  }
  return out;
}

}  // namespace snsim
