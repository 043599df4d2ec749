#include "sim/report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <simgrid/version.h>

namespace snsim {

std::optional<int> RankWaits::most_waited_on() const {
  std::optional<int> most;
  Seconds longest{0};
  for (const auto& [rank, time] : on)  // by rank: the first of equals is the lowest
    if (time > longest) {
      most = rank;
      longest = time;
    }
  return most;
}

Seconds RankWaits::waiting_on(int rank) const {
  const auto it = on.find(rank);
  return it == on.end() ? Seconds{0} : it->second;
}

nlohmann::json to_json(const RankWaits& w) {
  nlohmann::json on = nlohmann::json::array();
  for (const auto& [rank, time] : w.on)
    if (time > Seconds{0}) on.push_back({{"rank", rank}, {"waiting_s", time.count()}});
  const auto most = w.most_waited_on();
  return {{"rank", w.rank},
          {"span_s", w.span.count()},
          {"busy_s", w.busy.count()},
          {"waiting_s", w.waiting.count()},
          {"most_waited_on", most ? nlohmann::json(*most) : nlohmann::json(nullptr)},
          {"on", std::move(on)}};
}

RankWaits rank_waits_from_json(const nlohmann::json& json) {
  RankWaits w;
  w.rank = json.at("rank").get<int>();
  w.span = Seconds{json.at("span_s").get<double>()};
  w.busy = Seconds{json.at("busy_s").get<double>()};
  w.waiting = Seconds{json.at("waiting_s").get<double>()};
  for (const auto& o : json.at("on")) w.on[o.at("rank").get<int>()] = Seconds{o.at("waiting_s").get<double>()};
  return w;
}

std::string UnendedOp::describe() const {
  const std::string op = index ? fmt::format("op {}, {} '{}'", *index, kind, label) : label;
  return fmt::format("rank {}: {}, {}", rank, op, waiting_for.empty() ? "did not end" : "waits " + waiting_for);
}

nlohmann::json Invariants::to_json() const {
  nlohmann::json unended_json = nlohmann::json::array();
  for (const auto& u : unended)
    unended_json.push_back({{"rank", u.rank},
                            {"op", u.index ? nlohmann::json(*u.index) : nlohmann::json(nullptr)},
                            {"kind", u.kind},
                            {"label", u.label},
                            {"waiting_for", u.waiting_for}});
  return {{"transfers", {{"finished", transfers_finished}, {"failed", transfers_failed}}},
          {"bytes_sent", bytes_sent},
          {"bytes_received", bytes_received},
          {"link_samples", link_samples},
          {"max_link_load", max_link_load},
          {"ops", {{"started", ops_started}, {"ended", ops_ended}}},
          {"unended", std::move(unended_json)},
          {"violations", violations},
          {"held", violations.empty()}};
}

const Table* find_table(const std::vector<Table>& tables, std::string_view title) {
  for (const auto& t : tables)
    if (t.title == title) return &t;
  return nullptr;
}

const nlohmann::json* find_metric(const Table& table, std::string_view metric) {
  for (const auto& row : table.rows)
    if (row.size() >= 2 && row[0].is_string() && row[0].get_ref<const std::string&>() == metric) return &row[1];
  return nullptr;
}

nlohmann::json to_json(const Table& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : table.rows) {
    nlohmann::json row;
    for (std::size_t i = 0; i < table.columns.size() && i < r.size(); ++i) row[table.columns[i]] = r[i];
    rows.push_back(std::move(row));
  }
  return {{"title", table.title}, {"columns", table.columns}, {"rows", std::move(rows)}};
}

nlohmann::json FoldingSummary::to_json() const {
  return {{"path", path},
          {"ranks", ranks},
          {"simulated", simulated},
          {"replicas", replicas},
          {"representative", representative},
          {"proxies", proxies},
          {"why", why}};
}

