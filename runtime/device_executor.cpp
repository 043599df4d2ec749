#include "runtime/device_executor.hpp"

#include <vector>

#include <fmt/format.h>

namespace snsim::workloads {

void DeviceExecutor::run(int rank, const ComputeOp& op) {
  const DeviceId gpu = device(rank);
  const auto& spec = *simulation_.fabric().device(gpu).gpu;
  const auto& model = *models_.compute;
  const double jitter = variability_.compute_factor(gpu);  // on this kernel's duration
  if (op.duration) {
    // A fixed time is taken as SM time: the GPU's clock variation and slow factor stretch it too.
    simulation_.kernel(gpu, *op.duration * (jitter / variability_.flop_rate(gpu)), Seconds{0}, Bytes{0});
    return;
  }
  sleep_for(op.pipelined && op.launch == models::Launch::graph ? models_.collective->graph_launch
                                                               : model.fixed_cost(op.pipelined));
  auto& duty = tensor_duty_[gpu];
  const Seconds start = Simulation::now();
  const double clock = !op.clock_mhz       ? model.clock_factor(duty, start)
                       : op.clock_reported ? model.rate_at_reported_clock(*op.clock_mhz / spec.boost_mhz)
                                           : *op.clock_mhz / spec.boost_mhz;
  const double rate = variability_.flop_rate(gpu) * clock;
  const Seconds math = (op.gemm()        ? model.gemm_time(spec, *op.gemm(), op.dtype, rate)
                        : op.attention() ? model.attention_time(spec, *op.attention(), rate)
                                         : model.math_time(spec, op.flops, rate, op.dtype)) *
                       jitter;
  const Seconds memory = model.memory_time(spec, op.bytes, variability_.hbm_rate(gpu), op.memory) * jitter;
  simulation_.kernel(gpu, math, memory, op.bytes);
  model.account(duty, start, Simulation::now(), math >= memory ? 1.0 : math / memory, op.operands);
}

void DeviceExecutor::run(int rank, const CopyOp& op) {
  const auto& copy = *models_.copy;
  const bool sm = op.engine == models::CopyEngine::sm;
  if (sm) context_.hold_sms(rank);
  if (op.peer == rank) {  // device-local: reads and writes the GPU's memory, through its HBM link
    const DeviceId gpu = device(rank);
    const auto& spec = *simulation_.fabric().device(gpu).gpu;
    sleep_for(copy.local_fixed_cost(op.engine, op.pipelined, op.launch, op.in_kernel));
    const double factor = variability_.hbm_rate(gpu) * variability_.bandwidth_factor(gpu);
    simulation_.kernel(gpu, Seconds{0}, Seconds{copy.local_memory_time(spec, op.bytes, op.engine).count() / factor},
                       Bytes{2 * op.bytes.count()});
  } else if (op.peer == NVME) {
    // GPUDirect Storage: one transfer per drive, all at once, the bytes split evenly (the first drives take the
    // remainder); each crosses its drive's link and shares the GPU's PCIe link with the others.
    const auto& drives = simulation_.fabric().nvme_drives();
    const std::uint64_t n = drives.size();
    auto stripe = [this, rank, &op, &copy, n](std::uint64_t i, DeviceId drive) {
      const Bytes share{op.bytes.count() / n + (i < op.bytes.count() % n ? 1 : 0)};
      const DeviceId from = op.pull ? drive : device(rank), to = op.pull ? device(rank) : drive;
      simulation_.transfer(from, to, copy.wire_bytes(share, op.engine), share,
                           copy.fixed_cost(op.engine, op.pull, op.pipelined, op.launch),
                           copy.wire_rate_cap(simulation_.route(from, to).bottleneck, op.engine), true);
    };
    std::vector<Simulation::Started> others;
    for (std::uint64_t i = 1; i < n; ++i)
      others.push_back(simulation_.start_pooled(device(rank), [stripe, i, drive = drives[i]] { stripe(i, drive); }));
    stripe(0, drives[0]);
    for (auto& other : others) other.join();
  } else {
    const DeviceId from = device(op.pull ? op.peer : rank), to = device(op.pull ? rank : op.peer);
    const auto& route = simulation_.route(from, to);
    simulation_.transfer(from, to, copy.wire_bytes(op.bytes, op.engine), op.bytes,
                         copy.fixed_cost(op.engine, op.pull, op.pipelined, op.launch),
                         copy.wire_rate_cap(route.bottleneck, op.engine), true);  // a share of the line
  }
  if (sm) context_.release_sms(rank);
}

}  // namespace snsim::workloads
