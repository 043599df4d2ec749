// Collectives end to end: each TEST_CASE that runs a simulation is its own process (one simulation per process).
//
// Physics: a lone collective takes exactly the time of its steps (launch + base + per-step latency + bytes over the
// rate). Conservation: the links carry what the algorithm must move. Consistency checks compare the model with
// public measurements we cannot make ourselves (docs/hardware.md); they are labelled as such and are not
// validation against our own traces.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include <chrono>

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

namespace {
/// Payload bytes on the link named `name` ("gpu0->nvswitch[0-3]").
std::uint64_t payload(const Report& r, const std::string& name) {
  for (const auto& l : r.links)
    if (l.name == name) return l.payload_bytes.count();
  FAIL("no link " << name);
  return 0;
}
/// busbw_GBps of every row of the tables whose title starts with `title`.
std::vector<double> busbw(const Report& r, const std::string& title) {
  std::vector<double> values;
  for (const auto& t : r.tables)
    if (t.title.starts_with(title))
      for (const auto& row : t.rows) values.push_back(row.back().get<double>());
  return values;
}

constexpr double S = 256.0 * (1 << 20);  // 256 MiB
constexpr double HOP = 0.354e-6;         // two NVLink hops of 177 ns
constexpr double LAUNCH = 3.68e-6;       // stream launch: what it costs the GPU (models/collective.cpp)
// SM copies at 50 % of 450 GB/s: round numbers.
const std::string HALF_SM = "copy: {sm: {efficiency: 0.5}}";
constexpr double B = 450e9 * 0.5;
}  // namespace

TEST_CASE("collectives: a lone one_shot all-reduce reads every peer's buffer in one step") {
  const auto s = load("topology: {type: hgx, gpus: 4}\nmodels: {" + HALF_SM +
                      "}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, "
                      "algorithm: one_shot}}]}]\n");
  const Report r = s.run();
  CHECK(relative_error(span(r), LAUNCH + 2e-6 + (1e-6 + HOP) + 3 * S / B) <= 1e-9);
  CHECK(payload(r, "gpu0->nvswitch[0-3]") == 3ull * (256ull << 20));  // (n-1) S out of every GPU
  CHECK(payload(r, "nvswitch[0-3]->gpu3") == 3ull * (256ull << 20));
}

TEST_CASE("collectives: a lone two_shot all-reduce is two direct exchanges of S/n with every peer") {
  const auto s = load("topology: {type: hgx, gpus: 4}\nmodels: {" + HALF_SM +
                      "}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, "
                      "algorithm: two_shot}}]}]\n");
  const Report r = s.run();
  CHECK(relative_error(span(r), LAUNCH + 2e-6 + 2 * (1e-6 + HOP) + 2 * 3 * (S / 4) / B) <= 1e-9);
  CHECK(payload(r, "gpu1->nvswitch[0-3]") == 2 * 3 * (64ull << 20));  // 2(n-1)/n S
}

TEST_CASE("collectives: a lone nvls all-reduce sends S + S/n into the switch and gets S + S/n back") {
  const auto s = load("topology: {type: hgx, gpus: 8}\nmodels: {" + HALF_SM +
                      "}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, "
                      "algorithm: nvls}}]}]\n");
  const Report r = s.run();
  // One step at the switch's reduction rate (NVSwitch3: 0.85 of the SM copy rate), after NVLS's 25 us.
  CHECK(relative_error(span(r), LAUNCH + 25e-6 + HOP + (S + S / 8) / (B * 0.85)) <= 1e-9);
  for (int g = 0; g < 8; ++g) {
    CAPTURE(g);
    CHECK(payload(r, fmt::format("gpu{}->nvswitch[0-3]", g)) == (256ull << 20) + (32ull << 20));
    CHECK(payload(r, fmt::format("nvswitch[0-3]->gpu{}", g)) == (256ull << 20) + (32ull << 20));
  }
}

