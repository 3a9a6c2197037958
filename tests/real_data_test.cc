// wattcal on the real measurements of ../shared/datasets (read there, never copied):
// gpmTOOL's published models and validation figures, and the targets wattcal must beat.
// Every test skips with a clear message when the datasets are absent.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "test_support.h"
#include "crossval/cross_validation.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {
namespace {

using testing::Dataset;

std::string Gpmtool(const std::string& relative) { return Dataset("gpmtool_tpds2019/" + relative); }

double Mape(const std::vector<PredictionRow>& rows) { return ComputeErrorMetrics(rows).mape_pct; }

CalibrationOptions Alternating() {
  CalibrationOptions o;
  o.solver = FitSolver::kAlternating;
  o.loss = FitLoss::kL2;
  o.residual = FitResidual::kAbsolute;
  return o;
}

// Every coefficient and voltage of `a` within `tolerance` (relative) of `b`.
void ExpectModelsAgree(const PowerModel& a, const PowerModel& b, double tolerance) {
  const std::vector<double> x = a.Coefficients(), y = b.Coefficients();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::abs(x[i] - y[i]), tolerance * std::abs(y[i]))
        << "coefficient " << i << ": " << x[i] << " vs " << y[i];
  }
  ASSERT_EQ(a.voltage_rel.size(), b.voltage_rel.size());
  for (size_t d = 0; d < a.voltage_rel.size(); ++d) {
    ASSERT_EQ(a.freq_levels_mhz[d], b.freq_levels_mhz[d]);
    for (size_t j = 0; j < a.voltage_rel[d].size(); ++j) {
      EXPECT_LE(std::abs(a.voltage_rel[d][j] - b.voltage_rel[d][j]),
                tolerance * b.voltage_rel[d][j])
          << "domain " << d << " level " << a.freq_levels_mhz[d][j] << " MHz";
    }
  }
}

class TitanX : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::DatasetsDir().empty()) return;
    train_ = new Corpus(ReadCorpus(Gpmtool("gtx_titan_x/train_micro_dvfs_11comp.csv")));
    heldout_ = new Corpus(ReadCorpus(Gpmtool("gtx_titan_x/DERIVED_real_power_allF_11comp.csv")));
    reference_ = new PowerModel(ReadModel(Gpmtool("gtx_titan_x/ref_model_dvfs_11comp.csv")));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete heldout_;
    delete reference_;
  }
  void SetUp() override { WATTCAL_REQUIRE_DATASETS(); }

  static Corpus* train_;
  static Corpus* heldout_;
  static PowerModel* reference_;
};
Corpus* TitanX::train_ = nullptr;
Corpus* TitanX::heldout_ = nullptr;
PowerModel* TitanX::reference_ = nullptr;

// Certified values: gpmTOOL v2.0 run side by side on these files gives DVFS 6.17%,
// scaling 4.59%, fixed 5.18% (../shared/datasets/README.md, "Peer check"). Our prediction
// and metric code applied to the authors' own model files must give the same.
TEST_F(TitanX, AuthorsModelsGiveGpmtoolsValidationFigures) {
  EXPECT_NEAR(Mape(PredictHeldout(*reference_, *heldout_, PredictMode::kDvfs)), 6.17, 0.005);
  EXPECT_NEAR(Mape(PredictHeldout(*reference_, *heldout_, PredictMode::kScaling)), 4.59, 0.005);
  const PowerModel fixed = ReadModel(Gpmtool("gtx_titan_x/ref_model_fixed_11comp.csv"));
  EXPECT_NEAR(Mape(PredictHeldout(fixed, *heldout_, PredictMode::kFixed)), 5.18, 0.005);
}

// The alternating solver reproduces the authors' fit (gpmTOOL computes in float32).
TEST_F(TitanX, AlternatingSolverReproducesTheAuthorsModel) {
  const PowerModel m = Calibrate(*train_, Alternating());
  ExpectModelsAgree(m, *reference_, 0.01);
  EXPECT_TRUE(m.fit.converged);
  for (PredictMode mode : {PredictMode::kDvfs, PredictMode::kScaling}) {
    EXPECT_NEAR(Mape(PredictHeldout(m, *heldout_, mode)),
                Mape(PredictHeldout(*reference_, *heldout_, mode)), 0.05)
        << PredictModeName(mode);
  }
}

// The numbers to beat (issue #2): DVFS <= 5.9%, scaling <= 4.2%, fixed <= 5.2%
// (gpmTOOL: 6.17 / 4.59 / 5.18%; TPDS Table 5: 6.43 / 4.55 / 5.51%).
TEST_F(TitanX, DefaultOptionsBeatGpmtool) {
  const PowerModel m = Calibrate(*train_, CalibrationOptions());
  const double dvfs = Mape(PredictHeldout(m, *heldout_, PredictMode::kDvfs));
  const double scaling = Mape(PredictHeldout(m, *heldout_, PredictMode::kScaling));
  EXPECT_LE(dvfs, 5.9);
  EXPECT_LE(scaling, 4.2);
  RecordProperty("dvfs_mape_pct", fmt::format("{:.3f}", dvfs));
  RecordProperty("scaling_mape_pct", fmt::format("{:.3f}", scaling));

  CalibrationOptions fixed;
  fixed.method = FitMethod::kFixed;
  fixed.loss = DefaultLoss(fixed.method, fixed.solver);  // L2, as wattcal-calibrate --method fixed
  const PowerModel f =
      Calibrate(ReadCorpus(Gpmtool("gtx_titan_x/train_micro_fixed_11comp.csv")), fixed);
  const double fixed_mape = Mape(PredictHeldout(f, *heldout_, PredictMode::kFixed));
  EXPECT_LE(fixed_mape, 5.2);
  RecordProperty("fixed_mape_pct", fmt::format("{:.3f}", fixed_mape));
}

