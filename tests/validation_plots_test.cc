// Validation figures: complete, well-formed PNG and SVG files, identical bytes on re-runs,
// and failures reported as exceptions.
#include "report/validation_plots.h"

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <map>
#include <regex>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_support.h"
#include "report/run_report.h"  // ReadPredictionsCsv
#include "util/output.h"
#include "validate/metrics.h"
#include "validate/validation_report.h"
#include "validate/workload_errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ExpectFigurePng;
using ::wattcal::testing::ExpectFigureSvg;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::HasProvenance;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

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
  ExpectFigurePng(dir + "/first.png", ScatterFigureSize());
  ExpectFigureSvg(dir + "/first.svg", ScatterFigureSize());
  EXPECT_EQ(ReadFile(dir + "/first.png"), ReadFile(dir + "/second.png"));
  EXPECT_EQ(ReadFile(dir + "/first.svg"), ReadFile(dir + "/second.svg"));

  // The key carries the statistics; the axes carry units.
  const std::string svg = ReadFile(dir + "/first.svg");
  EXPECT_NE(svg.find("MAPE"), std::string::npos);
  EXPECT_NE(svg.find("Pearson r"), std::string::npos);
  EXPECT_NE(svg.find("Measured power (W)"), std::string::npos);
  EXPECT_NE(svg.find("Predicted power (W)"), std::string::npos);
}

TEST(ValidationPlots, ScatterMarksCappedPointsAndNamesTheFiveLargestErrors) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  std::vector<PredictionRow> rows = SyntheticRows(60, SeedFromTestName());
  for (size_t i = 0; i < rows.size(); ++i) rows[i].benchmark = "w" + std::to_string(i);
  // Five errors far larger than the rest, and two power-capped rows (one by the model, one measured).
  for (int k = 0; k < 5; ++k)
    rows[static_cast<size_t>(10 * k)].predicted_w =
        rows[static_cast<size_t>(10 * k)].measured_w * (1.6 + 0.1 * k);
  rows[3].capped = true;
  rows[4].measured_capped = true;
  WriteScatterPlot(rows, ComputeValidationMetrics(rows), "capped", dir + "/s.png", dir + "/s.svg");
  ExpectFigurePng(dir + "/s.png", ScatterFigureSize());
  const std::string svg = ReadFile(dir + "/s.svg");
  EXPECT_NE(svg.find("power-capped: 2 of the points"), std::string::npos);
  for (int k = 0; k < 5; ++k)
    EXPECT_NE(svg.find(">w" + std::to_string(10 * k) + "<"), std::string::npos) << k;
  EXPECT_EQ(svg.find(">w1<"), std::string::npos);  // the others are not named
  EXPECT_EQ(svg.find("beyond the training range"), std::string::npos);
  // Without capped rows, no such label.
  rows[3].capped = rows[4].measured_capped = false;
  WriteScatterPlot(rows, ComputeValidationMetrics(rows), "none", dir + "/n.png", dir + "/n.svg");
  EXPECT_EQ(ReadFile(dir + "/n.svg").find("power-capped"), std::string::npos);
  // Rows predicted beyond the training range (the flags validate writes) are ringed and counted.
  rows[7].flags = "util_beyond_training:TENSOR";
  rows[8].flags = "capped;power_beyond_training";
  WriteScatterPlot(rows, ComputeValidationMetrics(rows), "beyond", dir + "/b.png", dir + "/b.svg");
  EXPECT_NE(ReadFile(dir + "/b.svg").find("beyond the training range: 2 of the points"),
            std::string::npos);
}

