#include "sim/report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <simgrid/version.h>

namespace snsim {

std::optional<int> RankWaits::most_waited_on() const {
  std::optional<int> most;
  for (std::size_t r = 0; r < on.size(); ++r)
    if (on[r] > Seconds{0} && (!most || on[r] > on[static_cast<std::size_t>(*most)])) most = static_cast<int>(r);
  return most;
}

nlohmann::json to_json(const RankWaits& w) {
  nlohmann::json on = nlohmann::json::array();
  for (std::size_t r = 0; r < w.on.size(); ++r)
    if (w.on[r] > Seconds{0}) on.push_back({{"rank", r}, {"waiting_s", w.on[r].count()}});
  const auto most = w.most_waited_on();
  return {{"rank", w.rank},
          {"span_s", w.span.count()},
          {"busy_s", w.busy.count()},
          {"waiting_s", w.waiting.count()},
          {"most_waited_on", most ? nlohmann::json(*most) : nlohmann::json(nullptr)},
          {"on", std::move(on)},
          {"ranks", w.on.size()}};
}

RankWaits rank_waits_from_json(const nlohmann::json& json) {
  RankWaits w;
  w.rank = json.at("rank").get<int>();
  w.span = Seconds{json.at("span_s").get<double>()};
  w.busy = Seconds{json.at("busy_s").get<double>()};
  w.waiting = Seconds{json.at("waiting_s").get<double>()};
  w.on.assign(json.at("ranks").get<std::size_t>(), Seconds{0});
  for (const auto& o : json.at("on"))
    w.on.at(o.at("rank").get<std::size_t>()) = Seconds{o.at("waiting_s").get<double>()};
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

nlohmann::json Report::to_json() const {
  nlohmann::json out;
  out["scenario"] = scenario;
  out["seed"] = seed;
  out["outcome"] = outcome;
  out["simulated_time_s"] = simulated_time.count();
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
  for (const auto& t : tables) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : t.rows) {
      nlohmann::json row;
      for (std::size_t i = 0; i < t.columns.size() && i < r.size(); ++i) row[t.columns[i]] = r[i];
      rows.push_back(std::move(row));
    }
    tables_json.push_back({{"title", t.title}, {"columns", t.columns}, {"rows", std::move(rows)}});
  }
  auto& waits_json = out["waits"] = nlohmann::json::array();
  for (const auto& w : waits) waits_json.push_back(snsim::to_json(w));
  out["invariants"] = invariants.to_json();
  return out;
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
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

nlohmann::json Report::timeline() const {
  nlohmann::json events = nlohmann::json::array();
  int ranks = 0;
  for (const auto& o : ops) ranks = std::max(ranks, o.rank + 1);
  for (int r = 0; r < ranks; ++r)
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"name", fmt::format("gpu{}", r)}}}});
  for (const auto& o : ops)
    events.push_back({{"name", o.label},
                      {"cat", o.kind},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", o.rank},
                      {"ts", o.start.count() * 1e6},
                      {"dur", (o.end - o.start).count() * 1e6},
                      {"args", {{"bytes", o.bytes.count()}, {"phase", o.phase}}}});
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
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

}  // namespace snsim
