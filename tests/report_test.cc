// wattcal-report: the multicollinearity diagnosis (closed-form cases), every figure (complete
// PNG and SVG of the column size, identical bytes on re-runs), and the stage end to end on a run
// folder made from the virtual GPU's truth (discovery, index pages whose links all resolve,
// manifests, byte-identical reruns, exit codes, no partial output).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/corpus_io.h"
#include "io/model_io.h"
#include "report/collinearity.h"
#include "report/gnuplot_figure.h"
#include "report/report_figures.h"
#include "report/run_report.h"
#include "synth/synthetic_corpus.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/output.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace fs = boost::filesystem;

namespace wattcal {
namespace {

using ::wattcal::testing::CommandResult;
using ::wattcal::testing::Dataset;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

#define WATTCAL_REQUIRE_GNUPLOT()                                                 \
  do {                                                                            \
    if (!GnuplotAvailable())                                                      \
      GTEST_SKIP() << "gnuplot not found: install gnuplot (e.g. apt-get install " \
                      "gnuplot-nox) and re-run cmake to test the report figures"; \
  } while (0)

// Every figure is sized for one paper column (report/gnuplot_figure.h).
constexpr uint32_t kWidthPx = 800;
constexpr uint32_t kHeightPx = 600;
// Tolerance of closed-form checks on double arithmetic.
constexpr double kClosedFormRelTol = 1e-9;

const std::string kSpec = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json";

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i)
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

// A complete PNG of the column size: signature, IHDR first with width and height, IEND last.
void ExpectPng(const std::string& path) {
  const std::string png = ReadFile(path);
  ASSERT_GT(png.size(), 33u) << path;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << path;
  EXPECT_EQ(png.substr(12, 4), "IHDR") << path;
  EXPECT_EQ(BigEndian32(png, 16), kWidthPx) << path;
  EXPECT_EQ(BigEndian32(png, 20), kHeightPx) << path;
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND") << path;
}

// A complete SVG document of the column size.
void ExpectSvg(const std::string& path) {
  const std::string svg = ReadFile(path);
  ASSERT_FALSE(svg.empty()) << path;
  EXPECT_TRUE(svg.rfind("<?xml", 0) == 0 || svg.rfind("<svg", 0) == 0) << path;
  EXPECT_NE(svg.find("width=\"800\" height=\"600\""), std::string::npos) << path;
  EXPECT_NE(svg.find("viewBox=\"0 0 800 600\""), std::string::npos) << path;
  EXPECT_NE(svg.find("</svg>"), std::string::npos) << path;
}

// Draws a figure twice and checks both files and that the second run gives the same bytes;
// returns the SVG text.
template <typename Draw>
std::string ExpectDeterministicFigure(const Draw& draw) {
  const std::string dir = ScratchDir();
  draw(dir + "/a.png", dir + "/a.svg");
  draw(dir + "/b.png", dir + "/b.svg");
  ExpectPng(dir + "/a.png");
  ExpectSvg(dir + "/a.svg");
  EXPECT_EQ(ReadFile(dir + "/a.png"), ReadFile(dir + "/b.png"));
  EXPECT_EQ(ReadFile(dir + "/a.svg"), ReadFile(dir + "/b.svg"));
  return ReadFile(dir + "/a.svg");
}

// A corpus of `benchmarks` benchmarks (one row each at the default pair) with the given
// utilisation columns.
Corpus CorpusFromColumns(const std::vector<std::string>& names,
                         const std::vector<std::vector<double>>& columns) {
  Corpus c;
  c.path = "synthetic.csv";
  c.kind = CorpusKind::kActivity;
  c.layout.domains.push_back({"core", 1000.0, names});
  const int n = static_cast<int>(columns.front().size());
  c.util_frac.resize(n, static_cast<int>(columns.size()));
  for (int i = 0; i < n; ++i) {
    c.benchmark.push_back("b" + std::to_string(i));
    c.line.push_back(i + 2);
    for (size_t j = 0; j < columns.size(); ++j)
      c.util_frac(i, static_cast<int>(j)) = columns[j][static_cast<size_t>(i)];
  }
  return c;
}

std::vector<double> Uniform(std::mt19937* rng, int n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(*rng);
  return v;
}

// ---- Multicollinearity -----------------------------------------------------------------------

TEST(ReportOptions, DefaultsPassCheck) {
  std::string error;
  EXPECT_TRUE(CollinearityOptions().Check(&error)) << error;
  EXPECT_TRUE(ReportOptions().Check(&error)) << error;
  CollinearityOptions bad;
  bad.pair_threshold_abs_r = 1.5;
  EXPECT_FALSE(bad.Check(&error));
  EXPECT_NE(error.find("pair_threshold_abs_r = 1.5"), std::string::npos) << error;
  bad = CollinearityOptions();
  bad.condition_number_threshold = 0.5;
  EXPECT_FALSE(bad.Check(&error));
  EXPECT_NE(error.find("condition_number_threshold = 0.5"), std::string::npos) << error;
  ReportOptions report;
  report.auto_benchmarks = -1;
  EXPECT_FALSE(report.Check(&error));
  EXPECT_NE(error.find("auto_benchmarks = -1"), std::string::npos) << error;
}

// Two standardised columns with correlation r: Z'Z / (n - 1) = [[1, r], [r, 1]] has eigenvalues
// 1 +/- r, so kappa(Z) = sqrt((1 + |r|) / (1 - |r|)) exactly.
TEST(ReportCollinearity, TwoComponentConditionNumberMatchesClosedForm) {
  std::mt19937 rng(SeedFromTestName());
  const int n = 60;
  const std::vector<double> x = Uniform(&rng, n);
  std::vector<double> y = Uniform(&rng, n);
  for (int i = 0; i < n; ++i) y[static_cast<size_t>(i)] += 0.8 * x[static_cast<size_t>(i)];
  const CollinearityReport r = AnalyseCollinearity(CorpusFromColumns({"X", "Y"}, {x, y}));
  const double rho = r.component_r(0, 1);
  EXPECT_GT(rho, 0.3);
  EXPECT_LT(rho, 0.95);
  EXPECT_NEAR(r.condition_number, std::sqrt((1.0 + rho) / (1.0 - rho)),
              kClosedFormRelTol * r.condition_number);
  EXPECT_DOUBLE_EQ(r.component_r(0, 0), 1.0);
  EXPECT_TRUE(r.pairs.empty());
  EXPECT_FALSE(r.flagged());
}

// c = a + b: no pair reaches 0.95 (r(a, c) ~ 0.7), yet the columns are exactly dependent; only
// the condition number sees it.
TEST(ReportCollinearity, ExactDependencyAmongThreeIsCaughtByConditionNumberOnly) {
  std::mt19937 rng(SeedFromTestName());
  const int n = 80;
  const std::vector<double> a = Uniform(&rng, n);
  const std::vector<double> b = Uniform(&rng, n);
  std::vector<double> c(static_cast<size_t>(n));
  for (size_t i = 0; i < c.size(); ++i) c[i] = a[i] + b[i];
  const CollinearityReport r = AnalyseCollinearity(CorpusFromColumns({"A", "B", "C"}, {a, b, c}));
  EXPECT_TRUE(r.pairs.empty());
  EXPECT_LT(std::abs(r.component_r(0, 2)), 0.95);
  EXPECT_TRUE(std::isinf(r.condition_number));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("rank-deficient"), std::string::npos) << r.warnings[0];
}

