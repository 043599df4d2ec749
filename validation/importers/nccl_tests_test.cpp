#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include <fmt/format.h>

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

TEST_CASE("import nccl-tests: nccl-library's version code reads as a version, any other word as printed") {
  std::string text = sample_text("nccl_tests_all_reduce.txt");
  const auto info = text.find("gpunode:41100:41100 [0] NCCL INFO NCCL version");
  text.erase(info, text.find('\n', info) + 1 - info);  // the version from the code alone
  CHECK(import_nccl_tests(text, "x.txt").header.nccl == "2.27.3");
  // Found by fuzz/: a code beyond a long was converted anyway (UBSan).
  for (const std::string code : {"777777777777777777722703", "9999"}) {
    std::string odd = text;
    odd.replace(odd.find("22703", odd.find("nccl-library")), 5, code);
    CHECK(import_nccl_tests(odd, "x.txt").header.nccl == code);
  }
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
  SUBCASE("a count of wrong elements that is not a whole number >= 0 (found by fuzz/)") {
    std::string text = sample_text("nccl_tests_all_reduce.txt");
    for (const char* wrong : {"-1", "0.5", "1e+20"}) {
      std::string bad = text;
      bad.replace(bad.find("0.00      0") + 10, 1, wrong);
      INFO(wrong);
      CHECK_THROWS_WITH_AS(import_nccl_tests(bad, "x.txt"),
                           fmt::format("x.txt:13: #wrong: expected a whole number >= 0, found '{}'", wrong).c_str(),
                           InputError);
    }
    std::string big = text;
    big.replace(big.find("0.00      0") + 10, 1, "1e+06");  // %g's way of printing a million
    CHECK(import_nccl_tests(big, "x.txt").records.front().extra["wrong"] == 1000000);
  }
  SUBCASE("a count in NCCL's INFO lines beyond an int (found by fuzz/)") {
    std::string text = sample_text("nccl_tests_all_reduce.txt");
    const auto info = text.find("gpunode:41100:41100");
    text.insert(info, "gpunode:41100:41100 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 10000000000 localRanks 2\n");
    CHECK_THROWS_WITH_AS(import_nccl_tests(text, "x.txt"),
                         "x.txt:8: nNodes: must be at most 2147483647, found 10000000000", InputError);
  }
  SUBCASE("a root that is neither -1 nor a rank (found by fuzz/)") {
    std::string text = sample_text("nccl_tests_all_reduce.txt");
    text.replace(text.find("sum      -1"), 11, "sum    -1e9");
    CHECK_THROWS_WITH_AS(import_nccl_tests(text, "x.txt"), "x.txt:13: root: expected a whole number >= 0, found '-1e9'",
                         InputError);
  }
  SUBCASE("the JSON output's numbers where whole ones belong") {
    const std::string text = sample_text("real/nccl-tests-2.19.6-all_reduce-1xh200-J.json");
    struct Edit {
      const char* from;
      const char* to;
      const char* error;
    };
    for (const Edit& e : std::vector<Edit>{{"\"size\":8,", "\"size\":-8,",
                                            "results[0].size: expected a whole number from 0 to "
                                            "9223372036854774784, found -8"},
                                           {"\"root\":\"    -1\"", "\"root\":-2",
                                            "results[0].root: expected a whole number from -1 to "
                                            "9223372036854774784, found -2"},
                                           {"\"nwrong\":0.000000", "\"nwrong\":0.5",
                                            "results[0].out_of_place.nwrong: expected a whole number from 0 to "
                                            "9223372036854774784, found 0.5"},
                                           {"\"rank\":0", "\"rank\":1e300",
                                            "config.devices[0].rank: expected a whole number from 0 to 2147483647, "
                                            "found 1e+300"}}) {
      CAPTURE(e.to);
      std::string bad = text;
      bad.replace(bad.find(e.from), std::string_view(e.from).size(), e.to);
      CHECK_THROWS_WITH_AS(import_nccl_tests_json(bad, "x.json"), (std::string("x.json: ") + e.error).c_str(),
                           InputError);
    }
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

// The samples below are built on real output (samples/real/) to cover variants no public file shows on its own.

TEST_CASE("import nccl-tests: Intel MPI's -prepend-rank prefixes ([0] ) are stripped") {
  const Trace prefixed = import_sample("nccl_tests_prepend_rank.txt");
  const Trace plain = import_sample("real/nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt");
  REQUIRE(prefixed.records.size() == 12);
  for (std::size_t i = 0; i < plain.records.size(); ++i) CHECK(prefixed.records[i] == plain.records[i]);
  CHECK(prefixed.header.extra["platform"]["ranks"] == 8);
}

TEST_CASE("import nccl-tests: the command line and NCCL's INFO lines give the collective, -R and the environment") {
  const Trace trace = import_sample("nccl_tests_command_line.txt");
  CHECK(trace.records.size() == 6);  // an INFO line between two rows is skipped, not a row
  const Json& run = trace.header.extra["nccl_tests"][0];
  CHECK(run["test_from"] == "line 1");
  CHECK(run["registration"] == "local");
  CHECK(trace.header.env == Json{{"NCCL_NVLS_ENABLE", "0"}, {"NCCL_PROTO", "Simple"}});  // the period is NCCL's
  const Json& platform = trace.header.extra["platform"];
  CHECK(platform["network"] == "ib");
  CHECK(platform["collective"]["nvls"] == false);
  CHECK(platform["collective"]["protocol"] == "Simple");
  CHECK(platform["collective"]["registration"] == "local");
  const TraceRecord& r = record(trace, "nccl-tests/all_reduce_perf/in_place/float/sum/4194304");
  CHECK(r.extra["registration"] == "local");
  CHECK(r.median == doctest::Approx(26.64e-6));
}

TEST_CASE("import nccl-tests: rows without a table header, and busbw/algbw telling reduce_scatter from all_reduce") {
  const Trace trace = import_sample("nccl_tests_no_header.txt");
  CHECK(trace.records.size() == 4);
  REQUIRE(trace.notes.size() == 1);
  CHECK(trace.notes[0] ==
        "nccl_tests_no_header.txt:6: no table header before this row; assumed the columns \"size count type redop "
        "root time algbw busbw #wrong time algbw busbw #wrong\"");
  // 2 ranks: busbw/algbw is 0.5 = (n-1)/n, not 2(n-1)/n = 1.
  CHECK(trace.header.extra["nccl_tests"][0]["test"] == "reduce_scatter_perf");
  CHECK(trace.header.extra["nccl_tests"][0]["test_from"] ==
        "columns (redop sum, root -1, busbw/algbw 0.500 = (n-1)/n for 2 ranks)");
  CHECK(record(trace, "nccl-tests/reduce_scatter_perf/out_of_place/float/sum/2097152").median ==
        doctest::Approx(17.8e-6));
}

TEST_CASE("import nccl-tests: two runs appended in one log keep their own collective") {
  const Trace trace = import_sample("nccl_tests_two_runs.txt");
  CHECK(trace.complete);
  CHECK(trace.records.size() == 40);
  REQUIRE(trace.header.extra["nccl_tests"].size() == 2);
  CHECK(trace.header.extra["nccl_tests"][0]["test"] == "all_reduce_perf");
  CHECK(trace.header.extra["nccl_tests"][1]["test"] == "all_gather_perf");
  CHECK(trace.header.gpus.size() == 1);  // the same GPU in both runs
  // The all_gather run starts at size 0 as printed (its 8 B request), so its second row is checked.
  CHECK(record(trace, "nccl-tests/all_gather_perf/out_of_place/float/none/32").median == doctest::Approx(6.65e-6));
}

TEST_CASE("import nccl-tests: --op must agree with the log, and must name a collective") {
  ImportOptions op;
  op.collective = "all_gather";
  CHECK_THROWS_WITH_AS(import_text(sample_text("nccl_tests_all_reduce.txt"), "x.txt", op),
                       "x.txt:2: test: the log names all_reduce_perf, --op says all_gather_perf", InputError);
  op.collective = "allreduce";
  CHECK(import_text(sample_text("nccl_tests_all_reduce.txt"), "x.txt", op).records.size() == 10);
  op.collective = "gossip";
  CHECK_THROWS_WITH_AS(import_text(sample_text("nccl_tests_no_header.txt"), "x.txt", op),
                       "x.txt: --op: unknown collective \"gossip\"; known: all_gather_perf, all_reduce_perf, "
                       "alltoall_perf, alltoallv_perf, broadcast_perf, gather_perf, hypercube_perf, reduce_perf, "
                       "reduce_scatter_perf, scatter_perf, sendrecv_perf",
                       InputError);
}

TEST_CASE("import nccl-tests: a row that cannot be read names its line, inside NCCL INFO noise too") {
  std::string text = sample_text("nccl_tests_command_line.txt");
  text.replace(text.find("17.30"), 5, "17,30");
  CHECK_THROWS_WITH_AS(import_nccl_tests(text, "x.txt"), "x.txt:16: time: expected a number, found '17,30'",
                       InputError);
}

TEST_CASE("import nccl-tests: a column named like a record field is kept beside it, and the trace reads back") {
  const std::string log =
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong  samples\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    10.52    0.00    0.00      0      7.0\n";
  const Trace trace = import_nccl_tests(log, "t.log");
  REQUIRE(trace.records.size() == 1);
  const TraceRecord& r = trace.records.front();
  CHECK(r.samples.empty());
  CHECK(r.extra["column_samples"] == 7.0);
  CHECK(r.median == doctest::Approx(10.52e-6));
  const Trace back = import_text(write_trace(trace), "back.jsonl");
  REQUIRE(back.records.size() == 1);
  CHECK(back.records.front() == r);
}
