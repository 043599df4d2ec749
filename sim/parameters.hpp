// One declaration per parameter: its key, unit, default, accepted range, one-line doc and the source of the
// default, written once next to the code that uses it. Everything else is derived from it: the read and the range
// check (with the one error format of sim/config.hpp), the rows of `snsim info`, the generated reference
// (docs/reference/parameters.md) and the tests that compare documented defaults with what a run uses.
//
//   const ParamTable<CopyModel>& copy_params() {
//     static const ParamTable<CopyModel> table = [] {
//       ParamTable<CopyModel> params;
//       params.add({.key = "ce.efficiency", .unit = "fraction", .fallback = 0.83, .check = between(0.01, 1.0),
//                   .doc = "rate of a lone CE copy / line rate", .source = "meas nccl#1264"},
//                  [](CopyModel& m) { return &m.ce.efficiency; });
//       ...
//       return params;
//     }();
//     return table;
//   }
//   ...
//   copy_params().read(node, model);   // reads every row below `node`, in declaration order
//
// A table describes the keys of one map (a model's section, one element of a list, a topology): dotted keys are
// read through ConfigNode::section, so "ce.efficiency" is `efficiency` of the map `ce`. Any struct read from a map
// can have one (a model, a topology, an op's parameters, `output:`); `snsim info` lists a table's docs().
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/config.hpp"
#include "sim/units.hpp"

namespace snsim {

/// One documented parameter as `snsim info` and the reference print it.
struct ParamDoc {
  std::string name;           // key below the plugin's section, dotted: "ce.efficiency"
  std::string unit;           // "bytes/s per direction", "GPUs", "ce|sm", ...
  std::string default_value;  // "" when required
  std::string summary;        // one line
  std::string source = "";    // where the default comes from ("meas nccl#1264"); "" when the summary says it
  std::string range = "";     // values accepted beyond the unit's own ("0.01 to 1", "> 0"); "" for any
};

/// A value as a user writes it in YAML, shortest form: "1.5us", "141GBps", "4KiB", "0.83", "true".
inline std::string param_text(bool v) {
  return v ? "true" : "false";
}
inline std::string param_text(const std::string& v) {
  return v;
}
template <class T>
requires std::is_arithmetic_v<T> std::string param_text(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return fmt::format("{:.6g}", v);
  else
    return fmt::format("{}", v);
}
/// Quantities: to_string without the space, rates with `ps` ("141 GB/s" -> "141GBps"), both parseable back.
template <class T>
requires(!std::is_arithmetic_v<T>) && requires(T v) {
  to_string(v);
}
std::string param_text(T v) {
  std::string text = to_string(v);
  if (const auto space = text.find(' '); space != std::string::npos) text.erase(space, 1);
  if (text.ends_with("/s")) text.replace(text.size() - 2, 2, "ps");
  return text;
}

// Range checks. Messages are the ones of check_between and check_positive (sim/config.hpp).
struct Positive {};
struct NonNegative {};
inline constexpr Positive positive{};
inline constexpr NonNegative non_negative{};
template <class T>
struct Between {
  T low, high;
};
template <class T>
Between<T> between(T low, T high) {
  return {low, high};
}
template <class T>
struct OneOf {
  std::vector<T> values;
};
template <class T>
OneOf<T> one_of(std::initializer_list<T> values) {
  return {values};
}

/// What a parameter accepts beyond its type: anything, (low, high) inclusive, > 0, >= 0 or one of a few values.
template <class T>
class Check {
 public:
  Check() = default;
  Check(Positive) : kind_{Kind::above_zero} {}
  Check(NonNegative) : kind_{Kind::at_least_zero} {}
  template <class U>
  requires std::convertible_to<U, T> Check(Between<U> b)
      : kind_{Kind::range}, values_{static_cast<T>(b.low), static_cast<T>(b.high)} {}
  Check(OneOf<T> o) : kind_{Kind::listed}, values_{std::move(o.values)} {}

  /// Fails on `key` of `parent` when `value` is out of range.
  void operator()(const ConfigNode& parent, std::string_view key, const T& value) const {
    switch (kind_) {
      case Kind::any:
        return;
      case Kind::above_zero:
        return check_positive(parent, key, value);
      case Kind::at_least_zero:
        if (!(value >= T{})) parent.fail_key(key, fmt::format("must be >= 0, got {}", value));
        return;
      case Kind::range:
        return check_between(parent, key, value, values_[0], values_[1]);
      case Kind::listed:
        for (const auto& v : values_)
          if (v == value) return;
        parent.fail_key(key, fmt::format("expected {}, found {}", describe(), value));
    }
  }

