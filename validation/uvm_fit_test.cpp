// The twins of the probe's `uvm` family (validation/twins/uvm_twin.cpp) and the UVM fit (validation/fits/uvm_fit.cpp).
// No test here runs a simulation: twins are built, not simulated, and the fit round trip generates its records with the
// model's own formulas.
#include <cmath>
#include <map>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "models/models.hpp"
#include "models/test_support.hpp"
#include "sim/config.hpp"
#include "topologies/register.hpp"
#include "validation/calibrate.hpp"
#include "validation/calibration_test_support.hpp"
#include "validation/twins.hpp"

namespace snsim::validation {
namespace {

using models::UvmPath;
using workloads::Op;

Trace uvm_h200_trace() {
  Trace t;
  t.source = "synthetic.jsonl";
  for (int i = 0; i < 2; ++i) t.header.gpus.push_back({i, "NVIDIA H200", "", Json::object()});
  t.complete = true;
  return t;
}

TraceRecord record(std::string test, std::string variant, std::vector<int> ranks, std::uint64_t bytes, double median) {
  TraceRecord r;
  r.family = Family::uvm;
  r.test = std::move(test);
  r.variant = std::move(variant);
  r.ranks = std::move(ranks);
  r.bytes = Bytes{bytes};
  r.unit = MeasureUnit::seconds;
  r.median = r.p01 = r.p99 = r.min = r.max = median;
  r.samples = {median, median, median};
  r.id = fmt::format("uvm/{}/{}/{}/{}", r.test, r.variant, r.ranks.size(), bytes);
  return r;
}

Twin uvm_twin_of(const TraceRecord& r) {
  const auto made = make_twin(uvm_h200_trace(), r, 2, snsim::models::testing::load());
  if (const auto* reason = std::get_if<std::string>(&made)) FAIL(*reason);
  return std::get<Twin>(made);
}

}  // namespace

TEST_CASE("uvm twins: each sample allocates the region where the probe placed it, then runs the timed op on GPU 0") {
  const auto touch = uvm_twin_of(record("first_touch", "gpu_to_gpu", {1, 0}, 4 << 20, 1e-3));
  REQUIRE(touch.sample[0].size() == 2);
  CHECK(touch.sample[1].empty());
  const auto& managed = std::get<workloads::ManagedOp>(touch.sample[0][0].what);
  CHECK(managed.buffer->on == 1);
  CHECK(managed.buffer->bytes == Bytes{4 << 20});
  CHECK(managed.buffer->page == Bytes{4096});
  const auto& t = std::get<workloads::TouchOp>(touch.sample[0][1].what);
  CHECK(t.buffer == managed.buffer);
  CHECK(t.bytes == Bytes{4 << 20});

  const auto back = uvm_twin_of(record("prefetch", "gpu_to_host", {0}, 2 << 20, 1e-3));
  CHECK(std::get<workloads::ManagedOp>(back.sample[0][0].what).buffer->on == 0);
  CHECK(std::get<workloads::PrefetchOp>(back.sample[0][1].what).to == workloads::HOST);

  const auto mapped = uvm_twin_of(record("read", "peer_mapped", {0, 1}, 2 << 20, 1e-3));
  REQUIRE(mapped.sample[0].size() == 3);
  const auto& advise = std::get<workloads::AdviseOp>(mapped.sample[0][1].what);
  CHECK(advise.preferred == 1);
  CHECK(advise.accessed_by == std::vector<int>{0});
  CHECK(std::holds_alternative<workloads::ReadOp>(mapped.sample[0][2].what));

  const auto made = make_twin(uvm_h200_trace(), record("first_touch", "sideways", {0}, 2 << 20, 1e-3), 2,
                              snsim::models::testing::load());
  CHECK(std::get<std::string>(made) == "no twin for uvm first_touch/sideways");
}

TEST_CASE("uvm fit: recovers known parameters from records the model's own formulas generate") {
  const auto defaults = snsim::models::testing::load();
  models::UvmModel truth = *defaults.uvm;
  truth.kernel_start = Seconds{5e-6};
  truth.paths[0] = {BytesPerSecond{40e9}, Seconds{60e-6}, Seconds{0.6e-6}};
  truth.paths[1] = {BytesPerSecond{12e9}, Seconds{100e-6}, Seconds{0}};
  truth.paths[2] = {BytesPerSecond{120e9}, Seconds{40e-6}, Seconds{0.4e-6}};

  auto document = ConfigDocument::load_string("topology: {type: hgx, gpu: h200, gpus: 2}\n", "<test>");
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  const Fabric fabric = topologies.create(document->root().child("topology"))->build();
  const DeviceId gpu0 = fabric.gpus()[0], host = *fabric.host();
  const auto h2d = fabric.cost(host, gpu0), d2h = fabric.cost(gpu0, host), d2d = fabric.cost(fabric.gpus()[1], gpu0);
  const auto& gpu = *fabric.device(gpu0).gpu;

  Trace trace = uvm_h200_trace();
  for (std::uint64_t s = 2ull << 20; s <= (4ull << 30); s *= 2) {
    const Bytes size{s};
    auto add = [&](const char* test, const char* variant, std::vector<int> ranks, Seconds t) {
      trace.records.push_back(record(test, variant, std::move(ranks), s, t.count()));
    };
    add("first_touch", "host_to_gpu", {0},
        truth.first_touch_time(UvmPath::host_to_gpu, size, Bytes{4096}, h2d.latency, h2d.bottleneck));
    add("first_touch", "gpu_to_gpu", {1, 0},
        truth.first_touch_time(UvmPath::gpu_to_gpu, size, Bytes{4096}, d2d.latency, d2d.bottleneck));
    add("prefetch", "host_to_gpu", {0}, truth.prefetch_time(UvmPath::host_to_gpu, size, h2d.latency, h2d.bottleneck));
    add("prefetch", "gpu_to_host", {0}, truth.prefetch_time(UvmPath::gpu_to_host, size, d2h.latency, d2h.bottleneck));
    add("prefetch", "gpu_to_gpu", {1, 0}, truth.prefetch_time(UvmPath::gpu_to_gpu, size, d2d.latency, d2d.bottleneck));
    add("read", "local", {0}, truth.kernel_start + defaults.pgas->local_stream_time(size, size, gpu.hbm_bandwidth));
  }

  const auto calibration = calibrate({trace});
  const auto fitted = testing::fitted_values(calibration);
  const std::vector<std::pair<std::string, double>> expected{{"uvm.kernel_start", 5e-6},
                                                             {"uvm.host_to_gpu.bandwidth", 40e9},
                                                             {"uvm.host_to_gpu.prefetch_setup", 60e-6},
                                                             {"uvm.host_to_gpu.fault_service", 0.6e-6},
                                                             {"uvm.gpu_to_host.bandwidth", 12e9},
                                                             {"uvm.gpu_to_host.prefetch_setup", 100e-6},
                                                             {"uvm.gpu_to_gpu.bandwidth", 120e9},
                                                             {"uvm.gpu_to_gpu.prefetch_setup", 40e-6},
                                                             {"uvm.gpu_to_gpu.fault_service", 0.4e-6}};
  testing::check_fitted(fitted, expected);
  CHECK_FALSE(fitted.contains("uvm.batch_service"));
  CHECK(
      std::ranges::any_of(calibration.notes, [](const std::string& n) { return n.starts_with("uvm.batch_service"); }));
  CHECK_NOTHROW(check_params(calibration.to_yaml("test"), "params.yaml"));
}

}  // namespace snsim::validation
