// Unified-memory ops end to end: each TEST_CASE that runs a simulation is its own process (one simulation per
// process). Expected times come from the model's formulas (models/uvm.hpp), which calibration uses too, and from
// the formula written out by hand.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <algorithm>
#include <cmath>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;
using namespace snsim::literals;
using models::UvmPath;

using namespace snsim::workloads::testing;

namespace {
std::vector<OpRecord> records(const Report& report, const std::string& kind) {
  std::vector<OpRecord> out;
  for (const auto& o : report.ops)
    if (o.kind == kind) out.push_back(o);
  return out;
}

const OpRecord& record(const Report& report, const std::string& kind) {
  for (const auto& o : report.ops)
    if (o.kind == kind) return o;
  throw std::logic_error("no such record: " + kind);
}

/// A cell of the uvm table: the row of `location`, the column `column`.
double uvm_cell(const Report& report, const std::string& location, const std::string& column) {
  for (const auto& t : report.tables) {
    if (!t.title.starts_with("uvm")) continue;
    const auto c = std::ranges::find(t.columns, column) - t.columns.begin();
    for (const auto& row : t.rows)
      if (row[0] == location) return row[static_cast<std::size_t>(c)].get<double>();
  }
  throw std::logic_error("no uvm cell " + location + " " + column);
}

// The hgx preset: host <-> GPU is one PCIe Gen5 hop (500 ns, 63 GB/s per direction).
constexpr Seconds PCIE_LATENCY{500e-9};
constexpr BytesPerSecond PCIE{63e9};
}  // namespace

TEST_CASE("uvm: a first touch takes the kernel start plus, per batch, its service and its migration") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: A, bytes: 4MiB}}, {touch: {buffer: A}}]}]\n");
  const Report r = s.run();
  const auto& m = *s.models().uvm;
  const auto& touch = record(r, "touch");
  const double elapsed = (touch.end - touch.start).count();
  CHECK(relative_error(elapsed, m.first_touch_time(UvmPath::host_to_gpu, 4_MiB, 4_KiB, PCIE_LATENCY, PCIE).count()) <=
        1e-9);
  // By hand: 1,024 faults on 4 KiB pages, 4 full batches of 256, each migrating 1 MiB at the host -> GPU rate.
  const auto& h2d = m.params(UvmPath::host_to_gpu);
  const double batch =
      m.batch_service.count() + 256 * h2d.fault_service.count() + 500e-9 + (1 << 20) / h2d.bandwidth.count();
  CHECK(relative_error(elapsed, m.kernel_start.count() + 4 * batch) <= 1e-9);
  CHECK(records(r, "fault").size() == 4);
  CHECK(records(r, "migrate").size() == 4);
  CHECK(uvm_cell(r, "gpu0", "faults") == 1024);
  CHECK(uvm_cell(r, "gpu0", "fault_batches") == 4);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 4 << 20);
  CHECK(uvm_cell(r, "host", "migrated_out_bytes") == 4 << 20);
  CHECK(relative_error(uvm_cell(r, "gpu0", "fault_service_us") * 1e-6, 4 * batch) <= 1e-9);
}

TEST_CASE("uvm: a prefetch moves the bytes once, over the route, and a second one moves nothing") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: A, bytes: 64MiB, on: 1}},\n"
      "  {prefetch: {buffer: A, to: self}}, {prefetch: {buffer: A, to: 0}}, {touch: {buffer: A}}]}]\n");
  const Report r = s.run();
  const auto& m = *s.models().uvm;
  const auto first = records(r, "prefetch").at(0), second = records(r, "prefetch").at(1);
  CHECK(relative_error((first.end - first.start).count(),
                       m.prefetch_time(UvmPath::gpu_to_gpu, 64_MiB, Seconds{354e-9}, BytesPerSecond{450e9}).count()) <=
        1e-9);
  CHECK(second.end == second.start);
  CHECK(records(r, "migrate").size() == 1);
  CHECK(records(r, "fault").empty());  // resident after the prefetch: the touch does not fault
  CHECK(uvm_cell(r, "gpu0", "faults") == 0);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 64 << 20);
  CHECK(uvm_cell(r, "gpu1", "migrated_out_bytes") == 64 << 20);
  for (const auto& link : r.links)
    if (link.name == "gpu1->nvswitch[0-3]") CHECK(link.payload_bytes == 64_MiB);
}

