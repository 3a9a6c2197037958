#include "util/stats.h"

#include "util/nan.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace wattcal {
namespace {

// The sum of squared deviations from `mean`.
double SumSquaredDeviations(const std::vector<double>& values, double mean) {
  double sum_sq = 0.0;
  for (double v : values) sum_sq += (v - mean) * (v - mean);
  return sum_sq;
}

}  // namespace

double Mean(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double SampleStdDev(const std::vector<double>& values, double mean) {
  if (values.size() < 2) return 0.0;
  return std::sqrt(SumSquaredDeviations(values, mean) / static_cast<double>(values.size() - 1));
}

double PopulationStdDev(const std::vector<double>& values, double mean) {
  if (values.size() < 2) return 0.0;
  return std::sqrt(SumSquaredDeviations(values, mean) / static_cast<double>(values.size()));
}

double PearsonR(const std::vector<double>& x, const std::vector<double>& y) {
  const double mean_x = Mean(x);
  const double mean_y = Mean(y);
  double sxx = 0.0, syy = 0.0, sxy = 0.0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    const double dx = x[i] - mean_x;
    const double dy = y[i] - mean_y;
    sxx += dx * dx;
    syy += dy * dy;
    sxy += dx * dy;
  }
  if (!(sxx > 0.0) || !(syy > 0.0)) return kNaN;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

double Median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double h = (static_cast<double>(values.size()) - 1.0) * std::clamp(q, 0.0, 1.0);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

}  // namespace wattcal