TEST_CASE("collectives: a ring all-reduce moves 2(n-1)/n S out of and into every GPU") {
  const auto s = load(
      "topology: {type: hgx, gpus: 8}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: "
      "256MiB, algorithm: ring}}]}]\n");
  const Report r = s.run();
  for (int g = 0; g < 8; ++g) {
    CAPTURE(g);
    CHECK(payload(r, fmt::format("gpu{}->nvswitch[0-3]", g)) == 14 * (32ull << 20));
    CHECK(payload(r, fmt::format("nvswitch[0-3]->gpu{}", g)) == 14 * (32ull << 20));
  }
}

TEST_CASE("collectives: a 2-GPU tree all-reduce pipelines C chunks up and back in C + 1 chunk times") {
  const auto s = load("topology: {type: hgx, gpus: 2}\nmodels: {" + HALF_SM +
                      "}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, "
                      "algorithm: tree, protocol: Simple}}]}]\n");
  const Report r = s.run();
  // 128 chunks of 2 MiB; the latency (tree Simple: base 8.4 us, 4 us per hop) fills the 2-hop pipeline once.
  const double chunk = S / 128 / B;
  CHECK(relative_error(span(r), LAUNCH + 8.4e-6 + 2 * (4e-6 + HOP) + 129 * chunk) <= 1e-9);
  CHECK(payload(r, "gpu1->nvswitch[0-3]") == 256ull << 20);  // the leaf sends S up
  CHECK(payload(r, "gpu0->nvswitch[0-3]") == 256ull << 20);  // the root sends S down
}

TEST_CASE("collectives: a tree all-reduce is a chain whose middle ranks carry 2S") {
  const auto s = load("topology: {type: hgx, gpus: 4}\nmodels: {" + HALF_SM +
                      "}\nworkloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, "
                      "algorithm: tree, protocol: Simple}}]}]\n");
  const Report r = s.run();
  CHECK(payload(r, "gpu0->nvswitch[0-3]") == 256ull << 20);
  CHECK(payload(r, "gpu1->nvswitch[0-3]") == 2 * (256ull << 20));
  CHECK(payload(r, "gpu2->nvswitch[0-3]") == 2 * (256ull << 20));
  CHECK(payload(r, "gpu3->nvswitch[0-3]") == 256ull << 20);
  // The middle ranks' links are shared by the two pipelines: the model's 2C + 2(n-2) chunk times (approximate).
  const double chunk = S / 128 / B;
  const double model = LAUNCH + 8.4e-6 + 6 * (4e-6 + HOP) + (2 * 128 + 4) * chunk;
  CHECK(relative_error(span(r), model) <= 0.02);
}

TEST_CASE("collectives: calls back to back from the host take the host's time per call where the GPU is faster") {
  // 20 calls of 8 B (the GPU done in ~12 us, within the host's 20 us per call) and of 256 MiB (GPU bound), paced and
  // not; an all_to_all adds 0.5 us per send and recv: 2 ranks, 4 of them.
  const auto s = load("topology: {type: hgx, gpus: 2}\nmodels: {" + HALF_SM +
                      ", collective: {host_call: 20us, host_p2p_call: 0.5us}}\nworkloads:\n"
                      "  - {type: program, ops: [{repeat: 20, ops: [{collective: {op: all_reduce, bytes: 8B}}]}]}\n"
                      "  - {type: program, ops: [{repeat: 20, ops: [{collective: {op: all_reduce, bytes: 8B, "
                      "host_paced: true}}]}]}\n"
                      "  - {type: program, ops: [{repeat: 20, ops: [{collective: {op: all_to_all, bytes: 8B, "
                      "host_paced: true}}]}]}\n"
                      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB}}]}\n"
                      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, host_paced: true}}]}\n");
  const Report r = s.run();
  CHECK(span(r, 0) / 20 < 15e-6);
  CHECK(span(r, 1) / 20 == doctest::Approx(20e-6).epsilon(1e-9));
  CHECK(span(r, 2) / 20 == doctest::Approx(20e-6 + 4 * 0.5e-6).epsilon(1e-9));
  CHECK(span(r, 3) > 20e-6);
  CHECK(span(r, 4) == doctest::Approx(span(r, 3)).epsilon(1e-12));
}

