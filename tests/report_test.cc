// wattcal-report: the multicollinearity diagnosis (closed-form cases), every figure (complete
// PNG and SVG of the column size, identical bytes on re-runs), and the stage end to end on a run
// folder made from the virtual GPU's truth (discovery, index pages whose links all resolve,
// manifests, byte-identical reruns, exit codes, no partial output); AccelWattch runs: the model
// section (factors against the virtual GPU's truth, orderings, fit, energies, fixed terms) and
// the figures of a breakdown CSV.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "accelwattch/activity.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_model.h"
#include "fit/identifiability.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "report/accelwattch_report.h"
#include "report/gnuplot_figure.h"
#include "report/report_figures.h"
#include "report/run_report.h"
#include "report/validation_plots.h"
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
using ::wattcal::testing::ExpectFigurePng;
using ::wattcal::testing::ExpectFigureSvg;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::HasProvenance;
using ::wattcal::testing::PngSize;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RecordStageRun;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

// Tolerance of closed-form checks on double arithmetic.
constexpr double kClosedFormRelTol = 1e-9;

const std::string kSpec = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json";

// Draws a figure twice and checks both files and that the second run gives the same bytes;
// returns the SVG text.
template <typename Draw>
std::string ExpectDeterministicFigure(const Draw& draw, const FigureSize& size = FigureSize()) {
  const std::string dir = ScratchDir();
  draw(dir + "/a.png", dir + "/a.svg");
  draw(dir + "/b.png", dir + "/b.svg");
  ExpectFigurePng(dir + "/a.png", size);
  ExpectFigureSvg(dir + "/a.svg", size);
  EXPECT_EQ(ReadFile(dir + "/a.png"), ReadFile(dir + "/b.png"));
  EXPECT_EQ(ReadFile(dir + "/a.svg"), ReadFile(dir + "/b.svg"));
  return ReadFile(dir + "/a.svg");
}

using ::wattcal::testing::CorpusFromColumns;
using ::wattcal::testing::Uniform;

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
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  const PowerModel joint = VirtualTruth();
  PowerModel alternating = joint;
  for (double& v : alternating.voltage_rel[0]) v = v < 1.0 ? v - 0.01 : v;
  PowerModel fixed = joint;
  fixed.method = FitMethod::kFixed;
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
  WATTCAL_REQUIRE_GNUPLOT("report figures");
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
  WATTCAL_REQUIRE_GNUPLOT("report figures");
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
  const std::string svg = ExpectDeterministicFigure(
      [&](const std::string& png, const std::string& s) {
        WriteBreakdownPlot(chart, "Breakdown", png, s);
      },
      BreakdownFigureSize(static_cast<int>(chart.bars.size()) +
                          2));  // the bars, the gap, the average
  EXPECT_NE(svg.find("Power (W)"), std::string::npos);
  EXPECT_NE(svg.find("average"), std::string::npos);
  EXPECT_NE(svg.find("static (core)"), std::string::npos);
}

TEST(ReportFigures, CorrelationHeatmapsOfBothKinds) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
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
  WATTCAL_REQUIRE_GNUPLOT("report figures");
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

// A run folder like Makefile.runs writes, from the virtual GPU's truth, each file recorded in
// provenance/ as its stage would: model/model.json (labelled joint) and model/alternating.json
// (other voltages), each validated in dvfs and scaling mode on the held-out applications
// (validation/dvfs/, validation/alternating-dvfs/, ...), the training corpus the models name, a
// constant-power result, an architecture comparison and a model file of another format.
struct RunFolder {
  std::string dir;
  std::string train;
  std::string heldout;
};

void WriteValidation(const PowerModel& model, const std::string& model_path, const Corpus& heldout,
                     PredictMode mode, const std::string& run_dir, const std::string& label) {
  const std::vector<PredictionRow> rows = PredictHeldout(model, heldout, mode);
  const std::string name = PredictModeName(mode);
  const std::string dir = run_dir + "/validation/" + label;
  WriteFile(dir + "/predictions.csv", PredictionsToCsv(rows));
  nlohmann::json metrics = MetricsToJson(ComputeValidationMetrics(rows), MetricsOptions());
  metrics["mode"] = name;
  metrics["model"] = model_path;
  metrics["measurements"] = heldout.path;
  metrics["title"] = "virtual GPU, " + name + " prediction";
  WriteFile(dir + "/metrics.json", metrics.dump(2) + "\n");
  RecordStageRun(run_dir, "validate",
                 {{dir + "/predictions.csv", "predictions"}, {dir + "/metrics.json", "metrics"}});
}

