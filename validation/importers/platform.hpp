// What an imported log says about the machine it ran on: the GPU model (mapped to an snsim preset), the nodes and
// GPUs per node, the network and the NCCL settings the log prints. Importers collect it while reading and write it
// into the trace header as `platform` (validation/traces/README.md, "The platform of an imported trace"), so that a
// later step can build the same machine; nothing here is guessed beyond what the file prints, and every field says
// where it was read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "validation/trace.hpp"

namespace snsim::validation::detail {

/// The snsim GPU preset for a device name as CUDA reports it ("NVIDIA H100 80GB HBM3" -> "h100"), or nullopt with
/// `note` saying why not (a part snsim has no preset for, such as "NVIDIA A100-SXM4-80GB" or the PCIe H100) and which
/// presets exist.
struct GpuModel {
  std::optional<std::string> preset;
  std::string note;  ///< empty when the name maps plainly to a preset
};
GpuModel gpu_model(std::string_view device_name);

/// Collects the platform facts of one log; `write` puts them into the trace.
class PlatformFacts {
 public:
  /// One GPU rank of the run: its host (empty if not printed), its device name and where the line was.
  void add_rank(int rank, std::string host, std::string device_name, int line);
  /// A count the log states directly (NCCL's "nRanks 16 nNodes 2 localRanks 8", nvbandwidth's process list), used
  /// when no rank list is printed.
  void set_ranks(int ranks, std::string from);
  void set_nodes(int nodes, std::string from);
  void set_gpus_per_node(int gpus_per_node, std::string from);
  void set_network(std::string network, std::string from);
  /// The rank list printed is not ranks 0..n-1 (a log pasted in part): the run had at least `ranks`; the hosts of
  /// the listed ranks say nothing of the others.
  void set_partial_rank_list(int ranks, std::string from);
  /// A collective setting (algorithm, protocol, nvls, launch, registration, ...), with where it was read.
  void set_collective(const std::string& key, Json value, std::string from);
  /// A free remark (a device name seen twice with different models, ...).
  void add_note(std::string note);

  /// Takes from `other` what this one lacks (stated counts, network, collective settings, notes).
  void merge(const PlatformFacts& other);

  int ranks() const;
  bool has_rank_list() const { return !ranks_.empty(); }

  /// Writes `platform` into the header's extra fields (and `host` if empty); `source` names the file in "from".
  void write(Trace& trace) const;

 private:
  struct Rank {
    int rank = 0;
    std::string host;
    std::string device;
    int line = 0;
  };
  std::vector<Rank> ranks_;
  std::optional<std::pair<int, std::string>> stated_ranks_, stated_nodes_, stated_gpus_per_node_, partial_;
  std::optional<std::pair<std::string, std::string>> network_;
  Json collective_ = Json::object();
  Json collective_from_ = Json::object();
  std::vector<std::string> notes_;
};

}  // namespace snsim::validation::detail
