// Parameter recovery of the calibration (STYLE.md rule 4): synthesise measurements from a
// known truth (TPDS Eqs. 4-6 with a flat-then-linear voltage curve), add noise seeded by the
// test name, fit, and check recovery within named tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "fit/calibrate.h"
#include "fit/nnls.h"
#include "synth/synthetic_corpus.h"
#include "test_support.h"
#include "util/errors.h"
#include "crossval/cross_validation.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {
namespace {

using testing::SeedFromTestName;

// A two-domain GPU shaped like the GTX Titan X (TPDS Table 3), as in
// microbench_specs/virtual_gpu.json.
SyntheticSpec TwoDomainSpec() {
  SyntheticSpec s;
  s.name = "test-2d";
  FrequencyDomain core{
      "core", 975, {"SP ADD", "SP MUL", "SP FMA", "INT", "DP", "SFU", "CF", "L2", "Shared"}};
  FrequencyDomain mem{"mem", 3505, {"DRAM"}};
  s.layout.domains = {core, mem};
  s.voltage = {{{595, 671, 747, 823, 899, 975, 1050, 1126, 1164}, 0.97, 0.00067},
               {{810, 3300, 3505, 4005}, 0.85, 0.0002}};
  s.coefficients = {8.0,  35.0, 0.022, 0.006, 0.06,  0.05, 0.065,
                    0.07, 0.03, 0.07,  0.005, 0.055, 0.04, 0.016};
  s.microbenchmarks_per_component = 6;
  s.mix_microbenchmarks = 8;
  s.heldout_applications = 12;
  s.noise_rel = 0.01;
  return s;
}

// A single-domain GPU (core only, e.g. a fixed memory clock), gpmTOOL's 1-domain case.
SyntheticSpec OneDomainSpec() {
  SyntheticSpec s;
  s.name = "test-1d";
  s.layout.domains = {{"core", 1200, {"FP32", "FP64", "INT", "SFU", "L2", "Shared", "DRAM"}}};
  s.voltage = {{{600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400}, 0.9, 0.0004}};
  s.coefficients = {30.0, 0.03, 0.05, 0.03, 0.04, 0.06, 0.03, 0.025, 0.08};
  s.microbenchmarks_per_component = 8;
  s.mix_microbenchmarks = 10;
  s.heldout_applications = 10;
  s.noise_rel = 0.01;
  return s;
}

struct Recovery {
  double max_coefficient_rel_error = 0.0;  // over all coefficients
  // Over the identifiable ones: the component and idle-dynamic coefficients, and the total
  // static power sum_k alpha0_k. With two domains, how the static power splits between
  // them is only weakly identified (both terms are ~constant over the measured V-F pairs:
  // the core voltage varies by 15%, and v_mem only at 810 MHz), so noise moves watts from
  // one to the other with almost no change in any prediction.
  double max_identifiable_rel_error = 0.0;
  double max_voltage_abs_error = 0.0;  // over all levels
};

Recovery Compare(const PowerModel& fitted, const PowerModel& truth) {
  Recovery r;
  const std::vector<double> a = fitted.Coefficients(), b = truth.Coefficients();
  const size_t nd = fitted.static_w.size();
  double static_a = 0.0, static_b = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(a[i] - b[i]) / b[i];
    r.max_coefficient_rel_error = std::max(r.max_coefficient_rel_error, e);
    if (i < nd) {
      static_a += a[i];
      static_b += b[i];
    } else {
      r.max_identifiable_rel_error = std::max(r.max_identifiable_rel_error, e);
    }
  }
  r.max_identifiable_rel_error =
      std::max(r.max_identifiable_rel_error, std::abs(static_a - static_b) / static_b);
  for (size_t d = 0; d < fitted.voltage_rel.size(); ++d) {
    for (size_t j = 0; j < fitted.voltage_rel[d].size(); ++j) {
      r.max_voltage_abs_error = std::max(
          r.max_voltage_abs_error, std::abs(fitted.voltage_rel[d][j] - truth.voltage_rel[d][j]));
    }
  }
  return r;
}

double Mape(const std::vector<PredictionRow>& rows) { return ComputeErrorMetrics(rows).mape_pct; }

TEST(CalibrateRecovery, NoiselessTwoDomainsIsExact) {
  SyntheticSpec spec = TwoDomainSpec();
  spec.noise_rel = 0.0;
  const SyntheticCorpus c = GenerateSyntheticCorpus(spec, SeedFromTestName());
  CalibrationOptions options;  // defaults: joint, Huber, two starts
  const PowerModel m = Calibrate(c.train, options);
  const Recovery r = Compare(m, c.truth);
  // Powers are printed to 0.1 mW and utilisations to 5 digits, hence not 1e-12.
  constexpr double kCoefficientTolerance = 2e-3;
  constexpr double kVoltageTolerance = 1e-3;
  EXPECT_LT(r.max_coefficient_rel_error, kCoefficientTolerance);
  EXPECT_LT(r.max_voltage_abs_error, kVoltageTolerance);
  EXPECT_TRUE(m.fit.converged) << m.fit.termination;
}

