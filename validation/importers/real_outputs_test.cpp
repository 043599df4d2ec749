// The importers on real output of the tools (samples/real/, sources in samples/real/README.md): one test per variant
// of each tool's output, checking record counts and values against the file. The numbers are formats, not ground
// truth: several runs were on unhealthy or misconfigured machines.
#include <doctest/doctest.h>

#include <filesystem>

#include "validation/importers/import.hpp"
#include "validation/importers/sample_files.hpp"

using namespace snsim;
using namespace snsim::validation;
using namespace snsim::validation::testing;

namespace {

Trace real(const std::string& name, const ImportOptions& options = {}) {
  return import_text(sample_text("real/" + name), name, options);
}

std::string real_error(const std::string& name, const ImportOptions& options = {}) {
  try {
    real(name, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const Json& platform(const Trace& t) {
  return t.header.extra["platform"];
}

std::size_t count_test(const Trace& t, const std::string& test, const std::string& variant) {
  return static_cast<std::size_t>(std::ranges::count_if(
      t.records, [&](const TraceRecord& r) { return r.test == test && (variant.empty() || r.variant == variant); }));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------------
// nccl-tests

TEST_CASE("real nccl-tests: no version line, collective from the file name, 2 nodes from the rank list") {
  const Trace t = real("nccl-allreduce-16xh100-2node-ib-default-nccltests290.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 22);  // 11 rows, out-of-place and in-place
  const TraceRecord& r = record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8589934592");
  CHECK(r.median == doctest::Approx(103530e-6));
  CHECK(r.extra["busbw"].get<double>() == doctest::Approx(155.57e9));
  CHECK(r.extra["wrong"].is_null());  // "#wrong" N/A: validation was off
  CHECK(r.reps == 200);
  CHECK(r.ranks.size() == 16);
  CHECK(t.header.extra["nccl_tests"][0]["test_from"] == "file name");
  CHECK(t.header.extra["nccl_tests"][0]["avg_busbw"].get<double>() == doctest::Approx(142.735e9));
  CHECK(platform(t)["gpu"] == "NVIDIA H100 80GB HBM3");
  CHECK(platform(t)["gpu_preset"] == "h100");
  CHECK(platform(t)["nodes"] == 2);
  CHECK(platform(t)["gpus_per_node"] == 8);
  CHECK(platform(t)["hosts"] == Json::array({"node005", "node007"}));
}

TEST_CASE("real nccl-tests: srun --label prefixes (\" 0: \") are stripped") {
  const Trace plain = real("nccl-allreduce-16xh100-2node-ib-default-nccltests290.txt");
  const Trace labelled = real("nccl-tests-issue290-all_reduce-16xh100-2node-srun-label.txt");
  CHECK(labelled.complete);
  REQUIRE(labelled.records.size() == plain.records.size());
  for (std::size_t i = 0; i < plain.records.size(); ++i) CHECK(labelled.records[i] == plain.records[i]);
  CHECK(platform(labelled)["nodes"] == 2);
}

TEST_CASE("real nccl-tests: exported NCCL variables before the log become the environment") {
  const Trace t = real("nccl-tests-issue290-all_reduce-16xh100-2node-ring-exports-srun-label.txt");
  CHECK(t.records.size() == 22);
  CHECK(t.header.env["NCCL_ALGO"] == "RING");
  CHECK(t.header.env["NCCL_IB_QPS_PER_CONNECTION"] == "2");
  CHECK_FALSE(t.header.env.contains("CUDA_DEVICE_ORDER"));  // only NCCL_* change what NCCL does
  CHECK(platform(t)["collective"]["algorithm"] == "RING");
  CHECK(platform(t)["from"]["collective.algorithm"] == "line 1");
  CHECK(record(t, "nccl-tests/all_reduce_perf/in_place/float/sum/8388608").median == doctest::Approx(405.5e-6));
}

TEST_CASE("real nccl-tests: -g 8, one process driving 8 GPUs") {
  const Trace t = real("nccl-tests-issue290-all_reduce-8xh100-1node-g8.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 12);
  CHECK(t.header.extra["nccl_tests"][0]["gpus_per_thread"] == 8);
  CHECK(platform(t)["ranks"] == 8);
  CHECK(platform(t)["nodes"] == 1);
  CHECK(record(t, "nccl-tests/all_reduce_perf/in_place/float/sum/4294967296").extra["busbw"].get<double>() ==
        doctest::Approx(476.53e9));
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/134217728").reps == 2);
}

TEST_CASE("real nccl-tests: NCCL version line between rank list and table, unknown name in the test list") {
  const Trace t = real("nccl-allreduce-16xh100-2node-ib-doca-UNHEALTHY-nccltests319.txt");
  CHECK(t.records.size() == 64);
  CHECK(t.header.nccl == "2.26.2+cuda12.8");
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/17179869184").extra["algbw"].get<double>() ==
        doctest::Approx(47.60e9));
}

TEST_CASE("real nccl-tests: a blank line inside the table and an odd step factor") {
  const Trace t = real("nccl-allreduce-16xh200-2node-roce-vm-UNHEALTHY-nccltests256.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 12);
  CHECK(platform(t)["gpu_preset"] == "h200");
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8153726976").median == doctest::Approx(278106e-6));
}

TEST_CASE("real nccl-tests: cloud VM log with validation on") {
  const Trace t = real("nccl-allreduce-16xh100-2node-gcp-a3mega-tcpxo-default.txt");
  CHECK(t.records.size() == 62);
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8").extra["wrong"] == 0);
  CHECK(platform(t)["hosts"] == Json::array({"ztan-mig-235z", "ztan-mig-gq73"}));
}

TEST_CASE("real nccl-tests: rank list elided, rank count from busbw/algbw") {
  const Trace t = real("nccl-allreduce-96xh100-12node-ib-sharp-coreweave-illustrative.txt");
  CHECK(t.records.size() == 10);
  CHECK(platform(t)["ranks"] == 96);  // busbw/algbw = 2(n-1)/n
  CHECK(platform(t)["gpu"].is_null());
  CHECK(platform(t)["gpu_preset_note"] == "the file names no GPU; snsim's GPU presets: b200, gb200, h100, h200");
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/536870912").ranks.size() == 96);
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/536870912").reps == 50);
}

TEST_CASE("real nccl-tests: one rank line of 72 (NVL72), a device name no preset knows") {
  const Trace t = real("nccl-tests-coreweave-pr43-all_reduce-72xgb200-nvl72-rank-list-cut.txt");
  CHECK(t.records.size() == 10);
  CHECK(platform(t)["ranks"] == 72);
  CHECK(platform(t)["gpu"] == "NVIDIA Graphics Device");
  CHECK(platform(t)["gpu_preset"].is_null());
  CHECK(platform(t)["gpu_preset_note"] ==
        "no preset for 'NVIDIA Graphics Device'; snsim's GPU presets: b200, gb200, h100, h200");
  CHECK(record(t, "nccl-tests/all_reduce_perf/in_place/float/sum/8589934592").extra["busbw"].get<double>() ==
        doctest::Approx(846.82e9));
}

TEST_CASE("real nccl-tests: a table without preamble and a cut end, --op naming the collective") {
  const Trace t = real("nccl-tests-issue128-reduce_scatter-8gpu-2node-zero-size-rows.txt");
  CHECK_FALSE(t.complete);
  CHECK(t.records.size() == 14);
  CHECK(t.header.extra["nccl_tests"][0]["test"] == "reduce_scatter_perf");  // from the file name
  CHECK(record(t, "nccl-tests/reduce_scatter_perf/out_of_place/float/sum/0~2").median == doctest::Approx(5.92e-6));
  // The same table under another name needs --op; a name the log contradicts is refused.
  ImportOptions op;
  op.collective = "reduce-scatter";
  const Trace renamed = import_text(
      sample_text("real/nccl-tests-issue128-reduce_scatter-8gpu-2node-zero-size-rows.txt"), "cluster.log", op);
  CHECK(renamed.header.extra["nccl_tests"][0]["test_from"] == "--op");
  CHECK(renamed.records.size() == 14);
  CHECK_THROWS_WITH_AS(
      import_text(sample_text("real/nccl-tests-issue128-reduce_scatter-8gpu-2node-zero-size-rows.txt"), "cluster.log"),
      "cluster.log:4: test: cannot tell which collective this is: no \"# Collective test starting:\" line, no "
      "command line naming a *_perf binary, no collective in the file name, and the columns (redop sum, root -1) fit "
      "all_reduce_perf, reduce_scatter_perf; name it with --op (known: all_gather_perf, all_reduce_perf, "
      "alltoall_perf, alltoallv_perf, broadcast_perf, gather_perf, hypercube_perf, reduce_perf, reduce_scatter_perf, "
      "scatter_perf, sendrecv_perf)",
      InputError);
}

TEST_CASE("real nccl-tests: two processes that each ran alone are an error, not a table") {
  CHECK(
      real_error("nccl-tests-issue107-all_reduce-2xv100-two-single-rank-jobs.txt") ==
      "nccl-tests-issue107-all_reduce-2xv100-two-single-rank-jobs.txt:9: rank: rank 0 is listed twice in one run: the "
      "processes did not form one job (an nccl-tests binary built without MPI, started by mpirun?)");
}

TEST_CASE("real nccl-tests 2.19: version and Collective test starting lines") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 52);  // 26 sizes from 8 B to 256 MiB
  CHECK(t.header.extra["source_version"] == "2.19.6");
  CHECK(t.header.nccl == "2.28.3");
  CHECK(t.header.extra["nccl_tests"][0]["test_from"] == "line 2");
  CHECK(platform(t)["gpu_preset"] == "h200");
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8").median == doctest::Approx(236.79e-6));
  CHECK(record(t, "nccl-tests/all_reduce_perf/in_place/float/sum/8").median == doctest::Approx(0.22e-6));
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8").extra["launch"] == "stream");
}

TEST_CASE("real nccl-tests 2.19: graph mode (-G 10)") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-graph.txt");
  CHECK(t.records.size() == 18);
  const TraceRecord& r = record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024");
  CHECK(r.extra["launch"] == "graph");
  CHECK(r.extra["graph_launches"] == 10);
  CHECK(r.median == doctest::Approx(1.09e-6));
  CHECK(platform(t)["collective"]["launch"] == "graph");
}

TEST_CASE("real nccl-tests 2.19: validation off (-c 0) gives #wrong N/A") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-register-nocheck.txt");
  CHECK(t.records.size() == 18);
  const TraceRecord& r = record(t, "nccl-tests/all_reduce_perf/in_place/float/sum/4096");
  CHECK(r.extra["wrong"].is_null());
  CHECK(r.median == doctest::Approx(0.35e-6));
  CHECK(t.header.extra["nccl_tests"][0]["validation"] == 0);
}

TEST_CASE("real nccl-tests 2.19: per-iteration columns (-I 1) and timestamps (-S 1)") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-per-iteration-timestamps.txt");
  CHECK(t.records.size() == 16);
  const TraceRecord& r = record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024");
  CHECK(r.median == doctest::Approx(7.40e-6));
  CHECK(r.min == doctest::Approx(5.70e-6));  // i_min bounds the mean from below
  CHECK(r.max == doctest::Approx(10.78e-6));
  CHECK(r.extra["iter_cv_percent"].get<double>() == doctest::Approx(16.48));
  CHECK(r.extra["timestamp"] == "2026-12-01 11:53:50");
}

TEST_CASE("real nccl-tests 2.19: every collective's name from its starting line") {
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {"nccl-tests-2.19.6-all_gather-1xh200.txt", "all_gather_perf"},
           {"nccl-tests-2.19.6-alltoall-1xh200.txt", "alltoall_perf"},
           {"nccl-tests-2.19.6-broadcast-1xh200.txt", "broadcast_perf"},
           {"nccl-tests-2.19.6-reduce_scatter-1xh200.txt", "reduce_scatter_perf"},
           {"nccl-tests-2.19.6-sendrecv-1xh200.txt", "sendrecv_perf"},
           {"nccl-tests-2.19.6-reduce-1xh200.txt", "reduce_perf"}}) {
    const auto& file = entry.first;
    const auto& test = entry.second;
    CAPTURE(file);
    const Trace t = real(file);
    CHECK(t.complete);
    CHECK(t.records.size() == 24);  // 12 sizes
    CHECK(count_test(t, test, "out_of_place") == 12);
  }
  // sendrecv's in-place half runs without validation: its #wrong is N/A while the out-of-place one is counted.
  const Trace t = real("nccl-tests-2.19.6-sendrecv-1xh200.txt");
  CHECK(record(t, "nccl-tests/sendrecv_perf/out_of_place/float/sum/8").extra["wrong"] == 0);
  CHECK(record(t, "nccl-tests/sendrecv_perf/in_place/float/sum/8").extra["wrong"].is_null());
}

