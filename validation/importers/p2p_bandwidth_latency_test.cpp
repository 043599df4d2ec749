#include <doctest/doctest.h>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

TEST_CASE("import p2pBandwidthLatencyTest: bandwidth and latency matrices") {
  const Trace trace = import_sample("p2p_bandwidth_latency.txt");
  CHECK(trace.complete);
  REQUIRE(trace.header.gpus.size() == 2);
  CHECK(trace.header.gpus[1] == TraceGpu{1, "NVIDIA H200", "0000:2a:00"});
  CHECK(trace.header.extra["source"] == "p2pBandwidthLatencyTest");
  CHECK(trace.records.size() == 32);  // 4 bandwidth and 4 latency tables of 2x2

  SUBCASE("P2P writes: the row's GPU writes into the column's") {
    // cudaMemcpyPeerAsync(buffers[j], j, buffers[i], i) on GPU i's stream: cell [i][j] is i -> j.
    const TraceRecord& r = record(trace, "p2pBandwidthLatencyTest/unidir_p2p_writes/gpu0-gpu1");
    CHECK(r.family == Family::copy);
    CHECK(r.ranks == std::vector<int>{0, 1});
    CHECK(r.median == doctest::Approx(367.42e9));  // row 0 (source), column 1 (destination)
    CHECK(r.extra["issuer"] == "gpu0");
    CHECK(r.extra["peer_access"] == true);
    CHECK(r.extra["direction"] == "uni");
  }
  SUBCASE("bidirectional cells are sums") {
    const TraceRecord& r = record(trace, "p2pBandwidthLatencyTest/bidir_p2p_enabled/gpu0-gpu1");
    CHECK(r.median == doctest::Approx(733.91e9));
    CHECK(r.extra["direction"] == "bidir_sum");
  }
  SUBCASE("a diagonal cell is a local copy") {
    CHECK(record(trace, "p2pBandwidthLatencyTest/unidir_p2p_disabled/gpu0-gpu0").ranks == std::vector<int>{0});
  }
  SUBCASE("latency: GPU events and CPU enqueue time are different records") {
    const TraceRecord& gpu = record(trace, "p2pBandwidthLatencyTest/p2p_writes_gpu/gpu0-gpu1");
    CHECK(gpu.family == Family::latency);
    CHECK(gpu.unit == MeasureUnit::seconds);
    CHECK(gpu.median == doctest::Approx(1.98e-6));  // row 0 writes to column 1
    CHECK(gpu.extra["timer"] == "gpu_events");
    CHECK(record(trace, "p2pBandwidthLatencyTest/p2p_disabled_cpu/gpu1-gpu0").median == doctest::Approx(7.41e-6));
  }
}

TEST_CASE("import p2pBandwidthLatencyTest: output cut short is incomplete") {
  const Trace trace = import_sample("p2p_bandwidth_latency_cut.txt");
  CHECK_FALSE(trace.complete);
  CHECK(trace.records.size() == 14);
  REQUIRE(trace.notes.size() == 1);
  CHECK(trace.notes[0] ==
        "p2p_bandwidth_latency_cut.txt: incomplete: the P2P=Enabled latency matrix is missing or cut short; read 14 "
        "records");
}

TEST_CASE("import p2pBandwidthLatencyTest: malformed output gives one exact error") {
  SUBCASE("a bad cell") {
    CHECK_THROWS_WITH_AS(import_p2p_bandwidth_latency("P2P Connectivity Matrix\nP2P=Disabled Latency Matrix (us)\n"
                                                      "   GPU     0      1\n     0   2.10  x\n",
                                                      "p.txt"),
                         "p.txt:4: [0][1]: expected a number, found 'x'", InputError);
  }
  SUBCASE("no matrix") {
    CHECK_THROWS_WITH_AS(
        import_p2p_bandwidth_latency("P2P Connectivity Matrix\n", "p.txt"),
        "p.txt: p2pBandwidthLatencyTest: no bandwidth or latency matrix (a title line like "
        "\"Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\" followed by \"   D\\D     0      1\")",
        InputError);
  }
}

TEST_CASE("import p2pBandwidthLatencyTest: before CUDA 10 every copy went from the column's GPU into the row's") {
  const Trace trace = import_sample("p2p_bandwidth_latency_cuda9.txt");
  CHECK(trace.complete);
  CHECK(trace.records.size() == 24);  // 4 bandwidth and 2 latency matrices of 2 x 2
  CHECK(trace.header.extra["source_version"] == "before CUDA 10");
  const TraceRecord& r = record(trace, "p2pBandwidthLatencyTest/unidir_p2p_enabled/gpu1-gpu0");
  CHECK(r.median == doctest::Approx(48.42e9));  // row 0, column 1
  CHECK(r.bytes == Bytes{40'000'000});
  CHECK(r.reps == 10);
  const TraceRecord& lat = record(trace, "p2pBandwidthLatencyTest/p2p_enabled/gpu1-gpu0");
  CHECK(lat.median == doctest::Approx(2.05e-6));
  CHECK(lat.bytes == Bytes{1});
  CHECK(trace.header.extra["platform"]["gpu_preset"].is_null());  // Tesla V100
}