RunFolder MakeRunFolder(const std::string& root, unsigned seed) {
  RunFolder run;
  run.dir = root + "/run";
  for (const char* sub :
       {"/data/tidy", "/model", "/validation/dvfs", "/validation/scaling",
        "/validation/alternating-dvfs", "/validation/alternating-scaling", "/comparison"}) {
    fs::create_directories(run.dir + sub);
  }
  SyntheticSpec spec = ReadSyntheticSpec(kSpec);
  spec.heldout_applications = 10;
  const SyntheticCorpus corpus = GenerateSyntheticCorpus(spec, seed);
  run.train = WriteFile(run.dir + "/data/tidy/train.csv", CorpusToTidyCsv(corpus.train));
  run.heldout = WriteFile(run.dir + "/data/tidy/heldout.csv", CorpusToTidyCsv(corpus.heldout));
  RecordStageRun(run.dir, "ingest", {{run.train, ""}, {run.heldout, ""}});
  const Corpus heldout = ReadCorpus(run.heldout);

  PowerModel joint = corpus.truth;
  joint.fit.solver = ModelSolver::kJoint;
  joint.fit.converged = true;
  joint.trained_on = run.train;
  PowerModel alternating = joint;
  alternating.fit.solver = ModelSolver::kAlternating;
  for (double& v : alternating.voltage_rel[0]) v = v < 1.0 ? v - 0.01 : v;
  const std::string joint_path = WriteFile(run.dir + "/model/model.json", ModelToJson(joint));
  const std::string alt_path =
      WriteFile(run.dir + "/model/alternating.json", ModelToJson(alternating));
  RecordStageRun(run.dir, "calibrate", {{joint_path, "model"}});
  RecordStageRun(run.dir, "calibrate", {{alt_path, "model"}});
  for (PredictMode mode : {PredictMode::kDvfs, PredictMode::kScaling}) {
    WriteValidation(joint, joint_path, heldout, mode, run.dir, PredictModeName(mode));
    WriteValidation(alternating, alt_path, heldout, mode, run.dir,
                    std::string("alternating-") + PredictModeName(mode));
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
  RecordStageRun(run.dir, "constant",
                 {{WriteFile(run.dir + "/model/CONSTANT.json", constant.dump(2) + "\n"), ""}});
  nlohmann::json compare = {
      {"arch_a", "Volta"}, {"arch_b", "Pascal"}, {"per_workload", nlohmann::json::array()}};
  for (int i = 0; i < 4; ++i) {
    compare["per_workload"].push_back({{"workload", "k" + std::to_string(i)},
                                       {"estimated_rel_pct", -20.0 + 10.0 * i},
                                       {"measured_rel_pct", -18.0 + 9.0 * i},
                                       {"same_direction", true}});
  }
  // Found by content.
  RecordStageRun(run.dir, "compare",
                 {{WriteFile(run.dir + "/comparison/pascal_vs_volta.json", compare.dump(2) + "\n"),
                   "comparison"}});
  RecordStageRun(run.dir, "calibrate",
                 {{WriteFile(run.dir + "/model/accelwattch_model.json",
                             "{\"format\": \"wattcal-accelwattch-model\", \"version\": 1}\n"),
                   "model"}});
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
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  const std::string out = root + "/report";
  const CommandResult result = RunStage(
      "wattcal-report",
      {"--run-dir", run.dir, "--out-dir", out, "--title", "Virtual GPU", "--benchmark-heatmap"});
  ASSERT_EQ(result.exit_code, 0) << result.output;

  const std::string html = ReadFile(out + "/index.html");
  const std::string md = ReadFile(out + "/index.md");
  ASSERT_FALSE(html.empty());
  ASSERT_FALSE(md.empty());
  EXPECT_TRUE(HasProvenance(out + "/index.html"));
  EXPECT_TRUE(HasProvenance(out + "/index.md"));

  // Every reference resolves; every figure is a complete PNG/SVG with its manifest.
  const std::vector<std::string> refs = LocalReferences(html);
  std::set<std::string> figures;
  for (const std::string& ref : refs) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + ref)) << "index.html references missing " << ref;
    if (ref.rfind("figures/", 0) == 0) figures.insert(ref);
  }
  for (const std::string& figure : figures) {
    const std::string path = out + "/" + figure;
    // Complete, and the SVG the same size as its PNG twin (sizes differ by figure).
    if (fs::path(path).extension() == ".png") ExpectFigurePng(path, PngSize(path));
    if (fs::path(path).extension() == ".svg") {
      ExpectFigureSvg(path, PngSize(fs::path(path).replace_extension(".png").string()));
    }
    EXPECT_TRUE(HasProvenance(path)) << figure;
    EXPECT_NE(md.find("(" + figure + ")"), std::string::npos) << "index.md lacks " << figure;
  }
  // What was discovered, one figure each.
  for (const std::string stem :
       {"error_cdf", "scatter_dvfs", "scatter_scaling", "scatter_alternating_dvfs",
        "scatter_alternating_scaling", "voltage_vs_frequency", "breakdown_default_pair",
        "util_corr_benchmarks_train", "util_corr_components_train", "constant_power_fits",
        "relative_power_pascal_vs_volta"}) {
    EXPECT_EQ(figures.count("figures/" + stem + ".png"), 1u) << stem;
    EXPECT_EQ(figures.count("figures/" + stem + ".svg"), 1u) << stem;
  }
  // Every validation has its per-workload error chart and table; the table's rows are the
  // predictions CSV's workloads, worst first, with their mean measured and predicted power and
  // mean signed and absolute error.
  for (const std::string stem :
       {"workload_errors_dvfs", "workload_errors_scaling", "workload_errors_alternating_dvfs",
        "workload_errors_alternating_scaling"}) {
    EXPECT_EQ(figures.count("figures/" + stem + ".png"), 1u) << stem;
    EXPECT_EQ(figures.count("figures/" + stem + ".svg"), 1u) << stem;
  }
  EXPECT_NE(ReadFile(out + "/figures/workload_errors_dvfs.svg").find("Prediction error (%)"),
            std::string::npos);
  {
    struct Sums {
      int n = 0;
      double m = 0, p = 0, e = 0, a = 0;
    };
    std::map<std::string, Sums> sums;
    for (const PredictionRow& r :
         ReadPredictionsCsv(run.dir + "/validation/dvfs/predictions.csv")) {
      Sums& s = sums[r.benchmark];
      const double e = 100.0 * (r.predicted_w - r.measured_w) / r.measured_w;
      ++s.n;
      s.m += r.measured_w;
      s.p += r.predicted_w;
      s.e += e;
      s.a += std::abs(e);
    }
    ASSERT_GE(sums.size(), 2u);
    const size_t table =
        html.find("<h4>dvfs, joint: " + std::to_string(sums.size()) + " workloads</h4>");
    ASSERT_NE(table, std::string::npos) << "no per-workload section for dvfs, joint";
    double previous_abs = std::numeric_limits<double>::infinity();
    size_t previous_at = table;
    for (int k = 0; k < static_cast<int>(sums.size()); ++k) {
      // The next row of the table is the remaining workload with the largest |error|.
      auto worst = std::max_element(sums.begin(), sums.end(), [](const auto& x, const auto& y) {
        return std::abs(x.second.e / x.second.n) < std::abs(y.second.e / y.second.n);
      });
      const Sums& s = worst->second;
      const std::string row = fmt::format(
          "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2f}</td><td class=\"n\">"
          "{:.2f}</td><td class=\"n\">{:+.2f}</td><td class=\"n\">{:.2f}</td><td class=\"n\">"
          "{:.2f}</td>",
          worst->first, s.n, s.m / s.n, s.p / s.n, s.e / s.n, std::abs(s.e / s.n), s.a / s.n);
      const size_t at = html.find(row, table);
      ASSERT_NE(at, std::string::npos) << row;
      EXPECT_GT(at, previous_at) << worst->first << " out of order";
      EXPECT_LE(std::abs(s.e / s.n), previous_abs);
      previous_abs = std::abs(s.e / s.n);
      previous_at = at;
      sums.erase(worst);
    }
  }
  int vf = 0;
  for (const std::string& f : figures)
    vf += f.rfind("figures/vf_", 0) == 0 && fs::path(f).extension() == ".png";
  EXPECT_EQ(vf, 3);  // best, median, worst by MAPE
  EXPECT_NE(ReadFile(out + "/figures/voltage_vs_frequency.svg")
                .find("alternating (model/alternating.json)"),
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
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(out + "/index.html")));
  EXPECT_EQ(manifest["stage"], "report");
  bool has_train = false;
  for (const auto& input : manifest["inputs"]) has_train = has_train || input["path"] == run.train;
  EXPECT_TRUE(has_train);
}

