// Twins: for a trace record, the program that repeats on the simulator the experiment the probe ran on the GPUs.
//
// A twin is one sample of the experiment as per-rank ops (a pipelined copy record is 100 queued copies, a NCCL
// record one collective, ...), how many samples to draw, and how a sample's simulated span becomes the record's
// value: a time per repetition, or bytes per second. Twins are built from plain ops, so what a twin measures can
// always be written as a scenario too.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "models/models.hpp"
#include "program/program.hpp"
#include "validation/trace.hpp"

namespace snsim::validation {

struct Twin {
  std::vector<std::vector<workloads::Op>> sample;  // one sample's ops, per rank
  int samples = 1;                                 // samples to simulate (capped by the caller)
  int warmup = 0;  // samples simulated before them and dropped, as the probe's warm-up (power-capped clocks settle)
  double repetitions = 1;      // measured repetitions inside one sample
  std::string measured_label;  // when set, only ops whose label contains it end the sample (a concurrent test's part)
  std::optional<Bytes> rate_bytes;  // B/s records: payload bytes of one repetition
};

/// The twin of `record` from `trace` on a platform of `gpus` GPUs, or why there is none (a family snsim does not
/// model yet, a test it does not know). `models` gives the costs of the probe's own mechanics (event waits).
std::variant<Twin, std::string> make_twin(const Trace& trace, const TraceRecord& record, int gpus,
                                          const models::Models& models);

}  // namespace snsim::validation
