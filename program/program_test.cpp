// Parsing programs: the input errors a scenario's `ops:` get, pinned. No simulation runs here.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include "scenario/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "models/models.hpp"
#include "sim/config.hpp"
#include "sim/isolated.hpp"
#include "topologies/gpus.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

TEST_CASE("workloads: program mistakes are pinned errors") {
  auto error = [](const std::string& ops, const std::string& extra = "") {
    try {
      load("topology: {type: hgx, gpus: 4}\nworkloads: [{type: program" + extra + ", ops: " + ops + "}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("[]") == "t.yaml:2:34: workloads[0].ops: the program is empty");
  CHECK(error("[{jump: {}}]") ==
        "t.yaml:2:35: workloads[0].ops[0]: expected an op: compute, copy, collective, barrier, put, get, "
        "signal_wait, quiet, fence, shmem_barrier, load, managed, touch, prefetch, advise, read, host, repeat, "
        "streams or ranks");
  CHECK(error("[{host: {}}]") == "t.yaml:2:42: workloads[0].ops[0].host.time: required key is missing");
  CHECK(error("[{host: {time: 0s}}]") == "t.yaml:2:49: workloads[0].ops[0].host.time: must be > 0, got 0 s");
  CHECK(error("[{copy: {to: 9, bytes: 1MiB}}]") ==
        "t.yaml:2:47: workloads[0].ops[0].copy.to: GPU 9 does not exist (the topology has 4 GPUs: 0-3)");
  CHECK(error("[{copy: {to: sideways, bytes: 1MiB}}]") ==
        "t.yaml:2:47: workloads[0].ops[0].copy.to: expected a GPU index, next, prev, xor:K or host, found "
        "'sideways'");
  CHECK(error("[{copy: {to: next, bytes: 1EiB}}]") ==
        "t.yaml:2:60: workloads[0].ops[0].copy.bytes: 1 EiB does not fit in one GPU's memory (140.401 GiB)");
  CHECK(error("[{copy: {to: next, bytes: 1MiB, launch: kernel}}]") ==
        "t.yaml:2:74: workloads[0].ops[0].copy.launch: expected stream or graph, found 'kernel'");
  CHECK(error("[{collective: {op: broadcast, bytes: 1MiB, root: 7}}]") ==
        "t.yaml:2:83: workloads[0].ops[0].collective.root: rank 7 is not one of the ranks 0, 1, 2, 3");
  CHECK(error("[{compute: {}}]") ==
        "t.yaml:2:45: workloads[0].ops[0].compute: expected time, gemm or attention (a shape), or flops and bytes "
        "(for the roofline)");
  CHECK(error("[{barrier: {}}]", ", ranks: 5-6") ==
        "t.yaml:2:36: workloads[0].ranks: GPU 5 does not exist (the topology has 4 GPUs: 0-3)");
  CHECK(error("[{repeat: 0, ops: [{barrier: {}}]}]") ==
        "t.yaml:2:44: workloads[0].ops[0].repeat: must be between 1 and 1000000000, got 0");
}

TEST_CASE("workloads: streams needs at least two op lists") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{streams: [[{compute: {time: 1us}}]]}]}]\n"),
                    "t.yaml:2:45: workloads[0].ops[0].streams: expected a list of 2 or more op lists, found 1");
}

TEST_CASE("workloads: nvme on a topology without drives says to set topology.nvme_drives") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{copy: {from: nvme, bytes: 1MiB}}]}]\n"),
                    "t.yaml:2:49: workloads[0].ops[0].copy.from: the topology has no NVMe drives; set "
                    "topology.nvme_drives");
}

TEST_CASE("workloads: a copy names exactly one of to and from") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{copy: {to: 1, from: 0, bytes: 1MiB}}]}]\n"),
                    "t.yaml:2:42: workloads[0].ops[0].copy: expected one of `to` (a push) or `from` (a pull)");
}

