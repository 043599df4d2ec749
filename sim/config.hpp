// Scenario configuration: a YAML document whose every read knows its file, line, column and key path.
//
// This is the only part of snsim that sees yaml-cpp. Plugins read their parameters through ConfigNode:
//
//   auto gpus = node.required<int>("gpus");
//   auto bw   = node.optional<BytesPerSecond>("link_bandwidth", 25_GBps);
//
// and every mistake becomes one line in one format that editors can jump to (sim/error.hpp):
//
//   bad.yaml:4:24: topology.link_bandwidth: cannot parse '450' as a bandwidth: missing unit (try '450GBps' ...)
//
// Unknown keys are errors, not warnings: a typo must not silently change results. Every key that code asks
// for (present or not) becomes "known" for its map; ConfigDocument::reject_unknown_keys() walks the whole tree
// after parsing and names the first key nobody asked for, with the known keys and a suggestion.
// Every value read, defaults included, is recorded so reports can echo the effective configuration.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace YAML {
class Node;
struct Mark;
}  // namespace YAML

namespace snsim {

class ConfigDocument;

/// One node of a configuration document: a map, a sequence or a scalar, with its file and key path.
/// Cheap to copy; copies share the document.
class ConfigNode {
 public:
  /// A required value; a missing key is an error naming the parent map's location.
  template <class T>
  T required(std::string_view key) const;
  /// An optional value; `fallback` is used (and recorded as the effective value) when the key is absent.
  template <class T>
  T optional(std::string_view key, T fallback) const;
  /// An optional value without a default.
  template <class T>
  std::optional<T> maybe(std::string_view key) const;

  /// The node's own value. Supported T: std::string, bool, int, std::int64_t, std::uint64_t, double,
  /// Bytes, Seconds, BytesPerSecond, Flops, FlopsPerSecond.
  template <class T>
  T as() const;

  bool has(std::string_view key) const;
  /// A required child (any kind of node).
  ConfigNode child(std::string_view key) const;
  /// An optional child.
  std::optional<ConfigNode> maybe_child(std::string_view key) const;
  /// An optional section: the child map if present, else an empty map at that path (all defaults apply).
  ConfigNode section(std::string_view key) const;
  /// The elements of a sequence; an error if this node is not a sequence.
  std::vector<ConfigNode> elements() const;
  /// The keys of a map in document order; the keys count as known (free-form maps).
  std::vector<std::string> keys() const;

  bool is_map() const;
  bool is_sequence() const;
  bool is_scalar() const;
  /// The raw scalar text; an error if this node is not a scalar.
  std::string scalar() const;

  /// Dotted key path from the root: "workloads[1].ops[0].copy.bytes"; "" for the root.
  const std::string& path() const { return path_; }
  /// Where this node is written (file:line:col, or the --set option that wrote it).
  SourceLocation location() const;
  /// Throws the one-line InputError for this node: "file:line:col: path: message".
  [[noreturn]] void fail(std::string_view message) const;
  /// Like fail(), for a key of this map that may be absent: points at the key when present, else at the map.
  [[noreturn]] void fail_key(std::string_view key, std::string_view message) const;

  ~ConfigNode();
  ConfigNode(const ConfigNode&);
  ConfigNode& operator=(const ConfigNode&);

 private:
  friend class ConfigDocument;
  ConfigNode(std::shared_ptr<ConfigDocument> doc, const YAML::Node& node, std::string path);
  std::string child_path(std::string_view key) const;
  std::optional<ConfigNode> lookup(std::string_view key) const;
  void record(const std::string& text) const;
  /// Parses this scalar with a unit parser (UnitError becomes this node's InputError) and records it as written.
  template <class T>
  T as_quantity(T (*parse)(std::string_view)) const;

