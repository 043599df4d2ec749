// The op-kind table (program/op_kinds.hpp): one entry per op type and per kind the runtime records, and what the
// parser, the records and the report's timeline read from it. No simulation runs here.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "program/program.hpp"
#include "sim/report.hpp"

using namespace snsim;
using namespace snsim::workloads;

namespace {
std::vector<std::string_view> names_where(bool (*pick)(const OpKind&)) {
  std::vector<std::string_view> names;
  for (const OpKind& kind : op_kinds())
    if (pick(kind)) names.push_back(kind.name);
  return names;
}
}  // namespace

TEST_CASE("op kinds: every op type has one entry, in the variant's order, then the runtime's records") {
  const auto kinds = op_kinds();
  CHECK(kinds.size() == std::variant_size_v<decltype(Op::what)> + 2);
  std::set<std::string_view> names;
  for (const OpKind& kind : kinds) CHECK(names.insert(kind.name).second);
  CHECK(kinds.front().name == "compute");
  CHECK(kinds[kinds.size() - 2].name == "fault");
  CHECK(kinds.back().name == "migrate");
  CHECK(kind_of(Op{PutOp{}}).name == "put");
  CHECK(kind_of(Op{RepeatOp{}}).name == "repeat");
  CHECK(kind_of(Op{EventWaitOp{}}).name == "event_wait");
  CHECK(&kind_of(Op{ReadOp{}}) == &ReadOp::KIND);
}

TEST_CASE("op kinds: a scenario's ops are the kinds with a parser, repeat and streams its structure") {
  CHECK(names_where([](const OpKind& k) { return k.parse != nullptr; }) ==
        std::vector<std::string_view>{"compute", "copy", "collective", "barrier", "put", "get", "signal_wait", "quiet",
                                      "fence", "shmem_barrier", "load", "managed", "touch", "prefetch", "advise",
                                      "read", "host"});
  CHECK(names_where([](const OpKind& k) { return k.source == OpSource::scenario && !k.parse; }) ==
        std::vector<std::string_view>{"repeat", "streams"});
  CHECK(names_where([](const OpKind& k) { return k.source == OpSource::generator; }) ==
        std::vector<std::string_view>{"event_record", "event_wait"});
  CHECK(names_where([](const OpKind& k) { return k.source == OpSource::runtime; }) ==
        std::vector<std::string_view>{"fault", "migrate"});
}

TEST_CASE("op kinds: each kind's timeline track, rate and waiting are those the timeline listed by name before") {
  const std::map<std::string_view, TimelineTrack> tracks{{"compute", TimelineTrack::compute},
                                                         {"copy", TimelineTrack::copies},
                                                         {"collective", TimelineTrack::collectives},
                                                         {"barrier", TimelineTrack::collectives},
                                                         {"put", TimelineTrack::pgas},
                                                         {"get", TimelineTrack::pgas},
                                                         {"signal_wait", TimelineTrack::pgas},
                                                         {"quiet", TimelineTrack::pgas},
                                                         {"fence", TimelineTrack::pgas},
                                                         {"shmem_barrier", TimelineTrack::pgas},
                                                         {"load", TimelineTrack::pgas},
                                                         {"event_record", TimelineTrack::stream_events},
                                                         {"event_wait", TimelineTrack::stream_events},
                                                         {"managed", TimelineTrack::uvm},
                                                         {"touch", TimelineTrack::uvm},
                                                         {"prefetch", TimelineTrack::uvm},
                                                         {"advise", TimelineTrack::uvm},
                                                         {"read", TimelineTrack::uvm},
                                                         {"fault", TimelineTrack::faults},
                                                         {"migrate", TimelineTrack::migrations},
                                                         {"repeat", TimelineTrack::other},
                                                         {"streams", TimelineTrack::other},
                                                         {"host", TimelineTrack::other}};
  CHECK(op_kinds().size() == tracks.size());
  for (const OpKind& kind : op_kinds()) {
    INFO(kind.name);
    REQUIRE(tracks.contains(kind.name));
    CHECK(kind.track == tracks.at(kind.name));
  }
  CHECK(names_where([](const OpKind& k) { return k.moves_bytes; }) ==
        std::vector<std::string_view>{"copy", "collective", "get", "load", "prefetch", "migrate"});
  CHECK(names_where([](const OpKind& k) { return k.blocks; }) ==
        std::vector<std::string_view>{"collective", "barrier", "get", "signal_wait", "shmem_barrier"});
}

TEST_CASE("op kinds: record_kinds() is the same table, and the timeline draws a record on its kind's thread") {
  const auto records = record_kinds();
  REQUIRE(records.size() == op_kinds().size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].name == op_kinds()[i].name);
    CHECK(records[i].track == op_kinds()[i].track);
    CHECK(records[i].moves_bytes == op_kinds()[i].moves_bytes);
    CHECK(records[i].blocks == op_kinds()[i].blocks);
  }
  Report report;
  report.ops.push_back({0, 0, -1, "get", "get 1 MiB from gpu1 thread", Bytes{1 << 20}, Seconds{0}, Seconds{1e-3}, 1});
  CHECK_THROWS_AS(report.timeline(), std::logic_error);
  report.record_kinds = records;
  const auto timeline = report.timeline();
  std::set<std::string> threads;
  double rate = -1;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["args"].contains("GBps")) rate = e["args"]["GBps"].get<double>();
  }
  CHECK(threads == std::set<std::string>{"pgas"});
  CHECK(rate == doctest::Approx(1.05).epsilon(0.01));  // a get moves its bytes: 1 MiB in 1 ms
}