TEST(ReportCollinearity, FlagsCollinearPairAndConstantComponentOncePerBenchmark) {
  std::mt19937 rng(SeedFromTestName());
  const int n = 40;
  const std::vector<double> ldst = Uniform(&rng, n);
  std::vector<double> shared = ldst;
  std::normal_distribution<double> noise(0.0, 0.005);
  for (double& s : shared) s = 0.5 * s + noise(rng);
  const std::vector<double> tex(static_cast<size_t>(n), 0.0);
  const std::vector<double> fp = Uniform(&rng, n);
  Corpus c = CorpusFromColumns({"LDST", "Shared", "TEX", "FP32"}, {ldst, shared, tex, fp});
  // The same benchmarks again at a second core frequency: still one row each.
  c.kind = CorpusKind::kMeasured;
  c.freq_mhz = Eigen::MatrixXd::Constant(n, 1, 1000.0);
  c.power_w = Eigen::VectorXd::Constant(n, 100.0);
  Corpus twice = c;
  twice.util_frac.conservativeResize(2 * n, Eigen::NoChange);
  twice.util_frac.bottomRows(n) = c.util_frac;
  twice.freq_mhz.conservativeResize(2 * n, Eigen::NoChange);
  twice.freq_mhz.bottomRows(n).setConstant(800.0);
  twice.power_w.conservativeResize(2 * n);
  twice.power_w.tail(n).setConstant(90.0);
  for (int i = 0; i < n; ++i) {
    twice.benchmark.push_back(c.benchmark[static_cast<size_t>(i)]);
    twice.line.push_back(n + i + 2);
  }
  const CollinearityReport r = AnalyseCollinearity(twice);
  EXPECT_EQ(r.benchmarks.size(), static_cast<size_t>(n));
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_EQ(r.pairs[0].first, "LDST");
  EXPECT_EQ(r.pairs[0].second, "Shared");
  EXPECT_GT(r.pairs[0].r, 0.99);
  EXPECT_EQ(r.constant_components, std::vector<std::string>{"TEX"});
  EXPECT_TRUE(std::isnan(r.component_r(2, 0)));
  EXPECT_GT(r.condition_number, 30.0);
  ASSERT_EQ(r.warnings.size(), 3u);  // constant TEX, the pair, the condition number
  EXPECT_NE(r.warnings[1].find("LDST ~ Shared"), std::string::npos) << r.warnings[1];
}

