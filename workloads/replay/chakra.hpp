// MLCommons Chakra execution traces (the protobuf schema of chakra/schema/protobuf/et_def.proto, written again in
// chakra_et.proto from its field numbers) into a RankTrace: compute, communication and memory nodes with their
// dependencies. A Chakra file is a stream of varint-length-delimited messages: one GlobalMetadata, then Nodes.
#pragma once

#include <string>

#include "workloads/replay/trace.hpp"

namespace snsim::workloads::replay {

/// The trace of one rank from the bytes of a Chakra file; `position` is its rank (Chakra files carry none).
RankTrace read_chakra(const std::string& bytes, const std::string& file, int position);

}  // namespace snsim::workloads::replay
