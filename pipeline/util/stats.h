// The statistics every layer shares, one definition each: mean, standard deviation, Pearson's r,
// median and quantile of a sample of doubles. None skips NaN: a NaN in the sample gives a NaN
// (mean, deviations, r) or an unspecified order statistic (median, quantile); callers that keep
// NaN for "unknown" filter first. Sums run in index order, so a result is the same on every run.
#pragma once

#include <vector>

namespace wattcal {

// The arithmetic mean; NaN for an empty sample.
double Mean(const std::vector<double>& values);

// The sample standard deviation about `mean` (n - 1 in the denominator); 0 for fewer than two
// values.
double SampleStdDev(const std::vector<double>& values, double mean);

// The population standard deviation about `mean` (n in the denominator); 0 for fewer than two
// values.
double PopulationStdDev(const std::vector<double>& values, double mean);

// Pearson's correlation coefficient of two equally long samples, clamped to [-1, 1] (rounding
// can push |r| a hair past 1 for perfectly correlated data); NaN when either sample is constant
// (or has fewer than two values).
double PearsonR(const std::vector<double>& x, const std::vector<double>& y);

// The median: the middle value, or the mean of the two middle values of an even sample; NaN for
// an empty sample.
double Median(std::vector<double> values);

// The q-quantile by linear interpolation between order statistics (Hyndman and Fan's type 7, R's
// and NumPy's default): h = (n - 1) q, x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]).
// q is clamped to [0, 1]; NaN for an empty sample.
double Quantile(std::vector<double> values, double q);

}  // namespace wattcal