// TPDS'19 Fig. 10C: one error-CDF curve per GPU, from several runs' predictions.
TEST(ReportStage, PredictionsOfOtherRunsJoinTheErrorCdfUnderTheirLabels) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  const std::string out = root + "/gpus";
  const CommandResult result =
      RunStage("wattcal-report",
               {"--out-dir", out, "--title", "Across GPUs", "--predictions",
                "GPU A=" + run.dir + "/validation/dvfs/predictions.csv", "--predictions",
                "GPU B=" + run.dir + "/validation/alternating-dvfs/predictions.csv", "-q"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string cdf = ReadFile(out + "/figures/error_cdf.svg");
  EXPECT_NE(cdf.find("GPU A (n = "), std::string::npos);
  EXPECT_NE(cdf.find("GPU B (n = "), std::string::npos);
  ExpectFigurePng(out + "/figures/scatter_gpu_a.png", ScatterFigureSize());
  ExpectFigurePng(out + "/figures/scatter_gpu_b.png", ScatterFigureSize());
  // Other runs' benchmarks are not drawn over the V-F pairs; no training corpus is guessed.
  const std::string html = ReadFile(out + "/index.html");
  EXPECT_EQ(html.find("figures/vf_"), std::string::npos);
  EXPECT_EQ(html.find("util_corr_"), std::string::npos);
}

// The cells of the report's validation table in index.md, by column name, one map per row.
std::vector<std::map<std::string, std::string>> ValidationTable(const std::string& md) {
  std::vector<std::map<std::string, std::string>> rows;
  std::istringstream in(md);
  std::vector<std::string> header;
  auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
        out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    return out;
  };
  for (std::string line; std::getline(in, line);) {
    if (header.empty()) {
      if (line.rfind("| Validation | Points | MAPE (%) |", 0) == 0) header = cells(line);
      continue;
    }
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    const std::vector<std::string> c = cells(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < c.size(); ++i) row[header[i]] = c[i];
    rows.push_back(row);
  }
  return rows;
}

