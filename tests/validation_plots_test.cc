// Validation figures: complete, well-formed PNG and SVG files, identical bytes on re-runs,
// and failures reported as exceptions.
#include "report/validation_plots.h"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.h"
#include "validate/metrics.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ExpectFigurePng;
using ::wattcal::testing::ExpectFigureSvg;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;

// Held-out points around a truth of 60-250 W with ~5% multiplicative error and a few
// outliers, as a validation set looks.
std::vector<PredictionRow> SyntheticRows(int count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> measured_w(60.0, 250.0);
  std::normal_distribution<double> relative_error(0.0, 0.05);
  const double core_mhz[] = {595, 810, 1000, 1164};
  std::vector<PredictionRow> rows;
  for (int i = 0; i < count; ++i) {
    PredictionRow row;
    row.benchmark = "bench_" + std::to_string(i % 12);
    row.f_core_mhz = core_mhz[i % 4];
    row.f_mem_mhz = 3505;
    row.measured_w = measured_w(rng);
    const double outlier = (i % 37 == 0) ? 0.25 : 0.0;
    row.predicted_w = row.measured_w * (1.0 + relative_error(rng) + outlier);
    rows.push_back(row);
  }
  return rows;
}

TEST(ValidationPlots, ScatterWritesCompletePngAndSvgIdenticalAcrossRuns) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(200, SeedFromTestName());
  const ValidationMetrics m = ComputeValidationMetrics(rows);
  const std::string title = "GTX Titan X, DVFS model (held-out)";

  WriteScatterPlot(rows, m, title, dir + "/first.png", dir + "/first.svg");
  WriteScatterPlot(rows, m, title, dir + "/second.png", dir + "/second.svg");
  ExpectFigurePng(dir + "/first.png");
  ExpectFigureSvg(dir + "/first.svg");
  EXPECT_EQ(ReadFile(dir + "/first.png"), ReadFile(dir + "/second.png"));
  EXPECT_EQ(ReadFile(dir + "/first.svg"), ReadFile(dir + "/second.svg"));

  // The key carries the statistics; the axes carry units.
  const std::string svg = ReadFile(dir + "/first.svg");
  EXPECT_NE(svg.find("MAPE"), std::string::npos);
  EXPECT_NE(svg.find("Pearson r"), std::string::npos);
  EXPECT_NE(svg.find("Measured power (W)"), std::string::npos);
  EXPECT_NE(svg.find("Predicted power (W)"), std::string::npos);
}

TEST(ValidationPlots, ErrorCdfWritesCompletePngAndSvgIdenticalAcrossRuns) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  const unsigned seed = SeedFromTestName();
  std::vector<std::pair<std::string, std::vector<double>>> series = {
      {"fixed", ComputeValidationMetrics(SyntheticRows(150, seed)).ape_cdf_pct},
      {"dvfs", ComputeValidationMetrics(SyntheticRows(150, seed + 1)).ape_cdf_pct},
      {"scaling", ComputeValidationMetrics(SyntheticRows(90, seed + 2)).ape_cdf_pct},
  };
  WriteErrorCdfPlot(series, "Titan Xp: error CDF by mode", dir + "/a.png", dir + "/a.svg");
  WriteErrorCdfPlot(series, "Titan Xp: error CDF by mode", dir + "/b.png", dir + "/b.svg");
  ExpectFigurePng(dir + "/a.png");
  ExpectFigureSvg(dir + "/a.svg");
  EXPECT_EQ(ReadFile(dir + "/a.png"), ReadFile(dir + "/b.png"));
  EXPECT_EQ(ReadFile(dir + "/a.svg"), ReadFile(dir + "/b.svg"));
  const std::string svg = ReadFile(dir + "/a.svg");
  EXPECT_NE(svg.find("scaling (n = 90"), std::string::npos);
  EXPECT_NE(svg.find("Absolute percentage error (%)"), std::string::npos);
}

TEST(ValidationPlots, WritesExactlyToGivenPathsEvenWithQuotesAndSpaces) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(20, SeedFromTestName());
  const std::string png = dir + "/it's a figure.png.tmp.123";
  const std::string svg = dir + "/it's a figure.svg.tmp.123";
  WriteScatterPlot(rows, ComputeValidationMetrics(rows), "title with 'quotes' and_under_scores",
                   png, svg);
  ExpectFigurePng(png);
  ExpectFigureSvg(svg);
  EXPECT_NE(ReadFile(svg).find("title with 'quotes' and_under_scores"),
            std::string::npos);
}

TEST(ValidationPlots, GnuplotFailureThrowsRuntimeError) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(20, SeedFromTestName());
  try {
    WriteScatterPlot(rows, ComputeValidationMetrics(rows), "t", dir + "/missing/dir/a.png",
                     dir + "/missing/dir/a.svg");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("gnuplot failed"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("cannot open file"), std::string::npos)
        << error.what();
  }
}

TEST(ValidationPlots, FailureLeavesNoPartialFigure) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  // The PNG is drawn first and succeeds; the SVG cannot be opened.
  const std::string dir = ScratchDir();
  EXPECT_THROW(WriteErrorCdfPlot({{"dvfs", {1.0, 2.0, 3.0}}}, "t", dir + "/a.png",
                                 dir + "/missing/a.svg"),
               std::runtime_error);
  EXPECT_FALSE(FileExists(dir + "/a.png"));
}

TEST(ValidationPlots, GnuplotExitingMidStreamDoesNotKillTheProcess) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  // gnuplot stops at the first error, long before these megabytes of inline data are
  // written: our writes then meet a closed pipe, which must surface as an exception.
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(200000, SeedFromTestName());
  EXPECT_THROW(WriteScatterPlot(rows, ComputeValidationMetrics(rows), "t",
                                dir + "/missing/a.png", dir + "/missing/a.svg"),
               std::runtime_error);
  EXPECT_FALSE(FileExists(dir + "/missing/a.png"));
}

TEST(ValidationPlots, RejectsInputsThatCannotBeDrawn) {
  const std::string dir = ScratchDir();
  EXPECT_THROW(WriteScatterPlot({}, ValidationMetrics(), "t", dir + "/a.png", dir + "/a.svg"),
               std::invalid_argument);
  EXPECT_THROW(WriteErrorCdfPlot({}, "t", dir + "/a.png", dir + "/a.svg"), std::invalid_argument);
  EXPECT_THROW(WriteErrorCdfPlot({{"empty", {}}}, "t", dir + "/a.png", dir + "/a.svg"),
               std::invalid_argument);
  EXPECT_THROW(WriteErrorCdfPlot({{"neg", {1.0, -2.0}}}, "t", dir + "/a.png", dir + "/a.svg"),
               std::invalid_argument);
}

}  // namespace
}  // namespace wattcal