TEST(CalibrateRecovery, NoisyTwoDomainsFlatThenLinearVoltage) {
  const SyntheticCorpus c = GenerateSyntheticCorpus(TwoDomainSpec(), SeedFromTestName());
  const PowerModel m = Calibrate(c.train, CalibrationOptions());
  const Recovery r = Compare(m, c.truth);
  // 1% multiplicative noise on ~5000 rows.
  constexpr double kIdentifiableTolerance = 0.06;
  constexpr double kVoltageTolerance = 0.015;
  EXPECT_LT(r.max_identifiable_rel_error, kIdentifiableTolerance);
  EXPECT_LT(r.max_voltage_abs_error, kVoltageTolerance);
  // Voltages are non-decreasing, 1 at the default and within the bounds.
  for (int d = 0; d < 2; ++d) {
    const auto& v = m.voltage_rel[d];
    for (size_t j = 1; j < v.size(); ++j) EXPECT_GE(v[j], v[j - 1]);
    double v_default = 0.0;
    ASSERT_TRUE(m.VoltageAt(d, m.layout.domains[d].default_freq_mhz, &v_default));
    EXPECT_EQ(v_default, 1.0);
    EXPECT_GE(v.front(), 0.5);
    EXPECT_LE(v.back(), 2.0);
  }
  // Held-out applications: within 1.3x of the truth's own error on the same noisy data.
  const double fitted = Mape(PredictHeldout(m, c.heldout, PredictMode::kDvfs));
  const double truth = Mape(PredictHeldout(c.truth, c.heldout, PredictMode::kDvfs));
  EXPECT_LT(fitted, 1.3 * truth) << "fitted " << fitted << "% vs truth " << truth << "%";
}

TEST(CalibrateRecovery, NoisyOneDomain) {
  const SyntheticCorpus c = GenerateSyntheticCorpus(OneDomainSpec(), SeedFromTestName());
  const PowerModel m = Calibrate(c.train, CalibrationOptions());
  const Recovery r = Compare(m, c.truth);
  constexpr double kCoefficientTolerance = 0.08;
  constexpr double kVoltageTolerance = 0.01;
  EXPECT_LT(r.max_coefficient_rel_error, kCoefficientTolerance);
  EXPECT_LT(r.max_voltage_abs_error, kVoltageTolerance);
  EXPECT_EQ(m.layout.num_domains(), 1);
}

TEST(CalibrateRecovery, AlternatingRecoversNoiselessTruth) {
  SyntheticSpec spec = TwoDomainSpec();
  spec.noise_rel = 0.0;
  const SyntheticCorpus c = GenerateSyntheticCorpus(spec, SeedFromTestName());
  CalibrationOptions options;
  options.solver = FitSolver::kAlternating;
  options.loss = FitLoss::kL2;
  const PowerModel m = Calibrate(c.train, options);
  const Recovery r = Compare(m, c.truth);
  // The alternating scheme stops on a 0.05% coefficient-change rule, not at the optimum.
  constexpr double kCoefficientTolerance = 0.05;
  constexpr double kVoltageTolerance = 0.01;
  EXPECT_LT(r.max_coefficient_rel_error, kCoefficientTolerance);
  EXPECT_LT(r.max_voltage_abs_error, kVoltageTolerance);
  EXPECT_TRUE(m.fit.converged) << m.fit.termination;
}

