#include "validation/trace.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace snsim;
using namespace snsim::validation;

namespace {

const std::string header_line =
    R"({"schema": "snsim-trace/1", "probe": "0.1.0", "host": "node1", "gpus": [{"index": 0, "name": "NVIDIA H200", )"
    R"("pci": "00000000:18:00.0"}, {"index": 1, "name": "NVIDIA H200", "pci": "00000000:2a:00.0"}], )"
    R"("driver": "580.159", "cuda": "13.0", "nccl": "2.27.3", "nvshmem": "3.3.9", "topo": "GPU0 X NV18", )"
    R"("env": {"NCCL_NVLS_ENABLE": "0"}, "started": "2025-06-01T12:00:00Z"})";

/// A valid record line; `overrides` replaces fields (a JSON object merged on top).
std::string record_line(const std::string& id, const std::string& overrides = "{}") {
  Json record = Json::parse(R"({"id": "", "family": "latency", "test": "ping_pong", "variant": "round_trip",
      "ranks": [0, 1], "bytes": 8, "reps": 1000, "unit": "s", "median": 2.0e-6, "p01": 1.9e-6, "p99": 2.5e-6,
      "min": 1.8e-6, "max": 3.0e-6, "samples": [1.8e-6, 2.0e-6, 3.0e-6]})");
  record["id"] = id;
  const Json changes = Json::parse(overrides);  // named: items() of a temporary would dangle
  for (const auto& [key, value] : changes.items()) record[key] = value;
  return record.dump();
}

/// A trace of `records` (lines), complete unless told otherwise.
std::string trace_text(const std::vector<std::string>& records, bool complete = true) {
  std::string text = header_line + "\n";
  for (const auto& r : records) text += r + "\n";
  if (complete) text += R"({"complete": true, "records": )" + std::to_string(records.size()) + "}\n";
  return text;
}

/// The error message of reading a trace whose only record is `record_line("a", overrides)` (line 2).
std::string error_of_record(const std::string& overrides) {
  try {
    parse_trace(trace_text({record_line("a", overrides)}), "t.jsonl");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of(const std::string& text) {
  try {
    parse_trace(text, "t.jsonl");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("trace: reads header, records and completion") {
  Trace trace = parse_trace(trace_text({record_line("a"), record_line("b", R"({"busbw": 1.5e11})")}), "t.jsonl");
  CHECK(trace.complete);
  CHECK(trace.notes.empty());
  CHECK(trace.header.host == "node1");
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[1] == TraceGpu{1, "NVIDIA H200", "00000000:2a:00.0"});
  CHECK(trace.header.env["NCCL_NVLS_ENABLE"] == "0");
  REQUIRE(trace.records.size() == 2);
  const TraceRecord& b = trace.records[1];
  CHECK(b.id == "b");
  CHECK(b.family == Family::latency);
  CHECK(b.ranks == std::vector<int>{0, 1});
  CHECK(b.bytes == Bytes{8});
  CHECK(b.unit == MeasureUnit::seconds);
  CHECK(b.median == 2.0e-6);
  CHECK(b.line == 3);
  CHECK(b.extra["busbw"] == 1.5e11);
  CHECK(b.format_value(b.median) == "2 us");
}

TEST_CASE("trace: round trip keeps every field, extras included") {
  Trace trace;
  trace.source = "mem";
  trace.header.probe = "0.1.0";
  trace.header.host = "h";
  trace.header.gpus = {{0, "NVIDIA H200", "00000000:18:00.0"}};
  trace.header.env = Json{{"NCCL_ALGO", "Ring"}};
  trace.header.extra = Json{{"source", "nccl-tests"}};
  TraceRecord r;
  r.id = "nccl-tests/all_reduce_perf/out_of_place/1048576";
  r.family = Family::collective;
  r.test = "all_reduce_perf";
  r.variant = "out_of_place";
  r.ranks = {0, 1};
  r.bytes = Bytes{1048576};
  r.reps = 20;
  r.unit = MeasureUnit::seconds;
  r.median = r.p01 = r.p99 = r.min = r.max = 1.0 / 3.0 * 1e-5;  // not a short decimal: tests exact printing
  r.extra = Json{{"busbw", 123.456e9}, {"algbw", 61.728e9}};
  trace.records.push_back(r);
  r.id = "second";
  r.unit = MeasureUnit::bytes_per_second;
  r.samples = {1.0 / 3.0 * 1e-5};
  trace.records.push_back(r);
  trace.complete = true;

  const std::string text = write_trace(trace);
  Trace back = parse_trace(text, "mem");
  CHECK(back.header == trace.header);
  CHECK(back.records == trace.records);
  CHECK(back.complete);
  CHECK(write_trace(back) == text);
  // Extra fields keep their order on the way through.
  CHECK(back.records[0].extra.begin().key() == "busbw");
}

TEST_CASE("trace: a family that failed in the middle of a capture marks the trace incomplete") {
  const std::string failure =
      R"({"incomplete": true, "family": "collective", "error": "collective.cu:88: ncclAllReduce(...) failed: )"
      R"(unhandled cuda error", "records": 1})";
  SUBCASE("read, with the records before it") {
    Trace trace = parse_trace(trace_text({record_line("a"), failure}, /*complete=*/false), "t.jsonl");
    CHECK_FALSE(trace.complete);
    CHECK(trace.records.size() == 1);
    REQUIRE(trace.failures.size() == 1);
    CHECK(trace.failures[0] ==
          TraceFailure{"collective", "collective.cu:88: ncclAllReduce(...) failed: unhandled cuda error", 3});
    REQUIRE(trace.notes.size() == 1);
    CHECK(trace.notes[0] ==
          "t.jsonl:3: incomplete: family collective failed: collective.cu:88: ncclAllReduce(...) failed: unhandled "
          "cuda error; 1 records before it");
    // Written back the same way.
    const Trace back = parse_trace(write_trace(trace), "t.jsonl");
    CHECK(back.failures == trace.failures);
    CHECK(back.records == trace.records);
    CHECK_FALSE(back.complete);
  }
  SUBCASE("other families' records may follow it (--keep-going)") {
    Trace trace = parse_trace(trace_text({record_line("a"), failure, record_line("b")}, false), "t.jsonl");
    CHECK(trace.records.size() == 2);
    CHECK(trace.failures.size() == 1);
  }
  SUBCASE("a failure line with a completion line is an error") {
    CHECK(error_of(trace_text({record_line("a"), failure}, /*complete=*/false) + R"({"complete": true, "records": 1})" +
                   "\n") == "t.jsonl:4: complete: a trace with a failure line (line 3) cannot be complete");
  }
  SUBCASE("a failure line that miscounts or lacks its error") {
    CHECK(error_of(trace_text(
              {record_line("a"), R"({"incomplete": true, "family": "copy", "error": "x", "records": 2})"}, false)) ==
          "t.jsonl:3: records: the failure line says 2 records before it, the file has 1");
    CHECK(
        error_of(trace_text({R"({"incomplete": true, "family": "copy", "records": 0})"}, false)) ==
        R"(t.jsonl:2: error: missing; a failure line is {"incomplete": true, "family": F, "error": E, "records": N})");
  }
}

