// Fits of the PGAS model (models/pgas.hpp) from the probe's `nvshmem` family (tools/probe/src/families/nvshmem.cu)
// and its `latency` family (pointer chases, tools/probe/src/families/latency.cu).
//
// Every fit goes through the model's own formulas for an op alone, with the route of the traces' platform (the
// wire latency L each way and the line rate B come from the topology preset, not from here):
//   put + quiet       t  = L + write + max(issue, S / put_bw) + L + quiet         (put_quiet_time)
//   put_signal        rt = 2 (L + write + max(issue, S / put_bw) + L + L + signal)  (2 x put_signal_time)
//   get               t  = L + read + L + max(issue, S / get_bw)                   (get_time)
//   put_rate kernel   T  = L + write + count x slice / min(put_bw, slice / issue, B x eff / N) + L + quiet
//   both PEs putting  T  = the same with put_bw x duplex_put_share                 (put_rate_bidir*)
//   averaging kernel  t  = (ranks + 1) x chunk / reduce_bandwidth                 (reduce_time; exchange records)
//   barrier           t  = rounds x (L + barrier_round)                           (barrier_time)
//   chase             t  = load latency (L2 or HBM) [+ 2 L from a peer]            (chase_time per load)
// A parameter that enters linearly is a weighted least-squares solution on relative errors over the records of the
// regime it governs; the regime (issue-, bandwidth- or line-bound) is told by the data where it can be, else by
// the values fitted before it.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "validation/fit.hpp"
#include "validation/twins/nvshmem_twin.hpp"

namespace snsim::validation::fits {
namespace {

using models::Scope;
constexpr std::array<Scope, 3> SCOPES{Scope::thread, Scope::warp, Scope::block};

// A record is payload-bound when it takes at least this many times its curve's smallest size: the fixed costs are
// then at most half of it.
constexpr double PAYLOAD_BOUND = 2;
// The line binds a rate record when its issuers together could inject this much more than it measured.
constexpr double LINE_BOUND_MARGIN = 1.5;
// Efficiencies are fitted on rate records of at least this much per iteration: every thread then puts at least a
// 128-byte line. Smaller slices of neighbouring threads coalesce into shared lines, which the model's one
// efficiency per scope does not describe (put_rate/thread shows 295 GB/s with 16-byte slices, 94 GB/s with 64-byte
// ones and 163 GB/s from 128 bytes on).
constexpr std::uint64_t EFFICIENCY_MIN_BYTES = 1ull << 20;
// Two PEs putting at once: the issuers' slowdown is fitted on records whose issuers inject at least this share of
// the line's payload rate (the memory then takes heavy traffic both ways, as in the step family's exchange).
constexpr double DUPLEX_BUSY = 0.5;
// A lone issuer's bandwidth is read from records whose total rate is at most this share of the line rate: far
// from the line, each issuer's own rate binds.
constexpr double LONE_ISSUER_SHARE = 1.0 / 8;

std::string key(Scope s, const char* name) {
  return fmt::format("pgas.{}.{}", models::to_string(s), name);
}

std::string bandwidth_yaml(BytesPerSecond rate) {
  return fmt::format("{:.6g}GBps", rate.count() / 1e9);
}

/// The kernel time of a rate record: the probe reports bytes x iterations / time.
double kernel_time(const TraceRecord& r, const twins::PutRateLayout& layout) {
  return static_cast<double>(r.bytes.count()) * layout.count / r.median;
}

/// Relative least squares on times computed from the records (a rate record's median is not a time).
std::vector<double> time_least_squares(const std::vector<TracedRecord>& records,
                                       const std::function<std::vector<double>(const TraceRecord&)>& row,
                                       const std::function<double(const TraceRecord&)>& time,
                                       const std::function<double(const TraceRecord&)>& target) {
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& t : records) {
    rows.push_back(row(*t.record));
    y.push_back(target(*t.record));
    w.push_back(1 / (time(*t.record) * time(*t.record)));
  }
  return least_squares(rows, y, w);
}

/// Records of a curve that take at least PAYLOAD_BOUND times its smallest size's time.
std::vector<TracedRecord> payload_bound(const std::vector<TracedRecord>& records) {
  if (records.empty()) return {};
  const auto smallest = std::ranges::min(records, {}, [](const TracedRecord& t) { return t.record->bytes; });
  std::vector<TracedRecord> out;
  for (const auto& t : records)
    if (t.record->median >= PAYLOAD_BOUND * smallest.record->median) out.push_back(t);
  return out;
}

class PgasFit {
 public:
  explicit PgasFit(Fit& fit) : fit_(fit), model_(*fit.platform().defaults.pgas) {
    const auto& fabric = fit.platform().fabric;
    const auto back = fabric.cost(fabric.gpus()[1], fabric.gpus()[0]);
    route_ = {fit.platform().peer.latency, back.latency, fit.platform().peer.bottleneck};
  }

