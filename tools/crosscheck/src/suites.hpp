// The capture suites. Each adds its records to the TraceSet and stops adding when its deadline has passed.
#pragma once

#include <string>
#include <vector>

#include "lane.hpp"
#include "xc.hpp"

namespace xc {

struct Config {
  bool quick = false;                 // few sizes and samples: a dry run of every code path
  std::uint64_t max_bytes = 1 * GiB;  // copy sweeps stop here
  std::uint64_t uvm_max_bytes = 4 * GiB;
  int size_step = 4;  // factor between sweep sizes
  int jitter_samples = 100'000;
  std::size_t jitter_keep = 10'000;  // samples kept in a jitter record (every k-th); all go to the side file
  std::string samples_dir;           // where jitter runs write every sample (empty: nowhere)
  int peer = 1;                      // the second GPU of the peer suites
  bool allow_self_peer = false;      // dry run of the peer suites on one GPU (GPU 0 "to itself")
  std::vector<std::string> methods;  // empty: every method
};

bool method_wanted(const Config& config, Method method);
std::vector<std::uint64_t> sweep(const Config& config, std::uint64_t from, std::uint64_t to);
/// Samples for one record: enough for `target_s` at `per_sample_s` each, within [low, high].
int samples_for(double per_sample_s, double target_s, int low, int high);

// One GPU.
void run_local_copies(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);
void run_launch(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);
void run_host_costs(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);
void run_uvm(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);
void run_jitter(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);
void run_gemm(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline);

// Two GPUs (GPU 0 and config.peer).
void run_peer_copies(TraceSet& out, const Config& config, const Deadline& deadline);
void run_peer_uvm(TraceSet& out, const Config& config, const Deadline& deadline);
void run_peer_jitter(TraceSet& out, const Config& config, const Deadline& deadline);

/// Long runs of single copies: every op by events_single and gate, Config::jitter_samples each (family jitter).
void run_jitter_on(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline,
                   const std::vector<Op>& ops);

/// Emits `samples` of `op` timed by `method` in `shape` as one record (variant from `variant`), if any.
void emit(TraceSet& out, Method method, const Op& op, const std::string& variant, std::vector<double> samples,
          std::vector<Extra> extras = {}, std::size_t cap = 0);

}  // namespace xc