// The points a gnuplot SVG draws with marker `marker` (pt 7 is '#gpPt6'): their translations.
std::vector<std::pair<double, double>> SvgPoints(const std::string& svg,
                                                 const std::string& marker) {
  std::vector<std::pair<double, double>> points;
  const std::regex use("<use xlink:href='#" + marker +
                       "' transform='translate\\(([-0-9.]+),([-0-9.]+)\\)");
  for (std::sregex_iterator it(svg.begin(), svg.end(), use), end; it != end; ++it) {
    points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return points;
}

// The scatter draws measured power across and predicted power up (swapped axes went unnoticed: no
// test read where a figure puts its points). Three rows measured at the same power and predicted
// at three: their points share one x and climb in y.
TEST(ValidationPlots, ScatterPutsMeasuredAcrossAndPredictedUp) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  std::vector<PredictionRow> rows;
  for (int i = 0; i < 3; ++i) {
    PredictionRow row;
    row.benchmark = "w" + std::to_string(i);
    row.f_core_mhz = 1000;
    row.f_mem_mhz = 3505;
    row.measured_w = 100.0;
    row.predicted_w = 100.0 + 100.0 * i;
    row.line = 2 + i;
    rows.push_back(row);
  }
  WriteScatterPlot(rows, ComputeValidationMetrics(rows), "axes", dir + "/s.png", dir + "/s.svg");
  const std::string svg = ReadFile(dir + "/s.svg");
  const std::vector<std::pair<double, double>> points = SvgPoints(svg, "gpPt6");
  std::map<double, int> same_x, same_y;
  for (const auto& [x, y] : points) ++same_x[x], ++same_y[y];
  double x_of_three = std::nan("");
  for (const auto& [x, n] : same_x) {
    if (n == 3) x_of_three = x;
  }
  ASSERT_FALSE(std::isnan(x_of_three)) << "the three points do not share one x: " << svg;
  for (const auto& [y, n] : same_y) EXPECT_LT(n, 3) << "three points share y = " << y;
  // Higher predicted power is higher on the page (smaller SVG y): each row's name sits beside its
  // point, w2 (300 W predicted) at the top, w0 (100 W) at the bottom.
  std::map<std::string, std::pair<double, double>> named;
  const std::regex label(
      "<g transform=\"translate\\(([-0-9.]+),([-0-9.]+)\\)\"[^>]*>\\s*<text>(w[0-9])</text>");
  for (std::sregex_iterator it(svg.begin(), svg.end(), label), end; it != end; ++it) {
    named[(*it)[3]] = {std::stod((*it)[1]), std::stod((*it)[2])};
  }
  ASSERT_EQ(named.size(), 3u) << svg;
  EXPECT_LT(named["w2"].second, named["w1"].second);
  EXPECT_LT(named["w1"].second, named["w0"].second);
  EXPECT_EQ(named["w0"].first, named["w2"].first);
  for (const auto& [name, at] : named) {
    bool beside = false;
    for (const auto& [x, y] : points)
      beside = beside || (x == x_of_three && std::abs(y - at.second) < 10.0);
    EXPECT_TRUE(beside) << name << " is named away from every point";
  }
  EXPECT_NE(svg.find(">Measured power (W)<"), std::string::npos);
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
  ExpectFigurePng(png, ScatterFigureSize());
  ExpectFigureSvg(svg, ScatterFigureSize());
  EXPECT_NE(ReadFile(svg).find("title with 'quotes' and_under_scores"), std::string::npos);
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
    EXPECT_NE(std::string(error.what()).find("gnuplot failed"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("cannot open file"), std::string::npos)
        << error.what();
  }
}

TEST(ValidationPlots, FailureLeavesNoPartialFigure) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  // The PNG is drawn first and succeeds; the SVG cannot be opened.
  const std::string dir = ScratchDir();
  EXPECT_THROW(
      WriteErrorCdfPlot({{"dvfs", {1.0, 2.0, 3.0}}}, "t", dir + "/a.png", dir + "/missing/a.svg"),
      std::runtime_error);
  EXPECT_FALSE(FileExists(dir + "/a.png"));
}

