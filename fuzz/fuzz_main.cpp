// One libFuzzer target: SNSIM_FUZZ_TARGET names the harness (fuzz/harness.hpp) this executable drives. Anything that
// leaves the harness (an exception other than InputError, an abort, a sanitizer report) is a crash to libFuzzer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  snsim::fuzz::SNSIM_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