TEST(CalibrateRecovery, RobustLossesResistCorruptedRows) {
  SyntheticSpec spec = TwoDomainSpec();
  spec.corrupted_rows = 40;  // ~0.8% of the rows read 60% high
  const SyntheticCorpus c = GenerateSyntheticCorpus(spec, SeedFromTestName());
  ASSERT_EQ(c.corrupted_train_rows.size(), 40u);
  CalibrationOptions l2;
  l2.loss = FitLoss::kL2;
  const Recovery with_l2 = Compare(Calibrate(c.train, l2), c.truth);
  for (FitLoss loss : {FitLoss::kHuber, FitLoss::kCauchy}) {
    CalibrationOptions robust;
    robust.loss = loss;
    const Recovery r = Compare(Calibrate(c.train, robust), c.truth);
    // Looser than the clean case: 40 rows read 60% high, and the robust losses down-weight
    // rather than drop them. What must hold is that they beat L2 (below).
    constexpr double kIdentifiableTolerance = 0.10;
    constexpr double kVoltageTolerance = 0.025;
    EXPECT_LT(r.max_identifiable_rel_error, kIdentifiableTolerance) << FitLossName(loss);
    EXPECT_LT(r.max_voltage_abs_error, kVoltageTolerance) << FitLossName(loss);
    EXPECT_LT(r.max_identifiable_rel_error, with_l2.max_identifiable_rel_error)
        << FitLossName(loss);
  }
  // The L2 start from the alternating solution crosses a plateau here: the joint solver must
  // not stop on it (with Ceres's own bounds handling and tolerances of 1e-8 it did, cost
  // 98858.7). The former formulation (SolverSwitches::reference_solver) stops at 98809.7,
  // where its projected steps stall; the default's active-set rounds go on to 98780.1.
  CalibrationOptions l2_reference = l2;
  l2_reference.internal.reference_solver = true;
  const double fast_cost = Calibrate(c.train, l2).fit.final_cost;
  const double reference_cost = Calibrate(c.train, l2_reference).fit.final_cost;
  EXPECT_LT(fast_cost, reference_cost - 10.0) << fast_cost << " vs " << reference_cost;
  EXPECT_NEAR(fast_cost, 98780.12, 0.01);
}

TEST(CalibrateRecovery, FixedModelAtTheDefaultPair) {
  SyntheticSpec spec = TwoDomainSpec();
  spec.noise_rel = 0.0;
  const SyntheticCorpus c = GenerateSyntheticCorpus(spec, SeedFromTestName());
  CalibrationOptions options;
  options.method = FitMethod::kFixed;
  options.loss = FitLoss::kL2;
  const PowerModel m = Calibrate(c.train, options);
  EXPECT_EQ(m.method, FitMethod::kFixed);
  // TPDS Eq. 9 at the default pair: beta0 = sum of the static and idle terms at v = 1,
  // omega_i = gamma_i * f. Compare the predictions at the default pair instead of the split.
  const Corpus at_default = c.heldout.Subset(c.heldout.RowsAtDefault());
  for (int r = 0; r < at_default.rows(); ++r) {
    const Eigen::VectorXd u = at_default.util_frac.row(r).transpose();
    EXPECT_NEAR(m.PredictAtDefault(u.data()), c.truth.PredictAtDefault(u.data()), 0.02);
  }
}

TEST(CalibrateErrors, DefaultPairWithoutRowsIsAnInputError) {
  const SyntheticCorpus c = GenerateSyntheticCorpus(TwoDomainSpec(), SeedFromTestName());
  std::vector<int> keep;
  for (int r = 0; r < c.train.rows(); ++r) {
    if (c.train.freq_mhz(r, 0) != 975.0) keep.push_back(r);
  }
  Corpus train = c.train.Subset(keep);
  train.path = "train.csv";
  try {
    Calibrate(train, CalibrationOptions());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "train.csv");
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("975"), std::string::npos) << e.what();
  }
}

TEST(Nnls, MatchesAHandSolvedProblemWithAnActiveBound) {
  // min ||A x - b|| with x >= 0: the unconstrained solution has x2 < 0, so x2 = 0 and
  // x1 = (a1 . b) / (a1 . a1) = (1*1 + 1*2 + 1*3)/3 = 2.
  Eigen::MatrixXd a(3, 2);
  a << 1, 1, 1, 0, 1, -1;
  Eigen::VectorXd b(3);
  b << 1, 2, 3;
  NnlsSummary summary;
  const Eigen::VectorXd x = SolveNnls(a, b, NnlsOptions(), &summary);
  EXPECT_NEAR(x(0), 2.0, 1e-12);
  EXPECT_EQ(x(1), 0.0);
  EXPECT_TRUE(summary.converged);
  EXPECT_NEAR(summary.residual_norm, std::sqrt(2.0), 1e-12);
}

TEST(Nnls, EqualsLeastSquaresWhenUnconstrainedOptimumIsPositive) {
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd a(200, 5);
  for (int i = 0; i < a.rows(); ++i) {
    for (int j = 0; j < a.cols(); ++j) a(i, j) = u(rng);
  }
  Eigen::VectorXd truth(5);
  truth << 1, 2, 3, 4, 5;
  const Eigen::VectorXd b = a * truth;
  const Eigen::VectorXd x = SolveNnls(a, b);
  EXPECT_LT((x - truth).cwiseAbs().maxCoeff(), 1e-9);
}

