// Twins of the probe's `nvshmem` family (tools/probe/src/families/nvshmem.cu): PE 0 and PE 1 (the record's first
// two ranks) run what one kernel of the probe ran, with the ops of runtime/pgas_executor.cpp.
//
// Latency tests (ping-pong, put + quiet, get, barrier) time `iters_per_sample` dependent iterations inside one
// kernel and divide by their number. Their twins run a few of these iterations and divide by as many: in the model
// every iteration takes the same time (an iteration leaves the PEs as it found them: every put complete, every
// signal consumed), so the mean over a few is the mean over all of them, and more than one keeps the hand-over
// from one iteration to the next in.
//
// Rate tests time a whole kernel in which every issuer puts its slice `iters_per_sample` times, then quiets. Their
// twin is that kernel: one put op of all issuers, `count` = iters_per_sample (the model moves the count x slice
// bytes of an issuer as one flow, so the count costs nothing to simulate), then a quiet; the value is
// bytes x iters / span, as the probe computes it. The two-PE rate tests (put_rate_bidir*) run that kernel on both PEs
// towards each other, and the exchange test the step family's averaging (append_pgas_average) on both. (A put of N
// issuers is N flows, and SimGrid 3.32 spends O(N^2) on them, in CommImpl::finish: the 8192 threads of put_rate/thread
// take about 0.4 s a sample.)
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "validation/twins/nvshmem_twin.hpp"
#include "validation/twins/twin_builders.hpp"

