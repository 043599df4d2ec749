#include <doctest/doctest.h>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

TEST_CASE("import NVSHMEM perftest: point-to-point tables") {
  const Trace trace = import_sample("perftest_pt_to_pt.txt");
  CHECK(trace.complete);
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[1].name == "NVIDIA H200");
  CHECK(trace.header.gpus[1].pci == "42");
  CHECK(trace.records.size() == 6);

  const TraceRecord& bw = record(trace, "perftest/shmem_put_bw/block/bw/1048576");
  CHECK(bw.family == Family::nvshmem);
  CHECK(bw.variant == "block");
  CHECK(bw.ranks == std::vector<int>{0, 1});
  CHECK(bw.reps == 100);
  CHECK(bw.unit == MeasureUnit::bytes_per_second);
  CHECK(bw.median == doctest::Approx(352.1e9));

  const TraceRecord& pp = record(trace, "perftest/shmem_put_ping_pong_latency/thread/latency/8");
  CHECK(pp.variant == "round_trip");
  CHECK(pp.extra["scope"] == "thread");
  CHECK(pp.unit == MeasureUnit::seconds);
  CHECK(pp.median == doctest::Approx(3.12e-6));
}

TEST_CASE("import NVSHMEM perftest: collective tables keep min, max and bus bandwidth") {
  const Trace trace = import_sample("perftest_collective.txt");
  CHECK(trace.records.size() == 2);
  const TraceRecord& r = record(trace, "perftest/device_alltoall/block/latency/65536");
  CHECK(r.median == doctest::Approx(12.5e-6));
  CHECK(r.min == doctest::Approx(12.1e-6));
  CHECK(r.max == doctest::Approx(13.2e-6));
  CHECK(r.extra["busbw"].get<double>() == doctest::Approx(5.24288e9));
  CHECK(r.extra["count"] == 8192);
}

TEST_CASE("import NVSHMEM perftest: machine-readable PERF lines") {
  const Trace trace = import_sample("perftest_machine_readable.txt");
  CHECK(trace.records.size() == 4);
  // A message rate becomes the time per message, the rate kept beside it.
  const TraceRecord& rate = record(trace, "perftest/shmem_p_bw/none/msgrate/4");
  CHECK(rate.unit == MeasureUnit::seconds);
  CHECK(rate.median == doctest::Approx(1 / 226.25e6));
  CHECK(rate.extra["msgrate"].get<double>() == doctest::Approx(226.25e6));
  CHECK(record(trace, "perftest/shmem_p_latency/thread/latency/8").median == doctest::Approx(1.815e-6));
  const TraceRecord& bw = record(trace, "perftest/shmem_p_bw/none/bw/4");
  CHECK(bw.variant == "");
  CHECK(bw.median == doctest::Approx(0.905e9));
}

TEST_CASE("import NVSHMEM perftest: malformed output gives one exact error") {
  SUBCASE("unknown unit") {
    CHECK(import_error("perftest_bad_unit.txt") ==
          "perftest_bad_unit.txt:2: BW(MB/sec): unknown unit \"MB/sec\"; known: us, ns, GB/sec");
  }
  SUBCASE("unknown column") {
    CHECK_THROWS_WITH_AS(import_nvshmem_perftest("#shmem_x\nsize(B)  scope  speed\n", "x.txt"),
                         "x.txt:2: speed: unknown column; known: size(B), scope, count, type, redop, latency(us), "
                         "BW(GB/sec), msgrate(MMPS), min_lat(us), max_lat(us), algbw(GB/s), busbw(GB/s)",
                         InputError);
  }
  SUBCASE("a row with a missing column") {
    CHECK_THROWS_WITH_AS(import_nvshmem_perftest("#shmem_put_bw\nsize(B)  scope  BW (GB/sec)\n8  block\n", "x.txt"),
                         "x.txt:3: expected 3 columns as in the table header on line 2, found 2", InputError);
  }
}

TEST_CASE("import NVSHMEM perftest: a bandwidth table and its --msgrate table are both imported, each in its unit") {
  const Trace trace = import_sample("perftest_msgrate.txt");
  CHECK(trace.records.size() == 5);
  const TraceRecord& bw = record(trace, "perftest/shmem_p_bw/none/bw/8");
  CHECK(bw.unit == MeasureUnit::bytes_per_second);
  CHECK(bw.median == doctest::Approx(1.81e9));
  const TraceRecord& rate = record(trace, "perftest/shmem_p_bw/none/msgrate/8");
  CHECK(rate.unit == MeasureUnit::seconds);
  CHECK(rate.median == doctest::Approx(1 / 226.25e6));
  CHECK(rate.extra["msgrate"].get<double>() == doctest::Approx(226.25e6));
  const TraceRecord& bidi = record(trace, "perftest/shmem_put_bw_bidi/none/bw/1048576");
  CHECK(bidi.extra["direction"] == "bidir_sum");
}

TEST_CASE("import NVSHMEM perftest: a message rate of 0 is an error, not an infinite time") {
  CHECK_THROWS_WITH_AS(import_nvshmem_perftest("#shmem_p_bw\nsize(B)  scope  msgrate (MMPS)\n4  None  0.0\n", "x.txt"),
                       "x.txt:3: msgrate(MMPS): a message rate must be > 0", InputError);
}