TEST_CASE("collectives: fewer channels than links slow a ring down in proportion, and graphs launch faster") {
  const auto s = load("topology: {type: hgx, gpus: 2}\nmodels: {" + HALF_SM +
                      "}\nworkloads:\n"
                      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, "
                      "protocol: Simple, channels: 6}}]}\n"
                      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 8B, algorithm: ring, "
                      "protocol: LL}}]}\n"
                      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 8B, algorithm: ring, "
                      "protocol: LL, launch: graph}}]}\n");
  const Report r = s.run();
  // 6 channels of 18 links: a third of the rate.
  CHECK(relative_error(span(r, 0), LAUNCH + 8.4e-6 + 2 * (3.4e-6 + HOP) + 2 * (S / 2) / (B / 3)) <= 1e-9);
  // A CUDA graph saves what a stream launch costs the GPU beyond a graph node's on our H200 (3.68 us - 0.52 us).
  CHECK(span(r, 1) - span(r, 2) == doctest::Approx(3.16e-6).epsilon(1e-6));
}

TEST_CASE("collectives: a lone ring runs NCCL's channel ramp, one channel per 32 KiB under Simple up to every link") {
  const auto s = load(
      "topology: {type: hgx, gpus: 2}\nmodels: {" + HALF_SM +
      "}\nworkloads:\n"
      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 16KiB, algorithm: ring, protocol: Simple}}]}\n"
      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 128KiB, algorithm: ring, protocol: Simple}}]}\n"
      "  - {type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: Simple}}]}\n");
  const Report r = s.run();
  // 2 ranks: 2 steps of S/2; channels = clamp(floor(S / 32 KiB), 1, 18), each with a link's share of the rate.
  auto model = [](double bytes, int channels) {
    return LAUNCH + 8.4e-6 + 2 * (3.4e-6 + HOP) + bytes / (B * channels / 18);
  };
  CHECK(relative_error(span(r, 0), model(16 * 1024, 1)) <= 1e-9);
  CHECK(relative_error(span(r, 1), model(128 * 1024, 4)) <= 1e-9);
  CHECK(relative_error(span(r, 2), model(S, 18)) <= 1e-9);
}

TEST_CASE("collectives: forcing what cannot run is a pinned error") {
  auto error = [](const std::string& collective, const std::string& topology = "hgx", const std::string& models = "") {
    try {
      load("topology: {type: " + topology + ", gpus: 8}\n" + models +
           "workloads: [{type: program, ops: [{collective: " + collective + "}]}]\n");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("{op: all_to_all, bytes: 1MiB, algorithm: tree}") ==
        "t.yaml:2:89: workloads[0].ops[0].collective.algorithm: tree cannot run all_to_all; allowed: direct");
  CHECK(error("{op: all_gather, bytes: 1MiB, algorithm: one_shot}") ==
        "t.yaml:2:89: workloads[0].ops[0].collective.algorithm: one_shot cannot run all_gather; allowed: ring");
  CHECK(error("{op: all_reduce, bytes: 1MiB, algorithm: nvls}", "pcie") ==
        "t.yaml:2:89: workloads[0].ops[0].collective.algorithm: nvls needs NVSwitches that reduce in the switch and "
        "this topology has none; allowed for all_reduce: ring, tree, one_shot, two_shot");
  CHECK(error("{op: all_reduce, bytes: 1MiB, algorithm: nvls, protocol: LL}") ==
        "t.yaml:2:105: workloads[0].ops[0].collective.protocol: LL cannot run all_reduce with nvls; allowed: Simple");
  CHECK(error("{op: all_to_all, bytes: 1MiB, protocol: LL128}") ==
        "t.yaml:2:88: workloads[0].ops[0].collective.protocol: LL128 cannot run all_to_all; allowed: LL, Simple");
  CHECK(error("{op: all_reduce, bytes: 1MiB, algorithm: star}") ==
        "t.yaml:2:89: workloads[0].ops[0].collective.algorithm: expected ring, tree, one_shot, two_shot, nvls, "
        "direct, nvls_tree or collnet, found 'star'");
  CHECK(error("{op: all_reduce, bytes: 1MiB, algorithm: nvls_tree}") ==
        "t.yaml:2:89: workloads[0].ops[0].collective.algorithm: nvls_tree runs across nodes, and every rank is in one "
        "node; allowed for all_reduce: ring, tree, one_shot, two_shot, nvls");
  CHECK(error("{op: all_reduce, bytes: 1MiB, channels: 0}") ==
        "t.yaml:2:88: workloads[0].ops[0].collective.channels: must be between 1 and 64, got 0");
  CHECK(error("{op: all_reduce, bytes: 1MiB, launch: kernel}") ==
        "t.yaml:2:86: workloads[0].ops[0].collective.launch: expected stream or graph, found 'kernel'");
  CHECK(error("{op: all_reduce, bytes: 1MiB, launch: graph, host_paced: true}") ==
        "t.yaml:2:105: workloads[0].ops[0].collective.host_paced: a CUDA graph replays its calls without the host: "
        "use launch: stream");
  CHECK(error("{op: all_reduce, bytes: 1MiB, algorithm: nvls}", "hgx", "models: {collective: {nvls: false}}\n") ==
        "t.yaml:2:29: models.collective.nvls: is false, but a collective forces algorithm: nvls");
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: [all_reduce, "
                            "all_gather], algorithm: tree}]\n"),
                       "t.yaml:2:80: workloads[0].algorithm: tree cannot run all_gather; allowed: ring", InputError);
}

