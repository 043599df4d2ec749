// Order statistics shared by validation (measured vs predicted quantiles) and the studies (step-time distributions).
#pragma once

#include <vector>

namespace snsim {

/// Quantile q in [0, 1] of `values`: Hyndman and Fan's type 7 (numpy's default), linear between order statistics;
/// 0 for none.
double quantile(std::vector<double> values, double q);

}  // namespace snsim
