#include "validation/validate.hpp"

#include <doctest/doctest.h>

#include "models/params.hpp"
#include "sim/config.hpp"
#include "validation/calibrate.hpp"

using namespace snsim;
using namespace snsim::validation;

namespace {
TraceRecord record(std::string test, std::string variant, std::uint64_t bytes, Family family = Family::copy) {
  TraceRecord r;
  r.id = fmt::format("{}/{}/{}", test, variant, bytes);
  r.family = family;
  r.test = std::move(test);
  r.variant = std::move(variant);
  r.ranks = {0, 1};
  r.bytes = Bytes{bytes};
  r.median = 1e-6;
  return r;
}
}  // namespace

TEST_CASE("validation: sizes alternate between calibration and validation along each curve") {
  Trace trace;
  trace.source = "t.jsonl";
  for (std::uint64_t b : {64, 4, 16, 8, 32}) trace.records.push_back(record("ce_peer", "single", b));
  trace.records.push_back(record("launch", "graph", 0, Family::launch));
  trace.records.push_back(record("ce_peer", "single", 4096, Family::jitter));
  std::vector<TracedRecord> all;
  for (const auto& r : trace.records) all.push_back({&trace, &r});
  const auto uses = split_records(all);
  // By size: 4 cal, 8 val, 16 cal, 32 val, 64 cal.
  CHECK(uses[0] == Use::calibration);  // 64
  CHECK(uses[1] == Use::calibration);  // 4
  CHECK(uses[2] == Use::calibration);  // 16
  CHECK(uses[3] == Use::validation);   // 8
  CHECK(uses[4] == Use::validation);   // 32
  CHECK(uses[5] == Use::calibration);  // a one-point curve
  CHECK(uses[6] == Use::validation);   // jitter only validates
}

TEST_CASE("validation: bounds and known misses are read with clear errors") {
  const auto bounds = load_bounds(
      "copy: {median: 0.05, max: 0.15}\n"
      "known_misses: [{family: copy, test: ce_sm_shared, from: 8KiB, to: 2MiB, why: engines interfere}]\n",
      "b.yaml");
  CHECK(*bounds.families.at("copy").median == 0.05);
  REQUIRE(bounds.known_misses.size() == 1);
  Comparison c;
  c.family = "copy";
  c.test = "ce_sm_shared";
  c.bytes = Bytes{1 << 20};
  CHECK(bounds.known_misses[0].matches(c));
  c.bytes = Bytes{4 << 20};
  CHECK_FALSE(bounds.known_misses[0].matches(c));
  CHECK_THROWS_WITH(load_bounds("cpoy: {median: 0.05}\n", "b.yaml"),
                    "b.yaml:1:7: cpoy: not a trace family, family/test or known_misses; known families: collective, "
                    "compute, copy, jitter, latency, launch, nvshmem, step, uvm");
  CHECK(*load_bounds("compute/train_step: {max: 0.1}\n", "b.yaml").families.at("compute/train_step").max == 0.1);
  CHECK_THROWS_WITH(load_bounds("copy: {median: 0}\n", "b.yaml"), "b.yaml:1:16: copy.median: must be > 0, got 0");
  CHECK_THROWS_WITH(load_bounds("copy: {mean: 0.1}\n", "b.yaml"),
                    doctest::Contains("b.yaml:1:8: copy.mean: unknown key"));
}

TEST_CASE("validation: least squares recovers a line from noiseless points, on relative errors") {
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (double bytes : {4.0, 4096.0, 1e6, 1e9}) {
    rows.push_back({1.0, bytes});
    y.push_back(9e-6 + bytes / 396e9);
    w.push_back(1 / (y.back() * y.back()));
  }
  const auto x = least_squares(rows, y, w);
  CHECK(x[0] == doctest::Approx(9e-6).epsilon(1e-9));
  CHECK(1 / x[1] == doctest::Approx(396e9).epsilon(1e-9));
  CHECK_THROWS_AS(least_squares({{1.0, 2.0}, {2.0, 4.0}}, {1, 2}, {1, 1}), std::invalid_argument);
}

