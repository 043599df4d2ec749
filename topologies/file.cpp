#include "topologies/file.hpp"

#include <array>
#include <filesystem>
#include <map>

#include <fmt/ranges.h>

#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

// Default hop latencies per link kind when a link gives none: NVLink and PCIe as the built-in topologies
// (topologies/gpus.hpp), InfiniBand as the superpod's (IB_HOP).
Seconds default_latency(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::nvlink:
      return NVLINK_HOP;
    case ChannelKind::pcie:
      return PCIE_HOP;
    case ChannelKind::ib:
      return IB_HOP;
  }
  return Seconds{0};
}

const std::map<std::string, DeviceKind, std::less<>>& device_kinds() {
  static const std::map<std::string, DeviceKind, std::less<>> kinds{
      {"gpu", DeviceKind::gpu},           {"host", DeviceKind::host},
      {"nvswitch", DeviceKind::nvswitch}, {"pcie_switch", DeviceKind::pcie_switch},
      {"nic", DeviceKind::nic},           {"ib_switch", DeviceKind::ib_switch}};
  return kinds;
}

const std::map<std::string, ChannelKind, std::less<>>& channel_kinds() {
  static const std::map<std::string, ChannelKind, std::less<>> kinds{
      {"nvlink", ChannelKind::nvlink}, {"pcie", ChannelKind::pcie}, {"ib", ChannelKind::ib}};
  return kinds;
}

template <class Map>
auto lookup_kind(const ConfigNode& item, const Map& kinds) {
  const auto name = item.required<std::string>("kind");
  const auto it = kinds.find(name);
  if (it == kinds.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : kinds) known.push_back(k);
    item.fail_key("kind", fmt::format("unknown kind '{}'; known: {}", name, fmt::join(known, ", ")));
  }
  return it->second;
}

struct Link {
  std::size_t a = 0, b = 0;  // indices into the device list
  Channel channel;
};

class FileTopology final : public Topology {
 public:
  std::vector<Device> devices;
  std::vector<Link> links;

  Fabric build() const override {
    Fabric fabric;
    std::vector<DeviceId> ids;
    for (const auto& d : devices) ids.push_back(fabric.add_device(d));
    for (const auto& l : links) fabric.add_duplex(ids[l.a], ids[l.b], l.channel);
    return fabric;
  }
};

/// Reads `devices:` and `links:` of `graph` (the topology node itself, or the root of the file it names).
void read_graph(const ConfigNode& graph, FileTopology& t) {
  const auto devices = graph.maybe_child("devices");
  const auto links = graph.maybe_child("links");
  if (!devices || !links) graph.fail("a custom fabric needs `devices:` and `links:` (or `path:` to a file with them)");
  std::map<std::string, std::size_t, std::less<>> by_name;
  std::map<DeviceKind, int> count;  // per kind: GPUs are ranked, switches numbered, in the order they are listed
  for (const auto& item : devices->elements()) {
    Device d;
    d.name = item.required<std::string>("name");
    if (by_name.contains(d.name)) item.fail_key("name", fmt::format("device '{}' is listed twice", d.name));
    d.kind = lookup_kind(item, device_kinds());
    d.index = count[d.kind]++;
    if (d.kind == DeviceKind::gpu) d.gpu = gpu_preset(item, item.optional<std::string>("gpu", "h200"));
    if (d.kind != DeviceKind::gpu && d.kind != DeviceKind::host) {
      d.ports = item.optional<int>("ports", 0);
      if (d.ports < 0) item.fail_key("ports", fmt::format("must be >= 0, got {}", d.ports));
    }
    if (d.kind == DeviceKind::nvswitch) {
      d.in_switch_reduction = item.optional<double>("reduction", 0.0);
      check_between(item, "reduction", d.in_switch_reduction, 0.0, 1.0);
    }
    by_name.emplace(d.name, t.devices.size());
    t.devices.push_back(std::move(d));
  }
  if (count[DeviceKind::gpu] < 1) devices->fail("no device of kind gpu");
  for (const auto& item : links->elements()) {
    const ConfigNode between = item.child("between");
    const auto ends = between.elements();
    if (ends.size() != 2) between.fail(fmt::format("expected two device names, got {}", ends.size()));
    std::array<std::size_t, 2> at{};
    for (std::size_t i = 0; i < 2; ++i) {
      const auto name = ends[i].as<std::string>();
      const auto it = by_name.find(name);
      if (it == by_name.end()) ends[i].fail(fmt::format("no device named '{}'", name));
      at[i] = it->second;
    }
    if (at[0] == at[1]) between.fail("a link joins two different devices");
    Link l{at[0], at[1], {}};
    l.channel.kind = lookup_kind(item, channel_kinds());
    l.channel.lanes = item.optional<int>("lanes", 1);
    check_between(item, "lanes", l.channel.lanes, 1, 1 << 16);
    l.channel.lane_bandwidth = item.required<BytesPerSecond>("lane_bandwidth");
    check_positive(item, "lane_bandwidth", l.channel.lane_bandwidth);
    l.channel.latency = item.optional<Seconds>("latency", default_latency(l.channel.kind));
    if (l.channel.latency < Seconds{0}) item.fail_key("latency", "must be >= 0");
    t.links.push_back(l);
  }
}

std::unique_ptr<Topology> make_file(const ConfigNode& node) {
  auto t = std::make_unique<FileTopology>();
  const auto path = node.maybe<std::string>("path");
  const bool has_devices = node.has("devices"), has_links = node.has("links");  // both asked: documented keys
  const bool inline_graph = has_devices || has_links;
  if (path && inline_graph) node.fail_key("path", "give either `path:` or inline `devices:` and `links:`, not both");
  if (!path) {
    read_graph(node, *t);
    return t;
  }
  // Relative to the scenario file, like models.params; errors inside name that file.
  std::filesystem::path file(*path);
  const SourceLocation where = node.child("path").location();
  if (file.is_relative() && where.line > 0) file = std::filesystem::path(where.file).parent_path() / file;
  if (!std::filesystem::is_regular_file(file)) node.fail_key("path", fmt::format("no file '{}'", file.string()));
  const auto document = ConfigDocument::load_file(file.string());
  read_graph(document->root(), *t);
  document->reject_unknown_keys();
  return t;
}
}  // namespace

Registry<Topology>::Entry file_entry() {
  return {"file",
          "a custom graph: devices (gpu, host, nvswitch, pcie_switch, nic, ib_switch) and duplex links (nvlink, pcie, "
          "ib), inline or in a YAML file",
          {
              {"path", "file", "",
               "YAML file with `devices:` and `links:`, relative to the scenario (or give them inline)"},
              {"devices", "list", "",
               "{name, kind, gpu (gpu: h200), ports (switches, nics: radix, 0 = unchecked), reduction (nvswitch: NVLS "
               "rate share)}"},
              {"links", "list", "",
               "{between: [a, b], kind, lanes (1), lane_bandwidth (per direction), latency (nvlink 177ns, pcie 500ns, "
               "ib 300ns)}"},
          },
          make_file};
}

}  // namespace snsim::topologies