  bool is_list() const { return kind_ == Kind::listed; }

  /// The accepted values in words, for the reference: "0.01 to 1", "> 0", "64KiB, 2MiB or 16GiB" (a list joined by
  /// `separator` instead, when given); "" for any.
  std::string describe(std::string_view separator = "") const {
    switch (kind_) {
      case Kind::any:
        return "";
      case Kind::above_zero:
        return "> 0";
      case Kind::at_least_zero:
        return ">= 0";
      case Kind::range:
        return fmt::format("{} to {}", param_text(values_[0]), param_text(values_[1]));
      case Kind::listed: {
        std::string out;
        for (std::size_t i = 0; i < values_.size(); ++i) {
          if (i > 0) out += !separator.empty() ? separator : i + 1 == values_.size() ? " or " : ", ";
          out += param_text(values_[i]);
        }
        return out;
      }
    }
    return "";
  }

 private:
  enum class Kind { any, above_zero, at_least_zero, range, listed };
  Kind kind_ = Kind::any;
  std::vector<T> values_;
};

namespace detail {
template <class T>
struct Unwrap {
  using type = T;
  static constexpr bool optional = false;
};
template <class U>
struct Unwrap<std::optional<U>> {
  using type = U;
  static constexpr bool optional = true;
};

/// The unit column for types whose unit says everything.
template <class T>
std::string unit_of() {
  if constexpr (std::is_same_v<T, Seconds>)
    return "time";
  else if constexpr (std::is_same_v<T, Bytes>)
    return "bytes";
  else if constexpr (std::is_same_v<T, BytesPerSecond>)
    return "bytes/s";
  else if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else
    return "";
}
}  // namespace detail

/// The declaration of one parameter of type T (T = std::optional<U> for a key without a default).
template <class T>
struct Param {
  using Value = typename detail::Unwrap<T>::type;

  std::string key;        // dotted below the table's map: "ce.efficiency"
  std::string unit = "";  // "" : from the type (time, bytes, bytes/s, bool; enums: their names)
  T fallback{};           // the default
  Check<Value> check{};
  std::string doc;          // one line
  std::string source = "";  // where the default comes from, short: "meas nccl#1264", "src NCCL tuning.cc"
  bool required = false;    // no default: a missing key is an error
  std::string unset = "";   // for std::optional and parse: what an absent key means ("GPU memory", "none")
  std::vector<std::pair<std::string, Value>> choices{};  // enums: the YAML name of each value
  Value (*parse)(const ConfigNode&) = nullptr;           // values written as maps (distributions)
};

/// The parameters of one map read into an `Owner` (a model, a topology, an element of a list).
template <class Owner>
class ParamTable {
 public:
  /// A row whose value lives at `*field(owner)`: `[](CopyModel& m) { return &m.ce.efficiency; }`.
  template <class F, class T = std::remove_pointer_t<std::invoke_result_t<F&, Owner&>>>
  ParamTable& add(std::type_identity_t<Param<T>> param, F field) {
    std::function<T*(Owner&)> at = field;
    return add_row<T>(
        std::move(param), [at](Owner& o, T v) { *at(o) = std::move(v); },
        [at](const Owner& o) { return *at(const_cast<Owner&>(o)); });
  }
  /// A row whose value is set and got through functions (a value inside an optional struct, for instance).
  template <class T>
  ParamTable& add(Param<T> param, std::function<void(Owner&, T)> set, std::function<T(const Owner&)> get) {
    return add_row<T>(std::move(param), std::move(set), std::move(get));
  }

  /// Every row of `sub`, for the `Sub` at `*field(owner)`: parameters that several tables share, declared once.
  template <class F, class Sub = std::remove_pointer_t<std::invoke_result_t<F&, Owner&>>>
  ParamTable& include(F field, const ParamTable<Sub>& sub) {
    std::function<Sub*(Owner&)> at = field;
    for (const auto& from : sub.rows_) {
      Row row{from.doc, {}, {}, from.recorded_default};
      row.read = [at, read = from.read](const ConfigNode& node, Owner& o) { read(node, *at(o)); };
      row.at_default = [at, check = from.at_default](const Owner& o) { return check(*at(const_cast<Owner&>(o))); };
      rows_.push_back(std::move(row));
    }
    return *this;
  }

