#include "topologies/nvidia_smi.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/files.hpp"
#include "topologies/gpus.hpp"

namespace snsim::topologies {
namespace {

/// One matrix cell: NV# lanes, or a PCIe path class.
struct Cell {
  int nvlinks = 0;             // > 0 for NV#
  bool shares_switch = false;  // PIX or PXB: behind one PCIe switch (tree)
};

using Fail = std::function<void(int line, const std::string& message)>;

struct Matrix {
  std::vector<std::vector<Cell>> cells;  // [row GPU][column GPU]
};

Matrix parse_matrix(const std::string& text, const Fail& fail) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::vector<std::string> columns;  // GPU<i> and NIC<i> labels, in order
  int header_line = 0;
  Matrix m;
  static const std::regex device_label("(GPU|NIC)[0-9]+");
  static const std::regex nv("NV([0-9]+)");
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    if (tokens.empty()) {
      if (header_line) break;  // the matrix ends at the first blank line (the legend follows)
      continue;
    }
    if (!header_line) {
      if (!std::regex_match(tokens[0], device_label)) continue;  // text before the matrix
      header_line = number;
      for (const auto& t : tokens)
        if (std::regex_match(t, device_label)) columns.push_back(t);
      continue;
    }
    const std::string& label = tokens[0];
    if (label.rfind("NIC", 0) == 0) continue;  // NIC rows: not modelled
    if (label != fmt::format("GPU{}", m.cells.size()))
      fail(number, fmt::format("expected row GPU{}, found '{}'", m.cells.size(), label));
    if (tokens.size() < columns.size() + 1)
      fail(number, fmt::format("expected {} cells after {}, found {}", columns.size(), label, tokens.size() - 1));
    std::vector<Cell> row;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (columns[c].rfind("NIC", 0) == 0) continue;
      const std::string& t = tokens[c + 1];
      Cell cell;
      std::smatch match;
      if (std::regex_match(t, match, nv)) {
        const std::string digits = match[1];
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), cell.nvlinks);
        if (error != std::errc{} || end != digits.data() + digits.size())
          fail(number, fmt::format("'{}': not a number of NVLinks", t));
        if (cell.nvlinks < 1) fail(number, fmt::format("'{}': an NVLink bond has at least one link", t));
      } else if (t == "PIX" || t == "PXB") {
        cell.shares_switch = true;
      } else if (t != "X" && t != "PHB" && t != "NODE" && t != "SYS" && t != "SOC") {
        fail(number,
             fmt::format("unknown cell '{}' in column {}; expected X, NV#, PIX, PXB, PHB, NODE or SYS", t, columns[c]));
      }
      row.push_back(cell);
    }
    m.cells.push_back(std::move(row));
  }
  if (!header_line) fail(0, "no GPU matrix found (a header line starting with GPU0)");
  const std::size_t n = m.cells.size();
  if (n < 2) fail(header_line, fmt::format("the matrix has {} GPU row(s); a fabric needs 2", n));
  if (m.cells[0].size() != n) fail(header_line, fmt::format("{} GPU columns but {} GPU rows", m.cells[0].size(), n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (m.cells[i][j].nvlinks != m.cells[j][i].nvlinks)
        fail(header_line + 1 + static_cast<int>(i), fmt::format("GPU{} -> GPU{} shows NV{} but GPU{} -> GPU{} NV{}", i,
                                                                j, m.cells[i][j].nvlinks, j, i, m.cells[j][i].nvlinks));
  return m;
}

class NvidiaSmi final : public Topology {
 public:
  std::optional<std::string> text, path, trace;  // where the matrix comes from: exactly one of them
  Matrix matrix;
  std::string gpu_model;
  GpuSpec gpu;
  int links_per_gpu = NVLINK4_LINKS_PER_GPU;
  BytesPerSecond nvlink_bandwidth;
  Seconds nvlink_latency;
  double nvls_efficiency = 0;
  BytesPerSecond pcie_bandwidth;
  Seconds pcie_latency;

  /// The lanes every NVLink-connected GPU has to each peer, when that makes them all switch-connected; else 0.
  int switched_lanes() const {
    int lanes = 0;
    for (const auto& row : matrix.cells)
      for (const auto& cell : row) {
        if (cell.nvlinks == 0) continue;
        if (lanes != 0 && cell.nvlinks != lanes) return 0;
        lanes = cell.nvlinks;
      }
    return lanes == links_per_gpu ? lanes : 0;
  }

  Fabric build() const override {
    Fabric fabric;
    const std::size_t n = matrix.cells.size();
    const DeviceId host = fabric.add_device({"host", DeviceKind::host, 0, std::nullopt});
    std::vector<DeviceId> gpus;
    for (std::size_t g = 0; g < n; ++g)
      gpus.push_back(fabric.add_device({fmt::format("gpu{}", g), DeviceKind::gpu, static_cast<int>(g), gpu}));
    bool any_nvlink = false;
    for (const auto& row : matrix.cells)
      for (const auto& cell : row) any_nvlink = any_nvlink || cell.nvlinks > 0;
    const Channel pcie{ChannelKind::pcie, 1, pcie_bandwidth, pcie_latency};
    if (const int lanes = switched_lanes()) {
      const DeviceId sw = fabric.add_device({"nvswitch0", DeviceKind::nvswitch, 0, {}, nvls_efficiency});
      for (std::size_t g = 0; g < n; ++g) {
        bool linked = false;
        for (const auto& cell : matrix.cells[g]) linked = linked || cell.nvlinks > 0;
        if (linked) fabric.add_duplex(gpus[g], sw, {ChannelKind::nvlink, lanes, nvlink_bandwidth, nvlink_latency});
      }
    } else {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j)
          if (const int bond = matrix.cells[i][j].nvlinks)
            fabric.add_duplex(gpus[i], gpus[j], {ChannelKind::nvlink, bond, nvlink_bandwidth, nvlink_latency});
    }
    if (any_nvlink) {  // peers talk over NVLink; PCIe reaches the host only
      for (auto g : gpus) fabric.add_duplex(g, host, pcie);
      return fabric;
    }
    // PCIe only: a switch per group of GPUs joined by PIX/PXB, every switch under one root (the CPU).
    const DeviceId root = fabric.add_device({"pcie_root", DeviceKind::pcie_switch, 0, std::nullopt});
    fabric.add_duplex(root, host, {ChannelKind::pcie, static_cast<int>(n), pcie_bandwidth, pcie_latency});
    std::vector<int> group(n, -1);
    int groups = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (group[i] >= 0) continue;
      group[i] = groups++;
      for (std::size_t j = i + 1; j < n; ++j)
        if (matrix.cells[i][j].shares_switch) group[j] = group[i];
    }
    std::vector<DeviceId> switches;
    for (int s = 0; s < groups; ++s) {
      switches.push_back(
          fabric.add_device({fmt::format("pcie_switch{}", s + 1), DeviceKind::pcie_switch, s + 1, std::nullopt}));
      fabric.add_duplex(switches.back(), root, pcie);
    }
    for (std::size_t g = 0; g < n; ++g) fabric.add_duplex(gpus[g], switches[static_cast<std::size_t>(group[g])], pcie);
    return fabric;
  }
};