// The report's validation table shows each validation's own metrics.json, column by column (a
// MAPE column showing the maximum error went unnoticed: no test read a report's content).
TEST(ReportStage, ValidationTableCellsAreThoseOfEachMetricsFile) {
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, SeedFromTestName());
  const CommandResult result = RunStage("wattcal-report", {"--run-dir", run.dir, "--no-figures"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<std::map<std::string, std::string>> rows =
      ValidationTable(ReadFile(run.dir + "/index.md"));
  ASSERT_EQ(rows.size(), 4u);
  const std::regex metrics_link("\\[metrics\\]\\(([^)]*)\\)");
  for (const auto& row : rows) {
    std::smatch m;
    const std::string files = row.at("Files");
    ASSERT_TRUE(std::regex_search(files, m, metrics_link)) << files;
    const nlohmann::json metrics = nlohmann::json::parse(ReadFile(run.dir + "/" + m[1].str()));
    auto fixed = [&](const char* key, int digits) {
      return fmt::format("{:.{}f}", metrics[key].get<double>(), digits);
    };
    ASSERT_NE(metrics["mape_pct"], metrics["max_ape_pct"]);  // the columns can be told apart
    EXPECT_EQ(row.at("MAPE (%)"), fixed("mape_pct", 2)) << m[1];
    EXPECT_EQ(row.at("Max APE (%)"), fixed("max_ape_pct", 2)) << m[1];
    EXPECT_EQ(row.at("Bias (%)"), fixed("mean_error_pct", 2)) << m[1];
    EXPECT_EQ(row.at("RMSE (W)"), fixed("rmse_w", 2)) << m[1];
    EXPECT_EQ(row.at("Pearson r"), fixed("pearson_r", 4)) << m[1];
    EXPECT_EQ(row.at("Points"), std::to_string(metrics["points"].get<int>())) << m[1];
  }
}

TEST(ReportStage, RerunsAreByteIdentical) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
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
  std::stringstream in(ReadFile(run.dir + "/validation/dvfs/predictions.csv"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GT(lines.size(), 3u);
  std::vector<std::string> fields;
  std::stringstream row(lines[2]);
  for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
  ASSERT_EQ(fields[3].empty(), false);
  fields[3] = "abc";
  lines[2] = fmt::format("{}", fmt::join(fields, ","));
  WriteFile(run.dir + "/validation/dvfs/predictions.csv",
            fmt::format("{}\n", fmt::join(lines, "\n")));
  // As a stage would have written it (an output edited after its stage is refused before it is
  // read: provenance_test.cc).
  RecordStageRun(run.dir, "validate",
                 {{run.dir + "/validation/dvfs/predictions.csv", "predictions"},
                  {run.dir + "/validation/dvfs/metrics.json", "metrics"}});
  const std::string out = root + "/out";
  const CommandResult result = RunStage("wattcal-report", {"--run-dir", run.dir, "--out-dir", out});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("validation/dvfs/predictions.csv:3"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("measured_w"), std::string::npos) << result.output;
  EXPECT_FALSE(FileExists(out + "/index.html"));
  EXPECT_FALSE(FileExists(out + "/figures/error_cdf.png"));
}

TEST(ReportStage, AModelThatWasNotFittedShowsDashesNotAStaleSolverStatus) {
  const std::string root = ScratchDir();
  const RunFolder run = MakeRunFolder(root, 7);
  // A truth model: no solver run, no training rows.
  SyntheticSpec spec = ReadSyntheticSpec(kSpec);
  PowerModel truth = GenerateSyntheticCorpus(spec, 7).truth;
  truth.fit = FitReport();
  truth.fit.solver = ModelSolver::kTruth;
  truth.fit.converged = false;
  const std::string truth_path = WriteFile(root + "/truth_model.json", ModelToJson(truth));
  const std::string out = root + "/out";
  const CommandResult r = RunStage(
      "wattcal-report",
      {"--run-dir", run.dir, "--out-dir", out, "--model", "truth=" + truth_path, "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = ReadFile(out + "/index.md");
  const size_t row = md.find("| converged |");
  ASSERT_NE(row, std::string::npos) << md;
  const std::string line = md.substr(row, md.find('\n', row) - row);
  EXPECT_EQ(line.find("NO"), std::string::npos) << line;
  EXPECT_NE(line.find("yes"), std::string::npos) << line;  // the fitted models
  EXPECT_EQ(line.substr(line.size() - 5), "– |") << line;  // the truth: a dash
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
  testing::ExpectRefused(r, 1, {root + "/does_not_exist"},
                         {run.dir + "/index.html", root + "/does_not_exist"});
}

// ---- AccelWattch runs ------------------------------------------------------------------------

// Three components: A counts two events, B one, M follows the memory clock; E-hat at 1000 MHz.
const char* kAwEnergies = R"({
  "format": "wattcal-accelwattch-energies", "version": 1, "about": "report test",
  "reference_f_core_mhz": 1000,
  "components": [
    {"component": "A", "events": ["a1", "a2"], "energy_per_event_pj": 2.0, "clock": "core", "voltage_scaled": true},
    {"component": "B", "events": ["b"], "energy_per_event_pj": 10.0, "clock": "core", "voltage_scaled": false},
    {"component": "M", "events": ["m"], "energy_per_event_pj": 5.0, "clock": "memory", "voltage_scaled": false}
  ]
}
)";
const char* kAwStatic = R"({
  "reference_f_core_mhz": 1000.0, "num_sms": 10, "warp_size": 32, "half_warp_lanes": 16,
  "categories": {
    "int": {"status": "ok", "chosen_model": "half_warp",
            "half_warp": {"p_static_first_lane_w": 5.0, "p_static_add_lane_w": 0.5}},
    "int_fp": {"status": "ok", "chosen_model": "linear",
               "linear": {"p_static_first_lane_w": 6.0, "p_static_add_lane_w": 0.25}}
  }
})";
// Core clocks the breakdown evaluates every kernel at; the kernels were measured at 1000.
const std::vector<double> kAwClocksMhz = {700.0, 1000.0, 1300.0};

