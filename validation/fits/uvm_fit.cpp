// Fits of the unified-memory model from the probe's `uvm` family (tools/probe/src/families/uvm.cu), through the
// formulas the simulator runs for a lone op (models/uvm.hpp): first the kernel's start from local reads, then each
// path's migration rate and prefetch setup from prefetches, then each path's per-fault service from first touches.
#include <fmt/format.h>

#include "validation/fit.hpp"

namespace snsim::validation::fits {
namespace {

using models::UvmPath;

struct PathRoute {
  UvmPath path;
  RouteCost route;
};

}  // namespace

void uvm(Fit& fit) {
  const auto& platform = fit.platform();
  models::UvmModel model = *platform.defaults.uvm;
  const auto& pgas = *platform.defaults.pgas;
  const Fabric& fabric = platform.fabric;
  const DeviceId gpu0 = fabric.gpus()[0];
  if (!fabric.host()) {
    fit.note("uvm: the platform has no host; not fitted");
    return;
  }
  const DeviceId host = *fabric.host();

  // A kernel reading its own HBM: t = kernel_start + load latency + bytes / (HBM x local_read_efficiency).
  const auto local = fit.select(Family::uvm, {"read"}, "local");
  if (fit.enough(local, 1, "uvm.kernel_start")) {
    const double start = Fit::intercept(local, [&](const TraceRecord& r) {
      return r.median - pgas.local_stream_time(r.bytes, r.bytes, platform.gpu.hbm_bandwidth).count();
    });
    model.kernel_start = fit.non_negative(Seconds{start}, "uvm.kernel_start");
    fit.add_time("uvm.kernel_start", model.kernel_start,
                 "weighted mean of t - the PGAS model's local streaming read (pgas.local_read_efficiency)", local);
  }

  // The twins' routes: host -> GPU 0, GPU 0 -> host, GPU 1 -> GPU 0 (the peer route is symmetric on an HGX).
  const std::vector<PathRoute> paths{{UvmPath::host_to_gpu, fabric.cost(host, gpu0)},
                                     {UvmPath::gpu_to_host, fabric.cost(gpu0, host)},
                                     {UvmPath::gpu_to_gpu, platform.peer}};
  for (const auto& path_route : paths) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const UvmPath path = path_route.path;
    const RouteCost& route = path_route.route;
    const std::string name(models::to_string(path));
    auto& params = model.paths[static_cast<std::size_t>(path)];
    // Prefetches: t = prefetch_setup + route latency + bytes / bandwidth.
    const auto prefetches = fit.select(Family::uvm, {"prefetch"}, name);
    if (fit.enough(prefetches, 2, fmt::format("uvm.{} bandwidth and prefetch_setup", name))) {
      const auto x = Fit::relative_least_squares(prefetches, [](const TraceRecord& r) {
        return std::vector<double>{1.0, static_cast<double>(r.bytes.count())};
      });
      const std::string method =
          fmt::format("least squares on relative errors of t = prefetch_setup + route latency ({}) + bytes / bandwidth",
                      to_string(route.latency));
      if (x[1] > 0) {
        params.bandwidth = std::min(BytesPerSecond{1 / x[1]}, route.bottleneck);
        fit.add_yaml(fmt::format("uvm.{}.bandwidth", name), fmt::format("{:.6g}GBps", params.bandwidth.count() / 1e9),
                     method, prefetches);
      } else {
        fit.note(fmt::format("uvm.{}.bandwidth: the fit gave no positive slope; default kept", name));
      }
      const std::string key = fmt::format("uvm.{}.prefetch_setup", name);
      params.prefetch_setup = fit.non_negative(Seconds{x[0]} - route.latency, key);
      fit.add_time(key, params.prefetch_setup, method, prefetches);
    }
    if (path == UvmPath::gpu_to_host) continue;  // CPU faults are not modelled
    // First touches: t = first_touch_time with the fault service left out, + faults x fault_service.
    const auto touches = fit.select(Family::uvm, {"first_touch"}, name);
    const std::string key = fmt::format("uvm.{}.fault_service", name);
    if (!fit.enough(touches, 1, key)) continue;
    const Bytes page{4096};  // the probe touches one word per 4 KiB page
    models::UvmModel without = model;
    without.paths[static_cast<std::size_t>(path)].fault_service = Seconds{0};
    const double service = Fit::intercept(touches, [&](const TraceRecord& r) {
      const double faults = static_cast<double>((r.bytes.count() + page.count() - 1) / page.count());
      return (r.median - without.first_touch_time(path, r.bytes, page, route.latency, route.bottleneck).count()) /
             faults;
    });
    params.fault_service = fit.non_negative(Seconds{service}, key);
    fit.add_time(key, params.fault_service,
                 fmt::format("weighted mean of (t - kernel_start - batches x (batch_service {} + route latency) - "
                             "bytes / bandwidth) / faults, 4 KiB pages in batches of {}",
                             to_string(model.batch_service), model.fault_batch_size),
                 touches);
  }
  fit.note(
      "uvm.batch_service: every batch of the probe's first touch is full, so it cannot be told from fault_service; "
      "default kept");
}

}  // namespace snsim::validation::fits