TEST(ReportCollinearity, BenchmarkCorrelationOfProportionalVectorsIsOne) {
  const Corpus c =
      CorpusFromColumns({"A", "B", "C"}, {{0.1, 0.2, 0.5}, {0.2, 0.4, 0.1}, {0.3, 0.6, 0.2}});
  const CollinearityReport r = AnalyseCollinearity(c);
  EXPECT_NEAR(r.benchmark_r(0, 1), 1.0, 1e-12);  // b1 = 2 b0
  EXPECT_NEAR(r.benchmark_r(1, 0), 1.0, 1e-12);
  EXPECT_LT(r.benchmark_r(0, 2), 1.0);
}

TEST(ReportCollinearity, FewerThanTwoBenchmarksIsAnInputError) {
  const Corpus c = CorpusFromColumns({"A", "B"}, {{0.1}, {0.2}});
  EXPECT_THROW(AnalyseCollinearity(c), InputError);
}

// TPDS'19 §3.2 (Fig. 3b): microbenchmarks of different groups "mostly have a low correlation
// (absolute value around 0.2)"; gpmTOOL's suite was built so that the components separate.
TEST(ReportRealData, TitanXMicrobenchmarksAreNotCollinear) {
  WATTCAL_REQUIRE_DATASETS();
  const Corpus train =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv"));
  const CollinearityReport r = AnalyseCollinearity(train);
  EXPECT_EQ(r.components.size(), 12u);
  EXPECT_LT(r.median_abs_benchmark_r, 0.3);
  EXPECT_TRUE(r.pairs.empty());
  EXPECT_LT(r.condition_number, 30.0);
}

// ---- Figures ---------------------------------------------------------------------------------

PowerModel VirtualTruth() { return TruthModel(ReadSyntheticSpec(kSpec)); }

TEST(ReportFigures, VoltageFigureShowsEveryDvfsModel) {
  WATTCAL_REQUIRE_GNUPLOT();
  const PowerModel joint = VirtualTruth();
  PowerModel alternating = joint;
  for (double& v : alternating.voltage_rel[0]) v = v < 1.0 ? v - 0.01 : v;
  PowerModel fixed = joint;
  fixed.method = "fixed";
  for (size_t d = 0; d < fixed.freq_levels_mhz.size(); ++d) {
    fixed.freq_levels_mhz[d] = {fixed.layout.domains[d].default_freq_mhz};
    fixed.voltage_rel[d] = {1.0};
  }
  const std::vector<std::pair<std::string, PowerModel>> models = {
      {"joint", joint}, {"fixed", fixed}, {"alternating", alternating}};
  const std::string svg =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteVoltagePlot(models, "Voltage", png, s);
      });
  EXPECT_NE(svg.find("Core frequency (MHz)"), std::string::npos);
  EXPECT_NE(svg.find("Memory frequency (MHz)"), std::string::npos);
  EXPECT_NE(svg.find("alternating"), std::string::npos);
  EXPECT_THROW(WriteVoltagePlot({{"fixed", fixed}}, "t", "/tmp/x.png", "/tmp/x.svg"),
               std::invalid_argument);
}

