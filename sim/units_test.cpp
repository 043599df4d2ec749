#include "sim/units.hpp"

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