TEST_CASE("workloads: a gemm op's mistakes name the key, what was found and what was expected") {
  const auto error = [](const std::string& op) {
    try {
      load("topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ops: [{compute: " + op + "}]}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("{gemm: {m: 8, n: 8}}") == "t.yaml:2:52: workloads[0].ops[0].compute.gemm.k: required key is missing");
  CHECK(error("{gemm: {m: 0, n: 8, k: 8}}") ==
        "t.yaml:2:56: workloads[0].ops[0].compute.gemm.m: must be between 1 and 16777216, got 0");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8, layout: XY}}") ==
        "t.yaml:2:79: workloads[0].ops[0].compute.gemm.layout: expected TN, NN, NT or TT, found 'XY'");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, flops: 1TFLOP}") ==
        "t.yaml:2:45: workloads[0].ops[0].compute: a gemm's flops and bytes follow from its shape: give gemm, or "
        "flops and bytes, not both");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, dtype: fp64}") ==
        "t.yaml:2:79: workloads[0].ops[0].compute.dtype: GEMMs by shape are modelled in bf16, fp16, fp8 and tf32, "
        "not fp64; give flops and bytes");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, clock_mhz: 5000}") ==
        "t.yaml:2:83: workloads[0].ops[0].compute.clock_mhz: must be between 100 and 1980, got 5000");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, reported_clock_mhz: 50}") ==
        "t.yaml:2:92: workloads[0].ops[0].compute.reported_clock_mhz: must be between 100 and 1980, got 50");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, clock_mhz: 1500, reported_clock_mhz: 1500}") ==
        "t.yaml:2:109: workloads[0].ops[0].compute.reported_clock_mhz: a kernel's clock is locked (clock_mhz) or "
        "reported, not both");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, operands: zeros}") ==
        "t.yaml:2:82: workloads[0].ops[0].compute.operands: expected normal or low_entropy, found 'zeros'");
  CHECK(error("{time: 1us, operands: normal}") ==
        "t.yaml:2:67: workloads[0].ops[0].compute.operands: applies to computed kernels, not to a fixed time");
  const std::string kinds =
      "expected one of stream, widen, layernorm, rmsnorm, softmax, gelu, strided, cross_entropy, adamw, bias_grad, "
      "embedding_grad, mixed_add, layernorm_backward, rmsnorm_backward, softmax_backward, gelu_backward, "
      "cross_entropy_backward, found ";
  CHECK(error("{bytes: 1MiB, kernel: dropout}") ==
        "t.yaml:2:67: workloads[0].ops[0].compute.kernel: " + kinds + "'dropout'");
  CHECK(error("{bytes: 1MiB, kernel: adamw_backward}") ==
        "t.yaml:2:67: workloads[0].ops[0].compute.kernel: " + kinds + "'adamw_backward'");
  CHECK(error("{time: 1us, kernel: gelu}") ==
        "t.yaml:2:65: workloads[0].ops[0].compute.kernel: applies to computed kernels, not to a fixed time");
  CHECK(error("{gemm: {m: 8, n: 8, k: 8}, kernel: layernorm}") ==
        "t.yaml:2:80: workloads[0].ops[0].compute.kernel: a gemm or attention is timed by its shape; `kernel` names a "
        "memory-bound kernel's kind");
  // Fused attention by shape: the same kind of mistakes.
  CHECK(error("{attention: {batch: 2, seq: 0}}") ==
        "t.yaml:2:73: workloads[0].ops[0].compute.attention.seq: must be between 1 and 16777216, got 0");
  CHECK(error("{attention: {heads: 16}}") ==
        "t.yaml:2:57: workloads[0].ops[0].compute.attention.seq: required key is missing");
  CHECK(error("{attention: {seq: 4096}, dtype: fp8}") ==
        "t.yaml:2:77: workloads[0].ops[0].compute.dtype: fused attention is modelled in bf16 and fp16, not fp8");
  CHECK(error("{attention: {seq: 4096}, flops: 1TFLOP}") ==
        "t.yaml:2:45: workloads[0].ops[0].compute: attention's flops follow from its shape: give attention (and "
        "bytes, its HBM traffic), not flops");
  CHECK(error("{attention: {seq: 4096}, gemm: {m: 8, n: 8, k: 8}}") ==
        "t.yaml:2:45: workloads[0].ops[0].compute: give one of gemm and attention");
  CHECK(error("{attention: {seq: 4096, window: 128}}") ==
        "t.yaml:2:69: workloads[0].ops[0].compute.attention.window: unknown key; known keys: backward, batch, causal, "
        "head_dim, heads, kv_heads, seq");
  CHECK(error("{attention: {heads: 16, kv_heads: 5, seq: 4096}}") ==
        "t.yaml:2:79: workloads[0].ops[0].compute.attention.kv_heads: must divide heads (16), got 5");
  CHECK(error("{time: 1us, launch: graph}") ==
        "t.yaml:2:65: workloads[0].ops[0].compute.launch: applies to computed kernels");
  CHECK(error("{gemm: {m: 16777216, n: 16777216, k: 16777216, batch: 1048576}}") ==
        "t.yaml:2:52: workloads[0].ops[0].compute.gemm: its operands (1.77e+21 B) do not fit in one GPU's memory "
        "(140.401 GiB)");
  CHECK(error("{gemm: {m: 262144, n: 262144, k: 262144}}") ==
        "t.yaml:2:52: workloads[0].ops[0].compute.gemm: its operands (384 GiB) do not fit in one GPU's memory "
        "(140.401 GiB)");
  CHECK(
      error("{gemm: {m: 8, n: 8, k: 8, size: 3}}") ==
      "t.yaml:2:71: workloads[0].ops[0].compute.gemm.size: unknown key; known keys: backward, batch, k, layout, m, n");
}