std::string read_text_file(const ConfigNode& node, const std::string& key, const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) node.fail_key(key, fmt::format("cannot read '{}'", path.string()));
  return read_file(path);  // refuses a FIFO, a device or a directory by its kind
}

const ParamTable<NvidiaSmi>& nvidia_smi_params() {
  using T = NvidiaSmi;
  static const ParamTable<T> table = [] {
    ParamTable<T> params;
    params.add({.key = "text", .unit = "text", .doc = "the `nvidia-smi topo -m` output (or `path:` / `trace:`)"},
               [](T& t) { return &t.text; });
    params.add({.key = "path", .unit = "file", .doc = "a file holding that output, relative to the scenario"},
               [](T& t) { return &t.path; });
    params.add({.key = "trace", .unit = "file", .doc = "an snsim trace (*.jsonl) whose header holds it (`topo`)"},
               [](T& t) { return &t.trace; });
    params.add({.key = "gpu", .unit = "h100|h200|b200|gb200", .fallback = std::string("h200"), .doc = "GPU model"},
               [](T& t) { return &t.gpu_model; });
    params.add({.key = "links_per_gpu",
                .unit = "links",
                .fallback = NVLINK4_LINKS_PER_GPU,
                .check = between(1, 64),
                .doc = "NVLinks of one GPU; NV<this> to several peers means an NVSwitch"},
               [](T& t) { return &t.links_per_gpu; });
    params.add({.key = "nvlink_bandwidth",
                .unit = "bytes/s per link per direction",
                .fallback = NVLINK4_LANE,
                .check = positive,
                .doc = "NVLink line rate of one link"},
               [](T& t) { return &t.nvlink_bandwidth; });
    params.add({.key = "nvlink_latency",
                .unit = "time per hop",
                .fallback = NVLINK_HOP,
                .doc = "wire and switch traversal of one hop"},
               [](T& t) { return &t.nvlink_latency; });
    params.add({.key = "nvls_efficiency",
                .unit = "fraction",
                .fallback = NVSWITCH3_REDUCTION,
                .check = between(0.0, 1.0),
                .doc = "in-switch reduction rate share of the NVSwitch; 0 = no NVLS"},
               [](T& t) { return &t.nvls_efficiency; });
    params.add({.key = "pcie_bandwidth",
                .unit = "bytes/s per direction",
                .fallback = PCIE5_X16,
                .check = positive,
                .doc = "PCIe Gen5 x16 per link"},
               [](T& t) { return &t.pcie_bandwidth; });
    params.add(
        {.key = "pcie_latency", .unit = "time per hop", .fallback = PCIE_HOP, .doc = "PCIe traversal of one hop"},
        [](T& t) { return &t.pcie_latency; });
    return params;
  }();
  return table;
}

