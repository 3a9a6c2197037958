// Every hand-written Jacobian in pipeline/ checked against numeric differentiation with
// ceres::GradientChecker (Ridders' extrapolation, which GradientChecker always uses, from an
// initial step of 1e-6 relative, at least 1e-6 absolute; CheckerOptions()):
//   fit/cost_functions.h         RowCost (TPDS Eqs. 5-6 through the voltage curve),
//                                LevelVoltageCost (TPDS Fig. 5, Problem 1), LinearRowCost
//                                (TPDS Eq. 9 refined under a robust loss)
//   fit/internal/pair_cost.h     PairCost (one block per V-F pair; under a loss, the gradient
//                                of its cost through Ceres's corrector)
//   fit/internal/compressed_problem_cost.h
//                                CompressedProblemCost (the default solver's one block: the
//                                gradient of its cost, and the pair blocks' J^T J and J^T r)
//   accelwattch/internal/scaling_cost.h
//                                ScalingCost (AccelWattch Eq. 14 through OrderingForest::ToX)
//   clocks/internal/vf_cost.h    VfCost (TPDS Eq. 4 with one activity per workload, rows between
//                                calibrated clocks on the interpolated voltage)
// at seeded random points and at the edges of the parameters' boxes. A wrong Jacobian entry
// fails the test; GradientCheckCatchesAOnePercentError shows the tolerance is tight enough to
// catch a 1% error in one entry.
#include <ceres/gradient_checker.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "accelwattch/component_table.h"
#include "accelwattch/orderings.h"
#include "accelwattch/internal/scaling_cost.h"
#include "clocks/internal/vf_cost.h"
#include "fit/cost_functions.h"
#include "fit/internal/compressed_problem_cost.h"
#include "fit/internal/fit_data.h"
#include "fit/internal/pair_cost.h"
#include "io/corpus.h"
#include "test_support.h"