std::vector<PredictionRow> BenchmarkRows(double offset_w) {
  std::vector<PredictionRow> rows;
  for (double mem : {810.0, 3505.0}) {
    for (double core : {600.0, 800.0, 1000.0}) {
      PredictionRow row;
      row.benchmark = "bench";
      row.f_core_mhz = core;
      row.f_mem_mhz = mem;
      row.measured_w = 40.0 + 0.1 * core + 0.01 * mem;
      row.predicted_w = row.measured_w + offset_w;
      rows.push_back(row);
    }
  }
  return rows;
}

TEST(ReportFigures, BenchmarkVfFigureHasMeasuredAndEverySeries) {
  WATTCAL_REQUIRE_GNUPLOT();
  const std::vector<BenchmarkSeries> series = {{"dvfs", BenchmarkRows(5.0)},
                                               {"scaling", BenchmarkRows(-1.0)}};
  const std::string svg =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteBenchmarkVfPlot("bench", series, "bench over the V-F pairs", png, s);
      });
  EXPECT_NE(svg.find("Power (W)"), std::string::npos);
  EXPECT_NE(svg.find("Core frequency (MHz)"), std::string::npos);
  EXPECT_NE(svg.find("memory 810 MHz"), std::string::npos);
  EXPECT_NE(svg.find("dvfs (MAPE"), std::string::npos);
  EXPECT_NE(svg.find("measured"), std::string::npos);
  EXPECT_THROW(WriteBenchmarkVfPlot("none", {}, "t", "/tmp/x.png", "/tmp/x.svg"),
               std::invalid_argument);
}

TEST(ReportFigures, BreakdownSumsToThePredictionAndIsDrawn) {
  WATTCAL_REQUIRE_GNUPLOT();
  const SyntheticSpec spec = ReadSyntheticSpec(kSpec);
  const SyntheticCorpus corpus = GenerateSyntheticCorpus(spec, SeedFromTestName());
  const BreakdownChart chart = ComputeBreakdownChart(corpus.truth, corpus.heldout);
  ASSERT_EQ(chart.bars.size(), corpus.heldout.Benchmarks().size());
  ASSERT_EQ(chart.terms.size(), static_cast<size_t>(4 + corpus.truth.layout.num_components()));
  EXPECT_EQ(chart.grey_terms, 4);
  // Each bar is the prediction at the default pair split into terms; measured there too.
  const std::vector<int> at_default = corpus.heldout.RowsAtDefault();
  ASSERT_FALSE(at_default.empty());
  const int row = at_default.front();
  const Eigen::VectorXd u = corpus.heldout.util_frac.row(row).transpose();
  const double predicted_w = corpus.truth.PredictAtDefault(u.data());
  const BreakdownBar& bar = chart.bars[0];
  ASSERT_EQ(bar.label, corpus.heldout.benchmark[static_cast<size_t>(row)]);
  double sum_w = 0.0;
  for (double w : bar.term_w) sum_w += w;
  EXPECT_NEAR(sum_w, predicted_w, kClosedFormRelTol * predicted_w);
  EXPECT_DOUBLE_EQ(bar.measured_w, corpus.heldout.power_w(row));
  const std::string svg =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteBreakdownPlot(chart, "Breakdown", png, s);
      });
  EXPECT_NE(svg.find("Power (W)"), std::string::npos);
  EXPECT_NE(svg.find("average"), std::string::npos);
  EXPECT_NE(svg.find("static (core)"), std::string::npos);
}

TEST(ReportFigures, CorrelationHeatmapsOfBothKinds) {
  WATTCAL_REQUIRE_GNUPLOT();
  std::mt19937 rng(SeedFromTestName());
  const std::vector<double> a = Uniform(&rng, 30);
  std::vector<double> b = a;
  for (double& x : b) x *= 0.5;
  const CollinearityReport r = AnalyseCollinearity(CorpusFromColumns(
      {"A", "B", "C", "D"}, {a, b, Uniform(&rng, 30), std::vector<double>(30, 0.0)}));
  const std::string bench =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteBenchmarkCorrelationHeatmap(r, "Benchmarks", png, s);
      });
  EXPECT_NE(bench.find("Pearson r"), std::string::npos);
  const std::string comp =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteComponentCorrelationHeatmap(r, 0.95, "Components", png, s);
      });
  EXPECT_NE(comp.find("1.00"), std::string::npos);
  EXPECT_NE(comp.find("n/a"), std::string::npos);  // the constant component D
}

