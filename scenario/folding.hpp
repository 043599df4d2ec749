// Which ranks a run simulates in full (docs/folding.md): the replicas the workloads propose (Workload::replicas)
// fold into one representative unless something sets them apart -- a slow GPU, a failure on their GPUs or links,
// jitter or variation drawn per GPU, a GPU or link of another kind, a program that differs -- in which case exactly
// those replicas run their own programs, and the others still fold.
#pragma once

#include <string>
#include <vector>

#include "models/models.hpp"
#include "runtime/folding.hpp"
#include "scenario/failures.hpp"
#include "sim/report.hpp"

namespace snsim::workloads {

struct FoldingDecision {
  Folding folding;
  FoldingSummary summary;  // for the report: the path, the ranks simulated in full and why
};

/// `proposed`: the replicas every workload proposes (empty: none proposed, or they disagree). `enabled`: the
/// scenario's `fold` key (false: everything in full). `alike`: the workloads build their replicas alike
/// (Workload::replicas_alike), so the programs of replicas that fold need not be compared, nor have been built.
FoldingDecision decide_folding(const Replicas& proposed, const std::vector<Program>& programs, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled,
                               bool alike);

/// By rank, the ranks whose programs a run of `ranks` ranks needs when replicas are alike: all but those of the
/// replicas that fold as far as the hardware, the models and the failures go (decide_folding); empty when all.
std::vector<bool> needed_ranks(const Replicas& proposed, std::size_t ranks, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled);

}  // namespace snsim::workloads