TEST_CASE("trace: a capture cut short is incomplete, not an error") {
  SUBCASE("no completion line") {
    Trace trace = parse_trace(trace_text({record_line("a")}, /*complete=*/false), "t.jsonl");
    CHECK_FALSE(trace.complete);
    CHECK(trace.records.size() == 1);
    REQUIRE(trace.notes.size() == 1);
    CHECK(
        trace.notes[0] ==
        R"(t.jsonl: incomplete: no completion line {"complete": true, "records": N} (capture cut short?); read 1 records)");
  }
  SUBCASE("last line cut in the middle") {
    std::string text = trace_text({record_line("a"), record_line("b")}, /*complete=*/false);
    text.resize(text.size() - 20);
    Trace trace = parse_trace(text, "t.jsonl");
    CHECK_FALSE(trace.complete);
    CHECK(trace.records.size() == 1);
    REQUIRE(trace.notes.size() == 2);
    CHECK(trace.notes[0] == "t.jsonl:3: the last line is cut off and was ignored");
  }
  SUBCASE("only the header") {
    Trace trace = parse_trace(header_line + "\n", "t.jsonl");
    CHECK_FALSE(trace.complete);
    CHECK(trace.records.empty());
  }
}

TEST_CASE("trace: malformed lines give one exact error") {
  SUBCASE("empty file") {
    CHECK(error_of("") ==
          R"(t.jsonl: empty trace; the first line must be the header {"schema": "snsim-trace/1", "probe", "host", )"
          R"("gpus", "driver", "cuda", "nccl", "nvshmem", "topo", "env", "started"})");
  }
  SUBCASE("malformed JSON") {
    CHECK(error_of(header_line + "\n{\"id\": \"a\", family}\n") ==
          "t.jsonl:2:15: malformed JSON: syntax error while parsing object key - invalid literal; last read: "
          "'\"a\", fam'; expected string literal");
  }
  SUBCASE("not an object") {
    CHECK(error_of(header_line + "\n[1, 2]\n") == "t.jsonl:2: expected a JSON object, found [1,2]");
  }
  SUBCASE("neither record nor completion") {
    CHECK(
        error_of(header_line + "\n{\"x\": 1}\n") ==
        R"(t.jsonl:2: expected a record (with "id"), the completion line (with "complete") or a failure line (with "incomplete"))");
  }
  SUBCASE("duplicate id") {
    CHECK(error_of(trace_text({record_line("a"), record_line("b"), record_line("a")})) ==
          R"(t.jsonl:4: id: duplicate id "a", first on line 2)");
  }
  SUBCASE("completion count mismatch") {
    CHECK(error_of(header_line + "\n" + record_line("a") + "\n{\"complete\": true, \"records\": 3}\n") ==
          "t.jsonl:3: records: the completion line says 3 records, the file has 1");
  }
  SUBCASE("completion not true") {
    CHECK(error_of(header_line + "\n{\"complete\": false, \"records\": 0}\n") ==
          "t.jsonl:2: complete: expected true, found false");
  }
  SUBCASE("content after completion") {
    CHECK(error_of(trace_text({}) + record_line("a") + "\n") ==
          "t.jsonl:3: content after the completion line (line 2)");
  }
}