TEST(ReportFigures, ConstantPowerAndRelativePowerHooks) {
  WATTCAL_REQUIRE_GNUPLOT();
  ConstantFitChart constant;
  constant.p_const_w = 32.0;
  constant.p_const_ci_low_w = 31.0;
  constant.p_const_ci_high_w = 33.0;
  for (int i = 0; i < 3; ++i) {
    ConstantFitCurve c;
    c.label = c.benchmark = "ubench_" + std::to_string(i);
    c.beta_w_per_mhz3 = (1 + i) * 2e-8;
    c.tau_w_per_mhz = 0.02;
    c.f_min_mhz = 500.0;
    c.f_max_mhz = 1500.0;
    for (double f = 500.0; f <= 1500.0; f += 250.0) {
      c.measured.emplace_back(f, c.beta_w_per_mhz3 * f * f * f + c.tau_w_per_mhz * f + 32.0);
    }
    constant.curves.push_back(c);
  }
  const std::string svg =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteConstantPowerPlot(constant, "Constant power", png, s);
      });
  EXPECT_NE(svg.find("P_const = 32.0 W"), std::string::npos);

  RelativePowerChart relative;
  relative.gpu_a = "Volta";
  relative.gpu_b = "Turing";
  relative.bars = {{"k1", -20.0, -15.0}, {"k2", 10.0, -5.0}, {"k3", 30.0, 25.0}};
  const std::string rel =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteRelativePowerPlot(relative, "Turing vs. Volta", png, s);
      });
  EXPECT_NE(rel.find("Power of B relative to A (%)"), std::string::npos);
  EXPECT_NE(rel.find("same direction in 2 of 3 workloads"), std::string::npos);
}

// ---- Predictions reader ------------------------------------------------------------------------

TEST(ReportPredictions, ReadsValidateOutputAndNamesFileLineColumnOnErrors) {
  const std::string dir = ScratchDir();
  std::vector<PredictionRow> rows = BenchmarkRows(2.0);
  rows[1].fold = 3;
  const std::string good = WriteFile(dir + "/predictions_dvfs.csv", PredictionsToCsv(rows));
  const std::vector<PredictionRow> back = ReadPredictionsCsv(good);
  ASSERT_EQ(back.size(), rows.size());
  EXPECT_EQ(back[1].fold, 3);
  EXPECT_EQ(back[4].f_mem_mhz, 3505.0);
  EXPECT_NEAR(back[4].predicted_w, rows[4].predicted_w, 1e-6);
  EXPECT_EQ(back[4].line, 6);

  const std::string bad = WriteFile(dir + "/bad.csv",
                                    "benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w\n"
                                    "a,1000,3505,100,101\n"
                                    "b,1000,3505,abc,99\n");
  try {
    ReadPredictionsCsv(bad);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "measured_w");
  }
  const std::string missing = WriteFile(dir + "/missing.csv", "benchmark,f_core_mhz\nx,1\n");
  EXPECT_THROW(ReadPredictionsCsv(missing), InputError);
}

// ---- The stage ---------------------------------------------------------------------------------

// A run folder like Makefile.runs writes, from the virtual GPU's truth: model.json (labelled
// joint) and gpmtool/model.json (alternating, other voltages), each validated in dvfs and
// scaling mode on the held-out applications, the training corpus the models name, a
// constant-power result, an architecture comparison and a model file of another format.
struct RunFolder {
  std::string dir;
  std::string train;
  std::string heldout;
};

void WriteValidation(const PowerModel& model, const std::string& model_path, const Corpus& heldout,
                     PredictMode mode, const std::string& dir) {
  const std::vector<PredictionRow> rows = PredictHeldout(model, heldout, mode);
  const std::string name = PredictModeName(mode);
  WriteFile(dir + "/predictions_" + name + ".csv", PredictionsToCsv(rows));
  nlohmann::json metrics = MetricsToJson(ComputeValidationMetrics(rows), MetricsOptions());
  metrics["mode"] = name;
  metrics["model"] = model_path;
  metrics["measurements"] = heldout.path;
  metrics["title"] = "virtual GPU, " + name + " prediction";
  WriteFile(dir + "/metrics_" + name + ".json", metrics.dump(2) + "\n");
}

