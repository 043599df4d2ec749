#include <doctest/doctest.h>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

TEST_CASE("import nccl-tests: two records per row, SI units, header from the log") {
  const Trace trace = import_sample("nccl_tests_all_reduce.txt");
  CHECK(trace.complete);
  CHECK(trace.notes.empty());
  CHECK(trace.header.host == "gpunode");
  CHECK(trace.header.nccl == "2.27.3");
  CHECK(trace.header.extra["source"] == "nccl-tests");
  CHECK(trace.header.extra["source_version"] == "2.19.6");
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[1].index == 1);
  CHECK(trace.header.gpus[1].name == "NVIDIA H200");
  CHECK(trace.header.gpus[1].pci == "0000:2a:00");
  CHECK(trace.header.gpus[1].extra == Json{{"host", "gpunode"}, {"device", 1}});
  CHECK(trace.records.size() == 10);

  const TraceRecord& r = record(trace, "nccl-tests/all_reduce_perf/in_place/float/sum/524288");
  CHECK(r.family == Family::collective);
  CHECK(r.test == "all_reduce_perf");
  CHECK(r.variant == "in_place");
  CHECK(r.ranks == std::vector<int>{0, 1});
  CHECK(r.bytes == Bytes{524288});
  CHECK(r.reps == 20);
  CHECK(r.unit == MeasureUnit::seconds);
  CHECK(r.median == doctest::Approx(18.21e-6));
  CHECK(r.p01 == r.median);
  CHECK(r.max == r.median);
  CHECK(r.samples.empty());
  CHECK(r.extra["statistic"] == "mean");
  CHECK(r.extra["algbw"].get<double>() == doctest::Approx(28.79e9));
  CHECK(r.extra["busbw"].get<double>() == doctest::Approx(28.79e9));
  CHECK(r.extra["count"] == 131072);
  CHECK(r.extra["root"] == -1);
  CHECK(r.extra["wrong"] == 0);
  CHECK(r.line == 17);
}

TEST_CASE("import nccl-tests: a log without its footer is incomplete") {
  const Trace trace = import_sample("nccl_tests_all_gather_cut.txt");
  CHECK_FALSE(trace.complete);
  REQUIRE(trace.notes.size() == 1);
  CHECK(
      trace.notes[0] ==
      "nccl_tests_all_gather_cut.txt: incomplete: no \"# Avg bus bandwidth\" line after the table on line 10 (run cut "
      "short?); read 2 records");
  const TraceRecord& r = record(trace, "nccl-tests/all_gather_perf/out_of_place/float/none/1024");
  CHECK(r.reps == 50);
  CHECK(r.extra["wrong"].is_null());  // validation off: "#wrong" is N/A
}

TEST_CASE("import nccl-tests: malformed logs give one exact error") {
  SUBCASE("a number that is not one") {
    CHECK(import_error("nccl_tests_bad_number.txt") ==
          "nccl_tests_bad_number.txt:5: time: expected a number, found 'abc'");
  }
  SUBCASE("a row shorter than the header") {
    CHECK(import_error("nccl_tests_bad_columns.txt") ==
          "nccl_tests_bad_columns.txt:4: expected 13 columns as in the table header on line 2, found 9");
  }
  SUBCASE("no collective name") {
    CHECK_THROWS_WITH_AS(import_nccl_tests("#  size count type redop root time algbw busbw #wrong time algbw busbw "
                                           "#wrong\n 8 2 float sum -1 1.0 0 0 0 1.0 0 0 0\n",
                                           "x.txt"),
                         "x.txt:2: test: cannot tell which collective this is: no \"# Collective test starting:\" "
                         "line, no command line naming a *_perf binary, no collective in the file name, and the "
                         "columns (redop sum, root -1) fit all_reduce_perf, reduce_scatter_perf; name it with --op "
                         "(known: all_gather_perf, all_reduce_perf, alltoall_perf, alltoallv_perf, broadcast_perf, "
                         "gather_perf, hypercube_perf, reduce_perf, reduce_scatter_perf, scatter_perf, sendrecv_perf)",
                         InputError);
  }
  SUBCASE("no table") {
    CHECK_THROWS_WITH_AS(import_nccl_tests("# nThread 1 nGpus 2\n", "x.txt"),
                         "x.txt: nccl-tests: no result table (a line like \"#  size  count  type  redop  root  time  "
                         "algbw  busbw  #wrong ...\", or rows of numbers after \"# nThread ...\")",
                         InputError);
  }
}