namespace snsim::validation::twins {
namespace {

using models::Scope;
using workloads::Compare;
using workloads::GetOp;
using workloads::Op;
using workloads::PutOp;
using workloads::QuietOp;
using workloads::RepeatOp;
using workloads::ShmemBarrierOp;
using workloads::SignalWaitOp;
using workloads::StreamsOp;

// The probe's `done` signal of the two-PE tests (PE1 tells PE0 that its kernel has ended), apart from SIGNAL and the
// averaging's signals (0 and 1, validation/twins/step_twin.cpp).
constexpr int DONE = 2;

// Iterations of a latency loop simulated per sample (see above).
constexpr int LATENCY_ITERATIONS = 4;
// The probe's put_signal_pingpong signal: one symmetric counter (the twin consumes what each wait sees).
constexpr int SIGNAL = 0;

// The smallest slice a rate test's issuer puts (put_rate_kernel: `if (slice < 8) slice = 8`).
constexpr std::uint64_t MIN_SLICE = 8;

int iterations(const TraceRecord& r) {
  return std::clamp(static_cast<int>(extra_number(r, "iters_per_sample", 1)), 1, LATENCY_ITERATIONS);
}

}  // namespace

std::optional<PutRateLayout> put_rate_layout(const TraceRecord& r) {
  const auto scope = models::scope(r.variant);
  const auto blocks = static_cast<std::uint64_t>(extra_number(r, "blocks", 0));
  const auto threads = static_cast<std::uint64_t>(extra_number(r, "threads", 0));
  const int count = static_cast<int>(extra_number(r, "iters_per_sample", 0));
  if (!scope || blocks < 1 || threads < 32 || count < 1 || r.bytes.count() == 0) return std::nullopt;
  const std::uint64_t granules = *scope == Scope::thread ? blocks * threads
                                 : *scope == Scope::warp ? blocks * (threads / 32)
                                                         : blocks;
  const std::uint64_t total = r.bytes.count();
  const std::uint64_t slice = std::max((total + granules - 1) / granules, MIN_SLICE);
  return PutRateLayout{*scope, static_cast<int>(total / slice), Bytes{slice}, Bytes{total % slice}, count};
}

std::variant<Twin, std::string> nvshmem(const TraceRecord& r, int gpus, const models::Models& models) {
  Twin twin;
  twin.sample.resize(static_cast<std::size_t>(gpus));
  if (r.test == "put_rate_self")  // a reference for the fits' notes, not a route the PGAS model times
    return std::string("put_rate_self: a PE putting to itself is a local copy, not a PGAS route");
  if (r.test != "barrier" && r.ranks.size() != 2)
    return fmt::format("nvshmem test '{}' needs two ranks, the record has {}", r.test, r.ranks.size());
  const int pe0 = rank_at(r, 0);
  const int pe1 = rank_at(r, 1);
  auto& at0 = twin.sample[static_cast<std::size_t>(pe0)];
  auto& at1 = twin.sample[static_cast<std::size_t>(pe1)];
  const int n = iterations(r);

  if (r.test == "put_signal_pingpong" && r.variant == "round_trip") {
    // PE 0 puts with a signal and waits for PE 1's answer; PE 1 waits, then answers. One iteration = one round trip.
    const auto scope_name = r.extra.contains("scope") && r.extra["scope"].is_string()
                                ? r.extra["scope"].get<std::string>()
                                : std::string("thread");
    const auto scope = models::scope(scope_name);
    if (!scope) return fmt::format("put_signal_pingpong: unknown scope '{}'", scope_name);
    const Op wait = op(SignalWaitOp{SIGNAL, 1, Compare::ge, true});
    at0 = {op(RepeatOp{n, {op(PutOp{pe1, r.bytes, *scope, 1, 1, SIGNAL}), wait}})};
    at1 = {op(RepeatOp{n, {wait, op(PutOp{pe0, r.bytes, *scope, 1, 1, SIGNAL})}})};
    twin.repetitions = n;
  } else if (r.test == "put_latency" && r.variant == "thread") {
    // A blocking putmem is the same stores as putmem_nbi; the quiet after it waits for them all.
    at0 = {op(RepeatOp{n, {op(PutOp{pe1, r.bytes, Scope::thread, 1, 1, std::nullopt}), op(QuietOp{})}})};
    twin.repetitions = n;
  } else if (r.test == "get_latency" && r.variant == "thread") {
    // Each get waits for the one before (the probe makes its address depend on the data).
    at0 = {op(RepeatOp{n, {op(GetOp{pe1, r.bytes, Scope::thread})}})};
    twin.repetitions = n;
  } else if (r.test == "put_rate" || r.test == "put_rate_blocks") {
    const auto layout = put_rate_layout(r);
    if (!layout) return fmt::format("{}: the record lacks a scope, blocks, threads or iters_per_sample", r.test);
    Op put = op(PutOp{pe1, layout->slice, layout->scope, layout->issuers, layout->count, std::nullopt});
    if (layout->remainder.count() > 0) {  // the last granule's shorter slice, issued alongside
      const Op last = op(PutOp{pe1, layout->remainder, layout->scope, 1, layout->count, std::nullopt});
      put = layout->issuers > 0 ? op(StreamsOp{{{put}, {last}}}) : last;
    }
    at0 = {put, op(QuietOp{})};
    twin.repetitions = layout->count;
    twin.rate_bytes = r.bytes;
  } else if ((r.test == "put_rate_bidir" || r.test == "put_rate_bidir_blocks") && r.variant == "block") {
    // Both PEs run the put kernel towards each other at once; PE1 then signals PE0, which waits for it.
    const auto layout = put_rate_layout(r);
    if (!layout || layout->issuers < 1) return fmt::format("{}: the record lacks blocks, threads or iters", r.test);
    for (const auto& [from, to] : {std::pair{pe0, pe1}, std::pair{pe1, pe0}}) {
      auto& ops = twin.sample[static_cast<std::size_t>(from)];
      Op put = op(PutOp{to, layout->slice, layout->scope, layout->issuers, layout->count, std::nullopt});
      if (layout->remainder.count() > 0) {
        const Op last = op(PutOp{to, layout->remainder, layout->scope, 1, layout->count, std::nullopt});
        put = op(StreamsOp{{{put}, {last}}});
      }
      ops = {put, op(QuietOp{})};
    }
    at1.push_back(op(PutOp{pe0, Bytes{MIN_SLICE}, Scope::thread, 1, 1, DONE}));
    at0.push_back(op(SignalWaitOp{DONE, 1, Compare::ge, true}));
    twin.repetitions = layout->count;
    twin.rate_bytes = r.bytes;
  } else if (r.test == "exchange") {
    // The step family's averaging alone; PE1 then signals PE0, which waits for it.
    const int blocks = static_cast<int>(extra_number(r, "put_blocks", 32));
    for (std::size_t i = 0; i < r.ranks.size(); ++i)
      append_pgas_average(twin.sample[static_cast<std::size_t>(rank_at(r, i))], r, i, r.bytes, blocks, *models.pgas);
    at1.push_back(op(PutOp{pe0, Bytes{MIN_SLICE}, Scope::thread, 1, 1, DONE}));
    at0.push_back(op(SignalWaitOp{DONE, 1, Compare::ge, true}));
  } else if (r.test == "barrier" && models::scope(r.variant)) {
    if (r.ranks.size() < 2) return "barrier: the record needs the ranks of every PE";
    auto group = r.ranks;
    std::ranges::sort(group);
    const auto members = std::make_shared<const std::vector<int>>(std::move(group));
    const Op barrier = op(ShmemBarrierOp{members, *models::scope(r.variant)});
    for (int rank : *members) twin.sample[static_cast<std::size_t>(rank)] = {op(RepeatOp{n, {barrier}})};
    twin.repetitions = n;
  } else {
    return fmt::format("no twin for nvshmem test '{}' variant '{}'", r.test, r.variant);
  }
  return twin;
}

}  // namespace snsim::validation::twins