struct AccelWattchRun {
  std::string dir, model, breakdown, truth;
  AccelWattchModel m;
};

// A run folder as Makefile.runs' volta-dynamic writes it: model.json (a whole AccelWattch Eq. 12
// model with A tied to B by an ordering and M at its lower bound), train/truth_accelwattch.json and
// breakdown.csv (wattcal-predict --breakdown's writer) of 5 benchmarks, 6 kernels.
AccelWattchRun MakeAccelWattchRun(const std::string& root) {
  AccelWattchRun run;
  run.dir = root + "/run";
  const std::string terms = root + "/terms";  // outside the run: not discovered
  fs::create_directories(run.dir + "/train");
  fs::create_directories(terms);
  AccelWattchModel& m = run.m;
  m.components = {"A", "B", "M"};
  m.x = {1.6, 1.6, 0.001};
  m.lower_bound = {0.001, 0.001, 0.001};
  m.upper_bound = {1000.0, 1000.0, 1000.0};
  m.prior_x = {1.0, 1.0, 1.0};
  m.orderings = {Ordering{"A", "B", "", 0}};
  m.dropped_orderings = {DroppedOrdering{Ordering{"B", "M", "", 0}, "test: dropped on purpose"}};
  m.trained_on = WriteFile(run.dir + "/train/activity.csv", "kernel\nnot read by the report\n");
  m.training_kernels = {"k1", "k2", "k3", "k4"};
  AccelWattchStartReport ones;
  ones.name = "ones";
  ones.run = true;
  ones.converged = true;
  ones.iterations = 7;
  ones.initial_cost = 0.25;
  ones.final_cost = 0.0125;
  ones.train_mape_pct = 3.5;
  ones.termination = "Function tolerance reached.";
  ones.x_start = {1.0, 1.0, 1.0};
  ones.x = m.x;
  AccelWattchStartReport prior;
  prior.name = "prior";
  prior.termination = "not run: no prior model given";
  m.fit.prior_source = "x = 1";
  m.fit.starts = {ones, prior};
  m.fit.kept_start = "ones";
  m.fit.converged = true;
  m.fit.final_cost = 0.0125;
  m.fit.train_kernels = 4;
  m.fit.train_mape_pct = 3.5;
  m.fit.train_max_ape_pct = 6.25;
  m.fit.train_rmse_w = 1.5;
  m.fit.train_pearson_r = 0.99;
  m.has_terms = true;
  m.energies = ReadAccelWattchEnergies(WriteFile(terms + "/energies.json", kAwEnergies));
  m.fixed = ReadAccelWattchFixedTerms(
      WriteFile(terms + "/constant.json", R"({"p_const_w": 30.0})"),
      WriteFile(terms + "/static.json", kAwStatic),
      WriteFile(terms + "/idle.json", R"({"f_core_mhz": 1000.0, "p_idle_sm_w": 0.2})"), "int");
  run.model = WriteFile(run.dir + "/model.json", AccelWattchModelToJson(m));
  run.truth = WriteFile(run.dir + "/train/truth_accelwattch.json",
                        R"({"name": "virtual", "expected_scaling_factors": )"
                        R"({"A": 1.5, "B": 2.0, "M": 0.5}})"
                        "\n");

  ActivityTable activity;
  activity.path = run.dir + "/heldout.csv";
  const std::vector<std::tuple<std::string, std::string, int, int, double>> kernels = {
      // benchmark, category, active SMs, lanes, events scale
      {"INT_ADD", "int", 10, 32, 1.0},   {"INT_ADD", "int", 5, 16, 0.5},
      {"FP_MIX", "int_fp", 10, 32, 2.0}, {"MEMORY", "int", 8, 32, 0.2},
      {"SLEEP", "int", 10, 8, 0.05},     {"TENSOR", "int_fp", 10, 24, 1.5}};
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& [benchmark, category, sms, lanes, scale] = kernels[i];
    KernelActivity k;
    k.kernel = fmt::format("{}_sm{}_l{}", benchmark, sms, lanes);
    k.benchmark = benchmark;
    k.category = category;
    k.active_sms = sms;
    k.lanes_per_warp = lanes;
    k.f_core_mhz = 1000.0;
    k.f_mem_mhz = 850.0;
    k.elapsed_s = 1.0;
    k.launches = 1;
    k.events = {{"a1", scale * 1e12},
                {"a2", scale * 4e11},
                {"b", scale * 1e11},
                {"m", benchmark == "MEMORY" ? 2e12 : scale * 1e10}};
    k.line = static_cast<int64_t>(i) + 2;
    activity.kernels.push_back(k);
  }
  const std::vector<AccelWattchPrediction> predictions =
      PredictAccelWattchActivity(m, activity, kAwClocksMhz, {});
  // "Measure" each kernel at its own pair 2% above the model.
  for (size_t i = 0; i < activity.kernels.size(); ++i) {
    for (const AccelWattchPrediction& p : predictions) {
      if (p.kernel == static_cast<int>(i) && p.at_measured_pair) {
        activity.kernels[i].mean_power_w = 1.02 * p.breakdown.total_w();
      }
    }
  }
  run.breakdown = WriteFile(run.dir + "/breakdown.csv",
                            AccelWattchPredictionsToCsv(m, activity, predictions, true));
  RecordStageRun(run.dir, "synth", {{run.truth, ""}});
  RecordStageRun(run.dir, "calibrate", {{run.model, "model"}});
  RecordStageRun(run.dir, "predict", {{run.breakdown, ""}});
  return run;
}

