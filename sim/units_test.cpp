#include "sim/units.hpp"

#include <limits>

#include <doctest/doctest.h>

using namespace snsim;
using namespace snsim::literals;

TEST_CASE("units: sizes parse with binary and decimal prefixes") {
  CHECK(parse_bytes("1GiB") == 1_GiB);
  CHECK(parse_bytes("64 MiB") == 64_MiB);
  CHECK(parse_bytes("4B") == 4_B);
  CHECK(parse_bytes("1GB") == Bytes{1'000'000'000});
  CHECK(parse_bytes("1.5KiB") == Bytes{1536});
  CHECK(parse_bytes("8Gb") == Bytes{1'000'000'000});
  CHECK(parse_bytes("1EiB") == Bytes{1ull << 60});
}

TEST_CASE("units: times, bandwidths and compute parse") {
  CHECK(parse_seconds("1.5us").count() == doctest::Approx(1.5e-6));
  CHECK(parse_seconds("700ns").count() == doctest::Approx(700e-9));
  CHECK(parse_seconds("2ms").count() == doctest::Approx(2e-3));
  CHECK(parse_bandwidth("450GBps").count() == doctest::Approx(450e9));
  CHECK(parse_bandwidth("450GB/s").count() == doctest::Approx(450e9));
  CHECK(parse_bandwidth("3600Gbps").count() == doctest::Approx(450e9));
  CHECK(parse_bandwidth("1GiBps").count() == doctest::Approx(1073741824.0));
  CHECK(parse_flops("2.2TFLOP").count() == doctest::Approx(2.2e12));
  CHECK(parse_flop_rate("989TFLOP/s").count() == doctest::Approx(989e12));
  CHECK(parse_flop_rate("989Tflops").count() == doctest::Approx(989e12));
}

TEST_CASE("units: bad strings name what was found and what is expected") {
  CHECK_THROWS_WITH_AS(parse_bandwidth("450"),
                       "cannot parse '450' as a bandwidth: missing unit (try '450GBps' or '450Gbps')", UnitError);
  CHECK_THROWS_WITH_AS(parse_bytes("12"), "cannot parse '12' as a size: missing unit (try '12B' or '12MiB')",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_bytes("-1MiB"), "cannot parse '-1MiB' as a size: a size cannot be negative", UnitError);
  CHECK_THROWS_WITH_AS(parse_bytes("20EiB"), "cannot parse '20EiB' as a size: more than 16 EiB", UnitError);
  CHECK_THROWS_WITH_AS(parse_bytes("1.3B"), "cannot parse '1.3B' as a size: not a whole number of bytes", UnitError);
  CHECK_THROWS_WITH_AS(parse_seconds("3 fortnights"),
                       "cannot parse '3 fortnights' as a time: unknown unit 'fortnights' (expected s, ms, us, ns, ps, "
                       "min or h)",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_bytes("lots"), "cannot parse 'lots' as a size: expected a number and a unit, like '64MiB'",
                       UnitError);
}

TEST_CASE("units: every time, rate and amount of work lies in one range, checked where it is parsed") {
  // Finite but beyond any machine, or infinite only after the unit's scale: refused alike.
  CHECK_THROWS_WITH_AS(parse_seconds("1e308s"), "cannot parse '1e308s' as a time: is more than 1e+09 s (31.7 years)",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_seconds("1e307h"), "cannot parse '1e307h' as a time: is more than 1e+09 s (31.7 years)",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_seconds("-1us"), "cannot parse '-1us' as a time: cannot be negative", UnitError);
  CHECK_THROWS_WITH_AS(parse_bandwidth("1e308GBps"), "cannot parse '1e308GBps' as a bandwidth: is more than 1e+18 B/s",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_bandwidth("-5GBps"), "cannot parse '-5GBps' as a bandwidth: cannot be negative",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_bandwidth("1e-300GBps"),
                       "cannot parse '1e-300GBps' as a bandwidth: is less than 1 B/s (and not 0)", UnitError);
  CHECK_THROWS_WITH_AS(parse_flop_rate("1e300PFLOP/s"),
                       "cannot parse '1e300PFLOP/s' as a compute rate: is more than 1e+21 FLOP/s", UnitError);
  CHECK_THROWS_WITH_AS(parse_flops("1e31FLOP"), "cannot parse '1e31FLOP' as an amount of work: is more than 1e+30 FLOP",
                       UnitError);
  CHECK_THROWS_WITH_AS(parse_flops("-1FLOP"), "cannot parse '-1FLOP' as an amount of work: cannot be negative",
                       UnitError);
  // The edges are in range; 0 is a rate (a key's own check says whether it must be > 0).
  CHECK(parse_seconds("1e9s").count() == 1e9);
  CHECK(parse_seconds("0s").count() == 0);
  CHECK(parse_bandwidth("1EBps").count() == 1e18);
  CHECK(parse_bandwidth("0GBps").count() == 0);
  CHECK(parse_bandwidth("8bps").count() == 1);
  CHECK(parse_flops("1e30FLOP").count() == 1e30);
  CHECK(quantity_problem(Seconds{std::numeric_limits<double>::quiet_NaN()}) == "is not a number");
  CHECK(quantity_problem(BytesPerSecond{std::numeric_limits<double>::infinity()}) == "is more than 1e+18 B/s");
}

TEST_CASE("units: quantities print in human units") {
  CHECK(to_string(1_GiB) == "1 GiB");
  CHECK(to_string(Bytes{1536}) == "1.5 KiB");
  CHECK(to_string(4_B) == "4 B");
  CHECK(to_string(450_GBps) == "450 GB/s");
  CHECK(to_string(Seconds{1.5e-6}) == "1.5 us");
  CHECK(to_string(Seconds{700e-9}) == "700 ns");
  CHECK(fmt::format("{}", 64_MiB) == "64 MiB");
}

TEST_CASE("units: bytes over bandwidth is time") {
  CHECK((1_GiB / BytesPerSecond{1073741824.0}).count() == doctest::Approx(1.0));
  CHECK((Bytes{450'000'000'000} / 450_GBps).count() == doctest::Approx(1.0));
}
