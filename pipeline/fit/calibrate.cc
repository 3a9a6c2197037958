#include "fit/bootstrap.h"
#include "fit/calibrate.h"
#include "fit/identifiability.h"
#include "fit/training_rows.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include "fit/internal/fit_data.h"
#include "fit/nnls.h"
#include "fit/internal/solvers.h"
#include "model/power_limit.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

const char* FitSolverName(FitSolver v) { return v == FitSolver::kJoint ? "joint" : "alternating"; }
const char* FitResidualName(FitResidual v) {
  return v == FitResidual::kAbsolute ? "absolute" : "relative";
}

bool CalibrationOptions::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  if (!(loss_scale >= 0.0)) return fail(fmt::format("loss_scale = {} must be >= 0", loss_scale));
  if (!(voltage_min > 0.0 && voltage_min <= 1.0)) {
    return fail(fmt::format("voltage_min = {} must lie in (0, 1]", voltage_min));
  }
  if (!(voltage_max >= 1.0)) return fail(fmt::format("voltage_max = {} must be >= 1", voltage_max));
  if (max_iterations < 1) {
    return fail(fmt::format("max_iterations = {} must be >= 1", max_iterations));
  }
  if (!(alternating_tolerance_pct > 0.0)) {
    return fail(
        fmt::format("alternating_tolerance_pct = {} must be > 0", alternating_tolerance_pct));
  }
  if (alternating_patience < 1) {
    return fail(fmt::format("alternating_patience = {} must be >= 1", alternating_patience));
  }
  if (threads < 1) return fail(fmt::format("threads = {} must be >= 1", threads));
  if (power_limit_w && !(*power_limit_w > 0.0 && *power_limit_w <= 10000.0)) {
    return fail(fmt::format("power_limit_w = {} must lie in (0, 10000] W (unset: the corpus's)",
                            *power_limit_w));
  }
  if (bootstrap_replicates < 0) {
    return fail(fmt::format("bootstrap_replicates = {} must be >= 0", bootstrap_replicates));
  }
  if (bootstrap_replicates > 0 && method != FitMethod::kFixed) {
    return fail(
        "bootstrap_replicates (--bootstrap) applies to the fixed method only "
        "(--method fixed)");
  }
  if (method == FitMethod::kDvfs && solver == FitSolver::kAlternating &&
      (loss != FitLoss::kL2 || residual != FitResidual::kAbsolute)) {
    return fail(fmt::format(
        "solver = alternating reproduces gpmTOOL and supports only loss = l2 with residual = "
        "absolute (got loss = {}, residual = {})",
        FitLossName(loss), FitResidualName(residual)));
  }
  return true;
}

double CalibrationOptions::EffectiveLossScale() const {
  if (loss_scale > 0.0) return loss_scale;
  return residual == FitResidual::kRelative ? 0.05 : 3.0;
}

