#include <doctest/doctest.h>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

TEST_CASE("import nvbandwidth text: one record per measured cell, direction from the testcase") {
  const Trace trace = import_sample("nvbandwidth.txt");
  CHECK(trace.complete);
  CHECK(trace.header.host == "gpunode");
  CHECK(trace.header.driver == "580.159");
  CHECK(trace.header.cuda == "13.0");
  CHECK(trace.header.extra["source_version"] == "v0.8");
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[0].name == "NVIDIA H200");
  CHECK(trace.header.gpus[0].pci == "00000000:18:00");
  CHECK(trace.header.gpus[0].extra["host"] == "gpunode");
  CHECK(trace.records.size() == 14);

  SUBCASE("GPU(row) <- GPU(column): bytes flow column to row") {
    const TraceRecord& r = record(trace, "nvbandwidth/device_to_device_memcpy_read_ce/gpu1-gpu0");
    CHECK(r.family == Family::copy);
    CHECK(r.ranks == std::vector<int>{1, 0});
    CHECK(r.unit == MeasureUnit::bytes_per_second);
    CHECK(r.median == doctest::Approx(389.12e9));
    CHECK(r.bytes == Bytes{512ull << 20});
    CHECK(r.extra["engine"] == "ce");
    CHECK(r.extra["direction"] == "uni");
    CHECK(r.extra["statistic"] == "median");
    CHECK(r.extra["assumed"] == Json::array({"bytes", "reps"}));
  }
  SUBCASE("host to device: the CPU is no rank") {
    const TraceRecord& r = record(trace, "nvbandwidth/host_to_device_memcpy_ce/cpu0-gpu1");
    CHECK(r.ranks == std::vector<int>{1});
    CHECK(r.extra["src"] == "cpu0");
    CHECK(r.median == doctest::Approx(55.34e9));
  }
  SUBCASE("bidirectional: per direction and the sum") {
    // Read1 copies from the column's GPU into the row's, Read2 the other way (testcases_ce.cpp); the total of a cell
    // is named after Read1's direction.
    const TraceRecord& read1 =
        record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_read_ce/read1/gpu1-gpu0");
    CHECK(read1.extra["direction"] == "bidir_one");
    CHECK(read1.median == doctest::Approx(370.10e9));  // row 0, column 1
    CHECK(record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_read_ce/read2/gpu0-gpu1").median ==
          doctest::Approx(370.31e9));  // row 0, column 1 of Read2
    const TraceRecord& total =
        record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_read_ce/total/gpu1-gpu0");
    CHECK(total.variant == "total");
    CHECK(total.extra["direction"] == "bidir_sum");
    CHECK(total.median == doctest::Approx(740.41e9));
  }
  SUBCASE("local copy and latency") {
    CHECK(record(trace, "nvbandwidth/device_local_copy/gpu1-gpu1").ranks == std::vector<int>{1});
    const TraceRecord& lat = record(trace, "nvbandwidth/device_to_device_latency_sm/gpu1-gpu0");
    CHECK(lat.family == Family::latency);
    CHECK(lat.unit == MeasureUnit::seconds);
    CHECK(lat.median == doctest::Approx(811.95e-9));
    CHECK(lat.bytes == Bytes{0});
  }
}

TEST_CASE("import nvbandwidth JSON: cells are strings, bidirectional matrices are split in three") {
  const Trace trace = import_sample("nvbandwidth.json");
  CHECK(trace.header.host == "gpunode");
  CHECK(trace.header.cuda == "13.0");
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[1].name == "NVIDIA H200");
  CHECK(trace.header.gpus[1].pci == "00000000:2a:00");
  CHECK(trace.header.gpus[1].extra["host"] == "gpunode");
  CHECK(trace.records.size() == 10);
  REQUIRE(trace.notes.size() == 1);
  CHECK(trace.notes[0] ==
        "nvbandwidth.json: testcase multinode_device_to_device_memcpy_read_ce skipped: status Waived");

  CHECK(record(trace, "nvbandwidth/device_to_device_memcpy_write_ce/gpu0-gpu1").median == doctest::Approx(391.5e9));
  // Write1 copies from the column's GPU into the row's, like Read1 (testcases_ce.cpp, DeviceToDeviceBidirWriteCE):
  // the cell at row 0, column 1 is gpu1 -> gpu0.
  CHECK(record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_write_ce/write1/gpu1-gpu0").median ==
        doctest::Approx(371.0e9));
  CHECK(record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_write_ce/write2/gpu0-gpu1").median ==
        doctest::Approx(370.8e9));
  const TraceRecord& total =
      record(trace, "nvbandwidth/device_to_device_bidirectional_memcpy_write_ce/total/gpu1-gpu0");
  CHECK(total.median == doctest::Approx(741.8e9));
  CHECK(total.extra["direction"] == "bidir_sum");
  CHECK(record(trace, "nvbandwidth/host_to_device_memcpy_sm/cpu0-gpu1").extra["engine"] == "sm");
}