Table FoldingSummary::table() const {
  Table t{"folding: identical replicas simulated once (docs/folding.md)", {"what", "value"}, {}};
  t.rows.push_back({"path", path});
  t.rows.push_back({"ranks", ranks});
  t.rows.push_back({"simulated_in_full", simulated});
  if (replicas > 0) {
    t.rows.push_back({"replicas_proposed", replicas});
    t.rows.push_back({"representative", representative});
    t.rows.push_back({"folded_ops_run_by_proxies", proxies});
  }
  for (const auto& w : why) t.rows.push_back({"unfolded", w});
  return t;
}

nlohmann::json Report::to_json() const {
  nlohmann::json out;
  out["scenario"] = scenario;
  out["seed"] = seed;
  out["outcome"] = outcome;
  out["notes"] = notes;
  out["simulated_time_s"] = simulated_time.count();
  out["folding"] = folding.to_json();
  out["config"] = config;
  auto& links_json = out["links"] = nlohmann::json::array();
  for (const auto& l : links) {
    const double capacity = l.bandwidth.count() * simulated_time.count();
    links_json.push_back({{"name", l.name},
                          {"bandwidth_Bps", l.bandwidth.count()},
                          {"wire_bytes", l.wire_bytes.count()},
                          {"payload_bytes", l.payload_bytes.count()},
                          {"utilization", capacity > 0 ? static_cast<double>(l.wire_bytes.count()) / capacity : 0.0}});
  }
  auto& ops_json = out["ops"] = nlohmann::json::array();
  for (const auto& o : ops)
    ops_json.push_back({{"rank", o.rank},
                        {"phase", o.phase},
                        {"tag", o.tag},
                        {"kind", o.kind},
                        {"label", o.label},
                        {"bytes", o.bytes.count()},
                        {"start_s", o.start.count()},
                        {"end_s", o.end.count()}});
  auto& tables_json = out["tables"] = nlohmann::json::array();
  for (const auto& t : tables) tables_json.push_back(snsim::to_json(t));
  auto& waits_json = out["waits"] = nlohmann::json::array();
  for (const auto& w : waits) waits_json.push_back(snsim::to_json(w));
  out["invariants"] = invariants.to_json();
  return out;
}

namespace {
std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return std::string(s);
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}
}  // namespace

std::string Report::ops_csv() const {
  std::string out = "rank,phase,kind,label,bytes,start_s,end_s,duration_s\n";
  for (const auto& o : ops)
    out += fmt::format("{},{},{},{},{},{:.12g},{:.12g},{:.12g}\n", o.rank, o.phase, o.kind, csv_field(o.label),
                       o.bytes.count(), o.start.count(), o.end.count(), (o.end - o.start).count());
  return out;
}

namespace {

/// Microseconds, rounded to the nanosecond: Perfetto keeps integer nanoseconds, and short numbers keep the file
/// small. Rounding is monotonic, so slices that did not overlap still do not.
double micros(Seconds t) {
  return std::round(t.count() * 1e9) / 1e3;
}

constexpr std::array<std::string_view, 10> TRACK_NAMES{"compute",       "copies", "collectives", "pgas",
                                                       "stream events", "uvm",    "uvm faults",  "uvm migrations",
                                                       "waiting",       "other"};
// tid = track x TRACK_TIDS + lane + 1: tids from 1 (Perfetto merged tid 0 with 1 until 2025, google/perfetto#2278).
constexpr int TRACK_TIDS = 1000;

/// Packs intervals into lanes so that intervals on one lane never overlap (touching is fine): the lowest lane free
/// at each start, in start order. Returns the lane of every interval, in the order given.
std::vector<int> lanes(const std::vector<std::pair<double, double>>& spans) {
  std::vector<std::size_t> order(spans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) { return spans[a].first < spans[b].first; });
  std::vector<double> free_at;  // by lane: the end of its last interval
  std::vector<int> lane(spans.size(), 0);
  for (std::size_t i : order) {
    std::size_t l = 0;
    while (l < free_at.size() && free_at[l] > spans[i].first) ++l;
    if (l == free_at.size()) free_at.push_back(0);
    free_at[l] = spans[i].second;
    lane[i] = static_cast<int>(l);
  }
  return lane;
}