TEST_CASE("uvm: an accessed-by GPU reads a buffer kept at its preferred location over NVLink, without migrating") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: B, bytes: 256MiB, on: 1}},\n"
      "  {advise: {buffer: B, preferred: 1, accessed_by: [0]}}, {read: {buffer: B}}]}]\n");
  const Report r = s.run();
  CHECK(records(r, "fault").empty());
  CHECK(records(r, "migrate").empty());
  CHECK(uvm_cell(r, "gpu0", "faults") == 0);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 0);
  // The read is the PGAS model's streaming load from the peer after the kernel's start.
  const auto& read = record(r, "read");
  const models::PgasRoute route{Seconds{354e-9}, Seconds{354e-9}, BytesPerSecond{450e9}};
  CHECK(relative_error(
            (read.end - read.start).count(),
            (s.models().uvm->kernel_start + s.models().pgas->peer_stream_time(256_MiB, 256_MiB, route)).count()) <=
        1e-9);
  for (const auto& link : r.links)
    if (link.name == "gpu1->nvswitch[0-3]") CHECK(link.payload_bytes == 256_MiB);
}

TEST_CASE("uvm: the density prefetcher brings a 2 MiB block along once more than 51 % of it is resident") {
  // A: 1.5 MiB of a 2 MiB block touched: 384 faults (75 %), the other 128 pages follow without faulting.
  // B: 1 MiB touched (50 %, not past the threshold): only the touched pages move.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: A, bytes: 2MiB}}, {managed: {name: B, bytes: "
      "2MiB}},\n"
      "  {touch: {buffer: A, bytes: 1536KiB}}, {touch: {buffer: B, bytes: 1MiB}}, {touch: {buffer: A}}]}]\n");
  const Report r = s.run();
  CHECK(uvm_cell(r, "gpu0", "faults") == 384 + 256);
  CHECK(uvm_cell(r, "gpu0", "density_prefetched_bytes") == 512 << 10);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == (2 << 20) + (1 << 20));
  CHECK(records(r, "fault").size() == 3);  // 256 + 128 faults on A, 256 on B; the last touch of A finds it resident
}

TEST_CASE("uvm: op mistakes are pinned errors") {
  auto error = [](const std::string& ops) {
    try {
      load("topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ranks: 0, ops: " + ops + "}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("[{touch: {buffer: A}}]") ==
        "t.yaml:2:62: workloads[0].ops[0].touch.buffer: unknown managed buffer 'A'; none is declared before it");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {prefetch: {buffer: X, to: 0}}]") ==
        "t.yaml:2:100: workloads[0].ops[1].prefetch.buffer: unknown managed buffer 'X'; declared: A");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {touch: {buffer: A, offset: 3MiB, bytes: 2MiB}}]") ==
        "t.yaml:2:121: workloads[0].ops[1].touch.bytes: offset 3 MiB + 2 MiB runs past the end of buffer 'A' (4 "
        "MiB)");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {read: {buffer: A, offset: 4MiB}}]") ==
        "t.yaml:2:107: workloads[0].ops[1].read.offset: 4 MiB is past the end of buffer 'A' (4 MiB)");
  CHECK(error("[{managed: {name: A, bytes: 4MiB, page: 8KiB}}]") ==
        "t.yaml:2:84: workloads[0].ops[0].managed.page: expected 4KiB, 64KiB or 2MiB, found 8 KiB");
  CHECK(error("[{managed: {name: A, bytes: 4TiB}}]") ==
        "t.yaml:2:72: workloads[0].ops[0].managed.bytes: 4 TiB exceeds the GPUs' memory plus the host's 2 TiB "
        "(2.27422 TiB in all)");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {managed: {name: A, bytes: 4MiB}}]") ==
        "t.yaml:2:97: workloads[0].ops[1].managed.name: buffer 'A' is already declared in this program");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {advise: {buffer: A, accessed_by: [host]}}]") ==
        "t.yaml:2:115: workloads[0].ops[1].advise.accessed_by[0]: the host always reaches managed memory; expected a "
        "GPU");
  CHECK(error("[{managed: {name: A, bytes: 4MiB}}, {touch: {buffer: A, access: modify}}]") ==
        "t.yaml:2:108: workloads[0].ops[1].touch.access: expected read or write, found 'modify'");
}