namespace fit_internal {

using Clock = std::chrono::steady_clock;

double Cost(const FitData& data, const CalibrationOptions& options, const PowerModel& model) {
  const Corpus& c = *data.corpus;
  std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
  double cost = 0.0;
  for (int r = 0; r < c.rows(); ++r) {
    const Eigen::VectorXd u = c.util_frac.row(r).transpose();
    const Eigen::VectorXd f = c.freq_mhz.row(r).transpose();
    double e = model.Predict(u.data(), f.data()) - c.power_w(r);
    if (options.residual == FitResidual::kRelative) e /= c.power_w(r);
    double rho[3] = {e * e, 1.0, 0.0};
    if (loss) loss->Evaluate(e * e, rho);
    cost += 0.5 * rho[0];
  }
  return cost;
}

void FillTrainingStats(const Corpus& c, PowerModel* model) {
  double sq = 0.0, ape_sum = 0.0, ape_max = 0.0, mean = c.power_w.mean(), ss_tot = 0.0;
  for (int r = 0; r < c.rows(); ++r) {
    const Eigen::VectorXd u = c.util_frac.row(r).transpose();
    const Eigen::VectorXd f = c.freq_mhz.row(r).transpose();
    const double e = model->Predict(u.data(), f.data()) - c.power_w(r);
    sq += e * e;
    const double ape = 100.0 * std::abs(e) / c.power_w(r);
    ape_sum += ape;
    ape_max = std::max(ape_max, ape);
    ss_tot += (c.power_w(r) - mean) * (c.power_w(r) - mean);
  }
  model->fit.train_rows = c.rows();
  model->fit.train_benchmarks = static_cast<int>(c.Benchmarks().size());
  model->fit.train_rmse_w = std::sqrt(sq / c.rows());
  model->fit.train_mape_pct = ape_sum / c.rows();
  model->fit.train_max_ape_pct = ape_max;
  model->fit.train_r2 = ss_tot > 0.0 ? 1.0 - sq / ss_tot : 0.0;
}

PowerModel MakeModel(const FitData& data, const Corpus& train, FitMethod method,
                     const std::vector<double>& x, const std::vector<std::vector<double>>& volts) {
  PowerModel model;
  model.method = method;
  model.layout = train.layout;
  model.freq_levels_mhz = data.levels;
  model.voltage_rel = volts;
  model.SetCoefficients(x);
  model.trained_on = train.path;
  return model;
}

PowerModel CalibrateFixed(const Corpus& train, const CalibrationOptions& options) {
  const Clock::time_point start = Clock::now();
  PrepareFitData(train);  // checks power, frequencies and the default pair
  const Corpus at_default = train.Subset(train.RowsAtDefault());
  const FitData data = PrepareFitData(at_default);
  const int nd = data.num_domains;
  // TPDS Eq. 9: P = beta0 + sum_i omega_i U_i at one V-F pair, by NNLS (beta0 stored as
  // alpha0_core, omega_i as gamma_i * f_k, so TPDS Eq. 4 evaluates to the same power).
  const int n = data.num_components + 1;
  Eigen::MatrixXd a(at_default.rows(), n);
  Eigen::VectorXd b(at_default.rows());
  for (int r = 0; r < at_default.rows(); ++r) {
    const double w = options.residual == FitResidual::kRelative ? 1.0 / at_default.power_w(r) : 1.0;
    a(r, 0) = w;
    for (int i = 0; i < data.num_components; ++i) a(r, i + 1) = at_default.util_frac(r, i) * w;
    b(r) = at_default.power_w(r) * w;
  }
  Eigen::VectorXd beta = SolveNnls(a, b);
  // Robust losses: refine the NNLS start with Ceres (the model is linear; bounds >= 0).
  if (options.loss != FitLoss::kL2) {
    ceres::Problem::Options problem_options;
    problem_options.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
    ceres::Problem problem(problem_options);
    std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
    for (int r = 0; r < at_default.rows(); ++r) {
      problem.AddResidualBlock(new LinearRowCost(a.row(r).transpose(), b(r)), loss.get(),
                               beta.data());
    }
    for (int j = 0; j < n; ++j) problem.SetParameterLowerBound(beta.data(), j, 0.0);
    ceres::Solver::Options solver_options;
    solver_options.linear_solver_type = ceres::DENSE_QR;
    solver_options.logging_type = ceres::SILENT;
    solver_options.max_num_iterations = options.max_iterations;
    ceres::Solver::Summary summary;
    ceres::Solve(solver_options, &problem, &summary);
    if (!summary.IsSolutionUsable())
      throw FitError("fixed-frequency fit failed: " + summary.message);
  }
  std::vector<double> x(2 * nd + data.num_components, 0.0);
  x[0] = beta(0);
  for (int i = 0; i < data.num_components; ++i) {
    x[2 * nd + i] = beta(i + 1) / train.layout.domains[data.domain_of[i]].default_freq_mhz;
  }
  std::vector<std::vector<double>> volts(nd, std::vector<double>(1, 1.0));
  PowerModel model = MakeModel(data, at_default, FitMethod::kFixed, x, volts);
  model.trained_on = train.path;
  model.fit.solver = ModelSolver::kNnls;
  model.fit.converged = true;
  model.fit.iterations = 1;
  model.fit.termination = "non-negative least squares (Lawson-Hanson)";
  model.fit.loss = options.loss;
  model.fit.residual = FitResidualName(options.residual);
  FillTrainingStats(at_default, &model);
  model.fit.time_s = std::chrono::duration<double>(Clock::now() - start).count();
  return model;
}

PowerModel CalibrateDvfs(const Corpus& train, const CalibrationOptions& options) {
  const Clock::time_point start = Clock::now();
  const FitData data = PrepareFitData(train);
  SolveResult result;
  if (options.solver == FitSolver::kAlternating) {
    result = SolveAlternating(data, options);
  } else {
    // Start: every voltage 1, coefficients by NNLS at those voltages.
    std::vector<std::vector<double>> ones(data.num_domains);
    for (int d = 0; d < data.num_domains; ++d) ones[d].assign(data.levels[d].size(), 1.0);
    const std::vector<Eigen::MatrixXd> moments = options.internal.reference_solver
                                                     ? std::vector<Eigen::MatrixXd>()
                                                     : PairMoments(data, options.residual);
    // The two starts are independent. With two threads or more they run side by side: the
    // cold start on one, gpmTOOL's alternating solution and the start from it on the other.
    // Each is deterministic, so the model does not depend on the thread count; only the cold
    // start draws a progress line then.
    const bool side_by_side = options.start_from_alternating && options.threads >= 2;
    SolveResult second;
    auto cold_start = [&]() {
      const std::vector<double> cold =
          options.internal.reference_solver
              ? SolveCoefficients(data, ones, options.residual)
              : SolveCoefficientsFromMoments(data, moments, ones, /*like_gpmtool=*/false);
      result = SolveJoint(data, options, cold, ones, moments);
    };
    auto alternating_start = [&]() {
      CalibrationOptions alt_options = options;
      alt_options.loss = FitLoss::kL2;
      alt_options.residual = FitResidual::kAbsolute;
      CalibrationOptions second_options = options;
      if (side_by_side) alt_options.show_progress = second_options.show_progress = false;
      const SolveResult alt = SolveAlternating(data, alt_options);
      second = SolveJoint(data, second_options, alt.coefficients, alt.voltages, moments);
    };
    if (side_by_side) {
      std::exception_ptr failure[2];
#pragma omp parallel sections num_threads(2)
      {
#pragma omp section
        {
          try {
            cold_start();
          } catch (...) {
            failure[0] = std::current_exception();
          }
        }
#pragma omp section
        {
          try {
            alternating_start();
          } catch (...) {
            failure[1] = std::current_exception();
          }
        }
      }
      for (const std::exception_ptr& f : failure) {
        if (f) std::rethrow_exception(f);
      }
    } else {
      cold_start();
      if (options.start_from_alternating) alternating_start();
    }
    if (options.start_from_alternating) {
      const bool keep_second = second.report.final_cost < result.report.final_cost;
      const std::string note = fmt::format(
          " [two starts: cold start cost {:.6g}, from the alternating solution {:.6g}; kept the "
          "{}]",
          result.report.final_cost, second.report.final_cost,
          keep_second ? "start from the alternating solution" : "cold start");
      if (keep_second) result = second;
      result.report.termination += note;
    }
  }
  PowerModel model = MakeModel(data, train, FitMethod::kDvfs, result.coefficients, result.voltages);
  model.fit = result.report;
  model.fit.loss = options.solver == FitSolver::kAlternating ? FitLoss::kL2 : options.loss;
  model.fit.loss_scale = options.loss == FitLoss::kL2 ? 0.0 : options.EffectiveLossScale();
  model.fit.residual = FitResidualName(options.residual);
  if (options.solver == FitSolver::kAlternating) {
    model.fit.initial_cost = 0.0;
    model.fit.final_cost = Cost(data, options, model);
  }
  FillTrainingStats(train, &model);
  model.fit.time_s = std::chrono::duration<double>(Clock::now() - start).count();
  return model;
}

}  // namespace fit_internal

