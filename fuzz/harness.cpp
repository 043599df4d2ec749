#include "fuzz/harness.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "models/params.hpp"
#include "scenario/scenario.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/importers/import.hpp"
#include "validation/trace.hpp"
#include "workloads/replay/replay.hpp"

namespace snsim::fuzz {
namespace {

/// Runs `body`; an InputError is the one way an input may be refused (exit code 2), so it ends the input cleanly.
template <class F>
void refusing_bad_input(F&& body) {
  try {
    body();
  } catch (const InputError&) {
  }
}

/// What we wrote we must read back: a trace that was read (or imported) is written and read again, and neither may
/// fail. A failure here is a bug even when it is an InputError, so it leaves as a logic_error.
void round_trip(const validation::Trace& trace) {
  const std::string text = validation::write_trace(trace);
  try {
    validation::parse_trace(text, "round-trip.jsonl");
  } catch (const InputError& e) {
    throw std::logic_error(std::string("a trace written by write_trace does not read back: ") + e.what());
  }
}

template <validation::Trace (*import)(std::string_view, std::string_view)>
void import_and_round_trip(std::string_view input, std::string_view name) {
  refusing_bad_input([&] { round_trip(import(input, name)); });
}

// The scenario a parameter file is applied to: every kind of workload op, so that the overlaid values are read.
constexpr std::string_view params_base = R"(name: params-fuzz
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: p2p_sweep
    pairs: [[0, 1]]
    engine: both
    sizes: {from: 4B, to: 1MiB, factor: 16}
  - type: collective_sweep
    ops: all_reduce
    sizes: {from: 8B, to: 1MiB, factor: 16}
)";

}  // namespace

void scenario(std::string_view input) {
  refusing_bad_input([&] {
    // Relative paths in the scenario (models.params, topology files) resolve against the working directory.
    workloads::Scenario::load(ConfigDocument::load_string(std::string(input), "fuzz.yaml"));
  });
}

void params(std::string_view input) {
  auto document = ConfigDocument::load_string(std::string(params_base), "base.yaml");
  refusing_bad_input([&] {
    auto file = ConfigDocument::load_string(std::string(input), "params.yaml");
    models::overlay_params(*document, *file);
    workloads::Scenario::load(document);
  });
}

void trace(std::string_view input) {
  validation::sniff_format(input);
  refusing_bad_input([&] { round_trip(validation::parse_trace(input, "fuzz.jsonl")); });
}

void nccl_tests(std::string_view input) {
  import_and_round_trip<validation::import_nccl_tests>(input, "fuzz.txt");
}

void nvbandwidth(std::string_view input) {
  import_and_round_trip<validation::import_nvbandwidth_text>(input, "fuzz.txt");
  import_and_round_trip<validation::import_nvbandwidth_json>(input, "fuzz.json");
}

void p2p_bandwidth_latency(std::string_view input) {
  import_and_round_trip<validation::import_p2p_bandwidth_latency>(input, "fuzz.txt");
}

void nvshmem_perftest(std::string_view input) {
  import_and_round_trip<validation::import_nvshmem_perftest>(input, "fuzz.txt");
}

void nvidia_smi(std::string_view input) {
  // The text as one YAML double-quoted scalar: JSON's string syntax is YAML's, and ASCII-only escapes keep any byte
  // (invalid UTF-8 becomes U+FFFD, as a YAML file could not hold it either).
  const std::string quoted =
      nlohmann::json(std::string(input)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  refusing_bad_input([&] {
    auto doc = ConfigDocument::load_string("topology: {type: nvidia_smi, text: " + quoted + "}", "fuzz.yaml");
    Registry<Topology> registry("topology");
    topologies::register_topologies(registry);
    const ConfigNode node = doc->root().child("topology");
    const Fabric fabric = registry.create(node)->build();
    if (auto problem = fabric.check()) node.fail(*problem);
    doc->reject_unknown_keys();
  });
}

void replay(std::string_view input) {
  static const Fabric fabric = [] {
    auto doc = ConfigDocument::load_string("topology: {type: hgx, gpu: h200, gpus: 8}", "fuzz.yaml");
    Registry<Topology> registry("topology");
    topologies::register_topologies(registry);
    return registry.create(doc->root().child("topology"))->build();
  }();
  refusing_bad_input([&] {
    std::vector<workloads::replay::RankTrace> traces;
    traces.push_back(workloads::replay::read_trace_bytes(std::string(input), "fuzz.trace", 0));
    workloads::replay::check_traces(traces);
    // The source GPU is given, so that a trace naming none still reaches the kernels' cost.
    workloads::replay::build_programs(traces, fabric, {.source_gpu = "h200"}, 0, "fuzz.yaml");
    workloads::replay::build_programs(
        traces, fabric, {.cost = workloads::replay::KernelCost::derived, .ranks = 8, .source_gpu = "h200"}, 0,
        "fuzz.yaml");
  });
}

std::span<const Target> targets() {
  static constexpr std::array<Target, 9> all{{
      {"scenario", scenario},
      {"params", params},
      {"trace", trace},
      {"nccl_tests", nccl_tests},
      {"nvbandwidth", nvbandwidth},
      {"p2p_bandwidth_latency", p2p_bandwidth_latency},
      {"nvshmem_perftest", nvshmem_perftest},
      {"nvidia_smi", nvidia_smi},
      {"replay", replay},
  }};
  return all;
}

}  // namespace snsim::fuzz