namespace wattcal {
namespace {

using fit_internal::CompressedProblemCost;
using fit_internal::FitData;
using fit_internal::LevelVoltageCost;
using fit_internal::LinearRowCost;
using fit_internal::PairCost;
using fit_internal::PairMoments;
using fit_internal::PrepareFitData;
using fit_internal::RowCost;
using fit_internal::VoltageCurve;
using fit_internal::VoltageState;
using testing::SeedFromTestName;

// Tolerances. An analytic entry a passes against the numeric one n when
//   |a - n| <= kRelativePrecision * max(|a|, |n|) + kRoundOffPerResidual * (1 + |r|)
// with r the entry's residual. The first term is the test proper: numeric derivatives of these
// smooth (polynomial or bilinear) functions agree to ~1e-9 relative, and an error in the
// derivation is of order 1 (a 1% slip is 1e-2). The second allows the round-off of a
// difference quotient, ~eps |r| / h: the numeric derivative of an entry far smaller than its
// residual (ScalingCost near the upper bounds: 1e-8 against residuals of ~600) is exact only
// to ~1e-11 per unit of residual. At 1e-9 per unit it still catches a 1% error in any entry
// above 1e-7 (1 + |r|).
constexpr double kRelativePrecision = 1e-6;
constexpr double kRoundOffPerResidual = 1e-9;

// GradientChecker differentiates with Ridders' method, whose first step is
// ridders_relative_initial_step_size times the parameter but at least that many units (Ceres'
// default 1e-2: a step of 0.01 from a scaling factor of 0.002 would cross its 0.001 bound,
// where OrderingForest::ToX clamps, and halve the numeric slope). 1e-6 keeps every probe on
// one side of the boxes' edges below.
ceres::NumericDiffOptions CheckerOptions() {
  ceres::NumericDiffOptions options;
  options.ridders_relative_initial_step_size = 1e-6;
  return options;
}

// The entries of `cost`'s Jacobian at `parameters` that fail the tolerance above, one line
// each ("block B, residual I, parameter J: analytic A, numeric N"); a single line when
// Evaluate fails.
std::vector<std::string> BadJacobianEntries(const ceres::CostFunction& cost,
                                            const std::vector<std::vector<double>>& parameters) {
  std::vector<const double*> blocks;
  for (const std::vector<double>& b : parameters) blocks.push_back(b.data());
  const std::vector<const ceres::Manifold*>* no_manifolds = nullptr;  // plain Euclidean blocks
  ceres::GradientChecker checker(&cost, no_manifolds, CheckerOptions());
  ceres::GradientChecker::ProbeResults results;
  checker.Probe(blocks.data(), kRelativePrecision, &results);  // its own verdict is per entry
  if (!results.return_value) return {"Evaluate returned false"};
  std::vector<std::string> bad;
  for (size_t b = 0; b < results.jacobians.size(); ++b) {
    const ceres::Matrix& analytic = results.jacobians[b];
    const ceres::Matrix& numeric = results.numeric_jacobians[b];
    for (int i = 0; i < analytic.rows(); ++i) {
      for (int j = 0; j < analytic.cols(); ++j) {
        const double a = analytic(i, j), n = numeric(i, j);
        const double allowed = kRelativePrecision * std::max(std::abs(a), std::abs(n)) +
                               kRoundOffPerResidual * (1.0 + std::abs(results.residuals(i)));
        if (!(std::abs(a - n) <= allowed)) {
          bad.push_back("block " + std::to_string(b) + ", residual " + std::to_string(i) +
                        ", parameter " + std::to_string(j) + ": analytic " + std::to_string(a) +
                        ", numeric " + std::to_string(n));
        }
      }
    }
  }
  return bad;
}

// Fails the test, naming `where` and the first bad entries, when an analytic Jacobian entry of
// `cost` at `parameters` differs from the numeric one by more than the tolerance.
void ExpectJacobiansMatch(const ceres::CostFunction& cost,
                          const std::vector<std::vector<double>>& parameters,
                          const std::string& where) {
  const std::vector<std::string> bad = BadJacobianEntries(cost, parameters);
  std::string first;
  for (size_t k = 0; k < bad.size() && k < 5; ++k) first += "\n  " + bad[k];
  EXPECT_TRUE(bad.empty()) << where << ": " << bad.size() << " bad entries" << first;
}

// ---------------------------------------------------------------------------------------
// fit/: the calibration's costs.

// A two-domain corpus (or core only) with every frequency pair once per benchmark, random
// utilisations and powers; the default pair is one of the levels. Every domain has several
// levels unless `single_mem_level`.
Corpus MakeCorpus(std::mt19937* rng, bool two_domains, bool single_mem_level) {
  Corpus c;
  c.path = "gradient_check.csv";
  c.layout.domains = {{"core", 1000.0, {"FP32", "INT", "L2"}}};
  std::vector<std::vector<double>> levels = {{500.0, 800.0, 1000.0, 1200.0, 1400.0}};
  if (two_domains) {
    c.layout.domains.push_back({"mem", 2000.0, {"DRAM"}});
    levels.push_back(single_mem_level ? std::vector<double>{2000.0}
                                      : std::vector<double>{1000.0, 2000.0, 2600.0});
  }
  const int nd = c.layout.num_domains();
  const int ncomp = c.layout.num_components();
  std::uniform_real_distribution<double> util(0.0, 1.0), power(40.0, 300.0);
  std::vector<std::vector<double>> pairs = {{}};
  for (int d = 0; d < nd; ++d) {
    std::vector<std::vector<double>> next;
    for (const std::vector<double>& p : pairs) {
      for (double f : levels[d]) {
        next.push_back(p);
        next.back().push_back(f);
      }
    }
    pairs = next;
  }
  const int benchmarks = 3;
  const int rows = benchmarks * static_cast<int>(pairs.size());
  c.power_w.resize(rows);
  c.freq_mhz.resize(rows, nd);
  c.util_frac.resize(rows, ncomp);
  for (int r = 0; r < rows; ++r) {
    c.benchmark.push_back("b" + std::to_string(r / pairs.size()));
    c.line.push_back(r + 2);
    c.power_w(r) = power(*rng);
    for (int d = 0; d < nd; ++d) c.freq_mhz(r, d) = pairs[r % pairs.size()][d];
    for (int i = 0; i < ncomp; ++i) c.util_frac(r, i) = util(*rng);
  }
  return c;
}

// The corpus arranged as calibrate.cc's PrepareFitData arranges it (the rows' level indices).
FitData MakeFitData(const Corpus& c) {
  FitData data;
  data.corpus = &c;
  data.num_domains = c.layout.num_domains();
  data.num_components = c.layout.num_components();
  data.domain_of = c.layout.ComponentDomains();
  data.level_of_row.resize(data.num_domains);
  data.rows_at_level.resize(data.num_domains);
  for (int r = 0; r < c.rows(); ++r) {
    for (int i = 0; i < data.num_components; ++i) data.util_row_major.push_back(c.util_frac(r, i));
  }
  for (int d = 0; d < data.num_domains; ++d) {
    data.levels.push_back(c.FrequencyLevels(d));
    const std::vector<double>& lv = data.levels.back();
    const auto it = std::find(lv.begin(), lv.end(), c.layout.domains[d].default_freq_mhz);
    EXPECT_NE(it, lv.end());
    data.default_level.push_back(static_cast<int>(it - lv.begin()));
    data.rows_at_level[d].resize(lv.size());
    for (int r = 0; r < c.rows(); ++r) {
      const int j =
          static_cast<int>(std::lower_bound(lv.begin(), lv.end(), c.freq_mhz(r, d)) - lv.begin());
      data.level_of_row[d].push_back(j);
      data.rows_at_level[d][j].push_back(r);
    }
  }
  return data;
}

// RowCost (and PairCost, CompressedProblemCost) read the voltages from a VoltageState that
// Ceres refreshes through its EvaluationCallback before each evaluation; GradientChecker calls
// Evaluate directly, so this wrapper does what the callback does (copy the s-blocks in,
// Update()) before delegating, so that the numeric Jacobian sees the voltages move with s.
class StateRefreshingCost : public ceres::CostFunction {
 public:
  StateRefreshingCost(const ceres::CostFunction* cost, VoltageState* state,
                      std::vector<std::vector<double>>* s, std::vector<int> block_of_domain)
      : cost_(cost), state_(state), s_(s), block_of_domain_(std::move(block_of_domain)) {
    set_num_residuals(cost->num_residuals());
    *mutable_parameter_block_sizes() = cost->parameter_block_sizes();
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    for (size_t d = 0; d < s_->size(); ++d) {
      const int block = block_of_domain_[d];
      if (block < 0) continue;
      std::copy(parameters[block], parameters[block] + (*s_)[d].size(), (*s_)[d].begin());
    }
    state_->Update();
    return cost_->Evaluate(parameters, residuals, jacobians);
  }

