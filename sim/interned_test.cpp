#include "sim/interned.hpp"

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

namespace snsim {

TEST_CASE("interned: equal texts share one stored copy, which outlives the text it came from") {
  std::string label = "gemm 12288x2048x12288 TN bf16";
  const std::string_view first = interned(label);
  label.assign(label.size(), 'x');  // the caller's text changes: the stored copy does not
  CHECK(first == "gemm 12288x2048x12288 TN bf16");
  CHECK(interned("gemm 12288x2048x12288 TN bf16").data() == first.data());
  CHECK(interned("gemm 12288x2048x12288 TN bf16 backward").data() != first.data());
  CHECK(interned("").empty());
}

TEST_CASE("interned: threads interning the same texts at once get the same copies") {
  std::vector<std::vector<const char*>> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&seen, t] {
      for (int i = 0; i < 1000; ++i) seen[t].push_back(interned("label " + std::to_string(i % 50)).data());
    });
  for (auto& t : threads) t.join();
  for (std::size_t t = 1; t < seen.size(); ++t) CHECK(seen[t] == seen[0]);
}

}  // namespace snsim
