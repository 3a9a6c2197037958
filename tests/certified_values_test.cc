// The values tests/certified_values.h holds for the tests (means over a real file's launches,
// confidence half-widths of a real sheet) recomputed from the shared files by
// scripts/certify/hand_values.py, which uses no wattcal code. The script prints each value (17
// significant digits) with a bound on its relative rounding error, from the arithmetic that
// computed it (roundings, the condition of each sum and standard deviation on this data, the
// documented accuracy of scipy's t quantile): the constant, computed once by the same arithmetic
// on another machine, must lie within twice that bound (each of the two within one bound of the
// exact value). Summation order, Python's sum() and scipy's version move the last digits within
// it (scipy 1.10.1's t quantile moved a half-width by 1.3e-14 relative, against a bound of 2e-12);
// a changed input or formula moves a value by far more.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "certified_values.h"
#include "test_support.h"

namespace wattcal {
namespace {

TEST(CertifiedValues, HandValuesAreRecomputedIndependently) {
  WATTCAL_REQUIRE_DATASETS();
  WATTCAL_REQUIRE_SAMPLES();
  WATTCAL_REQUIRE_PYTHON("scipy", "the hand values are not recomputed");
  const testing::CommandResult r = testing::RunShell(
      testing::ShellQuote(testing::Python3()) + " " +
      testing::ShellQuote(std::string(WATTCAL_SOURCE_DIR) + "/scripts/certify/hand_values.py") +
      " " + testing::ShellQuote(testing::DatasetsDir()) + " " +
      testing::ShellQuote(testing::SamplesDir()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::pair<double, double>> script;  // name -> value, relative bound
  std::istringstream lines(r.output);
  std::string name;
  double value = 0.0, bound = 0.0;
  while (lines >> name >> value >> bound) script[name] = {value, bound};
  EXPECT_EQ(script.size(), std::size(certified::kAll)) << r.output;
  for (const certified::Value& v : certified::kAll) {
    SCOPED_TRACE(v.name);
    ASSERT_EQ(script.count(v.name), 1u) << r.output;
    const auto [recomputed, relative_bound] = script.at(v.name);
    // A bound is at least the one rounding of the value itself, and far below a change of data.
    EXPECT_GE(relative_bound, 0x1p-53);
    EXPECT_LT(relative_bound, 1e-10);
    EXPECT_NEAR(v.value, recomputed, 2.0 * relative_bound * std::fabs(recomputed))
        << "tolerance: twice the script's relative bound " << relative_bound;
  }
}

}  // namespace
}  // namespace wattcal
