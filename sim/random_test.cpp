#include "sim/random.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace snsim;

namespace {
std::vector<std::uint64_t> first(RandomStream s, int n) {
  std::vector<std::uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.bits());
  return out;
}
}  // namespace

TEST_CASE("random: the same seed and component give the same sequence") {
  CHECK(first(RandomStream(42, "jitter.latency.gpu3"), 100) == first(RandomStream(42, "jitter.latency.gpu3"), 100));
}

TEST_CASE("random: different seeds or components give different sequences") {
  const auto base = first(RandomStream(42, "jitter.latency.gpu3"), 4);
  CHECK(base != first(RandomStream(43, "jitter.latency.gpu3"), 4));
  CHECK(base != first(RandomStream(42, "jitter.latency.gpu4"), 4));
  CHECK(base != first(RandomStream(42, "jitter.bandwidth.gpu3"), 4));
}

TEST_CASE("random: a stream does not depend on which other streams exist or were drawn from first") {
  RandomStream a1(7, "a");
  const double a_alone = a1.normal();
  RandomStream b(7, "b");
  for (int i = 0; i < 1000; ++i) (void)b.normal();
  RandomStream a2(7, "a");
  CHECK(a2.normal() == a_alone);
}

TEST_CASE("random: draws are pinned, so a change of derivation or transform cannot go unnoticed") {
  // FNV-1a of "" and "a" are the published test vectors.
  CHECK(stable_hash("") == 0xcbf29ce484222325ULL);
  CHECK(stable_hash("a") == 0xaf63dc4c8601ec8cULL);
  RandomStream s(42, "jitter.latency.gpu3");
  CHECK(s.bits() == 0x8eed3154ba1394c8ULL);
}

TEST_CASE("random: uniform and normal have the moments they promise") {
  RandomStream s(1, "moments");
  const int n = 200000;
  double sum = 0, sum2 = 0, usum = 0;
  std::uint64_t counts[5] = {};
  int outside = 0;
  for (int i = 0; i < n; ++i) {
    const double z = s.normal();
    sum += z;
    sum2 += z * z;
    const double u = s.uniform();
    if (u < 0 || u >= 1) ++outside;
    usum += u;
    ++counts[s.below(5)];
  }
  CHECK(outside == 0);
  CHECK(sum / n == doctest::Approx(0).epsilon(0.01).scale(1));
  CHECK(sum2 / n == doctest::Approx(1).epsilon(0.01));
  CHECK(usum / n == doctest::Approx(0.5).epsilon(0.01));
  for (auto c : counts) CHECK(static_cast<double>(c) / n == doctest::Approx(0.2).epsilon(0.02));
}
