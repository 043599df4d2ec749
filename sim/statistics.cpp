#include "sim/statistics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace snsim {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::ranges::sort(values);
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const auto above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + (values[above] - values[below]) * fraction;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double t_975(std::size_t df) {
  // Student's t, 0.975 quantile, df 1-30 (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2); beyond,
  // the Cornish-Fisher expansion around the normal's 1.959964 (to 1e-4 at df 30, better above).
  static constexpr std::array<double, 30> TABLE{12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                                2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                                2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                                2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df == 0) return std::nan("");
  if (df <= TABLE.size()) return TABLE[df - 1];
  const double z = 1.959963984540054, n = static_cast<double>(df);
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  std::ranges::sort(values);
  s.min = values.front();
  s.max = values.back();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  s.p50 = quantile(values, 0.5);
  s.p99 = quantile(values, 0.99);
  if (s.n >= 2) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(s.n - 1));
    const double half = t_975(s.n - 1) * s.stddev / std::sqrt(static_cast<double>(s.n));
    s.ci95_low = s.mean - half;
    s.ci95_high = s.mean + half;
  }
  return s;
}

}  // namespace snsim
