// The one identifiability analysis (fit/identifiability.h) on designs whose answer is known: a
// well-posed one, a rank-deficient one (c = a + b) and one with a constant and a duplicated
// component. The fit's check and the collinearity analysis the report renders must agree on
// each.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "fit/identifiability.h"
#include "io/corpus.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ExpectInputError;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::Uniform;

// Benchmarks in the synthetic designs: more than enough rows for three components.
constexpr int kBenchmarks = 24;

// A measured corpus (power, no clocks: every row trains the fixed fit) with one benchmark per row
// and the given utilisation columns.
Corpus Design(const std::vector<std::string>& names,
              const std::vector<std::vector<double>>& columns) {
  return testing::CorpusFromColumns(names, columns, "design.csv", /*measured=*/true);
}

TEST(Identifiability, WellPosedDesignIsAcceptedByTheFitAndUnflaggedByTheReport) {
  std::mt19937 rng(SeedFromTestName());
  const Corpus c = Design({"A", "B", "C"}, {Uniform(&rng, kBenchmarks), Uniform(&rng, kBenchmarks),
                                            Uniform(&rng, kBenchmarks)});
  const ComponentSpread spread = SplitConstantComponents(c.util_frac);
  EXPECT_EQ(spread.varying, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(spread.constant.empty());
  for (FitMethod method : {FitMethod::kFixed, FitMethod::kDvfs}) {
    const IdentifiabilityReport fit = CheckIdentifiability(c, method);
    EXPECT_TRUE(fit.fixed_at_zero.empty());
    EXPECT_TRUE(fit.notes.empty());
  }
  const CollinearityReport report = AnalyseCollinearity(c);
  EXPECT_TRUE(report.constant_components.empty());
  EXPECT_TRUE(std::isfinite(report.condition_number));
  // Independent uniform columns over 24 benchmarks: far below the warning threshold of 30.
  EXPECT_LT(report.condition_number, 5.0);
  EXPECT_FALSE(report.flagged());
}

TEST(Identifiability, RankDeficientDesignIsRefusedByTheFitAndFlaggedByTheReport) {
  std::mt19937 rng(SeedFromTestName());
  const std::vector<double> a = Uniform(&rng, kBenchmarks), b = Uniform(&rng, kBenchmarks);
  std::vector<double> sum(a.size());
  for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
  const Corpus c = Design({"A", "B", "C"}, {a, b, sum});
  ExpectInputError([&] { CheckIdentifiability(c, FitMethod::kFixed); }, 0,
                   {"design.csv",
                    "underdetermined fit: the utilisations at the default V-F pair have rank 3 "
                    "for 4 parameters (static power and A, B, C)"});
  const CollinearityReport report = AnalyseCollinearity(c);
  EXPECT_TRUE(std::isinf(report.condition_number));
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings.back().find("rank-deficient"), std::string::npos)
      << report.warnings.back();
}

// A column of 0.1 in every one of 6 benchmarks averages to 0.0999... or 0.1000...2: centred, it is
// not exactly zero. The fit calls it constant (max - min = 0); the report used to call it
// varying, correlate its rounding noise and standardise it into the condition number. Both now
// share SplitConstantComponents.
TEST(Identifiability, ConstantAndDuplicatedComponentsAreNamedAlikeByTheFitAndTheReport) {
  const std::vector<double> constant(6, 0.1);
  ASSERT_NE(Eigen::VectorXd::Constant(6, 0.1).mean(), 0.1);
  const std::vector<double> a = {0.2, 0.9, 0.5, 0.3, 0.8, 0.6};
  const std::vector<double> b = {0.7, 0.1, 0.4, 0.9, 0.2, 0.5};
  const Corpus c = Design({"A", "K", "B", "A2"}, {a, constant, b, a});
  // DVFS trains on every row (no clocks here), so the notes name no V-F pair.
  const IdentifiabilityReport fit = CheckIdentifiability(c, FitMethod::kDvfs);
  EXPECT_EQ(fit.fixed_at_zero, (std::vector<int>{1, 3}));
  ASSERT_EQ(fit.notes.size(), 2u);
  EXPECT_EQ(fit.notes[0],
            "design.csv: component K is constant 0.1 across the 6 rows: indistinguishable from "
            "static power; its coefficient is fixed at 0");
  EXPECT_EQ(fit.notes[1],
            "design.csv: component A2's utilisation column is identical to A's column in every "
            "row: the fit cannot tell them apart; A2's coefficient is fixed at 0 (its power goes "
            "to A)");
  const CollinearityReport report = AnalyseCollinearity(c);
  EXPECT_EQ(report.constant_components, (std::vector<std::string>{"K"}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isnan(report.component_r(1, i))) << i;
    EXPECT_TRUE(std::isnan(report.component_r(i, 1))) << i;
  }
  ASSERT_FALSE(report.pairs.empty());
  EXPECT_EQ(report.pairs.front().first, "A");
  EXPECT_EQ(report.pairs.front().second, "A2");
  EXPECT_DOUBLE_EQ(report.pairs.front().r, 1.0);
  // A, B and A2 vary, and A2 = A: rank-deficient.
  EXPECT_TRUE(std::isinf(report.condition_number));
}

}  // namespace
}  // namespace wattcal
