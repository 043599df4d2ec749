#include "sim/statistics.hpp"

#include <cmath>

#include <doctest/doctest.h>

using namespace snsim;

TEST_CASE("statistics: summaries give type-7 quantiles and a Student t interval of the mean") {
  const Summary s = summarize({4, 1, 3, 2});
  CHECK(s.n == 4);
  CHECK(s.mean == 2.5);
  CHECK(s.p50 == 2.5);
  CHECK(s.p99 == doctest::Approx(3.97));  // 1 + 3 x 0.99 between order statistics 3 and 4
  CHECK(s.stddev == doctest::Approx(std::sqrt(5.0 / 3)));
  REQUIRE(s.ci95_low);
  CHECK(*s.ci95_high - 2.5 == doctest::Approx(3.1824 * std::sqrt(5.0 / 3) / 2));
  CHECK(2.5 - *s.ci95_low == doctest::Approx(*s.ci95_high - 2.5));
  const Summary one = summarize({7});
  CHECK(one.p99 == 7);
  CHECK(!one.ci95_low);
  // The table's last entry, and the expansion just beyond it and far out (R: qt(0.975, df)).
  CHECK(t_975(30) == doctest::Approx(2.0423).epsilon(1e-4));
  CHECK(t_975(31) == doctest::Approx(2.0395).epsilon(1e-4));
  CHECK(t_975(60) == doctest::Approx(2.0003).epsilon(1e-4));
  CHECK(t_975(1000) == doctest::Approx(1.9623).epsilon(1e-4));
}

TEST_CASE("statistics: the mean of nothing is 0, of a sample its sum over its size") {
  CHECK(mean({}) == 0);
  CHECK(mean({1, 2, 6}) == 3);
  CHECK(summarize({}).n == 0);
  CHECK(std::isnan(t_975(0)));
}