 private:
  const ceres::CostFunction* cost_;
  VoltageState* state_;
  std::vector<std::vector<double>>* s_;
  std::vector<int> block_of_domain_;
};

enum class SPoint { kRandom, kZero, kOne, kAlternating };

// The voltage side of a check, as the joint solve sets it up: per domain the voltage curve
// (the calibration's default bounds, CalibrationOptions: 0.5 and 1.5) and its parameters s
// drawn per `s_point`, a parameter block for every domain with more than one level, and the
// VoltageState over them (which points into `s`: not copied or moved).
class VoltageSetup {
 public:
  VoltageSetup(const FitData& data, SPoint s_point, std::mt19937* rng)
      : s(data.num_domains), block_of_domain(data.num_domains, -1) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<VoltageCurve> curves;
    int next_block = 1;
    for (int d = 0; d < data.num_domains; ++d) {
      curves.emplace_back(static_cast<int>(data.levels[d].size()), data.default_level[d], 0.5, 1.5);
      s[d].resize(curves[d].num_params());
      for (size_t k = 0; k < s[d].size(); ++k) {
        switch (s_point) {
          case SPoint::kRandom: s[d][k] = unit(*rng); break;
          case SPoint::kZero: s[d][k] = 0.0; break;
          case SPoint::kOne: s[d][k] = 1.0; break;
          case SPoint::kAlternating: s[d][k] = k % 2 == 0 ? 0.0 : 1.0; break;
        }
      }
      if (curves[d].num_params() > 0) block_of_domain[d] = next_block++;
    }
    std::vector<double*> s_ptrs;
    for (std::vector<double>& sd : s) s_ptrs.push_back(sd.empty() ? empty_s_.data() : sd.data());
    state = std::make_unique<VoltageState>(curves, s_ptrs);
  }
  VoltageSetup(const VoltageSetup&) = delete;
  VoltageSetup& operator=(const VoltageSetup&) = delete;

  // The parameter blocks at coefficients `x`: x, then each domain's s that has a block.
  std::vector<std::vector<double>> Parameters(const std::vector<double>& x) const {
    std::vector<std::vector<double>> parameters = {x};
    for (size_t d = 0; d < s.size(); ++d) {
      if (block_of_domain[d] >= 0) parameters.push_back(s[d]);
    }
    return parameters;
  }

  std::vector<std::vector<double>> s;
  std::vector<int> block_of_domain;
  std::unique_ptr<VoltageState> state;