RunFolder MakeRunFolder(const std::string& root, unsigned seed) {
  RunFolder run;
  run.dir = root + "/run";
  fs::create_directories(run.dir + "/data");
  fs::create_directories(run.dir + "/gpmtool");
  SyntheticSpec spec = ReadSyntheticSpec(kSpec);
  spec.heldout_applications = 10;
  const SyntheticCorpus corpus = GenerateSyntheticCorpus(spec, seed);
  run.train = WriteFile(run.dir + "/data/train.csv", CorpusToTidyCsv(corpus.train));
  run.heldout = WriteFile(run.dir + "/data/heldout.csv", CorpusToTidyCsv(corpus.heldout));
  const Corpus heldout = ReadCorpus(run.heldout);

  PowerModel joint = corpus.truth;
  joint.fit.solver = "joint";
  joint.fit.converged = true;
  joint.trained_on = run.train;
  PowerModel alternating = joint;
  alternating.fit.solver = "alternating";
  for (double& v : alternating.voltage_rel[0]) v = v < 1.0 ? v - 0.01 : v;
  const std::string joint_path = WriteFile(run.dir + "/model.json", ModelToJson(joint));
  const std::string alt_path = WriteFile(run.dir + "/gpmtool/model.json", ModelToJson(alternating));
  for (PredictMode mode : {PredictMode::kDvfs, PredictMode::kScaling}) {
    WriteValidation(joint, joint_path, heldout, mode, run.dir);
    WriteValidation(alternating, alt_path, heldout, mode, run.dir + "/gpmtool");
  }
  nlohmann::json constant = {{"p_const_w", 31.5},
                             {"p_const_ci_low_w", 30.9},
                             {"p_const_ci_high_w", 32.1},
                             {"confidence_level", 0.95},
                             {"curves", nlohmann::json::array()}};
  for (int i = 0; i < 3; ++i) {
    constant["curves"].push_back({{"benchmark", "INT_" + std::to_string(i)},
                                  {"active_sms", 80},
                                  {"lanes_per_warp", 32},
                                  {"f_core_min_mhz", 500.0},
                                  {"f_core_max_mhz", 1600.0},
                                  {"beta_w_per_mhz3", (1 + i) * 1.5e-8},
                                  {"tau_w_per_mhz", 0.015}});
  }
  WriteFile(run.dir + "/CONSTANT.json", constant.dump(2) + "\n");
  nlohmann::json compare = {
      {"arch_a", "Volta"}, {"arch_b", "Pascal"}, {"per_workload", nlohmann::json::array()}};
  for (int i = 0; i < 4; ++i) {
    compare["per_workload"].push_back({{"workload", "k" + std::to_string(i)},
                                       {"estimated_rel_pct", -20.0 + 10.0 * i},
                                       {"measured_rel_pct", -18.0 + 9.0 * i},
                                       {"same_direction", true}});
  }
  WriteFile(run.dir + "/pascal_vs_volta.json", compare.dump(2) + "\n");  // found by content
  WriteFile(run.dir + "/accelwattch_model.json",
            "{\"format\": \"wattcal-accelwattch-model\", \"version\": 1}\n");
  return run;
}

// Every file under `dir`, relative path -> bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    if (fs::is_regular_file(it->path())) {
      files[it->path().lexically_relative(dir).string()] = ReadFile(it->path().string());
    }
  }
  return files;
}

// Every src= and href= of the page that is not a fragment or a URL.
std::vector<std::string> LocalReferences(const std::string& html) {
  std::vector<std::string> refs;
  const std::regex pattern("(?:src|href)=\"([^\"]*)\"");
  for (std::sregex_iterator it(html.begin(), html.end(), pattern), end; it != end; ++it) {
    const std::string ref = (*it)[1];
    if (ref.empty() || ref[0] == '#' || ref.find("://") != std::string::npos) continue;
    refs.push_back(ref);
  }
  return refs;
}

