#include "validation/importers/import.hpp"

#include <doctest/doctest.h>

#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

TEST_CASE("import: formats are recognised by content") {
  CHECK(sniff_format(sample_text("nccl_tests_all_reduce.txt")) == TraceFormat::nccl_tests);
  CHECK(sniff_format(sample_text("nccl_tests_bad_columns.txt")) == TraceFormat::nccl_tests);
  CHECK(sniff_format(sample_text("nvbandwidth.txt")) == TraceFormat::nvbandwidth_text);
  CHECK(sniff_format(sample_text("nvbandwidth.json")) == TraceFormat::nvbandwidth_json);
  CHECK(sniff_format(sample_text("p2p_bandwidth_latency.txt")) == TraceFormat::p2p_bandwidth_latency);
  CHECK(sniff_format(sample_text("perftest_pt_to_pt.txt")) == TraceFormat::nvshmem_perftest);
  CHECK(sniff_format(sample_text("perftest_machine_readable.txt")) == TraceFormat::nvshmem_perftest);
  CHECK(sniff_format(sample_text("snsim_trace.jsonl")) == TraceFormat::snsim_trace);
  CHECK_FALSE(sniff_format(sample_text("unknown.txt")).has_value());
  CHECK_FALSE(sniff_format("").has_value());
}

TEST_CASE("import: an snsim trace is read by the trace reader") {
  const Trace trace = import_sample("snsim_trace.jsonl");
  CHECK(trace.complete);
  CHECK(trace.records.size() == 4);
  CHECK(record(trace, "launch/empty_kernel/0").extra["note"] == "extra fields are kept");
}

TEST_CASE("import: unknown content lists the known formats") {
  CHECK(import_error("unknown.txt") ==
        "unknown.txt: unknown trace format; known: snsim trace (JSON Lines), nccl-tests, nccl-tests (JSON), "
        "nvbandwidth (text), nvbandwidth (JSON), p2pBandwidthLatencyTest, NVSHMEM perftest");
}

TEST_CASE("import: an imported trace round-trips through the snsim format") {
  for (const char* name : {"nccl_tests_all_reduce.txt", "nvbandwidth.txt", "nvbandwidth.json",
                           "p2p_bandwidth_latency.txt", "perftest_pt_to_pt.txt", "perftest_collective.txt"}) {
    CAPTURE(name);
    const Trace imported = import_sample(name);
    const Trace back = import_text(write_trace(imported), "back.jsonl");
    CHECK(back.header == imported.header);
    CHECK(back.records == imported.records);
    CHECK(back.complete == imported.complete);
  }
}

TEST_CASE("import: import_any reads files by path") {
  const std::string dir = std::string(SNSIM_SOURCE_DIR) + "/validation/importers/samples/";
  CHECK(import_any(dir + "nvbandwidth.json").records.size() == 10);
  CHECK_THROWS_WITH_AS(import_any(dir + "no_such_file.txt"), (dir + "no_such_file.txt: cannot open the file").c_str(),
                       InputError);
}

TEST_CASE("import: text that is not UTF-8 is refused at its line and column, by every text importer") {
  // Found by fuzz/ (nccl_tests): a stray byte went into a JSON string, and writing the trace threw (exit 3).
  const std::string text = "# nccl-tests version 2.13.8\n#  Rank  0 on h\xe9te device 0\n";
  for (auto* import :
       {import_nccl_tests, import_nvbandwidth_text, import_p2p_bandwidth_latency, import_nvshmem_perftest}) {
    CHECK_THROWS_WITH_AS(import(text, "t.txt"), "t.txt:2:16: not UTF-8 text: byte 0xE9", InputError);
  }
  CHECK_THROWS_WITH_AS(import_nccl_tests("ok \xf0\x9f\x98\x80 then \xed\xa0\x80", "t.txt"),
                       "t.txt:1:14: not UTF-8 text: byte 0xED", InputError);  // a UTF-16 surrogate
}
