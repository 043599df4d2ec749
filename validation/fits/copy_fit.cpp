// Fits of the copy model and the stream model from the probe's `copy` family (tools/probe/src/families/copy.cu).
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/statistics.hpp"
#include "validation/fit.hpp"

namespace snsim::validation::fits {
namespace {

using Engine = models::CopyEngine;

struct PeerFit {
  Seconds setup;
  double efficiency;
};

/// Lone peer copies: t = setup(push or pull) + route latency + bytes / (line rate x efficiency). Pushes and pulls
/// share the engine's rate but not its fixed cost (a pull's loads wait for a round trip).
std::optional<PeerFit> peer(Fit& fit, const std::string& push_test, const std::string& pull_test,
                            const std::string& name) {
  const auto records = fit.select(Family::copy, {push_test, pull_test}, "single");
  const auto& route = fit.platform().peer;
  std::set<std::uint64_t> sizes;
  for (const auto& t : records) sizes.insert(t.record->bytes.count());
  if (sizes.size() == 1) {
    // Copies of one size only (nvbandwidth's buffer): the fixed cost cannot be told from the rate. At such sizes
    // it is a small part of the time, so it stays the model's and the rate is fitted: the median over the records.
    const auto& engine =
        fit.platform().defaults.copy->params(name == "ce" ? models::CopyEngine::ce : models::CopyEngine::sm);
    std::vector<double> efficiencies;
    for (const auto& t : records) {
      const double wire = t.record->median - (engine.setup + route.latency).count();
      if (wire > 0)
        efficiencies.push_back(static_cast<double>(t.record->bytes.count()) / wire / route.bottleneck.count());
    }
    if (efficiencies.empty()) return std::nullopt;
    const PeerFit result{engine.setup, std::clamp(quantile(efficiencies, 0.5), 0.01, 1.0)};
    fit.add_number(fmt::format("copy.{}.efficiency", name), result.efficiency,
                   fmt::format("median over copies of one size of bytes / (t - setup ({}) - route latency ({})) / "
                               "line rate ({})",
                               to_string(engine.setup), to_string(route.latency), to_string(route.bottleneck)),
                   records);
    fit.note(fmt::format("copy.{}.setup: every copy has the same size ({}): kept the model's", name,
                         to_string(Bytes{*sizes.begin()})));
    return result;
  }
  if (!fit.enough(records, 4, fmt::format("copy.{} setup and efficiency", name))) return std::nullopt;
  const bool pulls = std::ranges::any_of(records, [&](const TracedRecord& t) { return t.record->test == pull_test; });
  const auto x = Fit::relative_least_squares(records, [&](const TraceRecord& r) {
    std::vector<double> row{r.test == push_test ? 1.0 : 0.0, static_cast<double>(r.bytes.count())};
    if (pulls) row.push_back(r.test == pull_test ? 1.0 : 0.0);
    return row;
  });
  PeerFit result{fit.non_negative(Seconds{x[0]} - route.latency, fmt::format("copy.{}.setup", name)),
                 std::clamp(1 / (x[1] * route.bottleneck.count()), 0.01, 1.0)};
  // The probe's single copies start behind its gate kernel: the copy's own fixed cost is what is left without it.
  const Seconds handoff{fit.value_or("stream.gate_handoff", 0)};
  const std::string method = fmt::format(
      "least squares on relative errors of t = gate hand-off ({}) + setup (push or pull) + route latency ({}) + "
      "bytes / ({} x efficiency)",
      to_string(handoff), to_string(route.latency), to_string(route.bottleneck));
  fit.add_number(fmt::format("copy.{}.efficiency", name), result.efficiency, method, records);
  const std::string key = fmt::format("copy.{}.setup", name);
  fit.add_time(key, fit.non_negative(result.setup - handoff, key), method, records);
  if (pulls) {
    const std::string pull_key = fmt::format("copy.{}.pull_setup", name);
    fit.add_time(pull_key, fit.non_negative(Seconds{x[2]} - route.latency - handoff, pull_key), method, records);
  }
  return result;
}

/// Copies queued on one stream: t = queue gap + route latency + bytes / (the engine rate of single copies).
void queue_gap(Fit& fit, const PeerFit& engine, const std::string& test, const std::string& key) {
  const auto records = fit.select(Family::copy, {test}, "pipelined");
  if (!fit.enough(records, 2, key)) return;
  const auto& route = fit.platform().peer;
  const double rate = route.bottleneck.count() * engine.efficiency;
  const double gap = Fit::intercept(records, [&](const TraceRecord& r) {
    return r.median - static_cast<double>(r.bytes.count()) / rate - route.latency.count();
  });
  fit.add_time(key, fit.non_negative(Seconds{gap}, key),
               fmt::format("weighted mean of t - route latency - bytes / {} (the engine rate of single copies)",
                           to_string(BytesPerSecond{rate})),
               records);
}

/// Local copies: t = local_setup(engine) + 2 bytes / (HBM x efficiency), x sm.local_rate for an SM copy kernel, or
/// / (HBM x efficiency x l2_speedup) for either engine when both buffers fit in L2.
void local(Fit& fit) {
  const auto records = fit.select(Family::copy, {"ce_local", "sm_local"}, "single");
  if (!fit.enough(records, 6, "copy local copies")) return;
  const auto& gpu = fit.platform().gpu;
  const double l2 = static_cast<double>(gpu.l2.count());
  auto fits_l2 = [&](const TraceRecord& r) { return l2 > 0 && 2.0 * static_cast<double>(r.bytes.count()) <= l2; };
  const bool inside = std::ranges::any_of(
      records, [&](const TracedRecord& t) { return fits_l2(*t.record) && t.record->bytes.count() > 1'000'000; });
  const bool beyond = std::ranges::any_of(records, [&](const TracedRecord& t) { return !fits_l2(*t.record); });
  if (!inside || !beyond) {
    fit.note("copy local copies: need sizes both inside and beyond L2; not fitted");
    return;
  }
  const auto x = Fit::relative_least_squares(records, [&](const TraceRecord& r) {
    const double traffic = 2.0 * static_cast<double>(r.bytes.count());
    const bool sm = r.test == "sm_local";
    return std::vector<double>{sm ? 0.0 : 1.0, sm ? 1.0 : 0.0, fits_l2(r) || sm ? 0.0 : traffic,
                               fits_l2(r) ? traffic : 0.0, fits_l2(r) || !sm ? 0.0 : traffic};
  });
  const double hbm = gpu.hbm_bandwidth.count();
  const double efficiency = std::clamp(1 / (x[2] * hbm), 0.01, 1.0);
  const double speedup = std::clamp(x[2] / x[3], 1.0, 10.0);
  const bool sm_beyond = std::ranges::any_of(
      records, [&](const TracedRecord& t) { return t.record->test == "sm_local" && !fits_l2(*t.record); });
  const double sm_rate = sm_beyond ? std::clamp(x[2] / x[4], 0.1, 2.0) : 1.0;
  const std::string method = fmt::format(
      "weighted least squares on t = local_setup(engine) + 2 bytes / (HBM {} x efficiency (x sm.local_rate for "
      "SM copies)), / (HBM x efficiency x speedup) when 2 bytes <= L2 ({})",
      to_string(gpu.hbm_bandwidth), to_string(gpu.l2));
  fit.add_number("copy.local_hbm_efficiency", efficiency, method, records);
  fit.add_number("copy.local_l2_speedup", speedup, method, records);
  if (sm_beyond) fit.add_number("copy.sm.local_rate", sm_rate, method, records);

  auto memory_time = [&](const TraceRecord& r) {
    const double traffic = 2.0 * static_cast<double>(r.bytes.count());
    if (fits_l2(r)) return traffic / (hbm * efficiency * speedup);
    return traffic / (hbm * efficiency * (r.test == "sm_local" ? sm_rate : 1.0));
  };
  // The probe times single copies behind its gate kernel; snsim-crosscheck times the same copies released by a
  // stream memory wait (`wait_value`), with nothing in front: that is the copy's own fixed cost, and the probe's
  // surplus over it is its gate's hand-off, which every single copy the probe times carries (peer ones too).
  const double probe_setup[] = {x[0], x[1]};
  double own[] = {x[0], x[1]};
  std::vector<double> handoffs;
  std::vector<TracedRecord> released;
  for (int e = 0; e < 2; ++e) {
    const char* test = e == 0 ? "ce_local" : "sm_local";
    const auto by_wait = fit.select(
        Family::copy, {test}, "single", [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; },
        "wait_value");
    if (by_wait.empty()) continue;
    own[e] = Fit::intercept(by_wait, [&](const TraceRecord& r) { return r.median - memory_time(r); });
    handoffs.push_back(probe_setup[e] - own[e]);
    released.insert(released.end(), by_wait.begin(), by_wait.end());
  }
  if (handoffs.empty()) {
    fit.note(
        "stream.gate_handoff: no single copy timed by wait_value (snsim-crosscheck): the probe's gate stays in "
        "the copies' own fixed costs");
  } else {
    auto from = records;
    from.insert(from.end(), released.begin(), released.end());
    const double handoff = (handoffs.front() + handoffs.back()) / 2;
    fit.add_time("stream.gate_handoff", fit.non_negative(Seconds{handoff}, "stream.gate_handoff"),
                 "mean over ce_local and sm_local of local_setup fitted on the probe's single copies (behind its gate "
                 "kernel) less the same fitted on crosscheck's wait_value single copies <= 64 KiB",
                 from);
    fit.add_time("copy.ce.local_setup", fit.non_negative(Seconds{own[0]}, "copy.ce.local_setup"),
                 "weighted mean of t - memory time (the probe's local fit) over crosscheck's wait_value single "
                 "ce_local copies <= 64 KiB: the copy released by a stream wait, nothing in front",
                 released);
    fit.add_time("copy.sm.local_setup", fit.non_negative(Seconds{own[1]}, "copy.sm.local_setup"),
                 "the same over sm_local", released);
  }
  if (handoffs.empty()) {
    fit.add_time("copy.ce.local_setup", fit.non_negative(Seconds{x[0]}, "copy.ce.local_setup"), method, records);
    fit.add_time("copy.sm.local_setup", fit.non_negative(Seconds{x[1]}, "copy.sm.local_setup"), method, records);
  }
  // The SM copy kernel's own clock (crosscheck's kernel_clock): the same lone copies without their launch and
  // completion, first block's start to last block's end.
  const auto in_kernel = fit.select(
      Family::copy, {"sm_local"}, "single", [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; },
      "kernel_clock");
  if (!in_kernel.empty()) {
    const double own_span = Fit::intercept(in_kernel, [&](const TraceRecord& r) { return r.median - memory_time(r); });
    fit.add_time("copy.sm.local_in_kernel", fit.non_negative(Seconds{own_span}, "copy.sm.local_in_kernel"),
                 "weighted mean of t - memory time (the local fit) over crosscheck's kernel_clock single sm_local "
                 "copies <= 64 KiB: the kernel's first block's start to its last block's end",
                 in_kernel);
  }
  // Copies queued as nodes of one CUDA graph (crosscheck's `graph` method) follow each other sooner than from a
  // stream: the same gap fitted on them, each engine's stream gap less it, averaged over the engines.
  std::vector<double> savings;
  std::vector<TracedRecord> graphed;
  for (const auto& [test, engine] : {std::pair{"ce_local", "ce"}, {"sm_local", "sm"}}) {
    const auto queued = fit.select(Family::copy, {test}, "pipelined");
    if (!fit.enough(queued, 2, fmt::format("copy.{}.local_queue_gap", engine))) continue;
    const double gap = Fit::intercept(queued, [&](const TraceRecord& r) { return r.median - memory_time(r); });
    const std::string key = fmt::format("copy.{}.local_queue_gap", engine);
    fit.add_time(key, fit.non_negative(Seconds{gap}, key), "weighted mean of t - memory time (the local fit above)",
                 queued);
    const auto in_graph = fit.select(
        Family::copy, {test}, "pipelined", [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; }, "graph");
    if (in_graph.empty()) continue;
    savings.push_back(gap - Fit::intercept(in_graph, [&](const TraceRecord& r) { return r.median - memory_time(r); }));
    graphed.insert(graphed.end(), in_graph.begin(), in_graph.end());
  }
  if (savings.empty()) {
    fit.note("copy.graph_saving: no queued local copy timed by the graph method (snsim-crosscheck): kept the default");
    return;
  }
  double saving = 0;
  for (const double s : savings) saving += s / static_cast<double>(savings.size());
  fit.add_time("copy.graph_saving", fit.non_negative(Seconds{saving}, "copy.graph_saving"),
               "mean over ce_local and sm_local of local_queue_gap (the stream's) less the same gap fitted on "
               "crosscheck's graph-replayed queued local copies <= 64 KiB",
               graphed);
}

/// Copies both ways behind two cross-GPU event waits: t = 2 event_wait + a lone CE copy.
void event_wait(Fit& fit, const PeerFit& ce) {
  const auto records = fit.select(Family::copy, {"ce_peer_bidir"}, "single");
  if (!fit.enough(records, 2, "stream.event_wait")) return;
  const auto& route = fit.platform().peer;
  const double rate = route.bottleneck.count() * ce.efficiency;
  const double wait = Fit::intercept(records, [&](const TraceRecord& r) {  // ce.setup: the gate's hand-off in
    return (r.median - (ce.setup + route.latency).count() - static_cast<double>(r.bytes.count()) / rate) / 2;
  });
  fit.add_time("stream.event_wait", fit.non_negative(Seconds{wait}, "stream.event_wait"),
               "weighted mean of (t - a lone CE copy by the fit above) / 2: the probe waits on another GPU's event "
               "twice",
               records);
}

/// A single local copy released by an event another stream records (crosscheck's event_from_other_stream):
/// t = event release + the copy's own cost (the local fit).
void release(Fit& fit) {
  const auto records = fit.select(
      Family::copy, {"ce_local", "sm_local"}, "single",
      [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; }, "event_from_other_stream");
  const auto own = local_copy_cost(fit);
  if (records.empty() || !own) return;
  const double release = Fit::intercept(records, [&](const TraceRecord& r) { return r.median - own(r); });
  fit.add_time("stream.event_release", fit.non_negative(Seconds{release}, "stream.event_release"),
               "weighted mean of t - local_setup - memory time (the local fit) over crosscheck's "
               "event_from_other_stream single local copies <= 64 KiB",
               records);
}

/// The host's copy calls, from snsim-crosscheck's local copies of <= 64 KiB (the copy's own cost is the local fit's):
/// - copies queued back to back from the host are host bound, each takes one cudaMemcpyAsync's CPU time
///   (events_b2b; the same copies synchronised by the host validate);
/// - a lone copy between events the host records around its call starts a share of that call's CPU time after the
///   call does, a copy engine's cudaMemcpyAsync or an SM copy's kernel launch (events_single, t - the copy's own
///   cost, over the call's CPU time).
void host_calls(Fit& fit) {
  const auto small = [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; };
  const auto queued = fit.select(Family::copy, {"ce_local"}, "pipelined", small, "events_b2b");
  if (!queued.empty())
    fit.add_time("stream.host_copy", Seconds{Fit::intercept(queued, [](const TraceRecord& r) { return r.median; })},
                 "weighted mean per copy of crosscheck's events_b2b queued ce_local copies <= 64 KiB (host bound)",
                 queued);
  const auto single = fit.select(Family::copy, {"ce_local", "sm_local"}, "single", small, "events_single");
  const auto own = local_copy_cost(fit);
  const auto launch = fit.value("stream.host_launch"), copy_call = fit.value("stream.host_copy");
  if (single.empty() || !own || !launch || !copy_call) {
    fit.note("stream.host_submit_share: needs crosscheck's events_single local copies and the host's call costs");
    return;
  }
  const double share = Fit::intercept(single, [&](const TraceRecord& r) {
    return (r.median - own(r)) / (r.test == "ce_local" ? *copy_call : *launch);
  });
  fit.add_number("stream.host_submit_share", std::clamp(share, 0.01, 1.0),
                 "weighted mean of (t - the copy's own cost (the local fit)) / the call's CPU time (host_copy for "
                 "ce_local, host_launch for sm_local) over crosscheck's events_single local copies <= 64 KiB",
                 single);
}

}  // namespace

std::function<double(const TraceRecord&)> local_copy_cost(const Fit& fit) {
  const auto efficiency = fit.value("copy.local_hbm_efficiency");
  if (!efficiency) return {};
  models::CopyModel local = *fit.platform().defaults.copy;
  local.local_hbm_efficiency = *efficiency;
  local.local_l2_speedup = fit.value_or("copy.local_l2_speedup", 1);
  local.sm.local_rate = fit.value_or("copy.sm.local_rate", local.sm.local_rate);
  const Seconds ce{fit.value_or("copy.ce.local_setup", 0)}, sm{fit.value_or("copy.sm.local_setup", 0)};
  return [local, ce, sm, gpu = fit.platform().gpu](const TraceRecord& r) {
    const bool by_ce = r.test == "ce_local";
    return ((by_ce ? ce : sm) + local.local_memory_time(gpu, r.bytes, by_ce ? Engine::ce : Engine::sm)).count();
  };
}

void copies(Fit& fit) {
  local(fit);  // first: the gate's hand-off, which the peer fits take out of their setups
  const auto ce = peer(fit, "ce_peer", "ce_pull", "ce");
  const auto sm = peer(fit, "sm_push", "sm_pull", "sm");
  if (ce) queue_gap(fit, *ce, "ce_peer", "copy.ce.queue_gap");
  if (sm) queue_gap(fit, *sm, "sm_push", "copy.sm.queue_gap");
  if (sm) queue_gap(fit, *sm, "sm_pull", "copy.sm.pull_queue_gap");
  if (ce) event_wait(fit, *ce);
  release(fit);
}

/// Kernel launches: the probe's empty-kernel medians are the parameters themselves.
void launches(Fit& fit) {
  for (const auto& [variant, keys] : {std::pair{"back_to_back", std::vector<std::string>{"compute.launch"}},
                                      {"graph_back_to_back", std::vector<std::string>{"collective.graph_launch"}},
                                      {"back_to_back_gated", std::vector<std::string>{"compute.queue_gap"}}}) {
    const auto records = fit.select(Family::launch, {"empty_kernel"}, variant);
    if (!fit.enough(records, 1, keys.front())) continue;
    std::vector<double> medians;
    for (const auto& t : records) medians.push_back(t.record->median);
    for (const auto& key : keys)
      fit.add_time(key, Seconds{quantile(medians, 0.5)}, fmt::format("median of empty_kernel/{} per kernel", variant),
                   records);
  }
  // The host's side, from snsim-crosscheck's host clocks: the CPU time of one launch call, and how long after the
  // GPU's last write a synchronising call returns (a host thread spinning on that write sees when it lands).
  for (const auto& [tests, variant, method, key] :
       {std::tuple{std::vector<std::string>{"empty_kernel"}, "host_enqueue", "host_clock", "stream.host_launch"},
        {std::vector<std::string>{"stream_synchronize", "event_synchronize", "device_synchronize"}, "wakeup",
         "host_poll", "stream.sync_wakeup"}}) {
    const auto records = fit.select(Family::launch, tests, variant, {}, method);
    if (records.empty()) continue;
    std::vector<double> medians;
    for (const auto& t : records) medians.push_back(t.record->median);
    fit.add_time(key, Seconds{quantile(medians, 0.5)},
                 fmt::format("median of {}/{} ({})", fmt::join(tests, ", "), variant, method), records);
  }
  host_calls(fit);
  // PyTorch's own cost per eager op: an op that launches one kernel (an in-place and an out-of-place one-element
  // add) called in a loop, per call, less the launch call inside it. Copies and ops queued through PyTorch validate.
  const auto torch = fit.select(Family::launch, {"torch_add_", "torch_add"}, "dispatch", {}, "host_clock");
  const auto launch = fit.value("stream.host_launch");
  if (!torch.empty() && launch) {
    std::vector<double> medians;
    for (const auto& t : torch) medians.push_back(t.record->median);
    fit.add_time("stream.framework_op", Seconds{std::max(0.0, quantile(medians, 0.5) - *launch)},
                 "median of torch_add_, torch_add/dispatch (host_clock) less stream.host_launch", torch);
  }
  // PyTorch's events: a lone copy of <= 64 KiB between two torch.cuda.Event records is host bound, the end event
  // enqueued after `dst.copy_(src)` returns (its dispatch and copy call) and the events' own Python. Its graph
  // replays (torch_graph) validate.
  const auto framework = fit.value("stream.framework_op"), copy_call = fit.value("stream.host_copy");
  const auto lone = fit.select(
      Family::copy, {"ce_local"}, "single", [](const TraceRecord& r) { return r.bytes.count() <= 64 * 1024; },
      "torch_events");
  if (!lone.empty() && framework && copy_call) {
    const double event = Fit::intercept(lone, [&](const TraceRecord& r) { return r.median - *framework - *copy_call; });
    fit.add_time("stream.framework_event", fit.non_negative(Seconds{event}, "stream.framework_event"),
                 "weighted mean of t - stream.framework_op - stream.host_copy over crosscheck's torch_events single "
                 "ce_local copies <= 64 KiB (host bound)",
                 lone);
  }
}

}  // namespace snsim::validation::fits