  void run() {
    loads();
    barriers();
    for (Scope s : SCOPES) issue(s);
    thread_put_bandwidth();
    lone_issuer_bandwidth();
    // Before the fixed costs: a tiny put or get moves ceil(S / efficiency) bytes on the wire (flow_time), 4 % more
    // than S for 8 bytes at the thread's efficiency.
    for (Scope s : SCOPES) efficiency(s);
    duplex();
    reduce();
    quiet_and_signal();
    gets();
    fit_.note("pgas.write_latency: only its sums with quiet and with signal are measured; the default split is kept");
    fit_.note("pgas.fence: no record times a fence alone; default kept");
    fit_.note(
        "pgas.warp.put_bandwidth, get_bandwidth, barrier_round and pgas.block.get_bandwidth: no record has a "
        "lone warp or a block get or barrier of warps; defaults kept");
    fit_.note("pgas.load_efficiency, local_read_efficiency: streaming loads are the uvm family's; defaults kept");
  }

 private:
  /// The parameters' own route: PE 0 to PE 1 and back, as the twins run it.
  Seconds round_trip() const { return route_.latency + route_.latency_back; }
  /// put_quiet_time's costs that do not depend on the payload.
  double put_fixed() const { return (round_trip() + model_.write_latency + model_.quiet).count(); }

  std::vector<TracedRecord> rate_records(
      Scope s, const std::vector<std::string>& tests,
      const std::function<bool(const TraceRecord&, const twins::PutRateLayout&)>& also) const {
    return fit_.select(Family::nvshmem, tests, models::to_string(s), [&](const TraceRecord& r) {
      const auto layout = twins::put_rate_layout(r);
      return layout && layout->remainder.count() == 0 && also(r, *layout);
    });
  }

  /// Pointer chases: the local ones are the load latency itself; peer ones add the route's round trip, which is
  /// the topology's (they check the NVLink hop latency, topologies/gpus.hpp, and are not fitted here).
  void loads() {
    const auto local = fit_.select(Family::latency, {"local_load"}, "chase");
    for (const bool l2 : {true, false}) {
      std::vector<TracedRecord> records;
      for (const auto& t : local)
        if ((t.record->bytes <= model_.l2_size) == l2) records.push_back(t);
      const std::string name = l2 ? "pgas.load_l2_latency" : "pgas.load_hbm_latency";
      if (!fit_.enough(records, 1, name)) continue;
      const Seconds latency{Fit::intercept(records, [](const TraceRecord& r) { return r.median; })};
      (l2 ? model_.load_l2_latency : model_.load_hbm_latency) = latency;
      fit_.add_time(name, latency,
                    fmt::format("weighted mean of local pointer-chase latencies over spans {} l2_size ({})",
                                l2 ? "<=" : ">", to_string(model_.l2_size)),
                    records);
    }
  }

  /// barrier_time = rounds x (L + barrier_round): the round is t / rounds - L.
  void barriers() {
    for (Scope s : SCOPES) {
      const auto records = fit_.select(Family::nvshmem, {"barrier"}, models::to_string(s),
                                       [](const TraceRecord& r) { return r.ranks.size() >= 2; });
      if (records.empty()) continue;  // the warp scope has none: said in run()
      auto& round = model_.scopes[static_cast<std::size_t>(s)].barrier_round;
      round = Seconds{0};
      const Seconds value{Fit::intercept(records, [&](const TraceRecord& r) {
        const int pes = static_cast<int>(r.ranks.size());
        const double rounds = std::ceil(std::log2(pes));
        return (r.median - model_.barrier_time(s, pes, route_.latency).count()) / rounds;
      })};
      round = fit_.non_negative(value, key(s, "barrier_round"));
      fit_.add_time(key(s, "barrier_round"), round,
                    fmt::format("weighted mean of t / ceil(log2 PEs) - L ({})", to_string(route_.latency)), records);
    }
  }

