// Named factories for one kind of plugin (topology, model, workload), with the documentation of their parameters.
//
// ParamDoc (sim/parameters.hpp) is the single source for `snsim info` and for the keys a plugin accepts: ConfigNode
// rejects any key that no code asked for, and the registry's tests check that every factory reads only documented
// keys. Plugins that declare their parameters in a ParamTable get their docs from it (`params = table.docs()`).
// Registration is explicit (topologies/register.cpp and friends list every built-in on one screen).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/config.hpp"
#include "sim/parameters.hpp"

namespace snsim {

/// `Context` is what factories need besides their parameters (workloads get the Fabric, for instance).
template <class Interface, class... Context>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Interface>(const ConfigNode&, const Context&...)>;
  struct Entry {
    std::string name;
    std::string summary;
    std::vector<ParamDoc> params;
    Factory make;
  };

  /// `kind` names the plugin kind in messages: "unknown topology 'x'".
  explicit Registry(std::string kind) : kind_{std::move(kind)} {}

  /// Adds a plugin; a duplicate name is a programming error.
  void add(Entry entry) {
    if (find(entry.name)) throw std::logic_error(fmt::format("{} '{}' registered twice", kind_, entry.name));
    entries_.push_back(std::move(entry));
    std::ranges::sort(entries_, {}, &Entry::name);
  }

  /// Reads `type` from the node and builds that plugin; an unknown name lists the known ones.
  std::unique_ptr<Interface> create(const ConfigNode& node, const Context&... context) const {
    const auto type = node.required<std::string>("type");
    return create(type, node, context...);
  }

  /// Builds the named plugin from its parameters (the node may hold a `type` key too).
  std::unique_ptr<Interface> create(const std::string& type, const ConfigNode& node, const Context&... context) const {
    const Entry* entry = find(type);
    if (!entry) {
      std::vector<std::string> names;
      for (const auto& e : entries_) names.push_back(e.name);
      node.fail_key("type", fmt::format("unknown {} '{}'; known: {}", kind_, type, fmt::join(names, ", ")));
    }
    return entry->make(node, context...);
  }

  const Entry* find(std::string_view name) const {
    auto it = std::ranges::find(entries_, name, &Entry::name);
    return it == entries_.end() ? nullptr : &*it;
  }

  std::span<const Entry> entries() const { return entries_; }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace snsim
