#include "sim/random.hpp"

#include <cmath>

namespace snsim {
namespace {

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): spreads a 64-bit key over all bits, so that seeds 1 and 2 or
/// names that differ in one letter give unrelated engine states.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis and prime (64-bit)
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

RandomStream::RandomStream(std::uint64_t seed, std::string_view component)
    : engine_{mix(mix(seed) ^ stable_hash(component))} {}

double RandomStream::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

std::uint64_t RandomStream::below(std::uint64_t n) {
  // Rejection: draw in the largest multiple of n below 2^64 (Lemire's bound would be faster; this is clearer).
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return x % n;
}

double RandomStream::normal() {
  double u = 0, v = 0, s = 0;
  do {
    u = 2 * uniform() - 1;
    v = 2 * uniform() - 1;
    s = u * u + v * v;
  } while (s >= 1 || s == 0);
  // The polar method yields two normals; we keep one and drop the other, so the stream holds no cached value and
  // its state depends only on the draws made so far.
  return u * std::sqrt(-2 * std::log(s) / s);
}

}  // namespace snsim
