// Running simulations in child processes (sim/isolated.hpp), as the studies do.
#include "sim/isolated.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "sim/error.hpp"

using namespace snsim;

TEST_CASE("isolated: children return their results in index order whatever the parallelism") {
  std::vector<std::size_t> finished;
  const auto texts = run_isolated_each(
      7, 3, [](std::size_t i) { return std::to_string(i * i); }, [&](std::size_t i) { finished.push_back(i); });
  CHECK(texts == std::vector<std::string>{"0", "1", "4", "9", "16", "25", "36"});
  CHECK(std::set<std::size_t>(finished.begin(), finished.end()).size() == 7);
  // The lowest failing index wins, and an input error stays one.
  CHECK_THROWS_WITH_AS(run_isolated_each(6, 2,
                                         [](std::size_t i) -> std::string {
                                           if (i == 2) throw InputError("x.yaml:1:1: bad");
                                           if (i == 3) throw std::runtime_error("broken");
                                           return "ok";
                                         }),
                       "x.yaml:1:1: bad", InputError);
}
