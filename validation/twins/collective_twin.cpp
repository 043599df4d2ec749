// Twins of the probe's `collective` family (tools/probe/src/families/collective.cu): NCCL collectives timed like
// nccl-tests, back to back on a stream (`out_of_place`: one operation per sample) or replayed from a CUDA graph
// (`graph`: ops_per_graph operations per sample, the sample divided by them).
//
// The capture's environment says what NCCL was allowed to do: NCCL_PROTO forces one protocol, NCCL_ALGO one
// algorithm, NCCL_NVLS_ENABLE=0 turns NVLS off. The twin forces the same, and otherwise lets the model choose as NCCL
// did.
#include <algorithm>
#include <cctype>
#include <memory>

#include <fmt/format.h>

#include "validation/twins/collective_twin.hpp"
#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {

using workloads::CollectiveOp;
using workloads::RepeatOp;

std::string lower(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

std::variant<CollectiveRequirements, std::string> collective_requirements(const Trace& trace, const TraceRecord& r) {
  CollectiveRequirements out;
  const auto kind = models::collective_kind(r.test);
  if (!kind) return fmt::format("no twin for collective test '{}'", r.test);
  out.kind = *kind;
  // NCCL's point-to-point sends (all_to_all is grouped ncclSend/ncclRecv) pick LL or Simple by size whatever
  // NCCL_PROTO says: the all_to_all medians of our forced-protocol H200 traces agree within a few percent.
  if (const auto proto = env(trace, "NCCL_PROTO"); !proto.empty() && out.kind != models::CollectiveKind::all_to_all) {
    out.protocol = models::protocol(proto);
    if (!out.protocol) return fmt::format("NCCL_PROTO={} is not one protocol (LL, LL128, Simple)", proto);
  }
  const bool reduces_in_switch = env(trace, "NCCL_NVLS_ENABLE") != "0";
  if (const auto algo = lower(env(trace, "NCCL_ALGO")); !algo.empty()) {
    out.algorithm = models::algorithm(algo);
    if (!out.algorithm) return fmt::format("NCCL_ALGO={} is not one algorithm snsim models", env(trace, "NCCL_ALGO"));
  } else if (out.kind == models::CollectiveKind::all_reduce && !reduces_in_switch) {
    // The model would weigh nvls, which the capture had off. With 2 ranks NCCL's own tuning (src/graph/tuning.cc)
    // always runs ring: tree's bandwidth is half ring's (ratio .5, x .92) at a higher latency; so the twin forces
    // ring, which the model also picks by itself at these sizes (fits/collective.cpp checks it). Beyond 2 ranks tree
    // can win small sizes and the model has no "all but nvls" request.
    if (r.ranks.size() != 2)
      return "NCCL_NVLS_ENABLE=0 with more than 2 ranks: the twin cannot keep the model from choosing nvls";
    out.algorithm = models::Algorithm::ring;
  }
  return out;
}

std::variant<Twin, std::string> collective(const Trace& trace, const TraceRecord& r, int gpus) {
  const auto required = collective_requirements(trace, r);
  if (const auto* reason = std::get_if<std::string>(&required)) return *reason;
  const auto& need = std::get<CollectiveRequirements>(required);
  if (r.ranks.size() < 2) return std::string("a collective needs at least 2 ranks");
  const bool graph = r.variant == "graph";
  if (!graph && r.variant != "out_of_place") return fmt::format("no twin for collective variant '{}'", r.variant);

  CollectiveOp c;
  c.kind = need.kind;
  c.bytes = r.bytes;
  c.root = r.ranks.front();  // the probe broadcasts from rank 0
  c.protocol = need.protocol;
  c.algorithm = need.algorithm;
  c.group = std::make_shared<const std::vector<int>>(r.ranks);
  c.launch = graph ? models::Launch::graph : models::Launch::stream;
  c.host_paced = !graph;  // calls back to back on the host thread, an event recorded after each

  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  const int ops = graph ? static_cast<int>(extra_number(r, "ops_per_graph", 1)) : 1;
  if (ops < 1) return fmt::format("ops_per_graph {} is not a count", ops);
  twin.repetitions = ops;
  for (int rank : r.ranks) {
    auto& at = twin.sample[static_cast<std::size_t>(rank)];
    if (ops == 1)
      at.push_back(op(c));
    else
      at.push_back(op(RepeatOp{ops, {op(c)}}));
  }
  return twin;
}

}  // namespace snsim::validation::twins
