// The values tests/certified_values.h holds for the tests (means over a real file's launches,
// confidence half-widths of a real sheet) recomputed from the shared files by
// scripts/certify/hand_values.py, which uses no wattcal code: each constant must equal the
// script's value to 1e-14 relative (the script prints 17 significant digits; the two differ only
// by the order of summation).
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
  const bool scipy = testing::RunShell("python3 -c 'import scipy'").exit_code == 0;
  WATTCAL_NEED(scipy,
               "python3 with scipy not found (scripts/install_deps.sh installs it): the hand "
               "values are not recomputed");
  const testing::CommandResult r = testing::RunShell(
      "python3 " +
      testing::ShellQuote(std::string(WATTCAL_SOURCE_DIR) + "/scripts/certify/hand_values.py") +
      " " + testing::ShellQuote(testing::DatasetsDir()) + " " +
      testing::ShellQuote(testing::SamplesDir()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, double> script;
  std::istringstream lines(r.output);
  std::string name;
  double value = 0.0;
  while (lines >> name >> value) script[name] = value;
  EXPECT_EQ(script.size(), std::size(certified::kAll)) << r.output;
  for (const certified::Value& v : certified::kAll) {
    SCOPED_TRACE(v.name);
    ASSERT_EQ(script.count(v.name), 1u) << r.output;
    EXPECT_NEAR(v.value, script.at(v.name), 1e-14 * std::fabs(script.at(v.name)));
  }
}

}  // namespace
}  // namespace wattcal