TEST(ReportStage, WritesIndexFiguresAndManifestsForARunFolder) {
  WATTCAL_REQUIRE_GNUPLOT();
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  const std::string out = root + "/report";
  const CommandResult result = RunStage(
      "wattcal-report", {"--run-dir", run.dir, "--out-dir", out, "--title", "Virtual GPU"});
  ASSERT_EQ(result.exit_code, 0) << result.output;

  const std::string html = ReadFile(out + "/index.html");
  const std::string md = ReadFile(out + "/index.md");
  ASSERT_FALSE(html.empty());
  ASSERT_FALSE(md.empty());
  EXPECT_TRUE(FileExists(out + "/index.html.manifest.json"));
  EXPECT_TRUE(FileExists(out + "/index.md.manifest.json"));

  // Every reference resolves; every figure is a complete PNG/SVG with its manifest.
  const std::vector<std::string> refs = LocalReferences(html);
  std::set<std::string> figures;
  for (const std::string& ref : refs) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + ref)) << "index.html references missing " << ref;
    if (ref.rfind("figures/", 0) == 0) figures.insert(ref);
  }
  for (const std::string& figure : figures) {
    const std::string path = out + "/" + figure;
    if (fs::path(path).extension() == ".png") ExpectPng(path);
    if (fs::path(path).extension() == ".svg") ExpectSvg(path);
    EXPECT_TRUE(FileExists(path + ".manifest.json")) << figure;
    EXPECT_NE(md.find("(" + figure + ")"), std::string::npos) << "index.md lacks " << figure;
  }
  // What was discovered, one figure each.
  for (const std::string stem :
       {"error_cdf", "scatter_dvfs", "scatter_scaling", "scatter_gpmtool_dvfs",
        "scatter_gpmtool_scaling", "voltage_vs_frequency", "breakdown_default_pair",
        "util_corr_benchmarks_train", "util_corr_components_train", "constant_power_fits",
        "relative_power_pascal_vs_volta"}) {
    EXPECT_EQ(figures.count("figures/" + stem + ".png"), 1u) << stem;
    EXPECT_EQ(figures.count("figures/" + stem + ".svg"), 1u) << stem;
  }
  int vf = 0;
  for (const std::string& f : figures)
    vf += f.rfind("figures/vf_", 0) == 0 && fs::path(f).extension() == ".png";
  EXPECT_EQ(vf, 3);  // best, median, worst by MAPE
  EXPECT_NE(
      ReadFile(out + "/figures/voltage_vs_frequency.svg").find("alternating (gpmtool/model.json)"),
      std::string::npos);
  // Tables: metrics, parameters (units in the names), provenance.
  EXPECT_NE(html.find("dvfs, joint"), std::string::npos);
  EXPECT_NE(html.find("scaling, alternating"), std::string::npos);
  EXPECT_NE(html.find("component_w_per_mhz["), std::string::npos);
  EXPECT_NE(html.find("static_w[core]"), std::string::npos);
  EXPECT_NE(html.find(Sha256OfFile(run.train)), std::string::npos);
  EXPECT_NE(html.find("wattcal-accelwattch-model"), std::string::npos);  // noted, not drawn
  // The manifest of the index lists the inputs with their SHA-256.
  const nlohmann::json manifest =
      nlohmann::json::parse(ReadFile(out + "/index.html.manifest.json"));
  EXPECT_EQ(manifest["stage"], "report");
  bool has_train = false;
  for (const auto& input : manifest["inputs"]) has_train = has_train || input["path"] == run.train;
  EXPECT_TRUE(has_train);
}

