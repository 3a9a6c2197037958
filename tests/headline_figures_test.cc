// Every headline figure kept in expected/results.csv — the one source of the figures the README,
// docs/results.md and the closing notes quote — recomputed inside the suite: Makefile.runs' runs
// (`make all`: every run, about 20 s on two cores) into a scratch reports folder, then
// wattcal-check against that file. A change that moves any recorded figure beyond its tolerance
// (Titan X DVFS/scaling/fixed, the CV figures, the H100, H200 and own-capture CV, the ports, the
// comparisons) fails here, not only in `make -f Makefile.runs check`. Then scripts/certify/
// recomputes the CV figures and the Titan X joint DVFS optima outside wattcal.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>

#include "test_support.h"

namespace wattcal {
namespace {

// scripts/certify/fixed_cv.py on the run folder `run_dir`, made from `captures` and `gpu`.
testing::CommandResult CertifyFixedCv(const std::string& run_dir,
                                      const std::vector<std::string>& captures,
                                      const std::string& gpu) {
  std::string command =
      testing::ShellQuote(testing::Python3()) + " " +
      testing::ShellQuote(std::string(WATTCAL_SOURCE_DIR) + "/scripts/certify/fixed_cv.py") + " " +
      testing::ShellQuote(run_dir) + " --gpu " + testing::ShellQuote(gpu);
  for (const std::string& c : captures) command += " --capture " + testing::ShellQuote(c);
  return testing::RunShell(command);
}

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

  // Certified independently (scripts/certify/fixed_cv.py: the measured table rebuilt from the
  // captures' raw files, then scipy's NNLS on the same folds): the H100, H200 and own-capture
  // cross-validations, row by row and in their MAPE.
  WATTCAL_REQUIRE_PYTHON("numpy, scipy", "the CV figures are not certified independently");
  const std::string gpus = source + "/microbench_specs/gpus/";
  const struct {
    const char* run;
    std::vector<std::string> captures;
    std::string gpu;
  } runs[] = {{"h100",
               {testing::Dataset("h100_capture/ubench_random"),
                testing::Dataset("h100_capture/mix_random")},
               gpus + "h100_sxm.json"},
              {"h200",
               {testing::Dataset("h200_capture/ubench_random"),
                testing::Dataset("h200_capture/mix_random")},
               gpus + "h200_sxm.json"},
              {"h100-own", {source + "/datasets/captures/h100/suite"}, gpus + "h100_sxm.json"}};
  for (const auto& run : runs) {
    const testing::CommandResult c =
        CertifyFixedCv(dir + "/reports/" + run.run, run.captures, run.gpu);
    EXPECT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("\ncertified"), std::string::npos) << c.output;
  }
  // And the Titan X joint DVFS optima (scripts/certify/dvfs_joint.py: scipy's least_squares from
  // the cold start, wattcal's optimum and random starts; the 11- and 7-component runs).
  for (const char* run : {"titanx", "titanx-7comp"}) {
    const testing::CommandResult c =
        testing::RunShell(testing::ShellQuote(testing::Python3()) + " " +
                          testing::ShellQuote(source + "/scripts/certify/dvfs_joint.py") + " " +
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
  WATTCAL_REQUIRE_PYTHON("numpy, scipy", "the DVFS certificate is not run");
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
      testing::ShellQuote(testing::Python3()) + " " +
      testing::ShellQuote(std::string(WATTCAL_SOURCE_DIR) + "/scripts/certify/dvfs_joint.py") +
      " " + testing::ShellQuote(dir) + " --starts 2");
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_NE(c.output.find("scipy found a LOWER objective than wattcal's"), std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find("\nNOT certified"), std::string::npos) << c.output;
}

// The CV certificate reads the capture's raw files, not wattcal's measured table (issue 35: read
// from the table, it certified five planted ingest defects). A run made from a table that a faulty
// ingest wrote (one window's power 2% high, another's L2 utilisation 10% high) is consistent with
// that table: the certificate refuses it, naming both rows (the one that read the table certified
// it); the run from the true table is certified.
TEST(HeadlineFigures, CvCertificateRebuildsTheTableFromTheRawFiles) {
  WATTCAL_REQUIRE_DATASETS();
  WATTCAL_REQUIRE_PYTHON("numpy, scipy", "the CV certificate is not run");
  const std::string dir = testing::ScratchDir();
  const std::string capture = testing::Dataset("h100_capture/mix_random");
  const std::string gpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";
  const std::string table = dir + "/true/data/tidy/measured.csv";
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", capture, "--gpu", gpu, "--tidy", table, "-q"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  // The CV of a run folder from a measured table, as Makefile.runs' gpu run makes it.
  auto cross_validate = [&](const std::string& run, const std::string& measured) {
    const testing::CommandResult v = testing::RunStage(
        "wattcal-validate", {"--train", measured, "--cv-folds", "5", "--mode", "auto",
                             "--predictions", run + "/validation/cv/predictions.csv", "--metrics",
                             run + "/validation/cv/metrics.json", "-q"});
    ASSERT_EQ(v.exit_code, 0) << v.output;
  };
  cross_validate(dir + "/true", table);
  testing::CommandResult c = CertifyFixedCv(dir + "/true", {capture}, gpu);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("\ncertified"), std::string::npos) << c.output;

  // The same table as a faulty ingest would write it.
  std::istringstream in(testing::ReadFile(table));
  std::string doctored, line;
  int l2 = -1, changed = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    for (size_t i = 0; i < f.size() && f[0] == "benchmark"; ++i) {
      if (f[i] == "core:L2") l2 = static_cast<int>(i);
    }
    if (f[0].rfind("mix001_", 0) == 0) {
      f[1] = fmt::format("{}", std::stod(f[1]) * 1.02);
      ++changed;
    }
    if (f[0].rfind("mix002_", 0) == 0 && l2 > 0) {
      f[static_cast<size_t>(l2)] = fmt::format("{}", std::stod(f[static_cast<size_t>(l2)]) * 1.1);
      ++changed;
    }
    std::string joined;
    for (size_t i = 0; i < f.size(); ++i) joined += (i ? "," : "") + f[i];
    doctored += joined + "\n";
  }
  ASSERT_EQ(changed, 2) << "no mix001_ or mix002_ row (or no core:L2 column) in " << table;
  boost::filesystem::create_directories(dir + "/faulty/data/tidy");
  cross_validate(dir + "/faulty",
                 testing::WriteFile(dir + "/faulty/data/tidy/measured.csv", doctored));
  c = CertifyFixedCv(dir + "/faulty", {capture}, gpu);
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_NE(c.output.find("\nNOT certified"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("  mix001_f13_i7_d0_s0_h2_l0_m2_t0_b4 ("), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("W from the raw files (energy_counter), "), std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find("  mix002_f0_i7_d0_s4_h5_l0_m2_t2_b4 ("), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("U[L2] 0.368908016 from the raw files"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace wattcal