TEST_CASE("import nvbandwidth: malformed output gives one exact error") {
  SUBCASE("text: a short row") {
    CHECK(import_error("nvbandwidth_bad_row.txt") ==
          "nvbandwidth_bad_row.txt:6: device_to_device_memcpy_write_sm: expected 2 cells as in the column labels on "
          "line 4, found 1");
  }
  SUBCASE("JSON: a cell that is not a number") {
    CHECK(import_error("nvbandwidth_bad_cell.json") ==
          "nvbandwidth_bad_cell.json: nvbandwidth.testcases[0].bandwidth_matrix[0][1]: expected a number, found "
          "'fast'");
  }
  SUBCASE("JSON: not nvbandwidth's shape") {
    CHECK_THROWS_WITH_AS(import_nvbandwidth_json("{\"nvbandwidth\": 3}", "x.json"),
                         "x.json: nvbandwidth: expected an object {\"nvbandwidth\": {...}}", InputError);
  }
}

TEST_CASE("import nvbandwidth: a number beyond a double is malformed JSON, not an internal error") {
  // Found by fuzz/ in the trace reader, which parses JSON the same way.
  CHECK_THROWS_WITH_AS(import_nvbandwidth_json(R"({"nvbandwidth": {"version": 1e999}})", "x.json"),
                       "x.json: malformed JSON: number overflow parsing '1e999'", InputError);
}

TEST_CASE("import nvbandwidth: multinode processes, bisect rows and a whole-job multicast cell") {
  const Trace trace = import_sample("nvbandwidth_multinode.txt");
  CHECK(trace.records.size() == 17);  // 12 pairs, 4 bisect rows, 1 multicast cell
  REQUIRE(trace.header.gpus.size() == 4);
  CHECK(trace.header.gpus[2].extra["host"] == "rack0-tray2");
  const Json& platform = trace.header.extra["platform"];
  CHECK(platform["gpu_preset"] == "gb200");
  CHECK(platform["nodes"] == 2);
  CHECK(platform["gpus_per_node"] == 2);
  CHECK(record(trace, "nvbandwidth/multinode_device_to_device_memcpy_read_ce/gpu1-gpu0").median ==
        doctest::Approx(773.10e9));
  const TraceRecord& bisect = record(trace, "nvbandwidth/multinode_bisect_write_ce/gpu2-gpu0");
  CHECK(bisect.median == doctest::Approx(770.55e9));
  CHECK(bisect.extra["pattern"] == "bisect");
  CHECK_FALSE(bisect.extra.contains("aggregate"));
  const TraceRecord& multicast =
      record(trace, "nvbandwidth/multinode_device_to_device_broadcast_all_to_all_sm/all-all");
  CHECK(multicast.ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(multicast.extra["engine"] == "multicast");
  CHECK(multicast.extra["aggregate"] == "total");
}

TEST_CASE(
    "import nvbandwidth: before 0.7 the buffer was 64 MiB, device lines lacked PCI ids, unknown testcases are noted") {
  const Trace trace = import_sample("nvbandwidth_v0.4.txt");
  CHECK(trace.records.size() == 4);
  CHECK(trace.header.cuda == "12.2");
  CHECK(trace.header.gpus.at(1).name == "NVIDIA A100-SXM4-80GB");
  CHECK(trace.header.extra["platform"]["gpu_preset"].is_null());
  CHECK(trace.header.extra["platform"]["gpu_preset_note"] ==
        "no preset for 'NVIDIA A100-SXM4-80GB'; snsim's GPU presets: b200, gb200, h100, h200");
  CHECK(record(trace, "nvbandwidth/host_to_device_memcpy_ce/cpu0-gpu1").bytes == Bytes{64ull << 20});
  const TraceRecord& inbound = record(trace, "nvbandwidth/all_to_one_write_ce/others-gpu1");
  CHECK(inbound.median == doctest::Approx(245.97e9));
  CHECK(inbound.ranks == std::vector<int>{0, 1});  // the senders, then the receiver
  REQUIRE(trace.notes.size() == 1);
  CHECK(trace.notes[0].starts_with(
      "nvbandwidth_v0.4.txt: testcases snsim does not know were left out: device_to_device_everything_ce"));
}

TEST_CASE("import nvbandwidth: a CUDA version that is no version integer is kept as written") {
  auto cuda_of = [](const std::string& version) {
    const std::string text = sample_text("nvbandwidth.txt");
    const auto at = text.find("CUDA Runtime Version: 13000");
    REQUIRE(at != std::string::npos);
    std::string edited = text;
    edited.replace(at, std::string("CUDA Runtime Version: 13000").size(), "CUDA Runtime Version: " + version);
    return import_nvbandwidth_text(edited, "t.txt").header.cuda;
  };
  CHECK(cuda_of("12020") == "12.2");
  CHECK(cuda_of("88888888888888888888888812020") == "88888888888888888888888812020");
  CHECK(cuda_of("12020.5") == "12020.5");
}