  /// Reads every row from `node` into `owner`, in declaration order, each checked as it is read.
  void read(const ConfigNode& node, Owner& owner) const {
    for (const auto& row : rows_) row.read(node, owner);
  }
  /// The rows as `snsim info` and the reference list them.
  std::vector<ParamDoc> docs() const {
    std::vector<ParamDoc> out;
    for (const auto& row : rows_) out.push_back(row.doc);
    return out;
  }
  /// Keys whose value in `owner` is not the declared default (a run's models against their docs, in tests).
  std::vector<std::string> not_at_default(const Owner& owner) const {
    std::vector<std::string> out;
    for (const auto& row : rows_)
      if (!row.at_default(owner)) out.push_back(row.doc.name);
    return out;
  }
  /// Each defaulted key with the text the effective configuration records for its default (sim/config.hpp).
  std::vector<std::pair<std::string, std::string>> recorded_defaults() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& row : rows_)
      if (row.recorded_default) out.emplace_back(row.doc.name, *row.recorded_default);
    return out;
  }
  std::size_t size() const { return rows_.size(); }

 private:
  template <class>
  friend class ParamTable;

  struct Row {
    ParamDoc doc;
    std::function<void(const ConfigNode&, Owner&)> read;
    std::function<bool(const Owner&)> at_default;
    std::optional<std::string> recorded_default;  // what ConfigNode::optional records; nullopt: nothing
  };

  template <class T>
  ParamTable& add_row(Param<T> p, std::function<void(Owner&, T)> set, std::function<T(const Owner&)> get) {
    using Value = typename Param<T>::Value;
    constexpr bool optional = detail::Unwrap<T>::optional;
    Row row;
    row.doc.name = p.key;
    row.doc.unit = p.unit;
    if (row.doc.unit.empty())
      for (const auto& choice : p.choices) row.doc.unit += (row.doc.unit.empty() ? "" : "|") + choice.first;
    if (row.doc.unit.empty()) row.doc.unit = detail::unit_of<Value>();
    if (!p.required) {
      if constexpr (optional)
        row.doc.default_value = p.unset;
      else
        row.doc.default_value = p.unset.empty() ? text_of(p, p.fallback) : p.unset;
    }
    row.doc.summary = p.doc;
    row.doc.source = p.source;
    // A check against a few values names them as the unit, as enums do ("64KiB|2MiB"); other ranges go beside it.
    if constexpr (ConfigValue<Value>) {
      if (p.check.is_list() && p.unit.empty())
        row.doc.unit = p.check.describe("|");
      else
        row.doc.range = p.check.describe();
    }
    if constexpr (!optional && (ConfigValue<T> || std::is_enum_v<T>))
      if (!p.required) {
        if constexpr (std::is_enum_v<T>)
          row.recorded_default = text_of(p, p.fallback);
        else
          row.recorded_default = config_text(p.fallback);
      }
    row.at_default = [get, p](const Owner& o) {
      if constexpr (optional)
        return !get(o).has_value();
      else if constexpr (std::equality_comparable<T>)
        return p.required || get(o) == p.fallback;
      else
        return true;  // no equality (distributions): what parse() reads is tested on its own
    };
    row.read = [set, p](const ConfigNode& node, Owner& o) {
      ConfigNode at = node;
      std::string_view key = p.key;
      for (auto dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.')) {
        at = at.section(key.substr(0, dot));
        key.remove_prefix(dot + 1);
      }
      if constexpr (ConfigValue<Value>) {
        if constexpr (optional) {
          const auto v = at.maybe<Value>(key);
          if (v) p.check(at, key, *v);
          set(o, v);
        } else {
          const T v = p.required ? at.required<T>(key) : at.optional<T>(key, p.fallback);
          p.check(at, key, v);
          set(o, v);
        }
      } else if constexpr (std::is_enum_v<Value>) {
        const auto name =
            p.required ? at.required<std::string>(key) : at.optional<std::string>(key, text_of(p, p.fallback));
        for (const auto& [n, value] : p.choices)
          if (n == name) return set(o, value);
        std::string expected;
        for (std::size_t i = 0; i < p.choices.size(); ++i)
          expected += (i == 0 ? "" : i + 1 == p.choices.size() ? " or " : ", ") + p.choices[i].first;
        at.fail_key(key, fmt::format("expected {}, found '{}'", expected, name));
      } else {
        // Values written as maps: parsed by the declaration's own function, nothing recorded when absent.
        if (auto child = at.maybe_child(key)) set(o, p.parse(*child));
      }
    };
    rows_.push_back(std::move(row));
    return *this;
  }

  template <class T>
  static std::string text_of(const Param<T>& p, const T& value) {
    if constexpr (std::is_enum_v<T>) {
      for (const auto& [name, v] : p.choices)
        if (v == value) return name;
      return "";
    } else {
      return param_text(value);
    }
  }

  std::vector<Row> rows_;
};

}  // namespace snsim
