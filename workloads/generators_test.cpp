// The generators' own checks (sweeps), pinned. No simulation runs here.
#include <doctest/doctest.h>

#include "scenario/test_support.hpp"

#include "scenario/scenario.hpp"

using namespace snsim;
using namespace snsim::workloads;

using namespace snsim::workloads::testing;

TEST_CASE("workloads: sweeps reject impossible ranges") {
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_reduce, sizes: "
                            "{from: 1GiB, to: 1MiB}}]\n"),
                       "t.yaml:2:79: workloads[0].sizes.to: must be >= from (1 GiB), got 1 MiB", InputError);
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_reduce, sizes: "
                            "{from: 1B, to: 1GiB, factor: 1}}]\n"),
                       "t.yaml:2:91: workloads[0].sizes.factor: must be between 2 and 1024, got 1", InputError);
  CHECK_THROWS_WITH_AS(load("topology: {type: hgx}\nworkloads: [{type: collective_sweep, ops: all_scream}]\n"),
                       "t.yaml:2:43: workloads[0].ops: unknown collective 'all_scream'; known: all_gather, "
                       "all_reduce, all_to_all, broadcast, reduce_scatter",
                       InputError);
}
