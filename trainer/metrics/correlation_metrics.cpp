#include <ctrainer/trainer/metrics/correlation_metrics.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer::metrics {

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw ArgumentError("pearson: " + std::to_string(x.size()) + " predictions but " +
                        std::to_string(y.size()) + " labels");
  if (x.size() < 2) throw ArgumentError("pearson: needs at least 2 values");
  const double n = static_cast<double>(x.size());
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double mean_y = std::accumulate(y.begin(), y.end(), 0.0) / n;
  // Centred sums in double: the two-pass form stays accurate where Σxy − n·x̄·ȳ would cancel.
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mean_x, dy = y[i] - mean_y;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  // Rounding can push |r| a hair past 1; SciPy clips the same way.
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && values[order[end]] == values[order[begin]]) ++end;
    // Positions begin..end-1 hold equal values: each gets the mean of ranks begin+1..end.
    const double rank = (static_cast<double>(begin + 1) + static_cast<double>(end)) / 2.0;
    for (size_t k = begin; k < end; ++k) ranks[order[k]] = rank;
    begin = end;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw ArgumentError("spearmanr: " + std::to_string(x.size()) + " predictions but " +
                        std::to_string(y.size()) + " labels");
  return pearson(average_ranks(x), average_ranks(y));
}

}  // namespace ctrainer::metrics