TEST_CASE("workloads: an unknown dtype or one the GPU has no rate for is an input error") {
  CHECK_THROWS_WITH(load("topology: {type: hgx, gpus: 2}\n"
                         "workloads: [{type: program, ops: [{compute: {flops: 1TFLOP, dtype: int4}}]}]\n"),
                    "t.yaml:2:68: workloads[0].ops[0].compute.dtype: unknown number format 'int4'; known: bf16, fp16, "
                    "fp32, fp64, fp8, tf32");
  CHECK_THROWS_WITH(
      load("topology: {type: nvl72, gpus: 4}\n"
           "workloads: [{type: program, ops: [{compute: {flops: 1TFLOP, dtype: fp32}}]}]\n"),
      "t.yaml:2:68: workloads[0].ops[0].compute.dtype: the gb200 preset has no published dense fp32 rate");
}

TEST_CASE(
    "workloads: a gemm op runs for the compute model's gemm_time at its locked or reported clock, queued or in a "
    "graph") {
  // One simulation per process (SimGrid's engine cannot restart): each run in a child.
  const auto run = [](const std::string& op) {
    return std::stod(run_isolated([&] {
      const std::string yaml =
          "topology: {type: hgx, gpus: 2}\nworkloads: [{type: program, ranks: 0, ops: [{compute: " + op + "}]}]\n";
      return fmt::format("{:.17g}", span(load(yaml).run()));
    }));
  };
  const auto models = models::Models::load(ConfigDocument::load_string("{}", "m.yaml")->root().section("models"));
  const auto& c = *models.compute;
  const auto& presets = topologies::gpu_presets();
  const GpuSpec h200 = *std::ranges::find_if(presets, [](const GpuSpec& g) { return g.model == "h200"; });
  const models::Gemm g{8192, 8192, 8192};
  // A lone kernel: its launch, then the GEMM's kernel at boost clock (nothing heats this GPU up first).
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192}}") ==
        doctest::Approx((c.launch + c.gemm_time(h200, g, Dtype::bf16)).count()).epsilon(1e-9));
  // Locked at 1,485 MHz: the kernel at that clock.
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192}, clock_mhz: 1485}") ==
        doctest::Approx((c.launch + c.gemm_time(h200, g, Dtype::bf16, 1485.0 / 1980)).count()).epsilon(1e-9));
  // Read at 1,485 MHz under load: at the rate such a reading means, boost_reading_rate x (1485 / 1980)^elasticity,
  // faster than locked there (the reading understates the rate the tensor cores keep under the power cap).
  const double reported = c.boost_reading_rate * std::pow(1485.0 / 1980, c.clock_elasticity);
  CHECK(c.rate_at_reported_clock(1485.0 / 1980) == doctest::Approx(reported));
  CHECK(reported > 1485.0 / 1980);
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192}, reported_clock_mhz: 1485}") ==
        doctest::Approx((c.launch + c.gemm_time(h200, g, Dtype::bf16, reported)).count()).epsilon(1e-9));
  // Queued behind another kernel: the queue gap; a graph's node: the graph's per-node launch.
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192}, pipelined: true}") ==
        doctest::Approx((c.queue_gap + c.gemm_time(h200, g, Dtype::bf16)).count()).epsilon(1e-9));
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192}, pipelined: true, launch: graph}") ==
        doctest::Approx((models.collective->graph_launch + c.gemm_time(h200, g, Dtype::bf16)).count()).epsilon(1e-9));
  // The backward pass: both gradient GEMMs.
  models::Gemm backward = g;
  backward.backward = true;
  CHECK(run("{gemm: {m: 8192, n: 8192, k: 8192, backward: true}}") ==
        doctest::Approx((c.launch + c.gemm_time(h200, backward, Dtype::bf16)).count()).epsilon(1e-9));
}

