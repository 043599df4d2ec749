#include "workloads/replay/chakra.hpp"

#include "sim/error.hpp"

namespace snsim::workloads::replay {

RankTrace read_chakra(const std::string& /*bytes*/, const std::string& file, int /*position*/) {
  throw_input_error({file, 0, 0}, "", "Chakra traces are not read yet");
}

}  // namespace snsim::workloads::replay