// The 7-component pair (35 benchmarks): wattcal's reimplementation of gpmTOOL's alternating
// solver (not gpmTOOL itself, which was not run on these files) gives DVFS 8.08%, scaling 4.56%.
TEST(TitanX7Comp, ScalingBeatsGpmtoolAndDvfsStaysClose) {
  WATTCAL_REQUIRE_DATASETS();
  const Corpus train = ReadCorpus(Gpmtool("gtx_titan_x/train_micro_dvfs_7comp.csv"));
  const Corpus heldout = ReadCorpus(Gpmtool("gtx_titan_x/real_power_allF_7comp.csv"));
  const PowerModel alternating = Calibrate(train, Alternating());
  EXPECT_NEAR(Mape(PredictHeldout(alternating, heldout, PredictMode::kDvfs)), 8.08, 0.01);
  EXPECT_NEAR(Mape(PredictHeldout(alternating, heldout, PredictMode::kScaling)), 4.56, 0.01);
  const PowerModel m = Calibrate(train, CalibrationOptions());
  EXPECT_LE(Mape(PredictHeldout(m, heldout, PredictMode::kScaling)), 4.56);
  EXPECT_LE(Mape(PredictHeldout(m, heldout, PredictMode::kDvfs)), 8.08 + 0.2);
}

// Titan Xp and Tesla K40c: gpmTOOL reproduces the ref_model files bit-exactly from these
// training files; the alternating solver must agree within 1% too.
TEST(OtherGpus, AlternatingSolverReproducesTheAuthorsModels) {
  WATTCAL_REQUIRE_DATASETS();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"titan_xp/train_micro_dvfs_11comp.csv", "titan_xp/ref_model_dvfs_11comp.csv"},
      {"tesla_k40c/train_micro_dvfs_7comp.csv", "tesla_k40c/ref_model_dvfs_7comp.csv"}};
  for (const auto& [train, reference] : pairs) {
    SCOPED_TRACE(train);
    const PowerModel m = Calibrate(ReadCorpus(Gpmtool(train)), Alternating());
    ExpectModelsAgree(m, ReadModel(Gpmtool(reference)), 0.01);
  }
}

// No measured real-benchmark power exists for these GPUs: 5-fold cross-validation by
// microbenchmark. The bounds are regression guards a little above the figures measured
// when this test was written (README, "Results"), and wattcal must stay within 0.05 points
// of gpmTOOL's alternating algorithm under the same folds (it is better on Titan Xp, Titan V
// and GTX 980, and 0.04 points behind on the 4-frequency K40c).
TEST(OtherGpus, CrossValidatedByBenchmark) {
  WATTCAL_REQUIRE_DATASETS();
  struct Case {
    std::string file;
    double dvfs_bound_pct, scaling_bound_pct;
  };
  const std::vector<Case> cases = {{"titan_xp/train_micro_dvfs_11comp.csv", 4.5, 3.5},
                                   {"tesla_k40c/train_micro_dvfs_7comp.csv", 7.8, 2.7},
                                   {"titan_v/micro_dvfs_11comp.csv", 6.0, 4.7},
                                   {"gtx_980/micro_dvfs_6comp.csv", 3.7, 2.3}};
  CrossValidationOptions cv;
  cv.folds = 5;
  cv.threads = 2;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const Corpus corpus = ReadCorpus(Gpmtool(c.file));
    const double dvfs =
        Mape(CrossValidate(corpus, CalibrationOptions(), PredictMode::kDvfs, cv).rows);
    const double scaling =
        Mape(CrossValidate(corpus, CalibrationOptions(), PredictMode::kScaling, cv).rows);
    EXPECT_LE(dvfs, c.dvfs_bound_pct);
    EXPECT_LE(scaling, c.scaling_bound_pct);
    const double gpmtool_dvfs =
        Mape(CrossValidate(corpus, Alternating(), PredictMode::kDvfs, cv).rows);
    EXPECT_LE(dvfs, gpmtool_dvfs + 0.05) << "gpmTOOL's algorithm: " << gpmtool_dvfs << "%";
    std::printf("[ figures  ] %s: CV-5 DVFS %.2f%% (gpmTOOL algorithm %.2f%%), scaling %.2f%%\n",
                c.file.c_str(), dvfs, gpmtool_dvfs, scaling);
  }
}

}  // namespace
}  // namespace wattcal