TEST_CASE("real nccl-tests 2.19: mpirun --tag-output prefixes and NCCL INFO lines around the table") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-mpirun-tag-output-nccl-debug-info.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 16);
  CHECK(t.header.nccl == "2.28.3");
  CHECK(platform(t)["network"] == "socket");
  CHECK(platform(t)["collective"]["nvls_channels"] == 0);
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024").ranks == std::vector<int>{0});
}

TEST_CASE("real nccl-tests 2.19: -t threads under mpirun") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-mpirun-t1.txt");
  CHECK(t.records.size() == 16);
  CHECK(t.header.extra["nccl_tests"][0]["threads"] == 1);
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/1024").median == doctest::Approx(11.86e-6));
}

TEST_CASE("real nccl-tests 2.19: -J JSON output") {
  const Trace t = real("nccl-tests-2.19.6-all_reduce-1xh200-J.json");
  CHECK(t.complete);
  CHECK(t.header.extra["source"] == "nccl-tests");
  CHECK(t.header.nccl == "2.28.3");
  CHECK(t.records.size() == 24);
  const TraceRecord& r = record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8");
  CHECK(r.median == doctest::Approx(5.43655e-6));
  CHECK(r.extra["root"] == -1);  // printed "    -1"
  CHECK(r.extra["wrong"] == 0);
  CHECK(r.reps == 20);
  CHECK(platform(t)["gpu_preset"] == "h200");
  CHECK(t.header.env["NCCL_VERSION"] == "2.28.3-1");
}

