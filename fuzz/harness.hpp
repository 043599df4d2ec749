// Fuzz harnesses: one function per input parser that a user's file reaches. Each takes arbitrary bytes and must end
// in a clean return or an InputError (exit code 2 in tools/snsim.cpp); the harness swallows InputError and lets
// anything else escape, so that libFuzzer (fuzz_main.cpp) and the regression replay (regressions_test.cpp) see it:
// a crash, an abort, another exception, a sanitizer report or a hang is a bug in the parser, never in the input.
//
// No harness runs a simulation: they stop where `snsim run` would call Engine::run
// (docs/design.md#validate-before-the-run: every input check happens before the run).
#pragma once

#include <span>
#include <string_view>

namespace snsim::fuzz {

/// A scenario file (YAML -> Scenario): topology, models, workloads, failures, output, unknown keys, program size.
void scenario(std::string_view input);
/// A parameter file (`models.params`, as `snsim calibrate` writes it) overlaid on the default 8 x H200 scenario.
void params(std::string_view input);
/// An snsim trace (JSON Lines, validation/trace.hpp), and which format its content looks like.
void trace(std::string_view input);
/// nccl-tests text output.
void nccl_tests(std::string_view input);
/// nvbandwidth output, read as text and as JSON.
void nvbandwidth(std::string_view input);
/// cuda-samples p2pBandwidthLatencyTest output.
void p2p_bandwidth_latency(std::string_view input);
/// NVSHMEM perftest output.
void nvshmem_perftest(std::string_view input);
/// `nvidia-smi topo -m` output as a `topology: {type: nvidia_smi, text: ...}`, built and checked.
void nvidia_smi(std::string_view input);
/// A captured job's trace as `snsim replay` reads it (a PyTorch profiler / Kineto JSON trace or a Chakra execution
/// trace, gzipped or not), checked as a one-rank job and turned into programs on an 8-GPU HGX.
void replay(std::string_view input);

struct Target {
  std::string_view name;  ///< also the folder of its seeds and regressions: fuzz/regressions/<name>/
  void (*run)(std::string_view input);
};
/// Every harness, by name.
std::span<const Target> targets();

}  // namespace snsim::fuzz