 private:
  std::vector<double> empty_s_ = {0.0};
};

// Checks every row's RowCost of a corpus at coefficient vector `x` and voltage parameters
// drawn per `s_point`, for absolute (sigma = 1 W) and relative (sigma = P) residuals.
void CheckRowCosts(const Corpus& c, const std::vector<double>& x, SPoint s_point, std::mt19937* rng,
                   const std::string& where) {
  const FitData data = MakeFitData(c);
  VoltageSetup v(data, s_point, rng);
  const std::vector<std::vector<double>> parameters = v.Parameters(x);
  for (int relative = 0; relative < 2; ++relative) {
    for (int r = 0; r < c.rows(); ++r) {
      const double sigma = relative ? c.power_w(r) : 1.0;
      const RowCost cost(&data, v.state.get(), r, sigma, v.block_of_domain);
      const StateRefreshingCost refreshing(&cost, v.state.get(), &v.s, v.block_of_domain);
      ExpectJacobiansMatch(
          refreshing, parameters,
          where + (relative ? ", relative" : ", absolute") + ", row " + std::to_string(r));
    }
  }
}

// Coefficients of the scale of a real GPU (alpha0 ~ W, alpha1 and gamma ~ W/MHz).
std::vector<double> RandomCoefficients(const Corpus& c, std::mt19937* rng) {
  const int nd = c.layout.num_domains();
  std::uniform_real_distribution<double> alpha0(0.0, 40.0), per_mhz(0.0, 0.1);
  std::vector<double> x;
  for (int d = 0; d < nd; ++d) x.push_back(alpha0(*rng));
  for (int j = nd; j < 2 * nd + c.layout.num_components(); ++j) x.push_back(per_mhz(*rng));
  return x;
}

TEST(JacobianGradientCheck, RowCostTwoDomainsRandomAndEdgePoints) {
  std::mt19937 rng(SeedFromTestName());
  const Corpus c = MakeCorpus(&rng, /*two_domains=*/true, /*single_mem_level=*/false);
  for (int trial = 0; trial < 3; ++trial) {
    CheckRowCosts(c, RandomCoefficients(c, &rng), SPoint::kRandom, &rng,
                  "random point " + std::to_string(trial));
  }
  // The boxes' edges: every s at 0 (every voltage 1), every s at 1 (v_min below the default,
  // v_max above it), alternating; coefficients at their lower bound 0 (the voltage Jacobian
  // is then exactly zero) and random.
  const std::vector<double> zero(RandomCoefficients(c, &rng).size(), 0.0);
  CheckRowCosts(c, RandomCoefficients(c, &rng), SPoint::kZero, &rng, "s = 0");
  CheckRowCosts(c, RandomCoefficients(c, &rng), SPoint::kOne, &rng, "s = 1");
  CheckRowCosts(c, RandomCoefficients(c, &rng), SPoint::kAlternating, &rng, "s = 0,1,0,...");
  CheckRowCosts(c, zero, SPoint::kRandom, &rng, "x = 0");
  CheckRowCosts(c, zero, SPoint::kOne, &rng, "x = 0, s = 1");
}

TEST(JacobianGradientCheck, RowCostSingleLevelDomainAndCoreOnly) {
  std::mt19937 rng(SeedFromTestName());
  // A memory domain with one level has no s-block (block_of_domain = -1).
  const Corpus single = MakeCorpus(&rng, /*two_domains=*/true, /*single_mem_level=*/true);
  CheckRowCosts(single, RandomCoefficients(single, &rng), SPoint::kRandom, &rng, "one mem level");
  CheckRowCosts(single, RandomCoefficients(single, &rng), SPoint::kOne, &rng,
                "one mem level, s = 1");
  const Corpus core = MakeCorpus(&rng, /*two_domains=*/false, /*single_mem_level=*/false);
  CheckRowCosts(core, RandomCoefficients(core, &rng), SPoint::kRandom, &rng, "core only");
  CheckRowCosts(core, RandomCoefficients(core, &rng), SPoint::kZero, &rng, "core only, s = 0");
}

// ---------------------------------------------------------------------------------------
// fit/internal/: the joint solve's costs, one block per V-F pair (PairCost) and the whole
// problem in one block (CompressedProblemCost, the default).

// Checks every V-F pair's PairCost without a loss (its Jacobian is then its residuals' own) at
// coefficients `x` and voltage parameters per `s_point`, absolute and relative residuals.
void CheckPairCosts(const Corpus& c, const std::vector<double>& x, SPoint s_point,
                    std::mt19937* rng, const std::string& where) {
  const FitData data = PrepareFitData(c);
  VoltageSetup v(data, s_point, rng);
  const std::vector<std::vector<double>> parameters = v.Parameters(x);
  for (FitResidual residual : {FitResidual::kAbsolute, FitResidual::kRelative}) {
    for (int pair = 0; pair < static_cast<int>(data.rows_of_pair.size()); ++pair) {
      const PairCost cost(&data, v.state.get(), pair, nullptr, residual, v.block_of_domain);
      const StateRefreshingCost refreshing(&cost, v.state.get(), &v.s, v.block_of_domain);
      ExpectJacobiansMatch(
          refreshing, parameters,
          where + ", " + FitResidualName(residual) + ", pair " + std::to_string(pair));
    }
  }
}

TEST(JacobianGradientCheck, PairCostRandomAndEdgePoints) {
  std::mt19937 rng(SeedFromTestName());
  const Corpus c = MakeCorpus(&rng, /*two_domains=*/true, /*single_mem_level=*/false);
  for (int trial = 0; trial < 3; ++trial) {
    CheckPairCosts(c, RandomCoefficients(c, &rng), SPoint::kRandom, &rng,
                   "random point " + std::to_string(trial));
  }
  const std::vector<double> zero(RandomCoefficients(c, &rng).size(), 0.0);
  CheckPairCosts(c, RandomCoefficients(c, &rng), SPoint::kZero, &rng, "s = 0");
  CheckPairCosts(c, RandomCoefficients(c, &rng), SPoint::kOne, &rng, "s = 1");
  CheckPairCosts(c, RandomCoefficients(c, &rng), SPoint::kAlternating, &rng, "s = 0,1,0,...");
  CheckPairCosts(c, zero, SPoint::kOne, &rng, "x = 0, s = 1");
  const Corpus single = MakeCorpus(&rng, /*two_domains=*/true, /*single_mem_level=*/true);
  CheckPairCosts(single, RandomCoefficients(single, &rng), SPoint::kRandom, &rng, "one mem level");
  const Corpus core = MakeCorpus(&rng, /*two_domains=*/false, /*single_mem_level=*/false);
  CheckPairCosts(core, RandomCoefficients(core, &rng), SPoint::kRandom, &rng, "core only");
}

// A block's cost as its gradient: one residual sqrt(S), with S what the block hands Ceres as
// twice its cost, and the Jacobian J^T r / sqrt(S) from the block's own residuals r and
// Jacobian J. Where a block's Jacobian is not its residuals' derivative (a robust loss folded
// in through Ceres's corrector; the compressed problem's [sqrt(S - |q|^2); q]) Ceres still
// needs J^T r = grad(S / 2), and GradientChecker checks exactly that through this wrapper.
class CostGradient : public ceres::CostFunction {
 public:
  // `s_of`: S from the block's residuals (called right after the block's evaluation).
  CostGradient(const ceres::CostFunction* cost, std::function<double(const double*)> s_of)
      : cost_(cost), s_of_(std::move(s_of)) {
    set_num_residuals(1);
    *mutable_parameter_block_sizes() = cost->parameter_block_sizes();
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const int n = cost_->num_residuals();
    const std::vector<int32_t>& sizes = parameter_block_sizes();
    std::vector<double> r(n);
    std::vector<std::vector<double>> j;
    for (int32_t size : sizes) j.emplace_back(static_cast<size_t>(n) * size);
    std::vector<double*> j_ptrs;
    for (std::vector<double>& block : j) j_ptrs.push_back(block.data());
    if (!cost_->Evaluate(parameters, r.data(), jacobians != nullptr ? j_ptrs.data() : nullptr)) {
      return false;
    }
    residuals[0] = std::sqrt(s_of_(r.data()));
    if (jacobians == nullptr) return true;
    for (size_t b = 0; b < sizes.size(); ++b) {
      if (jacobians[b] == nullptr) continue;
      for (int k = 0; k < sizes[b]; ++k) {
        double jtr = 0.0;
        for (int i = 0; i < n; ++i) jtr += j[b][static_cast<size_t>(i) * sizes[b] + k] * r[i];
        jacobians[b][k] = jtr / residuals[0];
      }
    }
    return true;
  }