TEST_CASE("real nccl-tests before 2.13: error column, per-test headers without root") {
  const Trace reduce = real("nccl-tests-2021-e55ad37-all_reduce-1xh200.txt");
  CHECK(reduce.records.size() == 24);
  const TraceRecord& r = record(reduce, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8");
  CHECK(r.median == doctest::Approx(5.58e-6));
  CHECK(r.extra["error"] == 0.0);
  CHECK(r.extra["wrong"].is_null());
  const Trace gather = real("nccl-tests-2021-e55ad37-all_gather-1xh200.txt");  // no redop column
  CHECK(gather.records.size() == 24);
  CHECK(record(gather, "nccl-tests/all_gather_perf/in_place/float/33554432").median == doctest::Approx(0.60e-6));
  CHECK(platform(gather)["gpu"] == "NVIDIA H200");
}

TEST_CASE("real nccl-tests 2.13 era: unified header, no version line") {
  const Trace t = real("nccl-tests-2022-51af557-all_reduce-1xh200.txt");
  CHECK(t.records.size() == 24);
  CHECK(t.header.extra["nccl_tests"][0]["test_from"] == "file name");
  CHECK(record(t, "nccl-tests/all_reduce_perf/out_of_place/float/sum/8").median == doctest::Approx(8.71e-6));
}

// ---------------------------------------------------------------------------------------------------------------------
// nvbandwidth

TEST_CASE("real nvbandwidth 0.10: several runs appended, latency, read and write CE, host copies") {
  const Trace t = real("nvbandwidth-d2d-ce-latency-8xh100-sxm-kr-unresolved.txt");
  CHECK(t.header.extra["source_version"] == "v0.10.0");
  CHECK(t.header.cuda == "13.2");
  CHECK(t.header.driver == "595.71.05");
  CHECK(t.records.size() == 184);  // 3 x 56 pairs + 2 x 8 host cells
  CHECK(count_test(t, "device_to_device_latency_sm", "") == 56);
  // Read: the row's GPU copies from the column's (printed "GPU(row) -> GPU(column)").
  const TraceRecord& read = record(t, "nvbandwidth/device_to_device_memcpy_read_ce/gpu1-gpu0");
  CHECK(read.median == doctest::Approx(395.08e9));  // row 0, column 1
  CHECK(read.extra["issuer"] == "gpu0");
  // Write: the row's GPU copies into the column's (printed "GPU(row) <- GPU(column)").
  const TraceRecord& write = record(t, "nvbandwidth/device_to_device_memcpy_write_ce/gpu0-gpu1");
  CHECK(write.median == doctest::Approx(397.44e9));
  CHECK(write.extra["issuer"] == "gpu0");
  const TraceRecord& lat = record(t, "nvbandwidth/device_to_device_latency_sm/gpu0-gpu1");
  CHECK(lat.median == doctest::Approx(826.42e-9));
  CHECK(lat.extra["reader"] == "gpu0");
  CHECK(record(t, "nvbandwidth/device_to_host_memcpy_ce/gpu7-cpu0").median == doctest::Approx(55.20e9));
  CHECK(record(t, "nvbandwidth/host_to_device_memcpy_ce/cpu0-gpu7").median == doctest::Approx(55.33e9));
  // No device list in the file: the GPU count comes from the matrices, the model stays unknown.
  CHECK(platform(t)["ranks"] == 8);
  CHECK(platform(t)["gpu"].is_null());
}

TEST_CASE("real nvbandwidth 0.8: every single-GPU testcase, waived ones counted") {
  const Trace t = real("nvbandwidth-v0.8-1xh200.txt");
  CHECK(t.records.size() == 18);
  CHECK(t.header.host == "vm");
  CHECK(t.header.gpus.at(0).pci == "00000000:00:06");
  CHECK(platform(t)["gpu_preset"] == "h200");
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes[0] ==
        "nvbandwidth-v0.8-1xh200.txt: 17 testcases were waived (not run: this machine lacks what they need)");
  const TraceRecord& h2d = record(t, "nvbandwidth/host_to_device_memcpy_ce/cpu0-gpu0");
  CHECK(h2d.median == doctest::Approx(55.24e9));
  CHECK(h2d.bytes == Bytes{512ull << 20});
  CHECK(record(t, "nvbandwidth/host_to_device_bidirectional_memcpy_ce/cpu0-gpu0").extra["direction"] == "bidir_one");
  CHECK(record(t, "nvbandwidth/all_to_host_memcpy_sm/gpu0-cpu0").extra["pattern"] == "all_to_host");
  CHECK(record(t, "nvbandwidth/host_to_all_memcpy_sm/cpu0-gpu0").median == doctest::Approx(51.37e9));
  const TraceRecord& lat = record(t, "nvbandwidth/host_device_latency_sm/cpu0-gpu0");
  CHECK(lat.family == Family::latency);
  CHECK(lat.median == doctest::Approx(1193.71e-9));
  CHECK(lat.extra["owner"] == "cpu0");
  CHECK(record(t, "nvbandwidth/device_local_copy/gpu0-gpu0").median == doctest::Approx(2095.11e9));
}