TEST(ValidationPlots, GnuplotExitingMidStreamDoesNotKillTheProcess) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  // gnuplot stops at the first error, long before these megabytes of inline data are
  // written: our writes then meet a closed pipe, which must surface as an exception.
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(200000, SeedFromTestName());
  EXPECT_THROW(WriteScatterPlot(rows, ComputeValidationMetrics(rows), "t", dir + "/missing/a.png",
                                dir + "/missing/a.svg"),
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

// The per-workload table recomputed by hand from the predictions CSV wattcal-validate writes:
// per workload the mean measured and predicted power and the mean signed and absolute error
// of its rows, sorted by the absolute error, worst first.
TEST(WorkloadErrors, RowsEqualThePredictionsCsvPerWorkloadWorstFirst) {
  const std::string dir = ScratchDir();
  std::vector<PredictionRow> rows = SyntheticRows(96, SeedFromTestName());
  PredictionRow single;  // one workload with a single point: its row's own numbers
  single.benchmark = "lone_app";
  single.measured_w = 200.0;
  single.predicted_w = 150.0;  // -25%, the worst
  rows.push_back(single);
  WriteFile(dir + "/predictions.csv", PredictionsToCsv(rows));
  const std::vector<PredictionRow> read = ReadPredictionsCsv(dir + "/predictions.csv");

  struct Sums {
    int n = 0;
    double m = 0, p = 0, e = 0, a = 0;
  };
  std::map<std::string, Sums> sums;
  for (const PredictionRow& r : read) {
    Sums& s = sums[r.benchmark];
    const double e = 100.0 * (r.predicted_w - r.measured_w) / r.measured_w;
    ++s.n;
    s.m += r.measured_w;
    s.p += r.predicted_w;
    s.e += e;
    s.a += std::abs(e);
  }
  const std::vector<WorkloadError> errors = ComputeWorkloadErrors(read);
  ASSERT_EQ(errors.size(), sums.size());
  for (size_t i = 0; i < errors.size(); ++i) {
    const WorkloadError& w = errors[i];
    ASSERT_EQ(sums.count(w.workload), 1u) << w.workload;
    const Sums& s = sums[w.workload];
    EXPECT_EQ(w.points, s.n) << w.workload;
    EXPECT_NEAR(w.measured_w, s.m / s.n, 1e-9) << w.workload;
    EXPECT_NEAR(w.predicted_w, s.p / s.n, 1e-9) << w.workload;
    EXPECT_NEAR(w.error_pct, s.e / s.n, 1e-9) << w.workload;
    EXPECT_NEAR(w.abs_error_pct, std::abs(s.e / s.n), 1e-9) << w.workload;
    EXPECT_NEAR(w.mape_pct, s.a / s.n, 1e-9) << w.workload;
    if (i > 0) {
      EXPECT_GE(errors[i - 1].abs_error_pct, w.abs_error_pct) << w.workload;
    }
  }
  EXPECT_EQ(errors.front().workload, "lone_app");
  EXPECT_EQ(errors.front().points, 1);
  EXPECT_DOUBLE_EQ(errors.front().measured_w, 200.0);
  EXPECT_DOUBLE_EQ(errors.front().predicted_w, 150.0);
  EXPECT_DOUBLE_EQ(errors.front().error_pct, -25.0);
  EXPECT_DOUBLE_EQ(errors.front().abs_error_pct, 25.0);
  EXPECT_DOUBLE_EQ(errors.front().mape_pct, 25.0);

  // The Markdown table: one line per workload in that order, with the same numbers.
  const std::string md = WorkloadErrorsMarkdown(errors);
  EXPECT_EQ(md.rfind("| workload | points | measured W | predicted W | error % | abs error % |", 0),
            0u);
  EXPECT_NE(md.find("| lone_app | 1 | 200.00 | 150.00 | -25.00 | 25.00 | 25.00 | 25.00 |\n"),
            std::string::npos)
      << md;
  size_t last = 0;
  for (const WorkloadError& w : errors) {
    const size_t at = md.find("| " + w.workload + " | " + std::to_string(w.points) + " | " +
                              fmt::format("{:.2f} | {:.2f} | {:+.2f} | {:.2f} |", w.measured_w,
                                          w.predicted_w, w.error_pct, w.abs_error_pct));
    ASSERT_NE(at, std::string::npos) << w.workload << "\n" << md;
    EXPECT_GT(at, last) << w.workload << " out of order";
    last = at;
  }
  EXPECT_THROW(ComputeWorkloadErrors({PredictionRow{}}), std::invalid_argument);  // measured 0 W
}

// Every validation summary carries the per-workload table.
TEST(WorkloadErrors, ValidationSummaryHasTheTable) {
  ValidationInputs in;
  in.mode = PredictMode::kFixed;
  in.source = "heldout.csv";
  in.rows = SyntheticRows(24, SeedFromTestName());
  const ValidationReport outcome = SummariseValidation(in);
  const std::string md = ValidationMarkdown(in, outcome, "p.csv", "m.json", "", "summary.md");
  EXPECT_NE(md.find("## Per-workload error, worst first"), std::string::npos) << md;
  EXPECT_NE(md.find(WorkloadErrorsMarkdown(ComputeWorkloadErrors(in.rows))), std::string::npos)
      << md;
  EXPECT_EQ(md.find("_workloads.png"), std::string::npos);  // no chart named: none linked
  // With the chart beside the scatter, the summary shows it above the table.
  const std::string plot = "out/scatter_fixed.png";
  EXPECT_EQ(WorkloadErrorPlotPath(plot), "out/scatter_fixed_workloads.png");
  const std::string with_chart = ValidationMarkdown(in, outcome, "out/p.csv", "out/m.json", plot,
                                                    "out/summary.md", WorkloadErrorPlotPath(plot));
  const size_t chart = with_chart.find("](scatter_fixed_workloads.png)");
  ASSERT_NE(chart, std::string::npos) << with_chart;
  EXPECT_LT(chart, with_chart.find("| workload | points |"));
}

TEST(ValidationPlots, WorkloadErrorChartNamesTheLargestErrorsAndHistogramsThemAll) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  // As many workloads as the H100 capture (139), with names as long as its mixes.
  std::vector<PredictionRow> rows;
  std::mt19937 rng(SeedFromTestName());
  std::normal_distribution<double> error(0.0, 0.08);
  for (int i = 0; i < 139; ++i) {
    PredictionRow row;
    row.benchmark = fmt::format("mix{:03d}_f16_i13_d0_s2_h2_l3_m0_t1_b4", i);
    row.measured_w = 150.0 + 3.0 * i;
    row.predicted_w = row.measured_w * (1.0 + error(rng));
    rows.push_back(row);
  }
  const std::vector<WorkloadError> errors = ComputeWorkloadErrors(rows);
  const FigureSize size = WorkloadErrorFigureSize(errors);
  // 25 legible rows and a histogram below them, not 139 rows of labels.
  EXPECT_EQ(size.width_px, 900);
  EXPECT_EQ(size.height_px, 600 + 300);
  const std::string title = "H100, random data: 5-fold CV by benchmark: error per workload";
  WriteWorkloadErrorPlot(errors, title, dir + "/a.png", dir + "/a.svg");
  WriteWorkloadErrorPlot(errors, title, dir + "/b.png", dir + "/b.svg");
  ExpectFigurePng(dir + "/a.png", size);
  ExpectFigureSvg(dir + "/a.svg", size);
  EXPECT_EQ(ReadFile(dir + "/a.png"), ReadFile(dir + "/b.png"));
  EXPECT_EQ(ReadFile(dir + "/a.svg"), ReadFile(dir + "/b.svg"));
  const std::string svg = ReadFile(dir + "/a.svg");
  EXPECT_NE(svg.find("Prediction error (%)"), std::string::npos);
  EXPECT_NE(svg.find("over-predicted (> 0)"), std::string::npos);
  EXPECT_NE(svg.find("under-predicted"), std::string::npos);
  EXPECT_NE(svg.find("H100, random data: 5-fold CV by benchmark: error"), std::string::npos);
  // The 25 largest |errors| are named (ComputeWorkloadErrors puts them first), no other.
  for (size_t i = 0; i < errors.size(); ++i) {
    EXPECT_EQ(svg.find(">" + errors[i].workload + "<") != std::string::npos, i < 25)
        << i << " " << errors[i].workload;
  }
  EXPECT_NE(svg.find("the 25 largest of 139 workloads"), std::string::npos);
  EXPECT_NE(svg.find("all 139 workloads"), std::string::npos);
  EXPECT_NE(svg.find(">workloads<"), std::string::npos);  // the histogram's axis

  // Up to 25 workloads: every one named, no histogram.
  const std::vector<WorkloadError> few(errors.begin(), errors.begin() + 25);
  WriteWorkloadErrorPlot(few, "few", dir + "/f.png", dir + "/f.svg");
  ExpectFigurePng(dir + "/f.png", WorkloadErrorFigureSize(few));
  const std::string few_svg = ReadFile(dir + "/f.svg");
  EXPECT_EQ(few_svg.find("all 25 workloads"), std::string::npos);
  for (const WorkloadError& w : few)
    EXPECT_NE(few_svg.find(">" + w.workload + "<"), std::string::npos) << w.workload;

  // A small chart keeps the usual canvas; errors all zero still get a non-empty % axis.
  std::vector<PredictionRow> exact(3);
  for (size_t i = 0; i < exact.size(); ++i) {
    exact[i].benchmark = "app_" + std::to_string(i);
    exact[i].measured_w = exact[i].predicted_w = 100.0 + i;
  }
  const std::vector<WorkloadError> zero = ComputeWorkloadErrors(exact);
  EXPECT_EQ(WorkloadErrorFigureSize(zero).height_px, 600);
  WriteWorkloadErrorPlot(zero, "exact", dir + "/z.png", dir + "/z.svg");
  ExpectFigurePng(dir + "/z.png");
  EXPECT_THROW(WriteWorkloadErrorPlot({}, "t", dir + "/e.png", dir + "/e.svg"),
               std::invalid_argument);
}