 private:
  const ceres::CostFunction* cost_;
  std::function<double(const double*)> s_of_;
};

// The loss a joint solve uses (calibrate.cc's MakeLoss): none, Huber or Cauchy at `scale`.
std::unique_ptr<ceres::LossFunction> LossOf(FitLoss loss, double scale) {
  switch (loss) {
    case FitLoss::kL2: return nullptr;
    case FitLoss::kHuber: return std::make_unique<ceres::HuberLoss>(scale);
    case FitLoss::kCauchy: return std::make_unique<ceres::CauchyLoss>(scale);
  }
  return nullptr;
}

// The block's Gauss-Newton terms as Ceres forms them: H = J^T J, g = J^T r and S = |r|^2 (or
// `s` when given: a PairCost's rho_sum under a loss), over all parameter blocks side by side.
struct NormalEquations {
  Eigen::MatrixXd h;
  Eigen::VectorXd g;
  double s = 0.0;
};
NormalEquations NormalEquationsOf(const ceres::CostFunction& cost,
                                  const std::vector<std::vector<double>>& parameters,
                                  const std::function<double(const double*)>& s_of) {
  const int n = cost.num_residuals();
  int np = 0;
  for (const std::vector<double>& b : parameters) np += static_cast<int>(b.size());
  std::vector<const double*> blocks;
  std::vector<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> j;
  std::vector<double*> j_ptrs;
  for (const std::vector<double>& b : parameters) {
    blocks.push_back(b.data());
    j.emplace_back(n, static_cast<int>(b.size()));
  }
  for (auto& m : j) j_ptrs.push_back(m.data());
  Eigen::VectorXd r(n);
  EXPECT_TRUE(cost.Evaluate(blocks.data(), r.data(), j_ptrs.data()));
  Eigen::MatrixXd full(n, np);
  for (size_t b = 0, at = 0; b < j.size(); at += j[b].cols(), ++b) {
    full.middleCols(static_cast<int>(at), j[b].cols()) = j[b];
  }
  return {full.transpose() * full, full.transpose() * r, s_of(r.data())};
}

double SquaredNorm(const double* r, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += r[i] * r[i];
  return s;
}

// Under each loss and residual, at random points and at the boxes' edges: the gradient of each
// PairCost's and of the CompressedProblemCost's cost is right (CostGradient), and the
// compressed block gives Ceres the pair blocks' Hessian J^T J, gradient J^T r and cost summed.
TEST(JacobianGradientCheck, CompressedProblemCostAndPairCostUnderEachLoss) {
  std::mt19937 rng(SeedFromTestName());
  const Corpus c = MakeCorpus(&rng, /*two_domains=*/true, /*single_mem_level=*/false);
  const FitData data = PrepareFitData(c);
  int checked = 0;
  for (SPoint s_point : {SPoint::kRandom, SPoint::kOne, SPoint::kAlternating}) {
    VoltageSetup v(data, s_point, &rng);
    const std::vector<std::vector<double>> parameters = v.Parameters(RandomCoefficients(c, &rng));
    for (FitResidual residual : {FitResidual::kAbsolute, FitResidual::kRelative}) {
      // Residuals are tens of W (absolute) and tenths (relative): both sides of the scale.
      const double scale = residual == FitResidual::kAbsolute ? 50.0 : 0.3;
      const std::vector<Eigen::MatrixXd> moments = PairMoments(data, residual);
      for (FitLoss loss_kind : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
        const std::string where = std::string(FitLossName(loss_kind)) + "/" +
                                  FitResidualName(residual) + ", s point " +
                                  std::to_string(static_cast<int>(s_point));
        const std::unique_ptr<ceres::LossFunction> loss = LossOf(loss_kind, scale);
        const CompressedProblemCost compressed(&data, v.state.get(), loss.get(),
                                               loss_kind == FitLoss::kHuber ? scale : 0.0, residual,
                                               v.block_of_domain, moments);
        const int nr = compressed.num_residuals();
        const auto squared = [nr](const double* r) { return SquaredNorm(r, nr); };
        const StateRefreshingCost fresh(&compressed, v.state.get(), &v.s, v.block_of_domain);
        ExpectJacobiansMatch(CostGradient(&fresh, squared), parameters, where + ", compressed");
        // Through the refreshing wrappers: the voltages at `parameters` again after the probes.
        const NormalEquations want = NormalEquationsOf(fresh, parameters, squared);
        NormalEquations sum{Eigen::MatrixXd::Zero(want.h.rows(), want.h.cols()),
                            Eigen::VectorXd::Zero(want.g.size()), 0.0};
        for (int pair = 0; pair < static_cast<int>(data.rows_of_pair.size()); ++pair) {
          const PairCost cost(&data, v.state.get(), pair, loss.get(), residual, v.block_of_domain);
          const int n = cost.num_residuals();
          const std::function<double(const double*)> s_of = [&cost, &loss, n](const double* r) {
            return loss != nullptr ? cost.rho_sum() : SquaredNorm(r, n);
          };
          const StateRefreshingCost fresh_pair(&cost, v.state.get(), &v.s, v.block_of_domain);
          ExpectJacobiansMatch(CostGradient(&fresh_pair, s_of), parameters,
                               where + ", pair " + std::to_string(pair));
          const NormalEquations p = NormalEquationsOf(fresh_pair, parameters, s_of);
          sum.h += p.h;
          sum.g += p.g;
          sum.s += p.s;
        }
        // The same sums in another order: rounding only.
        const double h_scale = want.h.cwiseAbs().maxCoeff();
        EXPECT_LE((want.h - sum.h).cwiseAbs().maxCoeff(), 1e-9 * h_scale) << where;
        EXPECT_LE((want.g - sum.g).cwiseAbs().maxCoeff(),
                  1e-9 * (1.0 + want.g.cwiseAbs().maxCoeff()))
            << where;
        EXPECT_NEAR(want.s, sum.s, 1e-9 * sum.s) << where;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 3 * 2 * 3);
}

TEST(JacobianGradientCheck, LevelVoltageCostRandomAndBounds) {
  std::mt19937 rng(SeedFromTestName());
  // a = alpha0 (W), b = f (alpha1 + sum gamma U) (W), c = other domain's power - P (W).
  std::uniform_real_distribution<double> a(0.0, 40.0), b(0.0, 150.0), c(-300.0, 0.0);
  for (int trial = 0; trial < 5; ++trial) {
    const int rows = 1 + trial * 3;
    std::vector<double> av(rows), bv(rows), cv(rows);
    for (int i = 0; i < rows; ++i) {
      av[i] = trial == 0 ? 0.0 : a(rng);  // trial 0: alpha0 at its bound 0
      bv[i] = b(rng);
      cv[i] = c(rng);
    }
    const LevelVoltageCost cost(av, bv, cv);
    // The voltage's bounds in the alternating solve: v_min, v_max (0.5, 1.5 by default), the
    // default level's 1, and random values between.
    std::uniform_real_distribution<double> v(0.5, 1.5);
    for (double volt : {0.5, 1.0, 1.5, v(rng), v(rng)}) {
      ExpectJacobiansMatch(cost, {{volt}},
                           "trial " + std::to_string(trial) + ", V = " + std::to_string(volt));
    }
  }
}

TEST(JacobianGradientCheck, LinearRowCostRandomAndBounds) {
  std::mt19937 rng(SeedFromTestName());
  // The rows of TPDS Eq. 9's design matrix: [w, U_i w...] with w = 1 or 1/P.
  std::uniform_real_distribution<double> util(0.0, 1.0), beta(0.0, 100.0), power(40.0, 300.0);
  for (int trial = 0; trial < 6; ++trial) {
    Eigen::VectorXd a(5);
    const double w = trial % 2 == 0 ? 1.0 : 1.0 / power(rng);
    a(0) = w;
    for (int i = 1; i < a.size(); ++i) a(i) = trial == 2 ? 0.0 : util(rng) * w;
    const LinearRowCost cost(a, power(rng) * w);
    std::vector<double> y(a.size());
    for (double& v : y) v = trial >= 4 ? 0.0 : beta(rng);  // trials 4, 5: y at its bound 0
    ExpectJacobiansMatch(cost, {y}, "trial " + std::to_string(trial));
  }
}

// ---------------------------------------------------------------------------------------
// accelwattch/: the scaling-factor cost through the ordering encoding.

// A table of `components` with random per-kernel powers (one component with no power in any
// kernel when `idle_component` >= 0: the Jacobian's skipped branch).
ComponentTable MakeTable(const std::vector<std::string>& components, int idle_component,
                         std::mt19937* rng) {
  ComponentTable t;
  t.path = "gradient_check_table.csv";
  t.format = "tidy";
  t.components = components;
  std::uniform_real_distribution<double> dyn(0.0, 20.0), fixed(5.0, 30.0), meas(60.0, 250.0);
  for (int k = 0; k < 12; ++k) {
    t.kernels.push_back("k" + std::to_string(k));
    t.lines.push_back(k + 2);
    std::vector<double> p(components.size());
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] = static_cast<int>(i) == idle_component ? 0.0 : dyn(*rng);
    }
    t.dynamic_w.push_back(p);
    t.const_w.push_back(fixed(*rng));
    t.static_w.push_back(fixed(*rng));
    t.idle_w.push_back(fixed(*rng));
    t.measured_w.push_back(meas(*rng));
  }
  return t;
}

// theta for every parameter: roots inside [L, U], children's s inside [0, 1], placed per
// `where_in_box`: kRandom uniformly (roots log-uniformly), kLow/kHigh a relative 1e-5 inside
// the lower/upper end. Points exactly on a bound are not probed: ToX clamps x into its
// interval (orderings.cc), so numeric differences there straddle a kink and average the
// inside and outside slopes, while the analytic Jacobian gives the inside one, as Ceres needs.
enum class InBox { kRandom, kLow, kHigh };
std::vector<double> ThetaAt(const OrderingForest& forest, InBox where_in_box, std::mt19937* rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> theta(forest.size());
  for (int i = 0; i < forest.size(); ++i) {
    const double lo = forest.ParameterLower(i), hi = forest.ParameterUpper(i);
    switch (where_in_box) {
      case InBox::kRandom:
        theta[i] =
            forest.IsRoot(i) ? lo * std::pow(hi / lo, unit(*rng)) : lo + unit(*rng) * (hi - lo);
        break;
      case InBox::kLow: theta[i] = lo + 1e-5 * (hi - lo); break;
      case InBox::kHigh: theta[i] = hi - 1e-5 * (hi - lo); break;
    }
  }
  return theta;
}

void CheckScalingCost(const ComponentTable& table, const std::vector<Ordering>& orderings,
                      InBox where_in_box, std::mt19937* rng, const std::string& where) {
  const int n = table.num_components();
  // The fit's default boxes (AccelWattchFitOptions: 0.001 and 1000).
  const OrderingForest forest(table.components, orderings, std::vector<double>(n, 0.001),
                              std::vector<double>(n, 1000.0));
  std::uniform_real_distribution<double> prior(0.2, 5.0);
  std::vector<double> prior_x(n);
  for (double& p : prior_x) p = prior(*rng);
  const std::vector<double> theta = ThetaAt(forest, where_in_box, rng);
  for (double prior_weight : {0.0, 0.5}) {  // 0: kernels only; > 0: the prior rows too
    const accelwattch_internal::ScalingCost cost(table, forest, prior_x, prior_weight);
    ExpectJacobiansMatch(cost, {theta}, where + ", lambda = " + std::to_string(prior_weight));
  }
}

TEST(JacobianGradientCheck, ScalingCostPaperOrderings) {
  std::mt19937 rng(SeedFromTestName());
  // FP_MULP first: the root of the paper's tree, with children above it (INT_MULP, ...),
  // a child below its parent (INTP <= INT_MULP) and grandchildren (FPUP, DPUP).
  const std::vector<std::string> components = {"FP_MULP", "INT_MULP", "INTP",    "FPUP",
                                               "DPUP",    "FP_SQRTP", "TENSORP", "DRAMP"};
  const ComponentTable table = MakeTable(components, /*idle_component=*/6, &rng);
  for (int trial = 0; trial < 4; ++trial) {
    CheckScalingCost(table, PaperOrderings(), InBox::kRandom, &rng,
                     "paper orderings, random point " + std::to_string(trial));
  }
  CheckScalingCost(table, PaperOrderings(), InBox::kLow, &rng, "paper orderings, low ends");
  CheckScalingCost(table, PaperOrderings(), InBox::kHigh, &rng, "paper orderings, high ends");
}

TEST(JacobianGradientCheck, ScalingCostWithoutOrderings) {
  std::mt19937 rng(SeedFromTestName());
  // Every component a root: theta = x within [0.001, 1000].
  const ComponentTable table = MakeTable({"INTP", "FPUP", "DPUP", "DRAMP"}, -1, &rng);
  CheckScalingCost(table, {}, InBox::kRandom, &rng, "no orderings, random point");
  CheckScalingCost(table, {}, InBox::kLow, &rng, "no orderings, low ends");
  CheckScalingCost(table, {}, InBox::kHigh, &rng, "no orderings, high ends");
}

// The check is not vacuous: one Jacobian entry off by 1% fails it.
class OnePercentOff : public ceres::CostFunction {
 public:
  explicit OnePercentOff(const ceres::CostFunction* cost) : cost_(cost) {
    set_num_residuals(cost->num_residuals());
    *mutable_parameter_block_sizes() = cost->parameter_block_sizes();
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    if (!cost_->Evaluate(parameters, residuals, jacobians)) return false;
    if (jacobians != nullptr && jacobians[0] != nullptr) jacobians[0][0] *= 1.01;
    return true;
  }

