// The PGAS model's defaults against the H200 records they were derived from (no simulation: formulas only).
#include <doctest/doctest.h>

#include <cmath>

#include "models/models.hpp"
#include "scenario/test_support.hpp"

using namespace snsim;
using snsim::workloads::testing::relative_error;
using namespace snsim::literals;
using models::PgasRoute;
using models::Scope;

TEST_CASE("pgas model: on our H200s' route the defaults reproduce the records they come from") {
  const auto doc = ConfigDocument::load_string("{}", "t.yaml");
  const auto m = models::Models::load(doc->root()).pgas;
  // Our H200 pair: 354.3 ns one way (half the peer chase's extra round trip), 450 GB/s per direction.
  const PgasRoute h200{Seconds{354.3e-9}, Seconds{354.3e-9}, BytesPerSecond{450e9}};
  // Medians of validation/traces/h200/h200x2-nvshmem.jsonl and h200x2-latency-jitter.jsonl, within 1 %.
  CHECK(relative_error(m->put_quiet_time(Scope::thread, 8_B, 1, 1, h200).count(), 1.400e-6) <= 0.01);
  CHECK(relative_error(m->put_quiet_time(Scope::thread, 64_KiB, 1, 1, h200).count(), 365.6e-6) <= 0.01);
  CHECK(relative_error(m->get_time(Scope::thread, 8_B, h200).count(), 1.303e-6) <= 0.01);
  CHECK(relative_error(m->get_time(Scope::thread, 64_KiB, h200).count(), 1824e-6) <= 0.01);
  CHECK(relative_error(2 * m->put_signal_time(Scope::thread, 8_B, h200).count(), 3.924e-6) <= 0.01);
  CHECK(relative_error(m->barrier_time(Scope::thread, 2, h200.latency).count(), 2.484e-6) <= 0.01);
  CHECK(relative_error(m->barrier_time(Scope::block, 2, h200.latency).count(), 3.189e-6) <= 0.01);
  CHECK(relative_error(m->chase_time(1, 4_MiB, Seconds{0}).count(), 141.5e-9) <= 0.01);
  CHECK(relative_error(m->chase_time(1, 4_MiB, h200.latency + h200.latency_back).count(), 850.2e-9) <= 0.01);
  CHECK(relative_error(m->chase_time(1, 1_GiB, Seconds{0}).count(), 336.4e-9) <= 0.01);
  // put_rate_blocks at 64 MiB, 16 puts per block: 1 block 10.55 GB/s, 128 blocks 369.1 GB/s.
  auto block_rate = [&](int blocks) {
    const Bytes slice{(64ull << 20) / static_cast<unsigned>(blocks)};
    return 16 * 64.0 * (1 << 20) / m->put_quiet_time(Scope::block, slice, blocks, 16, h200).count();
  };
  CHECK(relative_error(block_rate(1), 10.55e9) <= 0.01);
  CHECK(relative_error(block_rate(128), 369.1e9) <= 0.01);
  // put_rate at 8 B, 1000 puts by one issuer: the message rate.
  CHECK(relative_error(8000 / m->put_quiet_time(Scope::warp, 8_B, 1, 1000, h200).count(), 3.253e7) <= 0.01);
}
