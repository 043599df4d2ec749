#include "validation/importers/platform.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topologies/gpus.hpp"

namespace snsim::validation::detail {

namespace {

/// "NVIDIA A100-SXM4-80GB" -> {"NVIDIA", "A100", "SXM4", "80GB"}: model names are matched word by word, so that
/// "H20" does not match "H200" nor "B200" match "GB200".
std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string preset_list() {
  return fmt::format("{}", fmt::join(topologies::gpu_preset_names(), ", "));
}

}  // namespace

GpuModel gpu_model(std::string_view device_name) {
  const auto words = name_words(device_name);
  auto has = [&](std::string_view w) { return std::ranges::find(words, w) != words.end(); };
  auto none = [&](std::string why) {
    return GpuModel{std::nullopt, fmt::format("{}; snsim's GPU presets: {}", why, preset_list())};
  };
  if (device_name.empty()) return none("the file names no GPU");
  // The presets model the SXM parts of HGX boards and the GB200 superchip (topologies/gpus.cpp): the PCIe and NVL
  // cards of the same chip have other links and clocks, so they get no preset rather than a wrong one.
  if (has("GB200")) return {"gb200", ""};
  if (has("B300") || has("GB300")) return none(fmt::format("no preset for '{}' (Blackwell Ultra)", device_name));
  if (has("B200")) return {"b200", ""};
  if (has("GH200")) return none(fmt::format("no preset for '{}' (Grace Hopper superchip)", device_name));
  if (has("H200")) {
    if (has("NVL") || has("PCIE"))
      return none(fmt::format("no preset for '{}' (the h200 preset is the HGX SXM part)", device_name));
    return {"h200", ""};
  }
  if (has("H100")) {
    if (has("NVL") || has("PCIE"))
      return none(fmt::format("no preset for '{}' (the h100 preset is the HGX SXM part)", device_name));
    return {"h100", ""};
  }
  return none(fmt::format("no preset for '{}'", device_name));
}

void PlatformFacts::add_rank(int rank, std::string host, std::string device_name, int line) {
  ranks_.push_back({rank, std::move(host), std::move(device_name), line});
}

void PlatformFacts::set_ranks(int ranks, std::string from) {
  stated_ranks_.emplace(ranks, std::move(from));
}
void PlatformFacts::set_nodes(int nodes, std::string from) {
  stated_nodes_.emplace(nodes, std::move(from));
}
void PlatformFacts::set_gpus_per_node(int gpus_per_node, std::string from) {
  stated_gpus_per_node_.emplace(gpus_per_node, std::move(from));
}
void PlatformFacts::set_partial_rank_list(int ranks, std::string from) {
  partial_.emplace(ranks, std::move(from));
}
void PlatformFacts::set_network(std::string network, std::string from) {
  network_.emplace(std::move(network), std::move(from));
}
void PlatformFacts::set_collective(const std::string& key, Json value, std::string from) {
  collective_[key] = std::move(value);
  collective_from_[key] = std::move(from);
}
void PlatformFacts::add_note(std::string note) {
  notes_.push_back(std::move(note));
}

void PlatformFacts::merge(const PlatformFacts& other) {
  if (ranks_.empty()) ranks_ = other.ranks_;
  if (!stated_ranks_) stated_ranks_ = other.stated_ranks_;
  if (!stated_nodes_) stated_nodes_ = other.stated_nodes_;
  if (!stated_gpus_per_node_) stated_gpus_per_node_ = other.stated_gpus_per_node_;
  if (!partial_) partial_ = other.partial_;
  if (!network_) network_ = other.network_;
  for (const auto& [key, value] : other.collective_.items())
    if (!collective_.contains(key)) {
      collective_[key] = value;
      collective_from_[key] = other.collective_from_[key];
    }
  for (const auto& note : other.notes_) notes_.push_back(note);
}

int PlatformFacts::ranks() const {
  if (partial_) return partial_->first;
  if (!ranks_.empty()) return static_cast<int>(ranks_.size());
  return stated_ranks_ ? stated_ranks_->first : 0;
}

void PlatformFacts::write(Trace& trace) const {
  Json p = Json::object();
  Json from = Json::object();
  auto lines = [&](int first, int last) {
    return first == last ? fmt::format("line {}", first) : fmt::format("lines {}-{}", first, last);
  };

  // The GPU model: the device names in rank order, one preset if they agree.
  std::vector<std::string> names;
  int name_line = 0;
  for (const Rank& r : ranks_) {
    if (r.device.empty()) continue;
    if (std::ranges::find(names, r.device) == names.end()) names.push_back(r.device);
    if (name_line == 0) name_line = r.line;
  }
  std::vector<std::string> notes = notes_;
  if (names.empty()) {
    p["gpu"] = nullptr;
    p["gpu_preset"] = nullptr;
    p["gpu_preset_note"] = gpu_model("").note;
  } else {
    p["gpu"] = names.front();
    const GpuModel model = gpu_model(names.front());
    p["gpu_preset"] = model.preset ? Json(*model.preset) : Json(nullptr);
    if (!model.note.empty()) p["gpu_preset_note"] = model.note;
    from["gpu"] = name_line > 0 ? fmt::format("line {}", name_line) : std::string("device list");
    if (names.size() > 1) {
      p["gpus_mixed"] = names;
      notes.push_back(
          fmt::format("the ranks run on {} different GPU models: {}", names.size(), fmt::join(names, ", ")));
    }
  }

  // Ranks, nodes and GPUs per node: from the rank list where there is one (hosts in the order they first appear).
  if (partial_) {
    p["ranks"] = partial_->first;
    from["ranks"] = partial_->second;
    notes.push_back(fmt::format("the log lists {} of at least {} ranks: nodes and GPUs per node are not known from it",
                                ranks_.size(), partial_->first));
  } else if (!ranks_.empty()) {
    const auto [lo, hi] = std::ranges::minmax(ranks_, {}, &Rank::line);
    p["ranks"] = ranks_.size();
    from["ranks"] = lines(lo.line, hi.line);
    std::vector<std::string> hosts;
    std::map<std::string, int> per_host;
    bool every_host_known = true;
    for (const Rank& r : ranks_) {
      if (r.host.empty()) every_host_known = false;
      if (per_host[r.host]++ == 0) hosts.push_back(r.host);
    }
    if (every_host_known) {
      p["nodes"] = hosts.size();
      p["hosts"] = hosts;
      from["nodes"] = from["ranks"];
      std::vector<int> counts;
      for (const auto& h : hosts) counts.push_back(per_host[h]);
      if (std::ranges::all_of(counts, [&](int c) { return c == counts.front(); })) {
        p["gpus_per_node"] = counts.front();
      } else {
        p["gpus_per_node"] = nullptr;
        p["gpus_per_host"] = counts;
        notes.push_back(fmt::format("the nodes run different numbers of ranks: {}", fmt::join(counts, ", ")));
      }
      from["gpus_per_node"] = from["ranks"];
    }
  }
  auto stated = [&](const char* key, const std::optional<std::pair<int, std::string>>& value) {
    if (!value || p.contains(key)) return;
    p[key] = value->first;
    from[key] = value->second;
  };
  stated("ranks", stated_ranks_);
  stated("nodes", stated_nodes_);
  stated("gpus_per_node", stated_gpus_per_node_);
  if (!p.contains("gpus_per_node") && p.contains("nodes") && p.contains("ranks") && p["nodes"].get<int>() > 0 &&
      p["ranks"].get<int>() % p["nodes"].get<int>() == 0) {
    p["gpus_per_node"] = p["ranks"].get<int>() / p["nodes"].get<int>();
    from["gpus_per_node"] = "ranks / nodes";
  }
  for (const char* key : {"ranks", "nodes", "gpus_per_node"})
    if (!p.contains(key)) p[key] = nullptr;
  if (network_) {
    p["network"] = network_->first;
    from["network"] = network_->second;
  }
  if (!collective_.empty()) {
    p["collective"] = collective_;
    for (const auto& [key, value] : collective_from_.items()) from["collective." + key] = value;
  }
  p["from"] = from;
  if (!notes.empty()) p["notes"] = notes;
  trace.header.extra["platform"] = std::move(p);
  if (trace.header.host.empty() && !ranks_.empty()) trace.header.host = ranks_.front().host;
}

}  // namespace snsim::validation::detail
