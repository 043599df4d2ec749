#include "models/compute.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "models/models.hpp"
#include "models/test_support.hpp"

using namespace snsim;
using namespace snsim::models;
using namespace snsim::models::testing;

TEST_CASE("compute: clocks stay at boost while the tensor duty stays at or below power_duty") {
  const auto m = load("models: {compute: {power_duty: 0.75, power_exponent: 2.5, power_window: 10ms}}\n");
  const auto& c = *m.compute;
  TensorDuty duty;
  CHECK(c.clock_factor(duty, Seconds{0}) == 1.0);
  // Busy 75 % of every 4 ms for a long time: the average settles at 0.75 and the clock stays at boost.
  for (int i = 0; i < 1000; ++i) {
    const double t0 = i * 4e-3;
    c.account(duty, Seconds{t0}, Seconds{t0 + 3e-3}, 1.0);
  }
  CHECK(duty.value == doctest::Approx(0.75).epsilon(0.02));
  CHECK(c.clock_factor(duty, Seconds{4e-3 * 1000}) == 1.0);
}

TEST_CASE("compute: always busy, the clock drops to (power_duty / 1)^(1 / exponent)") {
  const auto m = load("models: {compute: {power_duty: 0.75, power_exponent: 2.5, power_window: 10ms}}\n");
  const auto& c = *m.compute;
  TensorDuty duty;
  for (int i = 0; i < 200; ++i) c.account(duty, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 1.0);
  CHECK(duty.value == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(c.clock_factor(duty, Seconds{0.2}) == doctest::Approx(std::pow(0.75, 1 / 2.5)).epsilon(1e-6));
  // Idle afterwards, the average decays over the window: after 5 windows the clock is back at boost.
  CHECK(c.clock_factor(duty, Seconds{0.2 + 0.05}) == 1.0);
  // A memory-bound kernel keeps the tensor cores busy only for its math share.
  TensorDuty half;
  for (int i = 0; i < 200; ++i) c.account(half, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 0.5);
  CHECK(half.value == doctest::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("compute: low-entropy operands count at low_entropy_power of their tensor time in the duty") {
  const auto m =
      load("models: {compute: {power_duty: 0.5, power_exponent: 2.5, power_window: 10ms, low_entropy_power: 0.6}}\n");
  const auto& c = *m.compute;
  TensorDuty normal, low;
  for (int i = 0; i < 200; ++i) {
    c.account(normal, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 1.0, OperandData::normal);
    c.account(low, Seconds{i * 1e-3}, Seconds{(i + 1) * 1e-3}, 1.0, OperandData::low_entropy);
  }
  CHECK(normal.value == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(low.value == doctest::Approx(0.6).epsilon(1e-6));
  // Always busy: normal data settles at (0.5 / 1)^(1/2.5) of boost, low-entropy data at (0.5 / 0.6)^(1/2.5).
  CHECK(c.clock_factor(normal, Seconds{0.2}) == doctest::Approx(std::pow(0.5, 1 / 2.5)).epsilon(1e-6));
  CHECK(c.clock_factor(low, Seconds{0.2}) == doctest::Approx(std::pow(0.5 / 0.6, 1 / 2.5)).epsilon(1e-6));
  CHECK(to_string(OperandData::low_entropy) == "low_entropy");
  CHECK(operand_data("normal") == OperandData::normal);
  CHECK_FALSE(operand_data("zeros"));
  CHECK(error("models: {compute: {low_entropy_power: 0}}\n") ==
        "t.yaml:1:39: models.compute.low_entropy_power: must be between 0.05 and 1, got 0");
}

TEST_CASE("compute: a memory-bound kernel takes the ramp plus its bytes at its kind's share of HBM bandwidth") {
  const auto m = load(
      "models: {compute: {hbm_efficiency: 0.9, memory_ramp: 1us,\n"
      "  memory_efficiency: {layernorm: 0.5, layernorm_backward: 0.25, adamw: 0.6}}}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu{"g", FlopsPerSecond{1e15}, BytesPerSecond{4e12}, Bytes{1ull << 36}};
  const Bytes bytes{400'000'000};
  const auto t = [&](MemoryKernel k, bool backward) { return c.memory_time(gpu, bytes, 1, {k, backward}).count(); };
  CHECK(t(MemoryKernel::stream, false) == doctest::Approx(1e-6 + 4e8 / (4e12 * 0.9)));
  CHECK(t(MemoryKernel::layernorm, false) == doctest::Approx(1e-6 + 4e8 / (4e12 * 0.5)));
  CHECK(t(MemoryKernel::layernorm, true) == doctest::Approx(1e-6 + 4e8 / (4e12 * 0.25)));
  // AdamW has no backward of its own: a backward flag changes nothing.
  CHECK(t(MemoryKernel::adamw, true) == t(MemoryKernel::adamw, false));
  CHECK(t(MemoryKernel::adamw, false) == doctest::Approx(1e-6 + 4e8 / (4e12 * 0.6)));
  // No bytes, no memory side (and no ramp).
  CHECK(c.memory_time(gpu, Bytes{0}, 1, {MemoryKernel::layernorm, false}).count() == 0);
  // Kinds not set run like a stream by default.
  CHECK(t(MemoryKernel::softmax, false) == t(MemoryKernel::stream, false));
  CHECK(memory_kernel("cross_entropy") == MemoryKernel::cross_entropy);
  CHECK_FALSE(memory_kernel("dropout"));
  CHECK_FALSE(has_backward(MemoryKernel::widen));
  CHECK(error("models: {compute: {memory_efficiency: {adamw_backward: 0.5}}}\n") ==
        "t.yaml:1:40: models.compute.memory_efficiency.adamw_backward: unknown key; known keys: adamw, bias_grad, "
        "cross_entropy, cross_entropy_backward, embedding_grad, gelu, gelu_backward, layernorm, layernorm_backward, "
        "mixed_add, rmsnorm, rmsnorm_backward, softmax, softmax_backward, strided, widen");
}

TEST_CASE("compute: a backward moves the bytes the probe's formula counts, relative to its forward's") {
  // Norms, softmax, GeLU: read x and dy, write dx against read x, write y.
  for (const auto k : {MemoryKernel::layernorm, MemoryKernel::rmsnorm, MemoryKernel::softmax, MemoryKernel::gelu})
    CHECK(backward_bytes(k) == doctest::Approx(1.5));
  // Cross-entropy: read the log-probabilities, write the logits' gradient against read the logits.
  CHECK(backward_bytes(MemoryKernel::cross_entropy) == 2);
  for (const auto k : {MemoryKernel::stream, MemoryKernel::widen, MemoryKernel::adamw, MemoryKernel::bias_grad,
                       MemoryKernel::embedding_grad, MemoryKernel::mixed_add, MemoryKernel::strided}) {
    CHECK_FALSE(has_backward(k));
    CHECK(backward_bytes(k) == 1);
  }
}

TEST_CASE("compute: an eager gated MLP is PyTorch's kernels, strided where they read a chunk of a fused output") {
  const double n = 4096.0 * 5632, e = 2;
  const auto bytes = [](const std::vector<MemoryCall>& calls) {
    double sum = 0;
    for (const auto& c : calls) sum += static_cast<double>(c.bytes.count());
    return sum;
  };
  // act(gate) reads and writes n, the product reads two and writes one; the backward's three kernels read two and
  // write one each.
  const auto forward = eager_gated(n, e, false, false), backward = eager_gated(n, e, true, false);
  REQUIRE(forward.size() == 2);
  REQUIRE(backward.size() == 3);
  CHECK(bytes(forward) == doctest::Approx(5 * n * e));
  CHECK(bytes(backward) == doctest::Approx(9 * n * e));
  for (const auto& c : forward) CHECK(c.kind.kernel == MemoryKernel::strided);
  // dy act(gate) reads dy and the product's contiguous operand: vectorised.
  CHECK(backward[0].kind.kernel == MemoryKernel::strided);
  CHECK(backward[1].kind.kernel == MemoryKernel::stream);
  CHECK(backward[2].kind.kernel == MemoryKernel::strided);
  // On contiguous halves every kernel streams, with the same bytes.
  const auto halves = eager_gated(n, e, true, true);
  CHECK(bytes(halves) == doctest::Approx(bytes(backward)));
  for (const auto& c : halves) CHECK(c.kind.kernel == MemoryKernel::stream);
}

TEST_CASE("compute: eager RoPE is the kernels PyTorch launches, each reading and writing what it touches") {
  // q of 2 x 16 heads x 2048 positions x 128 in bf16: n = 8 Mi elements, cos and sin of 2048 x 128 each.
  const double n = 8 * 1024 * 1024, table = 2048 * 128, e = 2;
  const auto total = [](const std::vector<MemoryCall>& calls, MemoryKernel kind) {
    double bytes = 0;
    for (const auto& c : calls)
      if (c.kind.kernel == kind) bytes += static_cast<double>(c.bytes.count());
    return bytes;
  };
  const auto forward = eager_rope(n, table, e, false, false);
  // x cos (x and cos in, n out), -x2 (n / 2 each way), cat (n each way), . sin, the sum (2 n in, n out): 10 n + 2
  // tables.
  REQUIRE(forward.size() == 5);
  CHECK(total(forward, MemoryKernel::strided) == doctest::Approx((10 * n + 2 * table) * e));
  CHECK(total(forward, MemoryKernel::stream) == 0);
  CHECK(forward[0].bytes.count() == static_cast<std::uint64_t>((2 * n + table) * e));
  CHECK(forward[1].bytes.count() == static_cast<std::uint64_t>(n * e));
  CHECK(forward[4].bytes.count() == static_cast<std::uint64_t>(3 * n * e));
  const auto backward = eager_rope(n, table, e, true, false);
  // dy sin, -(.), dy cos; then twice a zero fill (n written), a copy of a half (n / 2 each way), an accumulation.
  REQUIRE(backward.size() == 9);
  CHECK(total(backward, MemoryKernel::stream) == doctest::Approx(2 * n * e));
  CHECK(total(backward, MemoryKernel::strided) == doctest::Approx((13 * n + 2 * table) * e));
  for (const auto& c : backward) CHECK_FALSE(c.kind.backward);  // element-wise kernels have no backward rate
  // Twice the tensor, twice the bytes of every kernel but the tables' share.
  const auto twice = eager_rope(2 * n, table, e, false, false);
  CHECK(static_cast<double>(twice[2].bytes.count()) == doctest::Approx(2.0 * forward[2].bytes.count()));
  // On a contiguous tensor the sums are vectorised streams; nothing else changes.
  const auto contiguous = eager_rope(n, table, e, true, true);
  REQUIRE(contiguous.size() == backward.size());
  CHECK(total(contiguous, MemoryKernel::stream) == doctest::Approx(8 * n * e));
  CHECK(total(contiguous, MemoryKernel::strided) == doctest::Approx((7 * n + 2 * table) * e));
  CHECK(eager_rope(n, table, e, false, true)[4].kind.kernel == MemoryKernel::stream);
}

TEST_CASE("compute: power and queue-gap keys are checked") {
  CHECK(error("models: {compute: {power_duty: 1.5}}\n") ==
        "t.yaml:1:32: models.compute.power_duty: must be between 0.05 and 1, got 1.5");
  CHECK(error("models: {compute: {power_window: 0s}}\n") ==
        "t.yaml:1:34: models.compute.power_window: must be > 0, got 0 s");
  const auto m = load("models: {compute: {launch: 5us, queue_gap: 1.5us}}\n");
  CHECK(m.compute->fixed_cost(false).count() == doctest::Approx(5e-6));
  CHECK(m.compute->fixed_cost(true).count() == doctest::Approx(1.5e-6));
  // On by default with our H200's fit, as the GEMM model's defaults are; a parameter set turns it off with 1.
  CHECK(load("models: {}\n").compute->power_duty == doctest::Approx(0.462124));
  CHECK(load("models: {compute: {power_duty: 1}}\n").compute->clock_factor(TensorDuty{1.0, Seconds{0}}, Seconds{0}) ==
        1.0);
}

namespace {

/// The H200 as its preset gives it: 132 SMs, 989 TFLOP/s dense bf16 at 1,980 MHz.
GpuSpec h200() {
  GpuSpec g{"h200", FlopsPerSecond{989e12}, BytesPerSecond{4.8e12}, Bytes{1ull << 37}};
  g.dense_peak = {{Dtype::tf32, FlopsPerSecond{494.5e12}}, {Dtype::fp8, FlopsPerSecond{1979e12}}};
  g.sms = 132;
  g.boost_mhz = 1980;
  return g;
}

}  // namespace

TEST_CASE("gemm: a GEMM takes as many tile times as its busiest SM holds tiles (waves over 132 SMs)") {
  const auto m = load("models: {compute: {gemm_ramp: 0s}}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  // 1,536 x 2,816 in 128 x 256 tiles is 12 x 11 = 132 tiles: one wave; one row of tiles more (1,664) is 143 tiles,
  // two waves on the busiest SMs.
  const Gemm one_wave{1536, 2816, 4096}, spill{1664, 2816, 4096};
  const auto a = c.plan_gemm(gpu, one_wave, Dtype::bf16), b = c.plan_gemm(gpu, spill, Dtype::bf16);
  CHECK(a.per_sm == 1);
  CHECK(a.tiles <= 132);
  // The model may pick another tile for the second shape (160 x 256 fits it in one wave of larger tiles), but 8 %
  // more work costs far more than 8 %.
  CHECK(b.time.count() > 1.15 * a.time.count());
  // A tile's time is its MMA work at the SM's share of the achieved peak, plus the tile overhead.
  const double tile = 2.0 * a.tile_m * a.tile_n * 4096 / (989e12 / 132 * c.gemm_efficiency);
  CHECK(a.time.count() ==
        doctest::Approx(static_cast<double>(a.per_sm) * (tile + c.gemm_tile_overhead.count())).epsilon(1e-9));
}

TEST_CASE("gemm: a large square GEMM runs near the achieved peak, and its time scales with 1 / clock") {
  const auto m = load("models: {}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  const Gemm g{8192, 8192, 8192};
  const double boost = c.gemm_time(gpu, g, Dtype::bf16).count();
  const double rate = g.flops().count() / boost;
  CHECK(rate > 0.85 * 989e12);
  CHECK(rate < c.gemm_efficiency * 989e12);
  // At 1,485 MHz (our H200s under their power cap) everything but the ramp stretches by 1980 / 1485.
  const double slow = c.gemm_time(gpu, g, Dtype::bf16, 1485.0 / 1980).count();
  CHECK(slow - c.gemm_ramp.count() == doctest::Approx((boost - c.gemm_ramp.count()) * 1980 / 1485).epsilon(1e-6));
}

TEST_CASE("gemm: few tiles along a long K split it, tf32 never splits, batches multiply the tiles") {
  const auto m = load("models: {}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  // 512 x 512 output is 16 tiles of 128 x 128 on 132 SMs: split-K keeps more SMs busy along K = 65,536.
  CHECK(c.plan_gemm(gpu, Gemm{512, 512, 65536}, Dtype::bf16).split_k > 1);
  CHECK(c.plan_gemm(gpu, Gemm{512, 512, 65536}, Dtype::tf32).split_k == 1);
  // A square GEMM of plenty of tiles never splits.
  CHECK(c.plan_gemm(gpu, Gemm{8192, 8192, 8192}, Dtype::bf16).split_k == 1);
  const auto one = c.plan_gemm(gpu, Gemm{1024, 1024, 1024}, Dtype::bf16);
  const auto eight = c.plan_gemm(gpu, Gemm{1024, 1024, 1024, 8}, Dtype::bf16);
  const auto tiles_of = [](const GemmPlan& p, std::int64_t batch) {
    return batch * p.split_k * ((1024 + p.tile_m - 1) / p.tile_m) * ((1024 + p.tile_n - 1) / p.tile_n);
  };
  CHECK(one.tiles == tiles_of(one, 1));
  CHECK(eight.tiles == tiles_of(eight, 8));
  CHECK(eight.per_sm == (eight.tiles + 131) / 132);
  CHECK(eight.time.count() > one.time.count());
}

TEST_CASE("gemm: formats, layouts and alignment change the rate as on Hopper") {
  const auto m = load("models: {}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  const Gemm tn{4096, 4096, 4096}, nn{4096, 4096, 4096, 1, GemmLayout::nn};
  // fp8 runs at twice bf16's peak, tf32 at half of it.
  CHECK(c.gemm_time(gpu, tn, Dtype::fp8).count() < 0.7 * c.gemm_time(gpu, tn, Dtype::bf16).count());
  CHECK(c.gemm_time(gpu, tn, Dtype::tf32).count() > 1.6 * c.gemm_time(gpu, tn, Dtype::bf16).count());
  // bf16 reads either layout; tf32 must transpose what is not K-major.
  CHECK(c.gemm_time(gpu, nn, Dtype::bf16) == c.gemm_time(gpu, tn, Dtype::bf16));
  CHECK(c.gemm_time(gpu, nn, Dtype::tf32).count() > c.gemm_time(gpu, tn, Dtype::tf32).count());
  // 4,095 is no multiple of 8 bf16 elements: no TMA, several times slower.
  CHECK(c.gemm_time(gpu, Gemm{4095, 4096, 4096}, Dtype::bf16).count() > 3 * c.gemm_time(gpu, tn, Dtype::bf16).count());
}

TEST_CASE("gemm: a backward pass is the input's and the weight's gradient GEMMs, each as many FLOPs as the forward") {
  const auto m = load("models: {}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  Gemm forward{8192, 12288, 4096};
  Gemm backward = forward;
  backward.backward = true;
  CHECK(backward.flops().count() == 2 * forward.flops().count());
  const double expected = c.gemm_time(gpu, Gemm{8192, 4096, 12288}, Dtype::bf16).count() +
                          c.gemm_time(gpu, Gemm{4096, 12288, 8192}, Dtype::bf16).count();
  CHECK(c.gemm_time(gpu, backward, Dtype::bf16).count() == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("attention: causal attention computes half the score blocks, its backward 2.5 times the forward's work") {
  const Attention full{.batch = 2, .heads = 16, .seq = 4096, .head_dim = 128, .causal = false};
  Attention causal = full;
  causal.causal = true;
  CHECK(full.flops().count() == doctest::Approx(4.0 * 2 * 16 * 4096.0 * 4096 * 128));
  CHECK(causal.flops().count() == doctest::Approx(full.flops().count() / 2));
  Attention backward = causal;
  backward.backward = true;
  CHECK(backward.flops().count() == doctest::Approx(2.5 * causal.flops().count()));
}

TEST_CASE("attention: one CTA per block of 128 queries walks the key blocks it attends to") {
  const auto m = load("models: {compute: {attention_diagonal: 0, attention_cta: 0s, attention_ramp: 0s}}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  // 2 x 16 heads x 4,096 tokens: 32 query blocks a row, 32 x 32 = 1,024 CTAs; all 32 x 32 key blocks each (non-causal),
  // or 1 + 2 + ... + 32 = 528 (causal).
  const Attention full{.batch = 2, .heads = 16, .seq = 4096, .head_dim = 128, .causal = false};
  Attention causal = full;
  causal.causal = true;
  const auto f = c.plan_attention(gpu, full), k = c.plan_attention(gpu, causal);
  CHECK(f.ctas == 1024);
  CHECK(f.blocks == doctest::Approx(32.0 * 1024));
  CHECK(k.blocks == doctest::Approx(32.0 * 528));
  // Equal rows go to the SMs in turns: ceil(1,024 / 132) = 8 on the SM that finishes last, 8 x 32 blocks.
  CHECK(f.per_sm_blocks == doctest::Approx(8 * 32));
  CHECK(f.per_sm_ctas == 8);
  // Without a ramp or per-CTA costs, the time is the busiest SM's blocks at the block's pace: at d = 128 its MMA (the
  // softmax, the same for any d, is shorter).
  const double mma = 4.0 * 128 * 128 * 128 / (989e12 / 132 * c.attention[0].efficiency);
  REQUIRE(mma > c.attention[0].block.count());
  CHECK(f.time.count() == doctest::Approx(f.per_sm_blocks * mma).epsilon(1e-9));
  // At d = 64 the MMA halves but the softmax does not: the block runs at the softmax's pace, a lower share of the peak.
  Attention narrow = full;
  narrow.head_dim = 64;
  const double pace = std::max(mma / 2, c.attention[0].block.count());
  CHECK(c.attention_time(gpu, narrow).count() == doctest::Approx(f.per_sm_blocks * pace).epsilon(1e-9));
  CHECK(narrow.flops().count() / c.attention_time(gpu, narrow).count() <
        full.flops().count() / c.attention_time(gpu, full).count());
  // One long sequence of few heads: the busiest SM holds at least one whole row of key blocks.
  const Attention lone{.batch = 1, .heads = 1, .seq = 8192, .head_dim = 128, .causal = false};
  CHECK(c.plan_attention(gpu, lone).per_sm_blocks == doctest::Approx(64));
  // A causal head on two SMs, its 4 query blocks handed out in grid order to whichever SM frees first: rows of 1, 2,
  // 3 and 4 blocks; the first SM takes 1 then 3 (free at 4), the second 2 then 4 (free at 6): 6 blocks, where an
  // even split would take 5. The longest rows come last: that is the tail a few CTAs an SM leave.
  GpuSpec two = gpu;
  two.sms = 2;
  const Attention short_causal{.batch = 1, .heads = 1, .seq = 512, .head_dim = 128, .causal = true};
  const auto tail = c.plan_attention(two, short_causal);
  CHECK(tail.per_sm_blocks == doctest::Approx(6));
  CHECK(tail.per_sm_ctas == 2);
  CHECK(tail.blocks == doctest::Approx(10));
  // The largest shape a scenario may give (2^24 sequences of 2^24 heads, 2^51 CTAs) is planned at once: the last SM
  // holds its share of the blocks and at most one row more.
  const Attention huge{.batch = 1 << 24, .heads = 1 << 24, .seq = 1024, .head_dim = 128, .causal = true};
  const auto h = c.plan_attention(gpu, huge);
  CHECK(h.per_sm_blocks >= h.blocks / 132 * (1 - 1e-9));
  CHECK(h.per_sm_blocks <= h.blocks / 132 + 8);
  CHECK(static_cast<double>(h.per_sm_ctas) == doctest::Approx(static_cast<double>(h.ctas) / 132).epsilon(1e-6));
}

TEST_CASE("attention: a sliding window walks only the key blocks inside it, both edges masked") {
  const auto m = load("models: {compute: {attention_diagonal: 0.5, attention_cta: 0s, attention_ramp: 0s}}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  // 8,192 tokens, a window of 1,024: a query attends to itself and the 1,023 keys before it, so query block i (128
  // queries) reaches ceil(1,023 / 128) = 8 key blocks before its own: 9 blocks from block 8 on, the diagonal and the
  // window's far edge each masked (1 + diagonal block times); blocks 0-7 as without a window.
  const Attention causal{.batch = 1, .heads = 4, .seq = 8192, .head_dim = 128, .causal = true};
  Attention local = causal;
  local.window = 1024;
  const double d = c.attention[0].diagonal;
  const double rows = 64;
  const double head = (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8) + 8 * d + (rows - 8) * (9 + 2 * d);
  CHECK(c.plan_attention(gpu, local).blocks == doctest::Approx(4 * head));
  CHECK(c.plan_attention(gpu, causal).blocks == doctest::Approx(4 * (rows * (rows + 1) / 2 + rows * d)));
  // FLOPs: every query's min(position + 1, window) keys, s w - w^2 / 2 pairs in the continuous count.
  CHECK(local.flops().count() == doctest::Approx(4.0 * 4 * 128 * (8192.0 * 1024 - 1024.0 * 1024 / 2)));
  // The SM that finishes last holds its share of the blocks and at most one row (9 + 2 diagonal blocks) more; the
  // causal kernel's longest rows come last and leave a longer tail, so the window saves at least its share of blocks.
  const auto plan = c.plan_attention(gpu, local);
  CHECK(plan.per_sm_blocks >= plan.blocks / 132 - (9 + 2 * d));
  CHECK(plan.per_sm_blocks <= plan.blocks / 132 + (9 + 2 * d));
  const double ratio = c.attention_time(gpu, local).count() / c.attention_time(gpu, causal).count();
  CHECK(ratio < head / (rows * (rows + 1) / 2 + rows * d));
  CHECK(ratio > 0.1);
  // A window at least the sequence is plain causal attention.
  Attention whole = causal;
  whole.window = 8192;
  CHECK(c.attention_time(gpu, whole).count() == c.attention_time(gpu, causal).count());
  CHECK(whole.flops().count() == causal.flops().count());
  // The backward walks the same blocks.
  Attention local_back = local, causal_back = causal;
  local_back.backward = causal_back.backward = true;
  CHECK(c.attention_time(gpu, local_back).count() < 0.4 * c.attention_time(gpu, causal_back).count());
}

TEST_CASE("attention: the masked diagonal, the CTAs' own costs, the backward's helper kernels and GQA's reductions") {
  const auto m = load("models: {}\n");
  const auto& c = *m.compute;
  const GpuSpec gpu = h200();
  const Attention a{.batch = 2, .heads = 16, .seq = 4096, .head_dim = 128, .causal = true};
  const auto plan = c.plan_attention(gpu, a);
  // Each of the 1,024 rows' diagonal block takes 1 + attention_diagonal block times. The SM that finishes last has
  // at least its share of the blocks and at most that plus the longest row (a list schedule's bound), and the time is
  // its blocks and its CTAs' own costs.
  CHECK(plan.blocks == doctest::Approx(32.0 * (528 + 32 * c.attention[0].diagonal)));
  const double longest = 32 + c.attention[0].diagonal;
  CHECK(plan.per_sm_blocks >= plan.blocks / 132 - longest);
  CHECK(plan.per_sm_blocks <= plan.blocks / 132 + longest);
  const double mma = 4.0 * 128 * 128 * 128 / (989e12 / 132 * c.attention[0].efficiency);
  CHECK(plan.time.count() == doctest::Approx(plan.per_sm_blocks * std::max(mma, c.attention[0].block.count()) +
                                             static_cast<double>(plan.per_sm_ctas) * c.attention[0].cta.count() +
                                             c.attention[0].ramp.count())
                                 .epsilon(1e-9));
  // The backward's helpers read dO and O (4 B per query element in bf16), convert dQ from fp32 (4 B read, 2 written):
  // 10 B; GQA adds the per-query-head dK and dV in fp32 summed over each KV head's group (8 B more).
  Attention backward = a;
  backward.backward = true;
  const double q = 2.0 * 16 * 4096 * 128;
  CHECK(c.plan_attention(gpu, backward).helpers.count() ==
        doctest::Approx(q * 10 / (4.8e12 * c.hbm_efficiency)).epsilon(1e-6));
  Attention gqa = backward;
  gqa.kv_heads = 4;
  CHECK(c.plan_attention(gpu, gqa).helpers.count() ==
        doctest::Approx(q * 18 / (4.8e12 * c.hbm_efficiency)).epsilon(1e-6));
  CHECK(c.plan_attention(gpu, a).helpers.count() == 0);
  // Everything but the helpers' HBM time and the ramp stretches with 1 / clock.
  const double boost = c.attention_time(gpu, a).count(), slow = c.attention_time(gpu, a, 0.75).count();
  CHECK(slow - c.attention[0].ramp.count() ==
        doctest::Approx((boost - c.attention[0].ramp.count()) / 0.75).epsilon(1e-9));
}