// The normal-equations NNLS (Bro & De Jong 1997; the alternating solver's coefficient step)
// against SolveNnls's QR path on problems with active bounds, MHz-scaled columns (as the DVFS
// design, unscaled duals as gpmTOOL) and a dependent column: the same solution where it is
// unique, the same residual where it is not.
TEST(Nnls, NormalEquationsMatchTheQrPath) {
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    Eigen::MatrixXd a(120, 7);
    for (int i = 0; i < a.rows(); ++i) {
      for (int j = 0; j < a.cols(); ++j) a(i, j) = u(rng) * (j % 3 == 0 ? 1000.0 : 1.0);
    }
    Eigen::VectorXd truth(7);
    truth << 0.05, -2.0, 3.0, 0.0, 1.5, -0.5, 4.0;  // negatives end on the bound
    Eigen::VectorXd b = a * truth;
    for (int i = 0; i < b.rows(); ++i) b(i) += 0.1 * (u(rng) - 0.5);
    const Eigen::MatrixXd gram = a.transpose() * a;
    const Eigen::VectorXd atb = a.transpose() * b;
    for (bool scale : {true, false}) {
      NnlsOptions options;
      options.scale_columns = scale;
      NnlsSummary qr_summary, normal_summary;
      const Eigen::VectorXd x = SolveNnls(a, b, options, &qr_summary);
      const Eigen::VectorXd y = SolveNnlsNormal(gram, atb, options, &normal_summary);
      EXPECT_TRUE(normal_summary.converged);
      EXPECT_EQ(normal_summary.iterations, qr_summary.iterations) << trial << " " << scale;
      EXPECT_GE(y.minCoeff(), 0.0);
      EXPECT_LT((x - y).cwiseAbs().maxCoeff(), 1e-8 * std::max(1.0, x.cwiseAbs().maxCoeff()))
          << trial << " " << scale;
    }
  }
  // A column repeated: the split between the two copies is not unique; the fit is.
  Eigen::MatrixXd a(60, 4);
  for (int i = 0; i < a.rows(); ++i) {
    for (int j = 0; j < 3; ++j) a(i, j) = u(rng);
    a(i, 3) = a(i, 1);
  }
  Eigen::VectorXd b = a.leftCols(3) * Eigen::Vector3d(1.0, 2.0, 0.5);
  const Eigen::VectorXd x = SolveNnls(a, b);
  const Eigen::VectorXd y = SolveNnlsNormal(a.transpose() * a, a.transpose() * b);
  EXPECT_GE(y.minCoeff(), 0.0);
  EXPECT_NEAR((a * y - b).norm(), (a * x - b).norm(), 1e-9);
  EXPECT_NEAR(y(1) + y(3), 2.0, 1e-9);
}

TEST(CrossValidation, WholeBenchmarksPerFoldAndEveryRowOnce) {
  SyntheticSpec spec = TwoDomainSpec();
  spec.microbenchmarks_per_component = 3;
  const SyntheticCorpus c = GenerateSyntheticCorpus(spec, SeedFromTestName());
  CrossValidationOptions cv;
  cv.folds = 4;
  cv.threads = 2;
  const CrossValidationReport result =
      CrossValidate(c.train, CalibrationOptions(), PredictMode::kDvfs, cv);
  ASSERT_EQ(static_cast<int>(result.rows.size()), c.train.rows());
  std::map<std::string, std::set<int>> folds_of;
  for (const PredictionRow& row : result.rows) folds_of[row.benchmark].insert(row.fold);
  for (const auto& [benchmark, folds] : folds_of) EXPECT_EQ(folds.size(), 1u) << benchmark;
  std::set<std::string> listed;
  for (const auto& fold : result.fold_benchmarks) listed.insert(fold.begin(), fold.end());
  EXPECT_EQ(listed.size(), c.train.Benchmarks().size());

  // Folds in parallel give exactly what they give one by one.
  cv.threads = 1;
  const CrossValidationReport serial =
      CrossValidate(c.train, CalibrationOptions(), PredictMode::kDvfs, cv);
  ASSERT_EQ(serial.rows.size(), result.rows.size());
  for (size_t i = 0; i < serial.rows.size(); ++i) {
    EXPECT_EQ(serial.rows[i].predicted_w, result.rows[i].predicted_w);
  }
}

TEST(CrossValidation, FoldAssignmentIsSeededAndBalanced) {
  std::vector<std::string> names;
  for (int i = 0; i < 23; ++i) names.push_back("b" + std::to_string(i));
  const auto a = AssignFolds(names, 5, 7), b = AssignFolds(names, 5, 7),
             c = AssignFolds(names, 5, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const auto& fold : a) {
    EXPECT_GE(fold.size(), 4u);
    EXPECT_LE(fold.size(), 5u);
  }
}

}  // namespace
}  // namespace wattcal
