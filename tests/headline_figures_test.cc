// Every headline figure kept in expected/results.csv — the one source of the figures the README,
// docs/results.md and the closing notes quote — recomputed inside the suite: Makefile.runs' runs
// (`make all`: every run, about 20 s on two cores) into a scratch reports folder, then
// wattcal-check against that file. A change that moves any recorded figure beyond its tolerance
// (Titan X DVFS/scaling/fixed, the CV figures, the H100, H200 and own-capture CV, the ports, the
// comparisons) fails here, not only in `make -f Makefile.runs check`.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "test_support.h"

namespace wattcal {
namespace {

TEST(HeadlineFigures, EveryRecordedFigureIsWhatTheRunsGiveNow) {
  WATTCAL_REQUIRE_DATASETS();
  WATTCAL_REQUIRE_GNUPLOT("reports of every run");
  const std::string dir = testing::ScratchDir();
  const std::string source = WATTCAL_SOURCE_DIR;
  const testing::CommandResult make = testing::RunShell(
      "cd " + testing::ShellQuote(source) + " && make -f Makefile.runs all -j2 BIN=" +
      testing::ShellQuote(WATTCAL_BIN_DIR) + " DATASETS=" + testing::ShellQuote(testing::DatasetsDir()) +
      " REPORTS=" + testing::ShellQuote(dir + "/reports"));
  ASSERT_EQ(make.exit_code, 0) << make.output.substr(make.output.size() > 6000 ? make.output.size() - 6000 : 0);
  const testing::CommandResult check = testing::RunStage(
      "wattcal-check", {"--expected", source + "/expected/results.csv", "--reports", dir + "/reports"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find(" as expected, 0 differ, 0 missing"), std::string::npos) << check.output;
  // And every file the runs wrote is the one its provenance names.
  EXPECT_NE(check.output.find(" changed since, 0 gone"), std::string::npos) << check.output;

  // Certified independently (scripts/certify/fixed_cv.py: scipy's NNLS on the same folds): the
  // H100, H200 and own-capture cross-validations, row by row and in their MAPE.
  const bool scipy = testing::RunShell("python3 -c 'import numpy, scipy'").exit_code == 0;
  WATTCAL_NEED(scipy, "python3 with numpy and scipy not found (scripts/install_deps.sh installs them): "
                      "the CV figures are not certified independently");
  for (const char* run : {"h100", "h200", "h100-own"}) {
    const testing::CommandResult c = testing::RunShell("python3 " + testing::ShellQuote(source + "/scripts/certify/fixed_cv.py") +
                                                       " " + testing::ShellQuote(dir + "/reports/" + run));
    EXPECT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("\ncertified"), std::string::npos) << c.output;
  }
}

}  // namespace
}  // namespace wattcal