/// The record kinds of a report by name. A kind the table lacks is drawn on "other", moving and blocking nothing.
class KindsByName {
 public:
  KindsByName(std::span<const RecordKind> kinds, std::size_t records) {
    if (kinds.empty() && records > 0)
      throw std::logic_error("Report::timeline needs record_kinds (program/op_kinds.hpp; Scenario::run sets them)");
    for (const RecordKind& k : kinds) by_name_.emplace(k.name, k);
  }
  RecordKind operator()(std::string_view kind) const {
    const auto it = by_name_.find(kind);
    return it == by_name_.end() ? RecordKind{kind} : it->second;
  }

 private:
  std::map<std::string_view, RecordKind, std::less<>> by_name_;
};

std::string gpu_name(int rank) {
  return fmt::format("gpu{}", rank);
}

}  // namespace

nlohmann::json Report::timeline(const std::vector<int>& gpus) const {
  using nlohmann::json;
  const KindsByName kind_of(record_kinds, ops.size());
  int ranks = static_cast<int>(waits.size());
  for (const auto& o : ops) ranks = std::max(ranks, o.rank + 1);
  for (const auto& w : wait_spans) ranks = std::max(ranks, w.rank + 1);
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<bool> shown(n, gpus.empty());
  for (int g : gpus)
    if (g >= 0 && g < ranks) shown[static_cast<std::size_t>(g)] = true;
  auto is_shown = [&](int rank) { return rank >= 0 && rank < ranks && shown[static_cast<std::size_t>(rank)]; };
  auto pid = [](int rank) { return rank + 1; };  // pid 0 is the kernel's swapper to Perfetto (google/perfetto#394)

  // Every slice: an op (index into ops) or a wait span (index into wait_spans), its rank, track and times.
  struct Slice {
    int rank;
    TimelineTrack track;
    double ts, end;
    std::size_t op;  // ops index, or ops.size() + wait index
    int tid = 0;
  };
  std::vector<Slice> slices;
  slices.reserve(ops.size() + wait_spans.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    slices.push_back({ops[i].rank, kind_of(ops[i].kind).track, micros(ops[i].start), micros(ops[i].end), i});
  for (std::size_t i = 0; i < wait_spans.size(); ++i) {
    const auto& w = wait_spans[i];
    slices.push_back({w.rank, TimelineTrack::waiting, micros(w.start), micros(w.start + w.duration), ops.size() + i});
  }
  // Threads: per rank and track, as many lanes as overlapping slices need.
  std::map<std::pair<int, TimelineTrack>, std::vector<std::size_t>> by_thread;
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (is_shown(slices[i].rank)) by_thread[{slices[i].rank, slices[i].track}].push_back(i);
  json events = json::array();
  for (int r = 0; r < ranks; ++r) {
    if (!is_shown(r)) continue;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid(r)}, {"args", {{"name", gpu_name(r)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid(r)}, {"args", {{"sort_index", r}}}});
  }
  for (const auto& [key, members] : by_thread) {
    std::vector<std::pair<double, double>> spans;
    for (std::size_t i : members) spans.emplace_back(slices[i].ts, slices[i].end);
    const auto lane = lanes(spans);
    const int used = *std::ranges::max_element(lane) + 1;
    const int base = static_cast<int>(key.second) * TRACK_TIDS + 1;
    for (std::size_t k = 0; k < members.size(); ++k) slices[members[k]].tid = base + lane[k];
    for (int l = 0; l < used; ++l) {
      const std::string_view track = TRACK_NAMES[static_cast<std::size_t>(key.second)];
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid(key.first)},
                        {"tid", base + l},
                        {"args", {{"name", l == 0 ? std::string(track) : fmt::format("{} {}", track, l + 1)}}}});
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", pid(key.first)},
                        {"tid", base + l},
                        {"args", {{"sort_index", base + l}}}});
    }
  }

  // The op each wait lies in: the latest blocking op of its rank that started before and ended after it (or none:
  // the barrier between workloads, which has no record).
  std::vector<std::vector<std::size_t>> blockers(n);  // by rank: blocking ops, by start
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (kind_of(ops[i].kind).blocks && ops[i].rank >= 0) blockers[static_cast<std::size_t>(ops[i].rank)].push_back(i);
  for (auto& b : blockers)
    std::ranges::stable_sort(b, [&](std::size_t x, std::size_t y) { return ops[x].start < ops[y].start; });
  auto waited_in = [&](const Wait& w) -> std::string {
    const auto& b = blockers[static_cast<std::size_t>(w.rank)];
    auto it = std::ranges::upper_bound(b, w.start, {}, [&](std::size_t i) { return ops[i].start; });
    for (int scanned = 0; it != b.begin() && scanned < 64; ++scanned) {  // concurrent streams: a few candidates
      --it;
      if (ops[*it].end >= w.start + w.duration) return std::string(ops[*it].label);
    }
    return "the barrier between workloads";
  };

  for (const auto& s : slices) {
    if (!is_shown(s.rank)) continue;
    // Both ends are whole nanoseconds: so is the duration, once the subtraction's residue is rounded away.
    const double dur = std::round((s.end - s.ts) * 1e3) / 1e3;
    json e = {{"ph", "X"}, {"pid", pid(s.rank)}, {"tid", s.tid}, {"ts", s.ts}, {"dur", dur}};
    if (s.op < ops.size()) {
      const auto& o = ops[s.op];
      json args = {{"bytes", o.bytes.count()}};
      if (o.phase > 0) args["phase"] = o.phase;  // the workload, where the scenario has several
      if (o.peer >= 0) args["peer"] = gpu_name(o.peer);
      if (!o.detail.empty()) args["algorithm"] = o.detail;
      if (!o.kernel.empty()) args["kernel"] = o.kernel;
      const Seconds took = o.end - o.start;
      if (kind_of(o.kind).moves_bytes && o.bytes.count() > 0 && took > Seconds{0})
        args["GBps"] = std::round(static_cast<double>(o.bytes.count()) / took.count() / 1e7) / 100;
      e["name"] = o.label;
      e["cat"] = o.kind;
      e["args"] = std::move(args);
    } else {
      const auto& w = wait_spans[s.op - ops.size()];
      e["name"] = fmt::format("wait on {}", gpu_name(w.on));
      e["cat"] = "wait";
      e["args"] = {{"on", gpu_name(w.on)}, {"in", waited_in(w)}};
    }
    events.push_back(std::move(e));
  }

  // Flows: from each put to the signal_wait it satisfied, for the waits that waited. The start sits in the middle of
  // the put, the end ("bp": "e": bound to its enclosing slice) 1 ns before the signal_wait ends, when the signal
  // arrived: after the put (a wait usually starts before the put it waits for, and Perfetto drops a flow that ends
  // before it starts) and still inside the slice. Flow ids pair by (cat, name, id).
  std::map<std::pair<int, double>, std::vector<std::size_t>> puts;  // (rank, start us) -> put slices
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == "put") puts[{ops[i].rank, slices[i].ts}].push_back(i);
  std::uint64_t flow = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    if (o.kind != "signal_wait" || !o.cause || !is_shown(o.peer) || !is_shown(o.rank) ||
        slices[i].end - slices[i].ts < 0.002)
      continue;
    const auto found = puts.find({o.peer, micros(*o.cause)});
    if (found == puts.end()) continue;
    const auto put = std::ranges::find_if(found->second, [&](std::size_t p) { return ops[p].peer == o.rank; });
    if (put == found->second.end()) continue;
    const json common = {{"name", "signal"}, {"cat", "signal"}, {"id", ++flow}};
    json start = common, finish = common;
    const double put_dur = std::round((slices[*put].end - slices[*put].ts) * 1e3);              // whole nanoseconds
    const double issued = (std::round(slices[*put].ts * 1e3) + std::floor(put_dur / 2)) / 1e3;  // inside the put
    start.update({{"ph", "s"}, {"pid", pid(o.peer)}, {"tid", slices[*put].tid}, {"ts", issued}});
    const double arrived = std::max(issued, std::round((slices[i].end - 0.001) * 1e3) / 1e3);
    finish.update({{"ph", "f"}, {"bp", "e"}, {"pid", pid(o.rank)}, {"tid", slices[i].tid}, {"ts", arrived}});
    events.push_back(std::move(start));
    events.push_back(std::move(finish));
  }

  // Counters: per GPU, the rate of its transfers in flight (each op's bytes spread evenly over its duration).
  std::vector<std::map<double, double>> steps(n);  // by rank: time -> change of rate (GB/s)
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    if (!kind_of(o.kind).moves_bytes || o.bytes.count() == 0 || slices[i].end <= slices[i].ts) continue;
    const double rate = static_cast<double>(o.bytes.count()) / (o.end - o.start).count() / 1e9;
    steps[static_cast<std::size_t>(o.rank)][slices[i].ts] += rate;
    steps[static_cast<std::size_t>(o.rank)][slices[i].end] -= rate;
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (!shown[r]) continue;
    double level = 0, written = -1;
    for (const auto& [ts, change] : steps[r]) {
      level += change;
      const double rate = std::max(0.0, std::round(level * 100) / 100);  // no -0.00 from rounding residue
      if (rate == written) continue;                                     // back-to-back transfers at one rate: one step
      written = rate;
      events.push_back({{"name", "transfers"},
                        {"ph", "C"},
                        {"pid", pid(static_cast<int>(r))},
                        {"ts", ts},
                        {"args", {{"GBps", rate}}}});
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"generator", "snsim"},
            {"scenario", scenario},
            {"seed", seed},
            {"simulated_time_s", simulated_time.count()},
            {"outcome", outcome},
            {"gpus", ranks},
            {"gpus_written", gpus.empty() ? json("all") : json(gpus)}}}};
}