// Consistency checks, not validation: public 8xH100 numbers we cannot measure here (docs/hardware.md#nccl-busbw), on
// the shipped published-number parameter set (validation/params/h100.yaml).
TEST_CASE("consistency check: 8xH100 HGX ring all-reduce busbw at 1-8 GiB is within 10 % of 365-370 GB/s") {
  // [meas] NVIDIA/nccl#1455: ring busbw 365-370 GB/s at 2-4 GB on 8xH100, flat in n.
  const auto s = load(
      "topology: {type: hgx, gpu: h100, gpus: 8}\nmodels: {params: h100}\nworkloads: [{type: collective_sweep, ops: "
      "all_reduce, algorithm: ring, sizes: {from: 1GiB, to: 8GiB}}]\n");
  const auto values = busbw(s.run(), "all_reduce on 8 ranks");
  REQUIRE(values.size() == 4);
  for (double v : values) {
    MESSAGE("ring busbw " << v << " GB/s");
    CHECK(v >= 365 * 0.9);
    CHECK(v <= 370 * 1.1);
  }
}

TEST_CASE("consistency check: HGX H100 NVLS all-reduce busbw is within 10 % of 420-480 GB/s on 5-8 GPUs") {
  // [meas] NVIDIA/nccl#1455: NVLS busbw 420 / 440 / 460 / 480 GB/s on 5 / 6 / 7 / 8 H100s (2-4 GB).
  std::string yaml = "topology: {type: hgx, gpu: h100, gpus: 8}\nmodels: {params: h100}\nworkloads:\n";
  for (const char* ranks : {"0-4", "0-5", "0-6", "0-7"})
    yaml += fmt::format(
        "  - {{type: collective_sweep, ops: all_reduce, ranks: \"{}\", algorithm: nvls, sizes: {{from: 2GiB, to: "
        "4GiB}}}}\n",
        ranks);
  const Report r = load(yaml).run();
  const std::map<int, double> measured{{5, 420}, {6, 440}, {7, 460}, {8, 480}};
  for (auto [n, expected] : measured) {
    const auto values = busbw(r, fmt::format("all_reduce on {} ranks", n));
    REQUIRE(values.size() == 2);
    for (double v : values) {
      MESSAGE("nvls on " << n << " GPUs: busbw " << v << " GB/s (measured " << expected << ")");
      CHECK(relative_error(v, expected) <= 0.10);
    }
  }
}