TEST_CASE("uvm: eviction keeps a GPU within its limit and moves the evicted bytes to the host") {
  // Four 2 MiB blocks into a GPU that holds two: the third and fourth each evict the oldest block to the host.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {uvm: {gpu_memory_limit: 4MiB}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: A, bytes: 8MiB, page: 2MiB}},\n"
      "  {touch: {buffer: A}}, {touch: {buffer: A, offset: 4MiB}}]}]\n");
  const Report r = s.run();
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 8 << 20);
  CHECK(uvm_cell(r, "gpu0", "evicted_bytes") == 4 << 20);
  CHECK(uvm_cell(r, "gpu0", "migrated_out_bytes") == 4 << 20);
  CHECK(uvm_cell(r, "host", "migrated_in_bytes") == 4 << 20);
  CHECK(uvm_cell(r, "host", "migrated_out_bytes") == 8 << 20);
  // What stays resident (in - out) is the limit, and the last two blocks are it: touching them again faults nothing.
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") - uvm_cell(r, "gpu0", "migrated_out_bytes") == 4 << 20);
  CHECK(uvm_cell(r, "gpu0", "faults") == 4);
  for (const auto& link : r.links)
    if (link.name == "gpu0->pcie") CHECK(link.payload_bytes == 4_MiB);
}

TEST_CASE("uvm: eviction takes the least recently migrated-in block first") {
  // A, B fill the GPU; C evicts A (the oldest), so touching B again faults nothing, and A faults back in.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {uvm: {gpu_memory_limit: 4MiB}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: A, bytes: 2MiB, page: 2MiB}},\n"
      "  {managed: {name: B, bytes: 2MiB, page: 2MiB}}, {managed: {name: C, bytes: 2MiB, page: 2MiB}},\n"
      "  {touch: {buffer: A}}, {touch: {buffer: B}}, {touch: {buffer: C}}, {touch: {buffer: B}}]}]\n");
  const Report r = s.run();
  CHECK(uvm_cell(r, "gpu0", "faults") == 3);
  CHECK(uvm_cell(r, "gpu0", "evicted_bytes") == 2 << 20);
  const auto migrations = records(r, "migrate");
  REQUIRE(migrations.size() == 4);
  CHECK(migrations[2].label == "migrate 2 MiB gpu0 -> host");  // the eviction goes before C's migration
}

TEST_CASE("uvm: access counters migrate a region after exactly threshold remote accesses") {
  // GPU 0 maps B (accessed-by) and reads 128 B lines of it: 3 accesses stay below the threshold of 4, the 4th
  // migrates B's 2 MiB region to GPU 0, and later reads are local.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {uvm: {access_counters: {enabled: true, threshold: 4}}}\n"
      "workloads: [{type: program, ranks: 0, ops: [{managed: {name: B, bytes: 4MiB, on: 1}},\n"
      "  {advise: {buffer: B, accessed_by: [0]}}, {read: {buffer: B, bytes: 128B, passes: 3}},\n"
      "  {read: {buffer: B, bytes: 128B}}, {read: {buffer: B, bytes: 128B, passes: 10}}]}]\n");
  const Report r = s.run();
  const auto reads = records(r, "read");
  const auto migrations = records(r, "migrate");
  REQUIRE(reads.size() == 3);
  REQUIRE(migrations.size() == 1);
  CHECK(migrations[0].start >= reads[1].start);
  CHECK(migrations[0].end <= reads[1].end);
  CHECK(migrations[0].bytes == 2_MiB);
  CHECK(uvm_cell(r, "gpu0", "access_counter_migrated_bytes") == 2 << 20);
  CHECK(uvm_cell(r, "gpu0", "faults") == 0);
}