  std::shared_ptr<ConfigDocument> doc_;
  std::unique_ptr<YAML::Node> node_;
  std::string path_;
};

// The supported value types of ConfigNode::as (defined in config.cpp).
template <>
std::string ConfigNode::as<std::string>() const;
template <>
bool ConfigNode::as<bool>() const;
template <>
int ConfigNode::as<int>() const;
template <>
std::int64_t ConfigNode::as<std::int64_t>() const;
template <>
std::uint64_t ConfigNode::as<std::uint64_t>() const;
template <>
double ConfigNode::as<double>() const;
template <>
Bytes ConfigNode::as<Bytes>() const;
template <>
Seconds ConfigNode::as<Seconds>() const;
template <>
BytesPerSecond ConfigNode::as<BytesPerSecond>() const;
template <>
Flops ConfigNode::as<Flops>() const;
template <>
FlopsPerSecond ConfigNode::as<FlopsPerSecond>() const;

/// The types ConfigNode reads and records (the T of as, required, optional and maybe).
template <class T>
concept ConfigValue =
    std::same_as<T, std::string> || std::same_as<T, bool> || std::same_as<T, int> || std::same_as<T, std::int64_t> ||
    std::same_as<T, std::uint64_t> || std::same_as<T, double> || std::same_as<T, Bytes> || std::same_as<T, Seconds> ||
    std::same_as<T, BytesPerSecond> || std::same_as<T, Flops> || std::same_as<T, FlopsPerSecond>;

/// How the effective configuration records a value that code supplied (a default): strings as they are, numbers
/// as fmt prints them, quantities as to_string does ("1.5 us").
inline std::string config_text(const std::string& v) {
  return v;
}
inline std::string config_text(bool v) {
  return v ? "true" : "false";
}
template <class T>
requires ConfigValue<T> && std::is_arithmetic_v<T> std::string config_text(T v) {
  return fmt::format("{}", v);
}
template <class T>
requires ConfigValue<T> &&(!std::is_arithmetic_v<T>)&&(!std::same_as<T, std::string>)std::string config_text(T v) {
  return to_string(v);
}

/// The one format of range errors, pointing at `key` of `parent`: "must be between 2 and 8, got 9".
template <class T>
void check_between(const ConfigNode& parent, std::string_view key, const T& value, const T& low, const T& high) {
  if (value < low || value > high)
    parent.fail_key(key, fmt::format("must be between {} and {}, got {}", low, high, value));
}
/// "must be > 0, got 0".
template <class T>
void check_positive(const ConfigNode& parent, std::string_view key, const T& value) {
  if (!(value > T{})) parent.fail_key(key, fmt::format("must be > 0, got {}", value));
}

/// A parsed configuration file, with the bookkeeping for unknown keys and the effective configuration.
class ConfigDocument : public std::enable_shared_from_this<ConfigDocument> {
 public:
  /// Parses a file. Syntax errors become InputErrors naming the file.
  static std::shared_ptr<ConfigDocument> load_file(const std::string& path);
  /// Parses text; `file_name` is what errors call it ("<embedded default>").
  static std::shared_ptr<ConfigDocument> load_string(const std::string& text, std::string file_name);

  /// Applies one `--set key.path=value` override (YAML scalar syntax) before anything is read. Errors about the
  /// value name `origin` (default: "--set key.path=value").
  void set(std::string_view assignment, std::string origin = "");

  /// Copies every value under `section` of `other` that this document does not set itself (a calibrated overlay:
  /// the document's own values win). Errors about a copied value name its place in `other`.
  void overlay(const ConfigDocument& other, std::string_view section);

  ConfigNode root();
  const std::string& file() const { return file_; }

  /// Fails on the first key (in document order) that no code asked for, listing the known keys.
  void reject_unknown_keys() const;

  /// The keys code asked for under `path`, dotted and relative to it ("LL.efficiency"), sections flattened.
  /// Registries use it to check that plugins document exactly the keys they read.
  std::set<std::string> keys_asked(const std::string& path) const;

  /// Every value read so far, defaults included, as nested JSON (strings as written or as printed).
  nlohmann::json effective() const;

  ConfigDocument(const ConfigDocument&) = delete;
  ConfigDocument& operator=(const ConfigDocument&) = delete;
  ~ConfigDocument();

 private:
  friend class ConfigNode;
  ConfigDocument(std::unique_ptr<YAML::Node> root, std::string file);
  /// Where the value at `key_path` was written: its --set option or overlay file, else `mark` in this file.
  SourceLocation location(const std::string& key_path, const YAML::Mark& mark) const;

  std::unique_ptr<YAML::Node> root_;
  std::string file_;
  std::map<std::string, std::set<std::string>, std::less<>> known_keys_;  // map path -> keys asked for
  std::map<std::string, SourceLocation, std::less<>> overrides_;          // path -> "--set a.b=v" or overlay file
  std::vector<std::pair<std::string, std::string>> effective_;            // path -> value, in read order
};

}  // namespace snsim