nlohmann::json RunRecord::to_json() const {
  return {{"wall_time_s", wall_time_s},
          {"peak_memory_MiB", peak_memory_mib},
          {"snsim_version", snsim_version},
          {"simgrid_version", simgrid_version},
          {"host", host}};
}

RunRecord RunRecord::measure(double wall_time_s) {
  RunRecord r;
  r.wall_time_s = wall_time_s;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.peak_memory_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
#ifdef SNSIM_VERSION
  r.snsim_version = SNSIM_VERSION;
#endif
  r.simgrid_version = fmt::format("{}.{}.{}", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH);
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  r.host = name;
  return r;
}

std::string format_table(const Table& table) {
  auto cell = [](const nlohmann::json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    if (v.is_number_float()) return fmt::format("{:.2f}", v.get<double>());
    return v.dump();
  };
  std::vector<std::size_t> width(table.columns.size());
  for (std::size_t i = 0; i < width.size(); ++i) width[i] = table.columns[i].size();
  for (const auto& row : table.rows)
    for (std::size_t i = 0; i < width.size() && i < row.size(); ++i) width[i] = std::max(width[i], cell(row[i]).size());
  std::string out = fmt::format("# {}\n#", table.title);
  for (std::size_t i = 0; i < width.size(); ++i) out += fmt::format(" {:>{}}", table.columns[i], width[i]);
  out += "\n";
  for (const auto& row : table.rows) {
    out += " ";
    for (std::size_t i = 0; i < width.size() && i < row.size(); ++i)
      out += fmt::format(" {:>{}}", cell(row[i]), width[i]);
    out += "\n";
  }
  return out;
}

std::string format_markdown(const Table& table) {
  auto cell = [](const nlohmann::json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) return fmt::format("{:.2f}", v.get<double>());
    if (v.is_null()) return "-";
    return v.dump();
  };
  std::string out = "|";
  for (const auto& c : table.columns) out += fmt::format(" {} |", c);
  out += "\n|";
  for (std::size_t i = 0; i < table.columns.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const auto& v : row) out += fmt::format(" {} |", cell(v));
    out += "\n";
  }
  return out;
}

}  // namespace snsim