  /// The issue time from rate records whose issuers each put 8 bytes, the least a put moves: there the message
  /// rate binds, T = fixed + count x issue.
  void issue(Scope s) {
    const auto records = rate_records(
        s, {"put_rate"}, [](const TraceRecord&, const twins::PutRateLayout& l) { return l.slice.count() == 8; });
    if (!fit_.enough(records, 1, key(s, "issue"))) return;
    auto layout = [](const TraceRecord& r) { return *twins::put_rate_layout(r); };
    const auto x = time_least_squares(
        records, [&](const TraceRecord& r) { return std::vector<double>{static_cast<double>(layout(r).count)}; },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)); },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)) - put_fixed(); });
    auto& p = model_.scopes[static_cast<std::size_t>(s)];
    p.issue = Seconds{x[0]};
    if (!(p.issue > Seconds{0})) {
      fit_.note(fmt::format("{}: the fit gave {}; default kept", key(s, "issue"), to_string(p.issue)));
      p.issue = fit_.platform().defaults.pgas->params(s).issue;
      return;
    }
    fit_.add_time(key(s, "issue"), p.issue,
                  "least squares on relative errors of kernel time = put_quiet_time's fixed part + iterations x "
                  "issue, over put_rate records whose issuers put 8 bytes each (message-rate bound)",
                  records);
  }

  /// One thread's store rate from the latency tests, where one thread puts alone: the slope of t over S on the
  /// payload-bound records, each test with its own intercept (put + quiet: t = c + S / bw; ping-pong: 2 c' + 2 S /
  /// bw).
  void thread_put_bandwidth() {
    const auto puts = payload_bound(fit_.select(Family::nvshmem, {"put_latency"}, "thread"));
    const auto pingpongs = payload_bound(fit_.select(Family::nvshmem, {"put_signal_pingpong"}, "round_trip",
                                                     [](const TraceRecord& r) { return scope_of(r) == "thread"; }));
    std::vector<TracedRecord> records = puts;
    records.insert(records.end(), pingpongs.begin(), pingpongs.end());
    const std::size_t intercepts = (puts.empty() ? 0 : 1) + (pingpongs.empty() ? 0 : 1);
    if (!fit_.enough(records, intercepts + 1, key(Scope::thread, "put_bandwidth"))) return;
    const auto x = Fit::relative_least_squares(records, [&](const TraceRecord& r) {
      const double bytes = static_cast<double>(r.bytes.count());
      const bool pingpong = r.test == "put_signal_pingpong";
      std::vector<double> row;
      if (!puts.empty()) row.push_back(pingpong ? 0 : 1);
      if (!pingpongs.empty()) row.push_back(pingpong ? 2 : 0);
      row.push_back(pingpong ? 2 * bytes : bytes);
      return row;
    });
    if (!(x.back() > 0)) {
      fit_.note(fmt::format("{}: the slope came out {}; default kept", key(Scope::thread, "put_bandwidth"), x.back()));
      return;
    }
    const BytesPerSecond bandwidth{1 / x.back()};
    model_.scopes[static_cast<std::size_t>(Scope::thread)].put_bandwidth = bandwidth;
    fit_.add_yaml(key(Scope::thread, "put_bandwidth"), bandwidth_yaml(bandwidth),
                  fmt::format("least squares on relative errors of t = c + S / put_bandwidth (put_latency) and "
                              "2 c' + 2 S / put_bandwidth (put_signal_pingpong round trips), payload-bound records "
                              "(>= {}x the smallest size's time)",
                              PAYLOAD_BOUND),
                  records);
  }

  /// A block's store rate from put_rate_blocks records far from the line rate (each block's own rate binds):
  /// T = fixed + count x slice / put_bw.
  void lone_issuer_bandwidth() {
    const double line = route_.line_rate.count();
    for (Scope s : SCOPES) {
      if (s == Scope::thread) continue;  // from the latency tests
      const auto records =
          rate_records(s, {"put_rate_blocks"}, [&](const TraceRecord& r, const twins::PutRateLayout& l) {
            const auto& p = model_.params(s);
            return r.median <= LONE_ISSUER_SHARE * line && l.slice / p.issue > p.put_bandwidth;
          });
      if (records.empty()) continue;  // the warp scope has none: said in run()
      auto layout = [](const TraceRecord& r) { return *twins::put_rate_layout(r); };
      const auto x = time_least_squares(
          records,
          [&](const TraceRecord& r) {
            return std::vector<double>{static_cast<double>(layout(r).slice.count()) * layout(r).count};
          },
          [&](const TraceRecord& r) { return kernel_time(r, layout(r)); },
          [&](const TraceRecord& r) { return kernel_time(r, layout(r)) - put_fixed(); });
      if (!(x[0] > 0)) continue;
      const BytesPerSecond bandwidth{1 / x[0]};
      model_.scopes[static_cast<std::size_t>(s)].put_bandwidth = bandwidth;
      fit_.add_yaml(key(s, "put_bandwidth"), bandwidth_yaml(bandwidth),
                    fmt::format("least squares on relative errors of kernel time = put_quiet_time's fixed part + "
                                "iterations x slice / put_bandwidth, over put_rate_blocks records at most {:.3g} of "
                                "the line rate (each {}'s own rate binds)",
                                LONE_ISSUER_SHARE, models::to_string(s)),
                    records);
      block_pingpong_note(s, bandwidth);
    }
  }

  /// The block ping-pong's slope is a block's store rate too, but with sources that stay in L2 (<= 4 MiB) it runs
  /// about twice the rate of the put_rate_blocks kernels, which read 64 MiB from HBM. The model has one rate per
  /// scope: the rate tests' is kept, and the ping-pong's is said.
  void block_pingpong_note(Scope s, BytesPerSecond rate) {
    const auto records =
        payload_bound(fit_.select(Family::nvshmem, {"put_signal_pingpong"}, "round_trip",
                                  [&](const TraceRecord& r) { return scope_of(r) == models::to_string(s); }));
    if (records.size() < 2) return;
    const auto x = Fit::relative_least_squares(records, [](const TraceRecord& r) {
      return std::vector<double>{2, 2 * static_cast<double>(r.bytes.count())};
    });
    if (!(x[1] > 0)) return;
    fit_.note(
        fmt::format("{}: put_signal_pingpong/{} implies {} per {} (sources in L2), the rate tests {}; the model "
                    "has one rate per scope and keeps the rate tests'",
                    key(s, "put_bandwidth"), models::to_string(s), to_string(BytesPerSecond{1 / x[1]}),
                    models::to_string(s), to_string(rate)));
  }

  /// write + quiet from put + quiet, write + signal from the thread ping-pong: the intercepts left once the payload
  /// term (fitted above) is taken off. Only the sums are measured: write_latency keeps its default.
  void quiet_and_signal() {
    const auto puts = fit_.select(Family::nvshmem, {"put_latency"}, "thread");
    if (fit_.enough(puts, 1, "pgas.quiet")) {
      model_.quiet = Seconds{0};
      const Seconds quiet{Fit::intercept(puts, [&](const TraceRecord& r) {
        return r.median - model_.put_quiet_time(Scope::thread, r.bytes, 1, 1, route_).count();
      })};
      model_.quiet = fit_.non_negative(quiet, "pgas.quiet");
      fit_.add_time("pgas.quiet", model_.quiet,
                    fmt::format("weighted mean of t - put_quiet_time without quiet (write_latency {}), all sizes",
                                to_string(model_.write_latency)),
                    puts);
    }
    const auto pingpongs = fit_.select(Family::nvshmem, {"put_signal_pingpong"}, "round_trip",
                                       [](const TraceRecord& r) { return scope_of(r) == "thread"; });
    if (fit_.enough(pingpongs, 1, "pgas.signal")) {
      model_.signal = Seconds{0};
      const Seconds signal{Fit::intercept(pingpongs, [&](const TraceRecord& r) {
        return r.median / 2 - model_.put_signal_time(Scope::thread, r.bytes, route_).count();
      })};
      model_.signal = fit_.non_negative(signal, "pgas.signal");
      fit_.add_time("pgas.signal", model_.signal,
                    fmt::format("weighted mean of round trip / 2 - put_signal_time without signal (write_latency {}), "
                                "thread scope, all sizes",
                                to_string(model_.write_latency)),
                    pingpongs);
    }
  }

  /// A thread's get rate: the slope of t over S on the payload-bound gets. The read latency: what is left of the
  /// gets the issue time binds (S / get_bw <= issue), t - (2 L + issue).
  void gets() {
    const auto records = fit_.select(Family::nvshmem, {"get_latency"}, "thread");
    auto& p = model_.scopes[static_cast<std::size_t>(Scope::thread)];
    const auto bound = payload_bound(records);
    if (fit_.enough(bound, 2, key(Scope::thread, "get_bandwidth"))) {
      const auto x = Fit::relative_least_squares(bound, [](const TraceRecord& r) {
        return std::vector<double>{1, static_cast<double>(r.bytes.count())};
      });
      if (x[1] > 0) {
        p.get_bandwidth = BytesPerSecond{1 / x[1]};
        fit_.add_yaml(key(Scope::thread, "get_bandwidth"), bandwidth_yaml(p.get_bandwidth),
                      fmt::format("least squares on relative errors of t = c + S / get_bandwidth, payload-bound "
                                  "records (>= {}x the smallest size's time)",
                                  PAYLOAD_BOUND),
                      bound);
      }
    }
    std::vector<TracedRecord> small;
    for (const auto& t : records)
      if (t.record->bytes / p.get_bandwidth <= p.issue) small.push_back(t);
    if (!fit_.enough(small, 1, "pgas.read_latency")) return;
    model_.read_latency = Seconds{0};
    const Seconds read{Fit::intercept(small, [&](const TraceRecord& r) {
      return r.median - model_.get_time(Scope::thread, r.bytes, route_).count();
    })};
    model_.read_latency = fit_.non_negative(read, "pgas.read_latency");
    fit_.add_time("pgas.read_latency", model_.read_latency,
                  "weighted mean of t - get_time without read_latency, over the gets whose issue time binds "
                  "(S / get_bandwidth <= issue)",
                  small);
  }

  /// The payload share of the line rate, from rate records where the line binds: at least 1 MiB per iteration and
  /// issuers able to inject LINE_BOUND_MARGIN times what was measured. T = fixed + count x bytes / (B x eff).
  void efficiency(Scope s) {
    const auto records =
        rate_records(s, {"put_rate", "put_rate_blocks"}, [&](const TraceRecord& r, const twins::PutRateLayout& l) {
          const double inject = l.issuers * model_.issuer_put_rate(s, l.slice).count();
          return r.bytes.count() >= EFFICIENCY_MIN_BYTES && inject >= LINE_BOUND_MARGIN * r.median;
        });
    if (!fit_.enough(records, 1, key(s, "efficiency"))) return;
    auto layout = [](const TraceRecord& r) { return *twins::put_rate_layout(r); };
    const double line = route_.line_rate.count();
    const auto x = time_least_squares(
        records,
        [&](const TraceRecord& r) {
          return std::vector<double>{static_cast<double>(r.bytes.count()) * layout(r).count / line};
        },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)); },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)) - put_fixed(); });
    if (!(x[0] > 0)) return;
    const double efficiency = std::clamp(1 / x[0], 0.01, 1.0);
    model_.scopes[static_cast<std::size_t>(s)].efficiency = efficiency;
    fit_.add_number(key(s, "efficiency"), efficiency,
                    fmt::format("least squares on relative errors of kernel time = put_quiet_time's fixed part + "
                                "iterations x bytes / ({} x efficiency), over rate records of >= 1 MiB whose issuers "
                                "could inject {}x the measured rate (the line binds)",
                                to_string(route_.line_rate), LINE_BOUND_MARGIN),
                    records);
  }

  /// The share of an issuer's put bandwidth left while the peer puts into its PE, from the two-PE block rate records
  /// where the issuers bind (their slowed rates sum to at most the line's payload rate) and yet inject at least
  /// DUPLEX_BUSY of it, with buffers beyond L2: T = fixed + count x slice / (put_bw x share). The slowdown grows with
  /// the traffic (x0.97 with 1 block, x0.92 with 32 against PE0 alone): the share is fitted where exchanges run.
  void duplex() {
    const Scope s = Scope::block;
    const auto& p = model_.params(s);
    const double line = route_.line_rate.count() * p.efficiency;
    const auto records = rate_records(
        s, {"put_rate_bidir", "put_rate_bidir_blocks"}, [&](const TraceRecord& r, const twins::PutRateLayout& l) {
          const double issuers = l.issuers * p.put_bandwidth.count();
          return r.bytes > model_.l2_size && issuers * model_.duplex_put_share <= line && issuers >= DUPLEX_BUSY * line;
        });
    if (!fit_.enough(records, 1, "pgas.duplex_put_share")) return;
    auto layout = [](const TraceRecord& r) { return *twins::put_rate_layout(r); };
    const auto x = time_least_squares(
        records,
        [&](const TraceRecord& r) {
          return std::vector<double>{static_cast<double>(layout(r).slice.count()) * layout(r).count /
                                     p.put_bandwidth.count()};
        },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)); },
        [&](const TraceRecord& r) { return kernel_time(r, layout(r)) - put_fixed(); });
    if (!(x[0] > 0)) return;
    model_.duplex_put_share = std::clamp(1 / x[0], 0.01, 1.0);
    fit_.add_number("pgas.duplex_put_share", model_.duplex_put_share,
                    fmt::format("least squares on relative errors of kernel time = put_quiet_time's fixed part + "
                                "iterations x slice / (block put_bandwidth {} x share), both PEs putting, over "
                                "block rate records beyond l2_size whose issuers inject {} to 1 x the line rate",
                                to_string(p.put_bandwidth), DUPLEX_BUSY),
                    records);
    duplex_note(records);
  }

  /// The averaging kernel's rate from the exchange records' reduce phase (PE0's median from its scatter kernel's end
  /// to its averaging kernel's end: the peer's chunk is in by then, both PEs having scattered together).
  void reduce() {
    const auto records = fit_.select(Family::nvshmem, {"exchange"}, std::nullopt, [](const TraceRecord& r) {
      return r.ranks.size() >= 2 && extra_number(r, "reduce_phase", 0) > 0;
    });
    if (!fit_.enough(records, 1, "pgas.reduce_bandwidth")) return;
    auto chunk = [](const TraceRecord& r) { return Bytes{r.bytes.count() / r.ranks.size()}; };
    auto phase = [](const TraceRecord& r) { return extra_number(r, "reduce_phase", 0); };
    const auto x = time_least_squares(
        records,
        [&](const TraceRecord& r) {
          return std::vector<double>{static_cast<double>(chunk(r).count()) * static_cast<double>(r.ranks.size() + 1)};
        },
        phase, phase);
    if (!(x[0] > 0)) return;
    model_.reduce_bandwidth = BytesPerSecond{1 / x[0]};
    fit_.add_yaml("pgas.reduce_bandwidth", bandwidth_yaml(model_.reduce_bandwidth),
                  "least squares on relative errors of the exchange records' reduce_phase = (ranks + 1) x chunk / "
                  "reduce_bandwidth",
                  records);
  }

  /// The same records against the rate PE0 reached alone just before (extra `unidirectional`): the slowdown on one
  /// machine, without the machine-to-machine spread that the share above also absorbs.
  void duplex_note(const std::vector<TracedRecord>& records) {
    double sum = 0;
    int n = 0;
    for (const auto& t : records)
      if (const double alone = extra_number(*t.record, "unidirectional", 0); alone > 0) {
        sum += t.record->median / alone;
        ++n;
      }
    if (n > 0)
      fit_.note(
          fmt::format("pgas.duplex_put_share: the same records run at {:.3f} of PE0's rate alone on their own "
                      "machine (mean of {} ratios); the fitted share also holds the spread between machines",
                      sum / n, n));
  }

  static std::string scope_of(const TraceRecord& r) {
    const auto it = r.extra.find("scope");
    return it != r.extra.end() && it->is_string() ? it->get<std::string>() : std::string("thread");
  }

  Fit& fit_;
  models::PgasModel model_;  // the defaults, updated as parameters are fitted: later fits use earlier values
  models::PgasRoute route_;
};

}  // namespace

void pgas(Fit& fit) {
  PgasFit(fit).run();
}

}  // namespace snsim::validation::fits
