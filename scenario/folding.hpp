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
/// scenario's `fold` key (false: everything in full).
FoldingDecision decide_folding(const Replicas& proposed, const std::vector<Program>& programs, const Fabric& fabric,
                               const models::Models& models, const std::vector<Failure>& failures, bool enabled);

}  // namespace snsim::workloads