TEST_CASE("workloads: under the power cap, GEMMs on low-entropy operands hold a higher clock than on normal data") {
  // 400 back-to-back 8192^3 GEMMs (~0.6 s) under a cap that sustains a tensor duty of 0.5 on normal data.
  const auto run = [](const std::string& operands) {
    return std::stod(run_isolated([&] {
      std::string ops = "[";
      for (int i = 0; i < 400; ++i)
        ops += fmt::format("{}{{compute: {{gemm: {{m: 8192, n: 8192, k: 8192}}, pipelined: true, operands: {}}}}}",
                           i ? ", " : "", operands);
      const std::string yaml =
          "topology: {type: hgx, gpus: 2}\n"
          "models: {compute: {power_duty: 0.5, power_exponent: 2.5, power_window: 10ms, low_entropy_power: 0.6}}\n"
          "workloads: [{type: program, ranks: 0, ops: " +
          ops + "]}]\n";
      return fmt::format("{:.17g}", span(load(yaml).run()));
    }));
  };
  const auto models = models::Models::load(ConfigDocument::load_string("{}", "m.yaml")->root().section("models"));
  const auto& presets = topologies::gpu_presets();
  const GpuSpec h200 = *std::ranges::find_if(presets, [](const GpuSpec& g) { return g.model == "h200"; });
  const double gemm = models.compute->gemm_time(h200, models::Gemm{8192, 8192, 8192}, Dtype::bf16).count();
  const double normal = run("normal"), low = run("low_entropy");
  // The first power window runs near boost; after it, each GEMM takes its boost time over the steady clock:
  // (0.5 / 1)^(1/2.5) of boost on normal data, (0.5 / 0.6)^(1/2.5) on low-entropy data.
  const double steady_normal = 400 * gemm / std::pow(0.5, 1 / 2.5),
               steady_low = 400 * gemm / std::pow(0.5 / 0.6, 1 / 2.5);
  CHECK(normal < steady_normal);
  CHECK(normal > 0.97 * steady_normal);
  CHECK(low < steady_low);
  CHECK(low > 0.97 * steady_low);
}

TEST_CASE("workloads: a memory-bound kernel of a kind runs its launch, the ramp and its bytes at its kind's rate") {
  const auto run = [](const std::string& op) {
    return std::stod(run_isolated([&] {
      const std::string yaml =
          "topology: {type: hgx, gpus: 2}\n"
          "models: {compute: {memory_ramp: 1us, memory_efficiency: {layernorm_backward: 0.3}}}\n"
          "workloads: [{type: program, ranks: 0, ops: [{compute: " +
          op + "}]}]\n";
      return fmt::format("{:.17g}", span(load(yaml).run()));
    }));
  };
  const auto models = models::Models::load(ConfigDocument::load_string("{}", "m.yaml")->root().section("models"));
  const double hbm = 4.8e12, bytes = 256.0 * (1 << 20);
  const double launch = models.compute->launch.count();
  CHECK(run("{bytes: 256MiB, kernel: layernorm_backward}") ==
        doctest::Approx(launch + 1e-6 + bytes / (hbm * 0.3)).epsilon(1e-9));
  CHECK(run("{bytes: 256MiB}") ==
        doctest::Approx(launch + 1e-6 + bytes / (hbm * models.compute->hbm_efficiency)).epsilon(1e-9));
}