TEST_CASE("trace: header errors name the field") {
  SUBCASE("wrong schema") {
    CHECK(error_of(R"({"schema": "snsim-trace/2"})") ==
          R"(t.jsonl:1: schema: expected "snsim-trace/1", found "snsim-trace/2")");
  }
  SUBCASE("a record first") {
    CHECK(error_of(record_line("a")).starts_with("t.jsonl:1: schema: missing; the first line must be the header"));
  }
  SUBCASE("mistyped GPU") {
    Json header = Json::parse(header_line);
    header["gpus"][1]["name"] = 7;
    CHECK(error_of(header.dump() + "\n") == "t.jsonl:1: gpus[1].name: expected a string, found 7");
  }
  SUBCASE("env not an object") {
    Json header = Json::parse(header_line);
    header["env"] = "NCCL_ALGO=Ring";
    CHECK(error_of(header.dump() + "\n") == R"(t.jsonl:1: env: expected an object, found "NCCL_ALGO=Ring")");
  }
}

TEST_CASE("trace: record errors name the line and field") {
  SUBCASE("mistyped number") {
    CHECK(error_of_record(R"({"median": "abc"})") == R"(t.jsonl:2: median: expected a number, found "abc")");
  }
  SUBCASE("missing field") {
    Json record = Json::parse(record_line("a"));
    record.erase("unit");
    CHECK(error_of(trace_text({record.dump()})) ==
          "t.jsonl:2: unit: missing; a record needs id, family, test, variant, ranks, bytes, reps, unit, median, p01, "
          "p99, min, max, samples");
  }
  SUBCASE("unknown family") {
    CHECK(
        error_of_record(R"({"family": "nvlink"})") ==
        R"(t.jsonl:2: family: unknown family "nvlink"; known: collective, compute, copy, jitter, latency, launch, nvshmem, step, uvm)");
  }
  SUBCASE("unknown unit") {
    CHECK(error_of_record(R"({"unit": "us"})") == R"(t.jsonl:2: unit: expected "s" or "B/s", found "us")");
  }
  SUBCASE("negative size") {
    CHECK(error_of_record(R"({"bytes": -5})") == "t.jsonl:2: bytes: must be >= 0, found -5");
  }
  SUBCASE("fractional size") {
    CHECK(error_of_record(R"({"bytes": 1.5})") == "t.jsonl:2: bytes: expected a whole number of bytes, found 1.5");
  }
  SUBCASE("zero reps") {
    CHECK(error_of_record(R"({"reps": 0})") == "t.jsonl:2: reps: must be >= 1, found 0");
  }
  SUBCASE("negative time") {
    CHECK(error_of_record(R"({"min": -1e-6})") == "t.jsonl:2: min: must be >= 0, found -1e-06");
  }
  SUBCASE("bad rank") {
    CHECK(error_of_record(R"({"ranks": [0, -1]})") ==
          "t.jsonl:2: ranks[1]: expected a GPU index (an integer >= 0), found -1");
  }
  SUBCASE("ranks not an array") {
    CHECK(error_of_record(R"({"ranks": 3})") == "t.jsonl:2: ranks: expected an array of GPU indices, found 3");
  }
  SUBCASE("p01 above median") {
    CHECK(error_of_record(R"({"p01": 2.1e-6})") == "t.jsonl:2: p01: must be <= median (2e-06), found 2.1e-06");
  }
  SUBCASE("median above p99") {
    CHECK(error_of_record(R"({"median": 2.6e-6})") == "t.jsonl:2: p99: must be >= median (2.6e-06), found 2.5e-06");
  }
  SUBCASE("min above p01") {
    CHECK(error_of_record(R"({"min": 1.95e-6, "samples": []})") ==
          "t.jsonl:2: min: must be <= p01 (1.9e-06), found 1.95e-06");
  }
  SUBCASE("max below p99") {
    CHECK(error_of_record(R"({"max": 2.4e-6, "samples": []})") ==
          "t.jsonl:2: max: must be >= p99 (2.5e-06), found 2.4e-06");
  }
  SUBCASE("sample outside [min, max]") {
    CHECK(error_of_record(R"({"samples": [2e-6, 4e-6]})") ==
          "t.jsonl:2: samples[1]: must lie within [min, max] = [1.8e-06, 3e-06], found 4e-06");
  }
  SUBCASE("sample not a number") {
    CHECK(error_of_record(R"({"samples": [2e-6, null]})") == "t.jsonl:2: samples[1]: expected a number, found null");
  }
  SUBCASE("empty id") {
    CHECK(error_of_record(R"({"id": ""})") == "t.jsonl:2: id: must not be empty");
  }
}

