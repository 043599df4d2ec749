// One stored copy of each distinct short text that millions of records repeat: an op's label ("gemm 12288x2048x12288
// TN bf16"), a collective's algorithm ("ring/LL128/24ch"). A GPT-3 175B step on 128 GPUs records 625,248 ops with 58
// distinct labels; held as strings, each record carried its own 32-byte copy on the heap.
#pragma once

#include <string_view>

namespace snsim {

/// The stored copy of `text`: the same view for equal texts, valid until the process ends (what is stored is never
/// freed: the texts of a run's ops are few). Safe to call from several threads.
std::string_view interned(std::string_view text);

}  // namespace snsim