// TPDS'19 Fig. 10C: one error-CDF curve per GPU, from several runs' predictions.
TEST(ReportStage, PredictionsOfOtherRunsJoinTheErrorCdfUnderTheirLabels) {
  WATTCAL_REQUIRE_GNUPLOT();
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  const std::string out = root + "/gpus";
  const CommandResult result =
      RunStage("wattcal-report", {"--out-dir", out, "--title", "Across GPUs", "--predictions",
                                  "GPU A=" + run.dir + "/predictions_dvfs.csv", "--predictions",
                                  "GPU B=" + run.dir + "/gpmtool/predictions_dvfs.csv", "-q"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string cdf = ReadFile(out + "/figures/error_cdf.svg");
  EXPECT_NE(cdf.find("GPU A (n = "), std::string::npos);
  EXPECT_NE(cdf.find("GPU B (n = "), std::string::npos);
  ExpectPng(out + "/figures/scatter_gpu_a.png");
  ExpectPng(out + "/figures/scatter_gpu_b.png");
  // Other runs' benchmarks are not drawn over the V-F pairs; no training corpus is guessed.
  const std::string html = ReadFile(out + "/index.html");
  EXPECT_EQ(html.find("figures/vf_"), std::string::npos);
  EXPECT_EQ(html.find("util_corr_"), std::string::npos);
}

TEST(ReportStage, RerunsAreByteIdentical) {
  WATTCAL_REQUIRE_GNUPLOT();
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  // The report written into the run folder itself, as Makefile.runs does.
  const std::vector<std::string> args = {"--run-dir", run.dir, "--benchmark", "app_03", "-q"};
  const CommandResult first = RunStage("wattcal-report", args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::map<std::string, std::string> before = Snapshot(run.dir);
  const CommandResult second = RunStage("wattcal-report", args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const std::map<std::string, std::string> after = Snapshot(run.dir);
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [path, bytes] : before) {
    ASSERT_TRUE(after.count(path)) << path;
    EXPECT_TRUE(after.at(path) == bytes) << path << " changed on the rerun";
  }
  EXPECT_TRUE(before.count("figures/vf_app_03.png"));
}

TEST(ReportStage, CollinearTrainingCorpusIsWarnedOnStderrAndInTheIndex) {
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  std::string csv = "benchmark,power_w,f_core_mhz,LDST,Shared,FP32\n";
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 20; ++i) {
    const double ldst = u(rng);
    csv += fmt::format("ub_{},{},1000,{},{},{}\n", i, 80.0 + 50.0 * ldst, ldst,
                       0.9 * ldst + 0.001 * (i % 3), u(rng));
  }
  const std::string collinear = WriteFile(root + "/collinear.csv", csv);
  const CommandResult result = RunStage(
      "wattcal-report",
      {"--run-dir", run.dir, "--out-dir", root + "/out", "--train", collinear, "--no-figures"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("training utilisations of " + collinear), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("LDST ~ Shared"), std::string::npos) << result.output;
  const std::string html = ReadFile(root + "/out/index.html");
  EXPECT_NE(html.find("Warning: the training utilisations do not separate"), std::string::npos);
  EXPECT_NE(html.find("LDST ~ Shared"), std::string::npos);
  // Without figures the page shows no image and names why.
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("--no-figures"), std::string::npos);
  for (const std::string& ref : LocalReferences(html)) {
    EXPECT_TRUE(fs::is_regular_file(root + "/out/" + ref)) << ref;
  }
}

TEST(ReportStage, BadInputExits2NamingFileLineFieldWithoutPartialOutput) {
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  // Line 3's measured_w (the 4th column) becomes "abc".
  std::vector<std::string> lines;
  std::stringstream in(ReadFile(run.dir + "/predictions_dvfs.csv"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GT(lines.size(), 3u);
  std::vector<std::string> fields;
  std::stringstream row(lines[2]);
  for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
  ASSERT_EQ(fields[3].empty(), false);
  fields[3] = "abc";
  lines[2] = fmt::format("{}", fmt::join(fields, ","));
  WriteFile(run.dir + "/predictions_dvfs.csv", fmt::format("{}\n", fmt::join(lines, "\n")));
  const std::string out = root + "/out";
  const CommandResult result = RunStage("wattcal-report", {"--run-dir", run.dir, "--out-dir", out});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("predictions_dvfs.csv:3"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("measured_w"), std::string::npos) << result.output;
  EXPECT_FALSE(FileExists(out + "/index.html"));
  EXPECT_FALSE(FileExists(out + "/figures/error_cdf.png"));
}

TEST(ReportStage, BadOptionsExit1NamingTheProblem) {
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  CommandResult r = RunStage("wattcal-report", {"--no-figures"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--run-dir"), std::string::npos) << r.output;
  r = RunStage("wattcal-report",
               {"--run-dir", run.dir, "--benchmark", "no_such_app", "--no-figures"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no_such_app"), std::string::npos) << r.output;
  r = RunStage("wattcal-report",
               {"--run-dir", run.dir, "--collinearity-pair-r", "2", "--no-figures"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("pair_threshold_abs_r = 2"), std::string::npos) << r.output;
  r = RunStage("wattcal-report",
               {"--run-dir", run.dir, "--model", "ref=" + root + "/missing.json", "--no-figures"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--model " + root + "/missing.json: no such file"), std::string::npos)
      << r.output;
  r = RunStage("wattcal-report", {"--run-dir", root + "/does_not_exist"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_FALSE(FileExists(run.dir + "/index.html"));
}

}  // namespace
}  // namespace wattcal