TEST_CASE("trace: what the probe writes is accepted") {
  SUBCASE("null for a library the probe was built without") {
    Json header = Json::parse(header_line);
    header["nccl"] = nullptr;
    header["nvshmem"] = nullptr;
    const Trace trace = parse_trace(header.dump() + "\n", "t.jsonl");
    CHECK(trace.header.nccl.empty());
    CHECK(trace.header.nvshmem.empty());
  }
  SUBCASE("a number where a string belongs is still an error") {
    Json header = Json::parse(header_line);
    header["nccl"] = 2;
    CHECK(error_of(header.dump() + "\n") == "t.jsonl:1: nccl: expected a string or null, found 2");
  }
  SUBCASE("GPU properties beyond index, name and pci are kept") {
    Json header = Json::parse(header_line);
    header["gpus"][0]["sms"] = 132;
    const Trace trace = parse_trace(header.dump() + "\n", "t.jsonl");
    CHECK(trace.header.gpus[0].extra["sms"] == 132);
    CHECK(parse_trace(write_trace(trace), "t.jsonl").header == trace.header);
  }
  SUBCASE("a compute record with array extras (shape sets, per-second clock series)") {
    const std::string line = record_line(
        "compute/gemm/bf16/0/100/TN_m1_n1_k1",
        R"({"family": "compute", "ranks": [0], "sets": ["grid", "transformer"], "window_sm_clock_mhz": [1980, 1755.5]})");
    const Trace trace = parse_trace(trace_text({line}), "t.jsonl");
    REQUIRE(trace.records.size() == 1);
    CHECK(trace.records[0].family == Family::compute);
    CHECK(trace.records[0].extra["sets"] == Json::array({"grid", "transformer"}));
    CHECK(trace.records[0].extra["window_sm_clock_mhz"][1] == 1755.5);
    CHECK(parse_trace(write_trace(trace), "t.jsonl").records == trace.records);
  }
  SUBCASE("samples printed with fewer digits than max") {
    // max 2.99999996e-6 at 9 digits; the same sample at 7 digits rounds up to 3e-6.
    CHECK(error_of_record(R"({"p99": 2.99999996e-6, "max": 2.99999996e-6, "samples": [3e-6]})") == "no error");
  }
}

TEST_CASE("trace: families are a fixed list") {
  CHECK(all_families().size() == 9);
  for (Family f : all_families()) CHECK(family_from_string(to_string(f)) == f);
  CHECK_FALSE(family_from_string("nvlink").has_value());
}

TEST_CASE("trace: a missing file is an input error") {
  CHECK_THROWS_WITH_AS(read_trace("no/such/trace.jsonl"), "no/such/trace.jsonl: cannot open the file", InputError);
}

TEST_CASE("trace: the rate a record shows") {
  TraceRecord r;
  r.family = Family::copy;
  r.bytes = Bytes{1'000'000};
  r.unit = MeasureUnit::seconds;
  r.median = 1e-5;
  SUBCASE("a timed copy: bytes over the median time") {
    CHECK(record_rate(r)->count() == doctest::Approx(1e11));
  }
  SUBCASE("an explicit rate wins") {
    r.extra["sum_bw"] = 2e11;
    CHECK(record_rate(r)->count() == 2e11);
  }
  SUBCASE("a rate record: its median") {
    r.unit = MeasureUnit::bytes_per_second;
    r.median = 3e11;
    CHECK(record_rate(r)->count() == 3e11);
  }
  SUBCASE("a latency measures no transfer") {
    r.family = Family::latency;
    CHECK_FALSE(record_rate(r).has_value());
  }
}

TEST_CASE("trace: a number beyond a double is malformed JSON at its line, not an internal error") {
  // Found by fuzz/ (trace): nlohmann reports the overflow as out_of_range, not parse_error, and it escaped.
  CHECK(error_of(trace_text({R"({"id": "a", "median": 1.3e611})"})) ==
        "t.jsonl:2: malformed JSON: number overflow parsing '1.3e611'");
}
