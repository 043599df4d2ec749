// What the report needs to know about each kind of op record: the timeline thread it is drawn on, whether its bytes
// move while it runs and whether a rank waits on others inside it. The kinds themselves are the programs' business
// (program/op_kinds.hpp has the table); a Report carries that table (Report::record_kinds) so that the timeline reads
// it instead of lists of names.
#pragma once

#include <string_view>

namespace snsim {

/// The threads of a GPU's process in the timeline, in display order.
enum class TimelineTrack { compute, copies, collectives, pgas, stream_events, uvm, faults, migrations, waiting, other };

struct RecordKind {
  std::string_view name;                       // the records' `kind`
  TimelineTrack track = TimelineTrack::other;  // the thread its records are drawn on
  bool moves_bytes = false;  // its bytes cross links or HBM while it runs: a record's rate is bytes / duration
  bool blocks = false;       // a rank can wait on other ranks inside it (runtime/waits.hpp)
};

}  // namespace snsim