TEST_CASE("real nvbandwidth 0.8: JSON (-j) of the same machine") {
  const Trace text = real("nvbandwidth-v0.8-1xh200.txt");
  const Trace json = real("nvbandwidth-v0.8-1xh200-j.json");
  CHECK(json.records.size() == 18);
  CHECK(json.header.host == "vm");
  CHECK(json.header.cuda == "13.0");
  CHECK(platform(json)["gpu_preset"] == "h200");
  // The two runs measured the same cells (their values differ run to run).
  for (const TraceRecord& r : text.records) CHECK_NOTHROW(record(json, r.id));
  CHECK(record(json, "nvbandwidth/host_to_device_memcpy_ce/cpu0-gpu0").median == doctest::Approx(55.3918e9));
}

TEST_CASE("real nvbandwidth 0.8: a GPU model without a preset (H20-3e)") {
  const Trace t = real("nvbandwidth-issue48-v0.8-device_local_copy-8xh20-3e.txt");
  CHECK(t.records.size() == 8);
  CHECK(t.header.host == "sglang-host-cuda");
  CHECK(t.header.gpus.size() == 8);
  CHECK(platform(t)["gpu"] == "NVIDIA H20-3e");
  CHECK(platform(t)["gpu_preset"].is_null());
  CHECK(record(t, "nvbandwidth/device_local_copy/gpu6-gpu6").median == doctest::Approx(1117.17e9));
}

