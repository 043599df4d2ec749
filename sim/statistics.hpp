// Order statistics and summaries shared by validation (measured vs predicted quantiles) and the studies (step-time
// distributions, means over a sweep point's trials).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace snsim {

/// Quantile q in [0, 1] of `values`: Hyndman and Fan's type 7 (numpy's default), linear between order statistics;
/// 0 for none.
double quantile(std::vector<double> values, double q);

/// The arithmetic mean; 0 for none.
double mean(const std::vector<double>& values);

/// Summary statistics of one sample.
struct Summary {
  std::size_t n = 0;
  double mean = 0, stddev = 0, min = 0, max = 0, p50 = 0, p99 = 0;  // stddev: the sample's (n - 1), 0 below n = 2
  std::optional<double> ci95_low, ci95_high;                        // of the mean, Student t; needs n >= 2
};
/// Quantiles are quantile()'s.
Summary summarize(std::vector<double> values);

/// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1; NaN for 0): the 95 % two-sided
/// interval's factor.
double t_975(std::size_t df);

}  // namespace snsim
