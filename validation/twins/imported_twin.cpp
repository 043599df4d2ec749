// Twins of records imported from other tools (validation/importers/): nccl-tests, nvbandwidth,
// p2pBandwidthLatencyTest and NVSHMEM perftest. One table (TESTS below) says, for each tool and test, which
// experiment the tool ran; the builders write it with the same ops as the probe's twins (reusing the collective,
// latency and nvshmem builders where the experiment is the probe's). A twin's value is in the record's own unit:
// seconds for times, bytes per second for the tools' bandwidths (Twin::rate_bytes: the bytes the tool divides by).
//
// The records' ranks are already GPUs of the simulated platform (make_twin places them), and a record that names no
// ranks has been given the ranks of every GPU of its run.
#include <algorithm>
#include <array>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {

using workloads::CopyOp;
using workloads::HOST;
using workloads::Op;
using workloads::RepeatOp;
using workloads::StreamsOp;
using Engine = models::CopyEngine;

struct Context {
  const Trace& trace;
  const TraceRecord& r;
  int gpus;
  const models::Models& models;
  const std::vector<int>& run_gpus;  // every GPU of the run (all_to_host, host_to_all)
};

using Builder = std::variant<Twin, std::string> (*)(const Context&);

std::string extra_text(const TraceRecord& r, const char* key) {
  const auto it = r.extra.find(key);
  return it != r.extra.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Engine engine_of(const TraceRecord& r) {
  return extra_text(r, "engine") == "sm" ? Engine::sm : Engine::ce;
}

Twin empty_twin(int gpus) {
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  return twin;
}

/// `depth` copies queued on one stream (depth 1: a lone copy, which pays the engine's start-up).
std::vector<Op> queued(int peer, Bytes bytes, Engine engine, int depth, bool pull = false) {
  if (depth == 1) return {op(CopyOp{peer, bytes, engine, false, pull})};
  return {op(RepeatOp{depth, {op(CopyOp{peer, bytes, engine, true, pull})}})};
}

/// Appends a stream of ops to a GPU's sample: alone, or beside the streams it already runs.
void add_stream(Twin& twin, int gpu, std::vector<Op> stream) {
  auto& at = twin.sample[static_cast<std::size_t>(gpu)];
  if (at.empty()) {
    at = std::move(stream);
  } else if (at.size() == 1 && std::holds_alternative<StreamsOp>(at.front().what)) {
    std::get<StreamsOp>(at.front().what).streams.push_back(std::move(stream));
  } else {
    at = {op(StreamsOp{{std::move(at), std::move(stream)}})};
  }
}

// --- nccl-tests ---------------------------------------------------------------------------------------------------

/// nccl-tests' binary name -> snsim's collective ("alltoall_perf" -> "all_to_all").
std::string collective_name(const std::string& test) {
  std::string name = test.ends_with("_perf") ? test.substr(0, test.size() - 5) : test;
  return name == "alltoall" ? "all_to_all" : name;
}

/// The NCCL settings the log printed (platform.collective, validation/traces/README.md), as the capture environment
/// collective_requirements reads; the header's own env wins.
Trace nccl_environment(const Trace& trace) {
  Trace out;
  out.header.env = trace.header.env;
  const auto platform = trace.header.extra.find("platform");
  if (platform == trace.header.extra.end() || !platform->contains("collective")) return out;
  const auto& c = (*platform)["collective"];
  auto set = [&](const char* var, const char* key) {
    if (!out.header.env.contains(var) && c.contains(key) && c[key].is_string()) out.header.env[var] = c[key];
  };
  set("NCCL_ALGO", "algorithm");
  set("NCCL_PROTO", "protocol");
  if (!out.header.env.contains("NCCL_NVLS_ENABLE") && c.contains("nvls") && c["nvls"].is_boolean())
    out.header.env["NCCL_NVLS_ENABLE"] = c["nvls"].get<bool>() ? "1" : "0";
  return out;
}

std::variant<Twin, std::string> nccl_tests(const Context& c) {
  const auto& r = c.r;
  if (r.bytes.count() == 0) return std::string("0 bytes: NCCL returns without moving data");
  const bool graph = extra_text(r, "launch") == "graph";
  if (r.ranks.size() == 1) {
    // One rank: NCCL copies the send buffer into the receive buffer with a cudaMemcpyAsync (src/enqueue.cc,
    // ncclLaunchOneRank), a copy within the GPU on a copy engine; in place it has nothing to copy, and what the tool
    // times is its own event pair. nccl-tests calls it back to back, so the host's copy call (stream.host_copy) paces
    // the small ones; replayed from a graph, the copy node alone. NCCL's own CPU time around the call on this path
    // is not measured apart and is left out.
    if (r.variant == "in_place") return std::string("one rank, in place: NCCL moves nothing, the time is the timer's");
    Twin twin = empty_twin(c.gpus);
    const int rank = r.ranks.front();
    Op copy =
        op(CopyOp{rank, r.bytes, Engine::ce, true, false, graph ? models::Launch::graph : models::Launch::stream});
    if (graph) {
      twin.sample[static_cast<std::size_t>(rank)].push_back(std::move(copy));
    } else {
      const Op call = op(workloads::HostOp{c.models.stream->host_copy, "cudaMemcpyAsync", true});
      twin.sample[static_cast<std::size_t>(rank)].push_back(op(StreamsOp{{{call}, {std::move(copy)}}}));
    }
    return twin;
  }
  const std::string name = collective_name(r.test);
  if (!models::collective_kind(name)) return fmt::format("snsim models no NCCL {} (models/collective.hpp)", name);
  // In place and out of place are the same operation to the model (only the buffers differ); a graph launch is
  // what the file measured when it ran with -G.
  TraceRecord probe = r;
  probe.test = name;
  probe.variant = graph ? "graph" : "out_of_place";
  probe.extra["ops_per_graph"] = 1;
  return collective(nccl_environment(c.trace), probe, c.gpus);
}

// --- nvbandwidth --------------------------------------------------------------------------------------------------

bool is_host(const std::string& end) {
  return end.starts_with("cpu");
}

std::variant<Twin, std::string> nvbandwidth_copy(const Context& c) {
  const auto& r = c.r;
  const std::string pattern = extra_text(r, "pattern");
  const std::string direction = extra_text(r, "direction");
  const std::string src = extra_text(r, "src"), dst = extra_text(r, "dst"), issuer = extra_text(r, "issuer");
  const Engine engine = engine_of(r);
  const bool both_ways = direction == "bidir_one" || direction == "bidir_sum";
  Twin twin = empty_twin(c.gpus);
  twin.rate_bytes = direction == "bidir_sum" ? Bytes{2 * r.bytes.count()} : r.bytes;
  if (r.ranks.empty()) return std::string("the record names no GPU");
  const int gpu = r.ranks.front();

  if (pattern == "local") {
    // nvbandwidth divides the bytes copied (not the HBM traffic, twice that) by the time: on our H200 it reports
    // 2.1 TB/s where p2pBandwidthLatencyTest's diagonal, which counts the read and the write, reports 4.0 TB/s
    // (samples/real/nvbandwidth-v0.8-1xh200.txt, p2pBandwidthLatencyTest-cuda13-1xh200-p2p-read.txt).
    add_stream(twin, gpu, queued(gpu, r.bytes, engine, 1));
    return twin;
  }
  if (pattern == "pair" || pattern == "all_to_host" || pattern == "host_to_all") {
    if (is_host(src) || is_host(dst)) {
      // The GPU's engine copies to or from pinned host memory; all_to_host / host_to_all run every GPU's copy at
      // once, and the record is one GPU's share. Bidirectional: the opposite copy runs beside it.
      const bool to_host = is_host(dst);
      std::vector<int> copiers{gpu};
      if (pattern != "pair") copiers = c.run_gpus;
      for (int g : copiers) {
        add_stream(twin, g, queued(HOST, r.bytes, engine, 1, !to_host));
        if (both_ways) add_stream(twin, g, queued(HOST, r.bytes, engine, 1, to_host));
      }
      return twin;
    }
    if (r.ranks.size() != 2)
      return fmt::format("{}: a GPU pair needs 2 ranks, the record has {}", r.test, r.ranks.size());
    const int from = r.ranks[0], to = r.ranks[1];
    const bool reads = issuer == dst;   // the destination's engine pulls from the source
    auto one_way = [&](int a, int b) {  // bytes flow a -> b
      if (reads)
        add_stream(twin, b, queued(a, r.bytes, engine, 1, true));
      else
        add_stream(twin, a, queued(b, r.bytes, engine, 1));
    };
    one_way(from, to);
    if (both_ways) one_way(to, from);
    return twin;
  }
  return fmt::format("no twin for nvbandwidth's {} pattern yet", pattern.empty() ? "unnamed" : pattern);
}

// The span nvbandwidth's latency kernel chases through when the record does not say: its default buffer.
constexpr Bytes NVBANDWIDTH_DEFAULT_BUFFER{512ull << 20};

std::variant<Twin, std::string> nvbandwidth_latency(const Context& c) {
  const auto& r = c.r;
  if (r.ranks.size() != 2) return fmt::format("{}: needs the reader and the owner", r.test);
  // A pointer chase of dependent loads by one thread of the reader, as the probe's peer_load.
  TraceRecord probe = r;
  probe.test = r.ranks[0] == r.ranks[1] ? "local_load" : "peer_load";
  if (probe.test == "local_load") probe.ranks = {r.ranks[0]};
  probe.variant = "chase";
  if (probe.bytes.count() == 0) probe.bytes = NVBANDWIDTH_DEFAULT_BUFFER;
  probe.extra["loads_per_sample"] = 1000;
  return latency(probe, c.gpus, c.models);
}

std::variant<Twin, std::string> host_latency(const Context&) {
  return std::string("GPU loads from host memory: snsim models no load path to the host");
}

// --- p2pBandwidthLatencyTest --------------------------------------------------------------------------------------

// p2pBandwidthLatencyTest queues each bandwidth cell's copy 5 times and each latency cell's 100 times on one stream
// (cuda-samples p2pBandwidthLatencyTest.cu: `repeat`), and divides by them.
constexpr int P2P_BANDWIDTH_REPEAT = 5;
constexpr int P2P_LATENCY_REPEAT = 100;

std::variant<Twin, std::string> p2p_bandwidth(const Context& c) {
  const auto& r = c.r;
  const Engine engine = engine_of(r);
  const bool both_ways = r.variant.starts_with("bidir");
  const bool staged = r.variant.ends_with("p2p_disabled");
  const bool reads = r.variant.ends_with("reads");
  Twin twin = empty_twin(c.gpus);
  twin.repetitions = P2P_BANDWIDTH_REPEAT;
  twin.rate_bytes = both_ways ? Bytes{2 * r.bytes.count()} : r.bytes;
  if (r.ranks.size() == 1) {
    // A copy within the GPU, counted as its read and its write.
    if (both_ways) return std::string("bidirectional within one GPU: the tool's byte count of two local copies");
    add_stream(twin, r.ranks[0], queued(r.ranks[0], r.bytes, engine, P2P_BANDWIDTH_REPEAT));
    twin.rate_bytes = Bytes{2 * r.bytes.count()};
    return twin;
  }
  if (r.ranks.size() != 2) return fmt::format("p2pBandwidthLatencyTest: {} ranks, expected 1 or 2", r.ranks.size());
  auto one_way = [&](int a, int b) {  // bytes flow a -> b
    if (staged) {
      // Without peer access the driver stages the copy through host memory, in chunks that keep both PCIe
      // hops busy at once: the source's copy to the host beside the destination's copy from it.
      add_stream(twin, a, queued(HOST, r.bytes, engine, P2P_BANDWIDTH_REPEAT));
      add_stream(twin, b, queued(HOST, r.bytes, engine, P2P_BANDWIDTH_REPEAT, true));
    } else if (reads) {
      add_stream(twin, b, queued(a, r.bytes, engine, P2P_BANDWIDTH_REPEAT, true));
    } else {
      add_stream(twin, a, queued(b, r.bytes, engine, P2P_BANDWIDTH_REPEAT));
    }
  };
  one_way(r.ranks[0], r.ranks[1]);
  if (both_ways) one_way(r.ranks[1], r.ranks[0]);
  return twin;
}

std::variant<Twin, std::string> p2p_latency(const Context& c) {
  const auto& r = c.r;
  if (r.variant.ends_with("_cpu"))
    return std::string("timed on the CPU (the enqueue of the copies): snsim models no host API costs");
  if (r.variant.starts_with("p2p_disabled") && r.ranks.size() == 2)
    return std::string("small copies staged through host memory by the driver: not modelled");
  Twin twin = empty_twin(c.gpus);
  twin.repetitions = P2P_LATENCY_REPEAT;
  const int from = r.ranks.front();
  const int to = r.ranks.size() > 1 ? r.ranks[1] : from;
  if (r.variant.starts_with("p2p_reads"))
    add_stream(twin, to, queued(from, r.bytes, engine_of(r), P2P_LATENCY_REPEAT, true));
  else
    add_stream(twin, from, queued(to, r.bytes, engine_of(r), P2P_LATENCY_REPEAT));
  return twin;
}

// --- NVSHMEM perftest ---------------------------------------------------------------------------------------------

/// The kernel's launch options: the record's, else the run's "Runtime options" preamble.
double perftest_option(const Context& c, const char* record_key, const char* option) {
  if (const double v = extra_number(c.r, record_key, 0); v > 0) return v;
  const auto it = c.trace.header.extra.find("perftest_options");
  if (it == c.trace.header.extra.end() || !it->contains(option) || !(*it)[option].is_number()) return 0;
  return (*it)[option].get<double>();
}

std::variant<Twin, std::string> perftest_put_bw(const Context& c) {
  // shmem_put_bw: every CTA puts its share of the message with a block-scoped non-blocking put, `iterations` times,
  // then quiets; bandwidth = size x iterations / time. The probe's put_rate_blocks kernel is the same.
  TraceRecord probe = c.r;
  probe.test = "put_rate_blocks";
  probe.variant = "block";
  probe.extra["blocks"] = perftest_option(c, "blocks", "number_of_ctas");
  probe.extra["threads"] = perftest_option(c, "threads", "threads_per_cta");
  probe.extra["iters_per_sample"] = perftest_option(c, "iterations", "iterations");
  if (extra_number(probe, "blocks") < 1 || extra_number(probe, "iters_per_sample") < 1)
    return std::string("the file does not print the kernel's CTAs, threads and iterations (perftest -c, -t, -n)");
  probe.ranks.resize(std::min<std::size_t>(probe.ranks.size(), 2));
  return nvshmem(probe, c.gpus, c.models);
}

std::variant<Twin, std::string> perftest_ping_pong(const Context& c) {
  // shmem_put_ping_pong_latency: PE 0 puts and waits for PE 1's answer, PE 1 waits and answers; the time of one
  // iteration is a round trip, as the probe's put_signal_pingpong.
  TraceRecord probe = c.r;
  probe.test = "put_signal_pingpong";
  probe.variant = "round_trip";
  probe.extra["iters_per_sample"] = std::max(1.0, perftest_option(c, "iterations", "iterations"));
  probe.ranks.resize(std::min<std::size_t>(probe.ranks.size(), 2));
  return nvshmem(probe, c.gpus, c.models);
}

std::variant<Twin, std::string> nvshmem_collective(const Context& c) {
  return fmt::format("{}: snsim models no NVSHMEM collectives", c.r.test);
}

/// The table: tool (the header's `source`), family, test ("" for any) -> the experiment.
struct ImportedTest {
  std::string_view source;
  Family family;
  std::string_view test;
  Builder build;
};

constexpr std::array TESTS{
    ImportedTest{"nccl-tests", Family::collective, "", nccl_tests},
    ImportedTest{"nvbandwidth", Family::copy, "", nvbandwidth_copy},
    ImportedTest{"nvbandwidth", Family::latency, "device_to_device_latency_sm", nvbandwidth_latency},
    ImportedTest{"nvbandwidth", Family::latency, "host_device_latency_sm", host_latency},
    ImportedTest{"p2pBandwidthLatencyTest", Family::copy, "", p2p_bandwidth},
    ImportedTest{"p2pBandwidthLatencyTest", Family::latency, "", p2p_latency},
    ImportedTest{"nvshmem-perftest", Family::nvshmem, "shmem_put_bw_uni", perftest_put_bw},
    ImportedTest{"nvshmem-perftest", Family::nvshmem, "shmem_put_ping_lat", perftest_ping_pong},
    ImportedTest{"nvshmem-perftest", Family::nvshmem, "reduction_on_stream", nvshmem_collective},
};

/// A rate record as the probe's time record of one copy: time = bytes / rate (the order statistics swap ends).
TraceRecord as_copy_time(const TraceRecord& r, std::string test, std::string variant) {
  TraceRecord out = r;
  out.family = Family::copy;
  out.test = std::move(test);
  out.variant = std::move(variant);
  out.unit = MeasureUnit::seconds;
  const double bytes = static_cast<double>(r.bytes.count());
  out.median = bytes / r.median;
  out.p01 = bytes / r.p99;
  out.p99 = bytes / r.p01;
  out.min = bytes / r.max;
  out.max = bytes / r.min;
  out.samples.clear();
  return out;
}

}  // namespace

}  // namespace snsim::validation::twins