// Consistency check, not validation: the full GB200 NVL72 rack (docs/hardware.md#nvl72-measured). The rack's in-switch
// reduction efficiency (0.58) is fitted from the 8 GB point of the same measurement, so this checks the plumbing (72
// GPUs over 18 planes, NVLS chosen by size, the busbw curve at 4 and 8 GiB) more than it checks the model
// independently.
TEST_CASE("consistency check: GB200 NVL72 all-reduce busbw on 72 GPUs is within 10 % of 835-847 GB/s") {
  // [meas] coreweave/nccl-tests PR #43: 72 GPUs, busbw 839 at 4 GB, 834.6-846.8 at 8 GB.
  const auto started = std::chrono::steady_clock::now();
  const auto s = load(
      "topology: {type: nvl72}\nmodels: {params: gb200}\nworkloads:\n"
      "  - {type: collective_sweep, ops: all_reduce, sizes: {from: 4GiB, to: 8GiB}}\n"
      "  - {type: collective_sweep, ops: all_reduce, algorithm: ring, sizes: {from: 8GiB, to: 8GiB}}\n");
  const Report r = s.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  MESSAGE("72-GPU simulation: " << r.ops.size() << " ops, wall time " << wall << " s");
  const auto values = busbw(r, "all_reduce on 72 ranks");
  REQUIRE(values.size() == 3);
  for (std::size_t i = 0; i < 2; ++i) {
    MESSAGE("chosen algorithm: busbw " << values[i] << " GB/s");
    CHECK(values[i] >= 835 * 0.9);
    CHECK(values[i] <= 847 * 1.1);
  }
  // A ring cannot get there: it is bound by the links (900 GB/s x SM efficiency), as docs/hardware.md#nccl-busbw notes.
  MESSAGE("ring: busbw " << values[2] << " GB/s");
  CHECK(values[2] < 835 * 0.9);
  CHECK(wall < 30);
}

TEST_CASE("workloads: a ring all-reduce without contention takes 2(n-1)(alpha + S/(nB))") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    // Only one n per process can run a simulation, so this checks the plan for every n and simulates n = 4 below.
    const auto s = load(fmt::format(
        "topology: {{type: hgx, gpus: {}}}\n"
        "models: {{collective: {{Simple: {{base_latency: 0us, step_latency: 1us}}}}}}\n"
        "workloads: [{{type: program, ops: [{{collective: {{op: all_reduce, bytes: 256MiB, protocol: Simple}}}}]}}]\n",
        n));
    CHECK(s.fabric().gpus().size() == static_cast<std::size_t>(n));
  }
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 1us}, stream_launch: 0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_reduce, bytes: 256MiB, algorithm: ring, protocol: "
      "Simple}}]}]\n");
  const Report r = s.run();
  const double n = 4, alpha = 1e-6 + HOP;  // S and B as above: 256 MiB at half the SM copy rate
  CHECK(relative_error(span(r, 0), 2 * (n - 1) * (alpha + S / (n * B))) <= 1e-9);
}

TEST_CASE("workloads: all_to_all conserves bytes: every GPU receives (n-1)/n of every buffer") {
  const auto s = load(
      "topology: {type: hgx, gpus: 8}\n"
      "workloads: [{type: program, ops: [{collective: {op: all_to_all, bytes: 64MiB}}]}]\n");
  const Report r = s.run();
  const std::uint64_t per_peer = (64ull << 20) / 8;
  std::uint64_t sent = 0, received = 0;
  for (const auto& l : r.links) {
    if (l.name.starts_with("gpu")) sent += l.payload_bytes.count();
    if (l.name.starts_with("nvswitch")) {
      CHECK(l.payload_bytes.count() == 7 * per_peer);
      received += l.payload_bytes.count();
    }
  }
  CHECK(sent == 8 * 7 * per_peer);
  CHECK(received == sent);
}

TEST_CASE("workloads: a broadcast pipelines chunks down the chain") {
  const auto s = load(
      "topology: {type: hgx, gpus: 4}\n"
      "models: {collective: {Simple: {base_latency: 0us, step_latency: 0us}, broadcast_chunk: 16MiB, stream_launch: "
      "0us}, copy: "
      "{sm: {efficiency: 0.5}}}\n"
      "workloads: [{type: program, ops: [{collective: {op: broadcast, bytes: 256MiB, protocol: Simple}}]}]\n");
  const Report r = s.run();
  // 16 chunks through 3 hops: each hop forwards a chunk after receiving it, paying the wire latency once to fill the
  // pipeline, so it takes hops x latency + (hops + chunks - 1) x chunk / B.
  const double chunk = 16.0 * (1 << 20) / (450e9 * 0.5);
  CHECK(relative_error(span(r, 0), 3 * 0.354e-6 + 18 * chunk) <= 1e-9);
}