TEST_CASE("validation: quantiles interpolate and lag-1 autocorrelation sees alternation") {
  CHECK(quantile({4, 1, 3, 2}, 0.5) == doctest::Approx(2.5));
  CHECK(quantile({1, 2, 3, 4, 5}, 0.99) == doctest::Approx(4.96));
  CHECK(quantile({}, 0.5) == 0);
  CHECK(lag1_autocorrelation({1, -1, 1, -1, 1, -1}) < -0.8);
  CHECK(lag1_autocorrelation({1, 2, 3, 4, 5, 6}) > 0.4);
}

TEST_CASE("validation: models.params names a preset or a file, and a missing one is a clear error") {
  auto preset = ConfigDocument::load_string("models: {params: h200}\n", "s.yaml");
  models::apply_params(*preset);
  CHECK(preset->root().child("models").child("copy").child("ce").has("efficiency"));
  auto missing = ConfigDocument::load_string("models: {params: nowhere.yaml}\n", "dir/s.yaml");
  CHECK_THROWS_WITH(models::apply_params(*missing),
                    doctest::Contains("dir/s.yaml:1:18: models.params: no parameter file 'dir/nowhere.yaml' (and not "
                                      "a preset: h200"));
}

TEST_CASE("validation: a parameter file with a key no model reads is refused") {
  CHECK_NOTHROW(check_params("models: {copy: {ce: {efficiency: 0.9}}}\n", "p.yaml"));
  CHECK_THROWS_WITH(check_params("models: {copy: {ce: {eficiency: 0.9}}}\n", "p.yaml"),
                    doctest::Contains("p.yaml:1:33: models.copy.ce.eficiency: unknown key"));
}

TEST_CASE("validation: the simplex search fits a line through an outlier on soft-L1 errors, and Rosenbrock's valley") {
  // What the GEMM fit does: a soft-L1 loss on relative errors, here of t = a + b x through points of a = 2, b = 3,
  // one of them 50 % off (a shape cuBLAS runs unlike the model): the others decide.
  const auto soft_l1 = [](const std::vector<double>& p) {
    double sum = 0;
    for (double x : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}) {
      const double measured = (2 + 3 * x) * (x == 8.0 ? 1.5 : 1.0);
      const double z = ((p[0] + p[1] * x) / measured - 1) / 0.05;
      sum += 2 * (std::sqrt(1 + z * z) - 1);
    }
    return sum;
  };
  auto a = std::vector<double>{1, 1};
  for (int round = 0; round < 3; ++round) a = minimize(soft_l1, a, {0.5, 0.5}, 4000, 1e-15);
  CHECK(a[0] == doctest::Approx(2).epsilon(0.02));
  CHECK(a[1] == doctest::Approx(3).epsilon(0.02));
  // A curved valley, restarted once where the first search stopped.
  const auto valley = [](const std::vector<double>& p) {
    return 100 * (p[1] - p[0] * p[0]) * (p[1] - p[0] * p[0]) + (1 - p[0]) * (1 - p[0]);
  };
  auto b = minimize(valley, {-1.2, 1}, {0.5, 0.5}, 4000, 1e-15);
  b = minimize(valley, b, {0.1, 0.1}, 4000, 1e-15);
  CHECK(b[0] == doctest::Approx(1).epsilon(1e-4));
  CHECK(b[1] == doctest::Approx(1).epsilon(1e-4));
  // The budget is a budget: one evaluation past the first simplex returns its best point.
  int calls = 0;
  const auto counted = [&calls](const std::vector<double>& p) {
    ++calls;
    return p[0] * p[0];
  };
  minimize(counted, {5}, {1}, 3);
  CHECK(calls <= 4);
}
