// Command-line options shared by every family, and the size sweeps derived from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace probe {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

struct Options {
  std::vector<std::string> families;  // in the order given
  std::string out_path = "snsim-trace.jsonl";
  bool quick = false;                     // a short dry run: few sizes, few repetitions
  std::uint64_t max_bytes = 0;            // 0: each family's own largest size
  std::size_t samples_cap = 2000;         // samples kept per record in the file
  bool keep_going = false;                // run the remaining families after one fails
  bool verbose = true;                    // one summary line per record on stderr
  int ranks = 0;                          // processes for multi-process families; 0: every visible GPU
  std::uint64_t uvm_max_bytes = 4 * GiB;  // the largest managed region (further capped by free memory)
  std::uint64_t size_step = 0;            // factor between sweep sizes (a power of two); 0: 2, or 16 in quick mode
  // GPU pairs of the pairwise copy and latency tests (each GPU's local tests always run): "all" (every ordered
  // pair), "star" (GPU 0 with every other GPU, both directions), "from0" (GPU 0 to every other GPU), or a list
  // "0-1,2-5" of ordered source-destination pairs. Bounds an 8-GPU capture: 56 ordered pairs take minutes.
  std::string pairs = "all";
  std::vector<std::string> tests;  // copy and compute families: run only these tests (empty: all)
  // compute family: GEMM formats to time (bf16, fp16, tf32, fp8_e4m3; empty: all).
  std::vector<std::string> formats;
  // compute family: the GEMM table stops early so that the whole family ends within this many seconds (0: none).
  double budget_seconds = 0;
};

// Whether the ordered pair a -> b (a != b) is among the pairs `options.pairs` selects.
bool wants_pair(const Options& options, int a, int b);
// Whether `pairs` is a valid --pairs value (the command line checks it before any GPU work).
bool valid_pairs_spec(const std::string& pairs);
// Whether test `test` runs (--tests; families that honour it say so in README.md).
bool wants_test(const Options& options, const std::string& test);

// Powers of two from `from` to `to` (both included when powers of two). In quick mode the sweep keeps every
// 16th size (x16 steps) and stops at 16 MiB, so a dry run touches small and mid sizes of every path.
// --size-step N sets the factor between sizes (quick mode included).
std::vector<std::uint64_t> size_sweep(std::uint64_t from, std::uint64_t to, const Options& options);

// Repetitions scaled down in quick mode (never below `minimum_quick`).
int reps(int full, const Options& options, int minimum_quick = 3);

}  // namespace probe
