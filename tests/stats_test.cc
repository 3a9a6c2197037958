// util/stats: the statistics every layer shares, each against values worked by hand, with its
// edge cases (an empty sample, one value, a constant sample, NaN).
#include "util/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace wattcal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Stats, MeanOfASampleOneValueAndNone) {
  EXPECT_DOUBLE_EQ(Mean({1.0, 2.0, 6.0}), 3.0);
  EXPECT_DOUBLE_EQ(Mean({-4.5}), -4.5);
  EXPECT_TRUE(std::isnan(Mean({})));
  // NaN is not skipped: a sample holding one has no mean.
  EXPECT_TRUE(std::isnan(Mean({1.0, kNaN})));
}

TEST(Stats, StandardDeviationsDivideByNMinusOneAndByN) {
  // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations 32.
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(PopulationStdDev(x, 5.0), 2.0);
  EXPECT_DOUBLE_EQ(SampleStdDev(x, 5.0), std::sqrt(32.0 / 7.0));
  EXPECT_EQ(SampleStdDev({3.0}, 3.0), 0.0);
  EXPECT_EQ(PopulationStdDev({3.0}, 3.0), 0.0);
  EXPECT_EQ(SampleStdDev({}, kNaN), 0.0);
}

TEST(Stats, PearsonOfLinearAndWorkedSamples) {
  EXPECT_DOUBLE_EQ(PearsonR({1, 2, 3, 4}, {3, 5, 7, 9}), 1.0);
  EXPECT_DOUBLE_EQ(PearsonR({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0);
  // x = 1, 2, 3; y = 1, 3, 2: sxy = 1, sxx = syy = 2, r = 0.5.
  EXPECT_DOUBLE_EQ(PearsonR({1, 2, 3}, {1, 3, 2}), 0.5);
  // Rounding never pushes |r| past 1.
  const std::vector<double> x = {0.1, 0.2, 0.3, 0.7, 1.1};
  std::vector<double> y;
  for (double v : x) y.push_back(3.0 * v + 0.1);
  EXPECT_LE(std::abs(PearsonR(x, y)), 1.0);
}

TEST(Stats, PearsonIsNaNForAConstantOrShortSample) {
  EXPECT_TRUE(std::isnan(PearsonR({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(PearsonR({1, 2, 3}, {5, 5, 5})));
  EXPECT_TRUE(std::isnan(PearsonR({2.0}, {7.0})));
  EXPECT_TRUE(std::isnan(PearsonR({}, {})));
}

TEST(Stats, MedianOfOddEvenOneAndNone) {
  EXPECT_DOUBLE_EQ(Median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7.0);
  EXPECT_TRUE(std::isnan(Median({})));
}

TEST(Stats, QuantileInterpolatesBetweenOrderStatistics) {
  // Type 7: h = (n - 1) q.
  EXPECT_DOUBLE_EQ(Quantile({4, 1, 3, 2, 5}, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.025), 1.1);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.975), 4.9);
  EXPECT_DOUBLE_EQ(Quantile({7}, 0.975), 7.0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2}, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2}, 0.0), 1.0);
  EXPECT_TRUE(std::isnan(Quantile({}, 0.5)));
}

TEST(Stats, QuantileClampsQToTheUnitInterval) {
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3}, -0.5), 1.0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3}, 1.5), 3.0);
}

TEST(Stats, QuantileAtOneHalfIsTheMedian) {
  const std::vector<double> x = {9, 2, 7, 4, 4, 1};
  EXPECT_DOUBLE_EQ(Quantile(x, 0.5), Median(x));
}

}  // namespace
}  // namespace wattcal