TEST(ReportAccelWattch, BreakdownCsvIsRecognisedByItsHeaderAndReadBack) {
  const AccelWattchRun run = MakeAccelWattchRun(ScratchDir());
  ASSERT_EQ(ReadAccelWattchModel(run.model).components, run.m.components);
  EXPECT_TRUE(LooksLikeAccelWattchBreakdownCsv(run.breakdown));
  EXPECT_FALSE(LooksLikeAccelWattchBreakdownCsv(run.m.trained_on));
  EXPECT_FALSE(LooksLikeAccelWattchBreakdownCsv(run.dir + "/missing.csv"));
  const AccelWattchBreakdownTable t = ReadAccelWattchBreakdownCsv(run.breakdown);
  EXPECT_EQ(t.components, (std::vector<std::string>{"A", "B", "M"}));
  ASSERT_EQ(t.rows.size(), 6u * kAwClocksMhz.size());
  for (const AccelWattchBreakdownRow& row : t.rows) {
    double dynamic = 0.0;
    for (double w : row.component_w) dynamic += w;
    EXPECT_NEAR(dynamic, row.dynamic_w, 1e-5) << row.kernel;  // the CSV's 6 decimals
    EXPECT_NEAR(row.const_w + row.static_w + row.idle_w + row.dynamic_w, row.predicted_w, 1e-5);
    EXPECT_EQ(std::isfinite(row.measured_w), row.f_core_mhz == 1000.0) << row.kernel;
  }

  // Per clock: the mean of every term; the measured kernels' MAPE is the 2% they were set off.
  const std::vector<ClockSplit> splits = SplitByCoreClock(t);
  ASSERT_EQ(splits.size(), 3u);
  double const_w = 0.0, dynamic_w = 0.0;
  for (const AccelWattchBreakdownRow& row : t.rows) {
    if (row.f_core_mhz != 1300.0) continue;
    const_w += row.const_w / 6.0;
    dynamic_w += row.dynamic_w / 6.0;
  }
  EXPECT_EQ(splits[2].f_core_mhz, 1300.0);
  EXPECT_EQ(splits[2].kernels, 6);
  EXPECT_NEAR(splits[2].const_w, const_w, kClosedFormRelTol * const_w);
  EXPECT_NEAR(splits[2].dynamic_w, dynamic_w, kClosedFormRelTol * dynamic_w);
  EXPECT_EQ(splits[0].measured_kernels, 0);
  EXPECT_TRUE(std::isnan(splits[0].mape_pct));
  EXPECT_EQ(splits[1].measured_kernels, 6);
  EXPECT_NEAR(splits[1].mape_pct, 100.0 * 0.02 / 1.02, 1e-3);
  // The energy estimates' clock when evaluated, else the clock the kernels were measured at.
  std::string why;
  EXPECT_EQ(ChooseReferenceClock(t, 1000.0, &why), 1000.0);
  EXPECT_EQ(why, "the energy estimates' reference clock");
  EXPECT_EQ(ChooseReferenceClock(t, 1447.0, &why), 1000.0);
  EXPECT_EQ(why, "the clock most kernels were measured at");

  // Per benchmark at 1000 MHz: 5 benchmarks, 3 drawn (lowest, median, highest dynamic power),
  // then the mean over all 6 kernels.
  size_t total = 0;
  const BreakdownChart chart = DynamicByBenchmarkChart(t, 1000.0, 3, &total);
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(chart.bars.size(), 3u);
  EXPECT_EQ(chart.bars.front().label, "SLEEP");
  EXPECT_EQ(chart.terms, (std::vector<std::string>{"A", "B", "M"}));
  ASSERT_EQ(chart.average_term_w.size(), 3u);
  double mean_a = 0.0;
  for (const AccelWattchBreakdownRow& row : t.rows)
    if (row.f_core_mhz == 1000.0) mean_a += row.component_w[0] / 6.0;
  EXPECT_NEAR(chart.average_term_w[0], mean_a, kClosedFormRelTol * mean_a);
  EXPECT_THROW(DynamicByBenchmarkChart(t, 900.0, 3), std::invalid_argument);

  // Errors name FILE:LINE and the column.
  const std::string dir = ScratchDir();
  const std::string header =
      "kernel,benchmark,f_core_mhz,predicted_w,measured_w,const_w,static_w,"
      "idle_w,dynamic_w,A_w\n";
  try {
    ReadAccelWattchBreakdownCsv(WriteFile(dir + "/bad.csv", header + "k,b,1000,40,,30,5,1,x,4\n"));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dynamic_w"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadAccelWattchBreakdownCsv(WriteFile(dir + "/empty.csv", header)), InputError);
}

TEST(ReportAccelWattch, RunFolderGetsTheModelSectionAndBreakdownFigures) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  const std::string root = ScratchDir();
  const AccelWattchRun run = MakeAccelWattchRun(root);
  const std::string out = root + "/report";
  const CommandResult result =
      RunStage("wattcal-report", {"--run-dir", run.dir, "--out-dir", out, "--title", "AW", "-q"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string html = ReadFile(out + "/index.html");
  const std::string md = ReadFile(out + "/index.md");

  // The model: factors with the truth's and the error, the notes of a bound and a tie.
  EXPECT_NE(md.find("## AccelWattch model\n"), std::string::npos);
  EXPECT_NE(md.find("| Component | x | Lower bound | Upper bound | Prior x | True x | Error (%) | "
                    "Note |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| A | 1.6000 | 0.001 | 1000 | 1 | 1.5000 | 6.67 | tied: A \\<= B |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| B | 1.6000 | 0.001 | 1000 | 1 | 2.0000 | -20.00 | tied: A \\<= B |"),
            std::string::npos);
  EXPECT_NE(md.find("| M | 0.0010 | 0.001 | 1000 | 1 | 0.5000 | -99.80 | at lower bound |"),
            std::string::npos);
  EXPECT_NE(md.find("train/truth_accelwattch.json`"), std::string::npos);
  EXPECT_NE(html.find("enforced: A &lt;= B (AccelWattch Eq. 14)"), std::string::npos);
  EXPECT_NE(html.find("dropped: B &lt;= M (AccelWattch Eq. 14): test: dropped on purpose."),
            std::string::npos);
  // The fit, the energies, the fixed terms, the sources.
  EXPECT_NE(md.find("| ones (kept) | converged | 7 | 0.25 | 0.0125 | 3.500 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| prior | not run |"), std::string::npos);
  EXPECT_NE(md.find("| ones | yes | 4 | 3.500 | 6.25 | 1.500 | 0.99000 | 0 |"), std::string::npos);
  EXPECT_NE(md.find("| A | `a1, a2` | 2 | 3.2 | core | yes |"), std::string::npos);
  EXPECT_NE(md.find("| M | `m` | 5 | 0.005 | memory | no |"), std::string::npos);
  EXPECT_NE(md.find("P\\_const = 30.000 W"), std::string::npos);
  // int: AccelWattch Eq. 5 at 32 lanes, 5 + 0.5 * (15 + 2 * 16 / 2 ... ) as StaticAllSmsW computes.
  const double int_all_w = AccelWattchFixedTerms::StaticAllSmsW(run.m.fixed.categories[0], 32, 16);
  EXPECT_NE(md.find(fmt::format("| int (default) | half\\_warp (Eq. 5) | 5.000 | 0.5000 | {:.2f} |",
                                int_all_w)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| int\\_fp | linear (Eq. 4) | 6.000 | 0.2500 | 13.75 |"), std::string::npos);
  EXPECT_NE(md.find("One idle SM draws 0.2000 W at 1000 MHz"), std::string::npos);
  EXPECT_NE(md.find("Voltage model: V proportional to f\\_core"), std::string::npos);
  for (const std::string file : {"energies.json", "constant.json", "static.json", "idle.json"}) {
    EXPECT_NE(html.find("../terms/" + file + "\""), std::string::npos) << file;
  }
  EXPECT_EQ(md.find("not a wattcal power model"), std::string::npos);
  EXPECT_EQ(md.find("no model: no power breakdown"), std::string::npos);

  // The breakdown: a row per clock, both figures.
  EXPECT_NE(md.find("## AccelWattch power breakdown\n"), std::string::npos);
  EXPECT_NE(md.find("| 1000 | 6 | 30.00 |"), std::string::npos) << md;
  std::set<std::string> figures;
  for (const std::string& ref : LocalReferences(html)) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + ref)) << "index.html references missing " << ref;
    if (ref.rfind("figures/", 0) == 0) figures.insert(ref);
  }
  for (const std::string stem :
       {"accelwattch_power_vs_clock", "accelwattch_dynamic_by_component"}) {
    for (const std::string ext : {".png", ".svg"}) {
      const std::string figure = "figures/" + stem + ext;
      EXPECT_EQ(figures.count(figure), 1u) << figure;
      EXPECT_NE(md.find("(" + figure + ")"), std::string::npos) << "index.md lacks " << figure;
      EXPECT_TRUE(HasProvenance(out + "/" + figure)) << figure;
    }
    ExpectFigurePng(out + "/figures/" + stem + ".png");
    ExpectFigureSvg(out + "/figures/" + stem + ".svg");
  }
  const std::string clocks = ReadFile(out + "/figures/accelwattch_power_vs_clock.svg");
  for (const std::string text : {"Core clock (MHz)", "700", "1300", "constant",
                                 "static (active SMs)", "idle SMs", "dynamic"}) {
    EXPECT_NE(clocks.find(">" + text + "<"), std::string::npos) << text;
  }
  const std::string components = ReadFile(out + "/figures/accelwattch_dynamic_by_component.svg");
  for (const std::string text : {"INT_ADD", "MEMORY", "SLEEP", "TENSOR", "all kernels", "A", "M"}) {
    EXPECT_NE(components.find(">" + text + "<"), std::string::npos) << text;
  }
  EXPECT_NE(components.find("AW: Dynamic power by component at 1000 MHz"), std::string::npos);
}

TEST(ReportAccelWattch, RerunsAreByteIdenticalAndTheTruthIsShownOnlyWhenPresent) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  const std::string root = ScratchDir();
  const AccelWattchRun run = MakeAccelWattchRun(root);
  const std::vector<std::string> args = {"--run-dir", run.dir, "-q"};
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
  EXPECT_TRUE(before.count("figures/accelwattch_power_vs_clock.png"));
  EXPECT_NE(before.at("index.md").find("| True x |"), std::string::npos);

  fs::remove(run.truth);
  const std::string out = root + "/no_truth";
  const CommandResult third =
      RunStage("wattcal-report", {"--run-dir", run.dir, "--out-dir", out, "--no-figures", "-q"});
  ASSERT_EQ(third.exit_code, 0) << third.output;
  const std::string md = ReadFile(out + "/index.md");
  EXPECT_NE(md.find("## AccelWattch model"), std::string::npos);
  EXPECT_EQ(md.find("True x"), std::string::npos);
  EXPECT_NE(md.find("| A | 1.6000 | 0.001 | 1000 | 1 | tied: A \\<= B |"), std::string::npos) << md;
}