 private:
  const ceres::CostFunction* cost_;
};

TEST(JacobianGradientCheck, GradientCheckCatchesAOnePercentError) {
  const LevelVoltageCost level({10.0, 20.0}, {80.0, 90.0}, {-150.0, -170.0});
  const OnePercentOff wrong(&level);
  EXPECT_TRUE(BadJacobianEntries(level, {{0.9}}).empty());
  const std::vector<std::string> bad = BadJacobianEntries(wrong, {{0.9}});
  ASSERT_EQ(bad.size(), 1u);  // only the entry made 1% wrong
  EXPECT_EQ(bad[0].rfind("block 0, residual 0, parameter 0:", 0), 0u) << bad[0];
}

// The activity-free DVFS cost: rows on and between calibrated clocks, below and above the
// reference, at random interior points and with voltage fractions at 0 and 1; relative and
// absolute residuals.
TEST(JacobianGradientCheck, VfCostEveryRowKind) {
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> u(0.05, 0.95);
  const int levels = 6, ref = 4, workloads = 3;
  const VoltageCurve curve(levels, ref, 0.5, 2.0);
  std::vector<clocks_internal::VfRow> rows;
  const double clocks[] = {500, 700, 900, 1100, 1300, 1500};
  for (int w = 0; w < workloads; ++w) {
    for (int k = 0; k < levels; ++k) {
      clocks_internal::VfRow row;
      row.workload = w;
      row.level = k;
      row.t = k + 1 < levels ? (k % 2 == 0 ? 0.0 : u(rng)) : 0.0;
      row.f_mhz = clocks[k] + row.t * 200;
      row.power_w = 50 + 40 * w + 0.1 * row.f_mhz;
      rows.push_back(row);
    }
  }
  for (const bool relative : {true, false}) {
    const clocks_internal::VfCost cost(&rows, &curve, levels, workloads, relative);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<double> s(levels - 1), coef = {40 * u(rng), 20 * u(rng)}, g(workloads);
      for (double& x : s) x = trial == 2 ? 0.0 : trial == 3 ? 1.0 : u(rng);
      for (double& x : g) x = 0.2 * u(rng);
      const std::vector<std::string> bad = BadJacobianEntries(cost, {s, coef, g});
      EXPECT_TRUE(bad.empty()) << (relative ? "relative" : "absolute") << " trial " << trial << ": "
                               << bad.front();
    }
  }
}

}  // namespace
}  // namespace wattcal