TEST_CASE("real nvbandwidth 0.8: a pasted matrix without its Running line is named by its SUM line") {
  const Trace t = real("nvbandwidth-issue50-v0.8-d2d-read-ce-6xa6000.txt");
  CHECK(t.records.size() == 30);
  CHECK(t.header.cuda == "13.0");
  CHECK(record(t, "nvbandwidth/device_to_device_memcpy_read_ce/gpu3-gpu0").median == doctest::Approx(21.95e9));
  CHECK(t.notes.at(0).find("its \"SUM device_to_device_memcpy_read_ce\" line names the testcase") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------------------
// p2pBandwidthLatencyTest

TEST_CASE("real p2pBandwidthLatencyTest: 8 GPUs, P2P off and on, uni- and bidirectional, GPU and CPU latency") {
  const Trace t = real("p2pBandwidthLatencyTest-8xh100-sxm-kr-unresolved.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 512);  // 4 bandwidth and 4 latency matrices of 8 x 8
  CHECK(platform(t)["gpu_preset"] == "h100");
  CHECK(platform(t)["ranks"] == 8);
  const TraceRecord& w = record(t, "p2pBandwidthLatencyTest/unidir_p2p_writes/gpu0-gpu1");
  CHECK(w.median == doctest::Approx(365.30e9));  // row 0 writes into column 1
  CHECK(w.extra["peer_access"] == true);
  CHECK(record(t, "p2pBandwidthLatencyTest/bidir_p2p_enabled/gpu1-gpu0").median == doctest::Approx(774.45e9));
  CHECK(record(t, "p2pBandwidthLatencyTest/unidir_p2p_disabled/gpu3-gpu3").median == doctest::Approx(2876.37e9));
  CHECK(record(t, "p2pBandwidthLatencyTest/p2p_writes_gpu/gpu0-gpu1").median == doctest::Approx(3.34e-6));
  CHECK(record(t, "p2pBandwidthLatencyTest/p2p_disabled_cpu/gpu7-gpu0").median == doctest::Approx(6.77e-6));
  CHECK(record(t, "p2pBandwidthLatencyTest/p2p_writes_gpu/gpu0-gpu1").bytes == Bytes{16});
}

TEST_CASE("real p2pBandwidthLatencyTest: --p2p_read adds read matrices (1 GPU)") {
  const Trace t = real("p2pBandwidthLatencyTest-cuda13-1xh200-p2p-read.txt");
  CHECK(t.complete);
  CHECK(t.records.size() == 11);
  CHECK(record(t, "p2pBandwidthLatencyTest/unidir_p2p_reads/gpu0-gpu0").median == doctest::Approx(3974.88e9));
  CHECK(record(t, "p2pBandwidthLatencyTest/p2p_reads_cpu/gpu0-gpu0").median == doctest::Approx(7.57e-6));
  const Trace plain = real("p2pBandwidthLatencyTest-cuda13-1xh200.txt");
  CHECK(plain.complete);
  CHECK(plain.records.size() == 8);
}

TEST_CASE("real p2pBandwidthLatencyTest: PCIe machine, reads, pasted without its device list and cut short") {
  const Trace t = real("p2pBandwidthLatencyTest-nccl814-6gpu-pcie-p2p-read-cut.txt");
  CHECK_FALSE(t.complete);
  CHECK(t.records.size() == 108);  // 3 full 6 x 6 matrices
  const TraceRecord& read = record(t, "p2pBandwidthLatencyTest/unidir_p2p_reads/gpu1-gpu0");
  CHECK(read.median == doctest::Approx(9.90e9));  // row 0 reads from column 1
  CHECK(read.extra["issuer"] == "gpu0");
  CHECK(platform(t)["gpu"].is_null());
}

// ---------------------------------------------------------------------------------------------------------------------
// NVSHMEM perftest

TEST_CASE("real NVSHMEM perftest: shmem_put_bw over IB, options and two PEs on two nodes") {
  const Trace t = real("nvshmem-shmem_put_bw-2xh200-internode-ib-ctc.txt");
  CHECK(t.records.size() == 24);
  const TraceRecord& r = record(t, "perftest/shmem_put_bw_uni/none/bw/33554432");
  CHECK(r.median == doctest::Approx(48.364090e9));
  CHECK(r.unit == MeasureUnit::bytes_per_second);
  CHECK(r.reps == 50);
  CHECK(r.extra["blocks"] == 32);
  CHECK(r.extra["threads"] == 256);
  CHECK(r.extra["direction"] == "uni");
  CHECK(r.ranks == std::vector<int>{0, 1});
  CHECK(t.header.extra["perftest_options"]["putget_issue"] == "on_stream");
  CHECK(platform(t)["nodes"] == 2);
  CHECK(platform(t)["gpus_per_node"] == 1);
  CHECK(platform(t)["gpu_preset"] == "h200");
}

TEST_CASE("real NVSHMEM perftest: ping-pong latency, the second PE reported after the table") {
  const Trace t = real("nvshmem-shmem_put_ping_pong_latency-2xh200-internode-ib-ctc.txt");
  CHECK(t.records.size() == 19);
  const TraceRecord& r = record(t, "perftest/shmem_put_ping_lat/none/latency/4");
  CHECK(r.variant == "round_trip");
  CHECK(r.median == doctest::Approx(22.785601e-6));
  CHECK(r.reps == 500);
  CHECK(r.ranks == std::vector<int>{0, 1});
}

TEST_CASE("real NVSHMEM perftest: on-stream collective with min and max latency") {
  const Trace t = real("perftest-nvshmem39-reduction_on_stream-cut.txt");
  CHECK(t.records.size() == 7);
  const TraceRecord& r = record(t, "perftest/reduction_on_stream/none/latency/8");
  CHECK(r.median == doctest::Approx(7.1936e-6));
  CHECK(r.min == r.median);  // "7.194" is the mean rounded to 3 decimals
  CHECK(r.extra["busbw"].get<double>() == doctest::Approx(0.002e9));
}

TEST_CASE("real NVSHMEM perftest: srun output with a CUDA API banner, cut short") {
  const Trace t = real("perftest-awslabs599-shmem_put_bw-srun-2node-cut.txt");
  CHECK(t.records.size() == 18);
  CHECK(record(t, "perftest/shmem_put_bw_uni/none/bw/524288").median == doctest::Approx(9.839648e9));
}

TEST_CASE("real outputs: every file under samples/real/ imports (or fails with its documented error)") {
  const std::filesystem::path dir = std::string(SNSIM_SOURCE_DIR) + "/validation/importers/samples/real";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    ++files;
    CAPTURE(name);
    if (name.starts_with("nccl-tests-issue107")) {
      CHECK_THROWS_AS(real(name), InputError);
      continue;
    }
    const Trace t = real(name);
    CHECK_FALSE(t.records.empty());
    CHECK(t.header.extra.contains("platform"));
    const Trace back = import_text(write_trace(t), "back.jsonl");
    CHECK(back.records == t.records);
  }
  CHECK(files == 41);
}