TEST(ReportFigures, BreakdownKeepsTheLargestBarsAndDrawsTheBoardLimit) {
  WATTCAL_REQUIRE_GNUPLOT("report figures");
  BreakdownChart chart;
  chart.terms = {"static", "A"};
  chart.grey_terms = 1;
  const double totals[] = {300.0, 650.0, 200.0, 705.0, 400.0};
  for (int i = 0; i < 5; ++i) {
    BreakdownBar b;
    b.label = "b" + std::to_string(i);
    b.term_w = {100.0, totals[i] - 100.0};
    b.measured_w = totals[i] + 10.0;
    chart.bars.push_back(b);
  }
  const std::vector<double> average = AverageBreakdown(chart);
  KeepLargestBars(&chart, 3);
  ASSERT_EQ(chart.bars.size(), 3u);
  EXPECT_EQ(chart.bars[0].label, "b1");  // the two largest, in their order
  EXPECT_EQ(chart.bars[1].label, "b3");
  EXPECT_EQ(chart.bars[2].label, "the other 3 (mean)");
  EXPECT_DOUBLE_EQ(chart.bars[2].term_w[1], (200.0 + 100.0 + 300.0) / 3.0);
  EXPECT_DOUBLE_EQ(chart.bars[2].measured_w, (310.0 + 210.0 + 410.0) / 3.0);
  EXPECT_EQ(chart.average_term_w, average);  // the average bar still averages all five
  // The board limit as a line.
  chart.limit_w = 700.0;
  const std::string svg =
      ExpectDeterministicFigure([&](const std::string& png, const std::string& s) {
        WriteBreakdownPlot(chart, "Limit", png, s);
      });
  EXPECT_NE(svg.find("board limit 700 W"), std::string::npos);
}

}  // namespace
}  // namespace wattcal