namespace snsim::validation {

std::optional<TraceRecord> probe_equivalent(const Trace& trace, const TraceRecord& r) {
  const std::string source = imported_source(trace);
  if (source == "nvbandwidth" && r.family == Family::copy && r.unit == MeasureUnit::bytes_per_second &&
      twins::extra_text(r, "pattern") == "pair" && twins::extra_text(r, "direction") == "uni" && r.ranks.size() == 2 &&
      r.bytes.count() > 0 && r.min > 0) {
    const bool reads = twins::extra_text(r, "issuer") == twins::extra_text(r, "dst");
    const bool sm = twins::engine_of(r) == models::CopyEngine::sm;
    return twins::as_copy_time(r, sm ? (reads ? "sm_pull" : "sm_push") : (reads ? "ce_pull" : "ce_peer"), "single");
  }
  if (source == "nccl-tests" && r.family == Family::collective && r.ranks.size() >= 2 && r.bytes.count() > 0) {
    const std::string name = twins::collective_name(r.test);
    if (!models::collective_kind(name)) return std::nullopt;
    TraceRecord out = r;
    out.test = name;
    out.variant = twins::extra_text(r, "launch") == "graph" ? "graph" : "out_of_place";
    out.extra["ops_per_graph"] = 1;
    return out;
  }
  return std::nullopt;
}

Json probe_environment(const Trace& trace) {
  return twins::nccl_environment(trace).header.env;
}

}  // namespace snsim::validation

namespace snsim::validation::twins {

std::variant<Twin, std::string> imported(const Trace& trace, const TraceRecord& record, int gpus,
                                         const models::Models& models, const std::vector<int>& run_gpus) {
  const std::string source = imported_source(trace);
  const Context context{trace, record, gpus, models, run_gpus};
  for (const auto& t : TESTS)
    if (t.source == source && t.family == record.family && (t.test.empty() || t.test == record.test))
      return t.build(context);
  return fmt::format("no twin for {} test '{}' ({} family)", source, record.test, to_string(record.family));
}

}  // namespace snsim::validation::twins
