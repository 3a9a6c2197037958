// Every headline figure kept in expected/results.csv — the one source of the figures the README,
// docs/results.md and the closing notes quote — recomputed inside the suite: Makefile.runs' runs
// (`make all`: every run, about 20 s on two cores) into a scratch reports folder, then
// wattcal-check against that file. A change that moves any recorded figure beyond its tolerance
// (Titan X DVFS/scaling/fixed, the CV figures, the H100, H200 and own-capture CV, the ports, the
// comparisons) fails here, not only in `make -f Makefile.runs check`. Then scripts/certify/
// recomputes the CV figures and the Titan X joint DVFS optima outside wattcal.
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
      "cd " + testing::ShellQuote(source) +
      " && make -f Makefile.runs all -j2 BIN=" + testing::ShellQuote(WATTCAL_BIN_DIR) +
      " DATASETS=" + testing::ShellQuote(testing::DatasetsDir()) +
      " REPORTS=" + testing::ShellQuote(dir + "/reports"));
  ASSERT_EQ(make.exit_code, 0) << make.output.substr(
      make.output.size() > 6000 ? make.output.size() - 6000 : 0);
  const testing::CommandResult check = testing::RunStage(
      "wattcal-check",
      {"--expected", source + "/expected/results.csv", "--reports", dir + "/reports"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find(" as expected, 0 differ, 0 missing"), std::string::npos)
      << check.output;
  // And every file the runs wrote is the one its provenance names.
  EXPECT_NE(check.output.find(" changed since, 0 gone"), std::string::npos) << check.output;

  // Certified independently (scripts/certify/fixed_cv.py: scipy's NNLS on the same folds): the
  // H100, H200 and own-capture cross-validations, row by row and in their MAPE.
  const bool scipy = testing::RunShell("python3 -c 'import numpy, scipy'").exit_code == 0;
  WATTCAL_NEED(scipy,
               "python3 with numpy and scipy not found (scripts/install_deps.sh installs them): "
               "the CV figures are not certified independently");
  for (const char* run : {"h100", "h200", "h100-own"}) {
    const testing::CommandResult c = testing::RunShell(
        "python3 " + testing::ShellQuote(source + "/scripts/certify/fixed_cv.py") + " " +
        testing::ShellQuote(dir + "/reports/" + run));
    EXPECT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("\ncertified"), std::string::npos) << c.output;
  }
  // And the Titan X joint DVFS optima (scripts/certify/dvfs_joint.py: scipy's least_squares from
  // the cold start, wattcal's optimum and random starts; the 11- and 7-component runs).
  for (const char* run : {"titanx", "titanx-7comp"}) {
    const testing::CommandResult c = testing::RunShell(
        "python3 " + testing::ShellQuote(source + "/scripts/certify/dvfs_joint.py") + " " +
        testing::ShellQuote(dir + "/reports/" + run));
    EXPECT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("\ncertified"), std::string::npos) << c.output;
  }
}

// The DVFS certificate can fail: a joint fit stopped after 5 iterations from the cold start
// (0.4% above the optimum's objective, as Ceres's stall before issue 14 was 0.9%) is refused,
// naming the lower objective scipy found.
TEST(HeadlineFigures, DvfsCertificateRefusesAFitStoppedShort) {
  WATTCAL_REQUIRE_DATASETS();
  const bool scipy = testing::RunShell("python3 -c 'import numpy, scipy'").exit_code == 0;
  WATTCAL_NEED(scipy,
               "python3 with numpy and scipy not found (scripts/install_deps.sh installs them)");
  const std::string dir = testing::ScratchDir();
  const std::string titanx = testing::Dataset("gpmtool_tpds2019/gtx_titan_x");
  const testing::CommandResult fit =
      testing::RunStage("wattcal-calibrate", {"--train", titanx + "/train_micro_dvfs_11comp.csv",
                                              "--out", dir + "/model/model.json",
                                              "--cold-start-only", "--max-iterations", "5", "-q"});
  // A fit that did not converge is written and recorded as such, exit 3 (STYLE.md rule 6).
  ASSERT_EQ(fit.exit_code, 3) << fit.output;
  ASSERT_NE(fit.output.find("the fit did not converge"), std::string::npos) << fit.output;
  const testing::CommandResult validate = testing::RunStage(
      "wattcal-validate", {"--model", dir + "/model/model.json", "--heldout",
                           titanx + "/DERIVED_real_power_allF_11comp.csv", "--mode", "dvfs",
                           "--metrics", dir + "/validation/dvfs/metrics.json", "--predictions",
                           dir + "/validation/dvfs/predictions.csv", "-q"});
  ASSERT_EQ(validate.exit_code, 0) << validate.output;
  const testing::CommandResult c = testing::RunShell(
      "python3 " +
      testing::ShellQuote(std::string(WATTCAL_SOURCE_DIR) + "/scripts/certify/dvfs_joint.py") +
      " " + testing::ShellQuote(dir) + " --starts 2");
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_NE(c.output.find("scipy found a LOWER objective than wattcal's"), std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find("\nNOT certified"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace wattcal
