// Seeded random streams, one per component, identical on every platform and compiler.
//
// Every source of randomness in a run (the latency jitter of one GPU, the clock variation of another, ...) draws
// from its own stream, derived from the scenario seed and the component's name:
//
//   RandomStream rng(seed, "jitter.latency.gpu3");
//   double z = rng.normal();          // N(0, 1)
//
// so adding a component, or drawing more from one, never shifts another's draws, and the same seed gives the same
// report bit for bit (docs/design.md#determinism). The name is hashed with FNV-1a (not std::hash, whose values differ
// between standard libraries); bits come from std::mt19937_64, whose output the standard fixes; the transforms to
// uniform and normal values are our own, because std::uniform_real_distribution and std::normal_distribution are
// implementation-defined. The transforms use IEEE-exact arithmetic and sqrt plus std::log (and std::exp for
// lognormal factors, models/jitter.cpp); those two are not required to be correctly rounded, so draws are identical
// wherever the math libraries agree on them -- the same libm always does; different ones may differ in the last bit.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

namespace snsim {

/// FNV-1a, 64-bit: a hash of a name that every platform computes alike.
std::uint64_t stable_hash(std::string_view text);

/// One component's stream of random numbers.
class RandomStream {
 public:
  /// The stream of `component` in a run seeded with `seed`.
  RandomStream(std::uint64_t seed, std::string_view component);

  /// 64 random bits.
  std::uint64_t bits() { return engine_(); }
  /// Uniform in [0, 1), with 53 random bits (every double of the form k / 2^53).
  double uniform();
  /// Uniform integer in [0, n), n >= 1, without modulo bias.
  std::uint64_t below(std::uint64_t n);
  /// Standard normal N(0, 1) (Marsaglia's polar method: no trigonometry, only log and sqrt).
  double normal();

 private:
  std::mt19937_64 engine_;
};

}  // namespace snsim