std::unique_ptr<Topology> make_nvidia_smi(const ConfigNode& node) {
  auto t = std::make_unique<NvidiaSmi>();
  nvidia_smi_params().read(node, *t);
  const auto& text = t->text;
  const auto& path = t->path;
  const auto& trace = t->trace;
  if (static_cast<int>(text.has_value()) + path.has_value() + trace.has_value() != 1)
    node.fail("give exactly one of `text:` (the `nvidia-smi topo -m` output), `path:` or `trace:`");
  auto resolve = [&](const std::string& key, const std::string& value) {
    std::filesystem::path p(value);
    const SourceLocation where = node.child(key).location();
    if (p.is_relative() && where.line > 0) p = std::filesystem::path(where.file).parent_path() / p;
    return p;
  };
  if (text) {
    const ConfigNode at = node.child("text");
    t->matrix = parse_matrix(*text, [&](int line, const std::string& message) {
      at.fail(line > 0 ? fmt::format("line {}: {}", line, message) : message);
    });
  } else if (path) {
    const auto file = resolve("path", *path);
    t->matrix = parse_matrix(read_text_file(node, "path", file), [&](int line, const std::string& message) {
      throw_input_error({file.string(), line, line > 0 ? 1 : 0}, "", message);
    });
  } else {
    // The trace header (line 1) carries the capture machine's `nvidia-smi topo -m` (docs/design.md#traces).
    const auto file = resolve("trace", *trace);
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) node.fail_key("trace", fmt::format("cannot read '{}'", file.string()));
    const std::string content = read_file(file);  // refuses a FIFO, a device or a directory by its kind
    const std::string header = content.substr(0, content.find('\n'));
    if (header.empty()) node.fail_key("trace", fmt::format("cannot read '{}'", file.string()));
    const auto json = nlohmann::json::parse(header, nullptr, false);
    if (json.is_discarded() || !json.contains("topo") || !json["topo"].is_string())
      throw_input_error({file.string(), 1, 1}, "topo", "the trace header has no `topo` string");
    t->matrix = parse_matrix(json["topo"].get<std::string>(), [&](int line, const std::string& message) {
      throw_input_error({file.string(), 1, 1}, "topo", line > 0 ? fmt::format("line {}: {}", line, message) : message);
    });
  }
  t->gpu = gpu_preset(node, t->gpu_model);
  return t;
}
}  // namespace

Registry<Topology>::Entry nvidia_smi_entry() {
  return {"nvidia_smi",
          "a fabric from `nvidia-smi topo -m` output: NV# = bonded NVLinks (through an NVSwitch when every GPU gives "
          "all its links to each peer), PIX/PXB/PHB/NODE/SYS = PCIe paths",
          nvidia_smi_params().docs(), make_nvidia_smi};
}

}  // namespace snsim::topologies