namespace {

using fit_internal::CalibrateDvfs;
using fit_internal::CalibrateFixed;

// Largest utilisation per component and largest power over `rows`.
TrainingRange RangeOf(const Corpus& rows) {
  TrainingRange range;
  range.max_util_frac.assign(rows.layout.num_components(), 0.0);
  for (int r = 0; r < rows.rows(); ++r) {
    for (int i = 0; i < rows.layout.num_components(); ++i) {
      range.max_util_frac[i] = std::max(range.max_util_frac[i], rows.util_frac(r, i));
    }
  }
  if (rows.has_power() && rows.rows() > 0) range.max_power_w = rows.power_w.maxCoeff();
  return range;
}

}  // namespace

PowerModel Calibrate(const Corpus& corpus, const CalibrationOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  return Calibrate(corpus, SelectTrainingRows(corpus, options.keep_flagged), options);
}

PowerModel Calibrate(const Corpus& corpus, const TrainingSelection& selection,
                     const CalibrationOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const IdentifiabilityReport identifiability =
      selection.rows.has_power() ? CheckIdentifiability(selection.rows, options.method)
                                 : IdentifiabilityReport();
  for (const std::string& note : identifiability.notes) LogWarning(note);
  const std::vector<std::string> duplicates = FindDuplicateRows(corpus);
  for (const std::string& note : duplicates) LogWarning(note);
  // Components that cannot be identified are fitted as zero columns (coefficient 0).
  Corpus masked = selection.rows;
  for (int i : identifiability.fixed_at_zero) masked.util_frac.col(i).setZero();
  const Corpus& train = identifiability.fixed_at_zero.empty() ? selection.rows : masked;
  PowerModel model;
  if (options.method == FitMethod::kFixed) {
    model = CalibrateFixed(train, options);
    // The fixed model (TPDS Eq. 9) is trained on the rows at the default pair only.
    model.training_range = RangeOf(train.Subset(train.RowsAtDefault()));
    BootstrapResult bootstrap = BootstrapFixed(train, options);
    model.coefficient_ci95 = std::move(bootstrap.ci);
    model.prediction_interval = std::move(bootstrap.interval);
  } else {
    // TPDS Eqs. 4-6 estimate one voltage per frequency level: with a single V-F pair the
    // voltages are all 1 and static power cannot be told from dynamic power.
    CheckTwoVfPairs(train);
    model = CalibrateDvfs(train, options);
    model.training_range = RangeOf(train);
  }
  model.trained_on = corpus.path;
  model.gpu = corpus.gpu;
  model.power_limit_w = ResolvePowerLimitW(options.power_limit_w, corpus.power_limit_w);
  if (!selection.message.empty()) model.training_notes.push_back(selection.message);
  if (!identifiability.fixed_at_zero.empty()) {
    std::vector<double> x = model.Coefficients();
    const int nd = model.layout.num_domains();
    for (int i : identifiability.fixed_at_zero) x[2 * nd + i] = 0.0;
    model.SetCoefficients(x);
    for (std::vector<double>& replicate : model.prediction_interval.replicate_coefficients) {
      for (int i : identifiability.fixed_at_zero) replicate[2 * nd + i] = 0.0;
    }
  }
  model.training_notes.insert(model.training_notes.end(), identifiability.notes.begin(),
                              identifiability.notes.end());
  model.training_notes.insert(model.training_notes.end(), duplicates.begin(), duplicates.end());
  return model;
}

}  // namespace wattcal