// What wattcal-validate's --plot should write: the scatter and the per-workload chart beside it,
// each with its SVG twin and manifest, committed together.
TEST(ValidationPlots, StageValidationFiguresWritesTheScatterAndTheWorkloadChartWithManifests) {
  WATTCAL_REQUIRE_GNUPLOT("validation figures");
  const std::string dir = ScratchDir();
  const std::vector<PredictionRow> rows = SyntheticRows(48, SeedFromTestName());
  const ValidationMetrics m = ComputeValidationMetrics(rows);
  const std::string plot = dir + "/scatter_fixed.png";
  WriteFile(dir + "/in.csv", PredictionsToCsv(rows));  // the manifests hash their inputs
  OutputSet outputs;
  const std::string chart = StageValidationFigures(
      rows, m, "GTX Titan X, fixed", plot, {dir + "/in.csv"}, {{"mode", "fixed"}}, &outputs);
  outputs.Commit();
  EXPECT_EQ(chart, dir + "/scatter_fixed_workloads.png");
  ExpectFigurePng(plot, ScatterFigureSize());
  ExpectFigureSvg(dir + "/scatter_fixed.svg", ScatterFigureSize());
  const FigureSize size = WorkloadErrorFigureSize(ComputeWorkloadErrors(rows));
  ExpectFigurePng(chart, size);
  ExpectFigureSvg(dir + "/scatter_fixed_workloads.svg", size);
  for (const std::string f : {"scatter_fixed.png", "scatter_fixed.svg",
                              "scatter_fixed_workloads.png", "scatter_fixed_workloads.svg"}) {
    EXPECT_TRUE(HasProvenance(dir + "/" + f)) << f;
  }
  EXPECT_NE(
      ReadFile(dir + "/scatter_fixed_workloads.svg").find("GTX Titan X, fixed: error per workload"),
      std::string::npos);

  // Turned off: the scatter alone.
  OutputSet only_scatter;
  ValidationFigureOptions figures;
  figures.workload_errors = false;
  EXPECT_EQ(
      StageValidationFigures(rows, m, "t", dir + "/other.png", {}, {}, &only_scatter, figures), "");
  only_scatter.Commit();
  EXPECT_TRUE(FileExists(dir + "/other.png"));
  EXPECT_FALSE(FileExists(dir + "/other_workloads.png"));
}

}  // namespace
}  // namespace wattcal