TEST_CASE("uvm: a block migrating back and forth is pinned after the thrashing threshold") {
  // GPUs 0 and 1 write the same 2 MiB block in turn: the 3rd back-and-forth migration within the lapse pins it at
  // GPU 0, where it is; GPU 1 maps it instead of taking it, and later writes move nothing.
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\n"
      "models: {uvm: {thrashing: {lapse: 1s}}}\n"
      "workloads: [{type: program, ranks: [0, 1], ops: [{managed: {name: A, bytes: 2MiB, page: 2MiB}},\n"
      "  {ranks: 0, ops: [{touch: {buffer: A, access: write}}]}, {barrier: {}},\n"
      "  {ranks: 1, ops: [{touch: {buffer: A, access: write}}]}, {barrier: {}},\n"
      "  {ranks: 0, ops: [{touch: {buffer: A, access: write}}]}, {barrier: {}},\n"
      "  {ranks: 1, ops: [{touch: {buffer: A, access: write}}]}, {barrier: {}},\n"
      "  {ranks: 0, ops: [{touch: {buffer: A, access: write}}]}, {barrier: {}},\n"
      "  {ranks: 1, ops: [{touch: {buffer: A, access: write}}]}]}]\n");
  const Report r = s.run();
  CHECK(uvm_cell(r, "gpu0", "thrashing_pins") == 1);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 4 << 20);  // from the host, then back from GPU 1
  CHECK(uvm_cell(r, "gpu1", "migrated_in_bytes") == 2 << 20);  // once; the second time it is pinned
  CHECK(uvm_cell(r, "gpu1", "faults") == 2);                   // a migration, then a mapping
  CHECK(records(r, "migrate").size() == 3);
}

namespace {
Report run_scenario(const std::string& name) {
  return Scenario::load(ConfigDocument::load_file(std::string(SNSIM_SOURCE_DIR) + "/workloads/uvm/" + name)).run();
}
}  // namespace

TEST_CASE("uvm scenario: remote-mapped reads cross NVLink every pass, a migrated buffer once") {
  const Report r = run_scenario("remote_mapped_vs_migration.yaml");
  const auto reads = records(r, "read");
  REQUIRE(reads.size() == 2);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 1 << 30);
  // The mapped buffer crosses NVLink on every pass (4 GiB), the migrated one once (1 GiB).
  for (const auto& link : r.links)
    if (link.name == "gpu1->nvswitch[0-3]") CHECK(link.payload_bytes == Bytes{5ull << 30});
}

TEST_CASE("uvm scenario: a hot KV-cache region migrates by access counters") {
  const Report r = run_scenario("kv_cache_hot_pages.yaml");
  CHECK(uvm_cell(r, "gpu0", "access_counter_migrated_bytes") >= 256 << 20);
  CHECK(uvm_cell(r, "gpu0", "faults") == 0);
}

TEST_CASE("uvm scenario: pooled memory reads 64 GiB from 8 GPUs, local HBM, the host and NVMe") {
  const Report r = run_scenario("pooled_memory.yaml");
  const auto reads = records(r, "read");
  REQUIRE(reads.size() == 3);
  const auto span = [](const OpRecord& o) { return (o.end - o.start).count(); };
  CHECK(span(reads[1]) < span(reads[0]));  // local HBM beats the pool over NVLink
  CHECK(span(reads[0]) < span(reads[2]));  // which beats the host over PCIe
  const auto copies = records(r, "copy");
  REQUIRE(copies.size() == 1);
  // 8 drives x 14 GB/s = 112 GB/s, so the GPU's 63 GB/s x16 bounds the read; the CE's efficiency and setup on top.
  const double bound = 64.0 * (1 << 30) / std::min(8 * 14e9, 63e9);
  CHECK(span(copies[0]) >= bound);
  CHECK(span(copies[0]) <= 1.2 * bound);
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 8ull << 30);
}

TEST_CASE("uvm scenario: a buffer 1.5x the GPU swept twice evicts and faults everything again") {
  const Report r = run_scenario("oversubscription.yaml");
  const double gib = 1 << 30;
  CHECK(uvm_cell(r, "gpu0", "migrated_in_bytes") == 2 * 210 * gib);
  const double evicted = uvm_cell(r, "gpu0", "evicted_bytes");
  // Resident at the end: at most the GPU's memory (140.4 GiB), within one block of it.
  const double resident = 2 * 210 * gib - evicted;
  CHECK(resident <= 140.401 * gib);
  CHECK(resident >= 140.401 * gib - 2 * (1 << 20));
}
