#include "fit/calibrate.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cmath>
#include <memory>
#include <map>
#include <set>

#include <Eigen/QR>

#include "fit/cost_functions.h"
#include "fit/nnls.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

const char* FitMethodName(FitMethod v) { return v == FitMethod::kDvfs ? "dvfs" : "fixed"; }
const char* FitSolverName(FitSolver v) {
  return v == FitSolver::kJoint ? "joint" : "alternating";
}
const char* FitLossName(FitLoss v) {
  switch (v) {
    case FitLoss::kL2: return "l2";
    case FitLoss::kHuber: return "huber";
    case FitLoss::kCauchy: return "cauchy";
  }
  return "?";
}
bool ParseFitLoss(const std::string& name, FitLoss* loss) {
  for (FitLoss v : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
    if (name == FitLossName(v)) {
      *loss = v;
      return true;
    }
  }
  return false;
}
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
  if (max_solver_iterations < 1) {
    return fail(fmt::format("max_solver_iterations = {} must be >= 1", max_solver_iterations));
  }
  if (max_alternating_iterations < 1) {
    return fail(
        fmt::format("max_alternating_iterations = {} must be >= 1", max_alternating_iterations));
  }
  if (!(alternating_tolerance_pct > 0.0)) {
    return fail(fmt::format("alternating_tolerance_pct = {} must be > 0", alternating_tolerance_pct));
  }
  if (alternating_patience < 1) {
    return fail(fmt::format("alternating_patience = {} must be >= 1", alternating_patience));
  }
  if (num_threads < 1) return fail(fmt::format("num_threads = {} must be >= 1", num_threads));
  if (!(power_limit_w >= 0.0 && power_limit_w <= 10000.0)) {
    return fail(fmt::format("power_limit_w = {} must lie in [0, 10000] W (0 = the corpus's)",
                            power_limit_w));
  }
  if (bootstrap_replicates < 0) {
    return fail(fmt::format("bootstrap_replicates = {} must be >= 0", bootstrap_replicates));
  }
  if (bootstrap_replicates > 0 && method != FitMethod::kFixed) {
    return fail("bootstrap_replicates (--bootstrap) applies to the fixed method only "
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

namespace {

using Clock = std::chrono::steady_clock;
// The cost functions and their data live in fit/cost_functions.h so the tests can check their
// hand-written Jacobians (tests/jacobian_gradient_check_test.cc).
using fit_internal::FitData;
using fit_internal::LevelVoltageCost;
using fit_internal::LinearRowCost;
using fit_internal::RowCost;
using fit_internal::VoltageCurve;
using fit_internal::VoltageState;

FitData PrepareFitData(const Corpus& train) {
  if (!train.has_power()) {
    throw InputError(train.path, 0, "power_w", "the training file has no measured power");
  }
  if (!train.has_freq()) {
    throw InputError(train.path, 0, "f_core_mhz", "the training file has no frequencies");
  }
  if (train.rows() == 0) throw InputError(train.path, 0, "", "the training file has no rows");
  FitData data;
  data.corpus = &train;
  data.num_domains = train.layout.num_domains();
  data.num_components = train.layout.num_components();
  data.domain_of = train.layout.ComponentDomains();
  data.level_of_row.resize(data.num_domains);
  data.rows_at_level.resize(data.num_domains);
  data.util_row_major.resize(static_cast<size_t>(train.rows()) * data.num_components);
  for (int r = 0; r < train.rows(); ++r) {
    for (int i = 0; i < data.num_components; ++i) {
      data.util_row_major[static_cast<size_t>(r) * data.num_components + i] = train.util_frac(r, i);
    }
  }
  for (int d = 0; d < data.num_domains; ++d) {
    data.levels.push_back(train.FrequencyLevels(d));
    const std::vector<double>& lv = data.levels.back();
    const double f_default = train.layout.domains[d].default_freq_mhz;
    const auto it = std::find(lv.begin(), lv.end(), f_default);
    if (it == lv.end()) {
      // gpmTOOL files state the defaults on line 2; tidy files take them from the options.
      const std::string field = train.defaults_line > 0
                                    ? train.layout.domains[d].name + " default frequency"
                                    : "--default-" + train.layout.domains[d].name + "-mhz";
      throw InputError(train.path, train.defaults_line, field,
                       fmt::format("the default {} frequency {} MHz has no rows (measured: {} "
                                   "to {} MHz)",
                                   train.layout.domains[d].name, f_default, lv.front(),
                                   lv.back()));
    }
    data.default_level.push_back(static_cast<int>(it - lv.begin()));
    data.rows_at_level[d].resize(lv.size());
    data.level_of_row[d].resize(train.rows());
    for (int r = 0; r < train.rows(); ++r) {
      const int j = static_cast<int>(std::lower_bound(lv.begin(), lv.end(), train.freq_mhz(r, d)) -
                                     lv.begin());
      data.level_of_row[d][r] = j;
      data.rows_at_level[d][j].push_back(r);
    }
  }
  if (train.RowsAtDefault().empty()) {
    std::string pair;
    for (const FrequencyDomain& dom : train.layout.domains) {
      pair += (pair.empty() ? "" : "/") + fmt::format("{}", dom.default_freq_mhz);
    }
    throw InputError(train.path, train.defaults_line,
                     train.defaults_line > 0 ? "default frequencies" : "--default-core-mhz/--default-mem-mhz",
                     "no rows at the default V-F pair " + pair + " MHz");
  }
  return data;
}

// Builds the row of the linear design matrix for fixed voltages:
// [v_k..., v_k^2 f_k..., v^2 f U_i...] (TPDS Eqs. 5-6 are linear in the coefficients).
void DesignRow(const FitData& data, int r, const std::vector<std::vector<double>>& volts,
               double* out) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  double v2f[2] = {0.0, 0.0};
  for (int d = 0; d < nd; ++d) {
    const double v = volts[d][data.level_of_row[d][r]];
    v2f[d] = v * v * c.freq_mhz(r, d);
    out[d] = v;
    out[nd + d] = v2f[d];
  }
  for (int i = 0; i < data.num_components; ++i) {
    out[2 * nd + i] = v2f[data.domain_of[i]] * c.util_frac(r, i);
  }
}

// NNLS for the coefficients with voltages fixed (TPDS Fig. 5, Problem 2). Rows are
// weighted by 1/P for relative residuals.
std::vector<double> SolveCoefficients(const FitData& data,
                                      const std::vector<std::vector<double>>& volts,
                                      FitResidual residual, bool like_gpmtool = false) {
  const Corpus& c = *data.corpus;
  const int nc = 2 * data.num_domains + data.num_components;
  Eigen::MatrixXd a(c.rows(), nc);
  Eigen::VectorXd b(c.rows());
  std::vector<double> row(nc);
  for (int r = 0; r < c.rows(); ++r) {
    DesignRow(data, r, volts, row.data());
    const double w = residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0;
    for (int j = 0; j < nc; ++j) a(r, j) = row[j] * w;
    b(r) = c.power_w(r) * w;
  }
  NnlsOptions nnls;
  // gpmTOOL's scipy NNLS works on unscaled columns: with collinear columns (a single memory
  // frequency makes alpha0_mem and alpha1_mem interchangeable) it then picks the same split.
  nnls.scale_columns = !like_gpmtool;
  const Eigen::VectorXd x = SolveNnls(a, b, nnls);
  return {x.data(), x.data() + x.size()};
}

// ---------------------------------------------------------------------------------------
// Joint solve (VoltageCurve, VoltageState and RowCost are in fit/cost_functions.h).

struct SolveResult {
  std::vector<double> coefficients;
  std::vector<std::vector<double>> voltages;
  FitReport report;
};

std::unique_ptr<ceres::LossFunction> MakeLoss(const CalibrationOptions& options) {
  const double scale = options.EffectiveLossScale();
  switch (options.loss) {
    case FitLoss::kL2: return nullptr;
    case FitLoss::kHuber: return std::make_unique<ceres::HuberLoss>(scale);
    case FitLoss::kCauchy: return std::make_unique<ceres::CauchyLoss>(scale);
  }
  return nullptr;
}

// Ticks a terminal progress line once per solver iteration.
class ProgressCallback : public ceres::IterationCallback {
 public:
  explicit ProgressCallback(Progress* progress) : progress_(progress) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& /*summary*/) override {
    progress_->Tick();
    return ceres::SOLVER_CONTINUE;
  }

 private:
  Progress* progress_;
};

SolveResult SolveJoint(const FitData& data, const CalibrationOptions& options,
                       const std::vector<double>& initial_coefficients,
                       const std::vector<std::vector<double>>& initial_voltages) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  std::vector<double> x = initial_coefficients;
  std::vector<VoltageCurve> curves;
  std::vector<std::vector<double>> s(nd);
  std::vector<int> block_of_domain(nd, -1);
  int next_block = 1;
  for (int d = 0; d < nd; ++d) {
    curves.emplace_back(static_cast<int>(data.levels[d].size()), data.default_level[d],
                        options.voltage_min, options.voltage_max);
    s[d] = curves[d].Invert(initial_voltages[d]);
    if (curves[d].num_params() > 0) block_of_domain[d] = next_block++;
  }
  std::vector<double*> s_ptrs;
  std::vector<double> empty_s(1, 0.0);
  for (int d = 0; d < nd; ++d) s_ptrs.push_back(s[d].empty() ? empty_s.data() : s[d].data());
  VoltageState state(curves, s_ptrs);

  ceres::Problem::Options problem_options;
  problem_options.evaluation_callback = &state;
  problem_options.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
  ceres::Problem problem(problem_options);
  std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
  std::vector<double*> blocks = {x.data()};
  for (int d = 0; d < nd; ++d) {
    if (block_of_domain[d] >= 0) blocks.push_back(s[d].data());
  }
  for (int r = 0; r < c.rows(); ++r) {
    const double sigma = options.residual == FitResidual::kRelative ? c.power_w(r) : 1.0;
    problem.AddResidualBlock(new RowCost(&data, &state, r, sigma, block_of_domain), loss.get(),
                             blocks);
  }
  for (int j = 0; j < static_cast<int>(x.size()); ++j) problem.SetParameterLowerBound(x.data(), j, 0.0);
  for (int d = 0; d < nd; ++d) {
    for (int k = 0; k < static_cast<int>(s[d].size()); ++k) {
      problem.SetParameterLowerBound(s[d].data(), k, 0.0);
      problem.SetParameterUpperBound(s[d].data(), k, 1.0);
    }
  }

  ceres::Solver::Options solver_options;
  // ~10^4 rows x ~40 parameters: the normal equations are 40 x 40, and Jacobi scaling keeps
  // them well conditioned despite MHz-scaled columns (FORMATS.md §6.1).
  solver_options.linear_solver_type = ceres::DENSE_NORMAL_CHOLESKY;
  solver_options.max_num_iterations = options.max_solver_iterations;
  solver_options.function_tolerance = 1e-12;
  solver_options.gradient_tolerance = 1e-12;
  solver_options.parameter_tolerance = 1e-12;
  solver_options.num_threads = options.num_threads;
  solver_options.logging_type = ceres::SILENT;
  Progress progress("joint fit (iterations)", options.show_progress ? options.max_solver_iterations : 0);
  ProgressCallback callback(&progress);
  solver_options.callbacks.push_back(&callback);
  ceres::Solver::Summary summary;
  ceres::Solve(solver_options, &problem, &summary);
  progress.Finish();
  if (!summary.IsSolutionUsable()) {
    throw FitError("joint DVFS fit failed: " + summary.message);
  }
  state.Update();
  SolveResult result;
  result.coefficients = x;
  result.voltages = state.voltages();
  result.report.solver = "joint";
  result.report.converged = summary.termination_type == ceres::CONVERGENCE;
  result.report.iterations = static_cast<int>(summary.iterations.size()) - 1;
  result.report.initial_cost = summary.initial_cost;
  result.report.final_cost = summary.final_cost;
  result.report.termination = summary.message;
  return result;
}

// ---------------------------------------------------------------------------------------
// gpmTOOL's alternating algorithm (TPDS Fig. 4).

double FitLevelVoltage(const FitData& data, const std::vector<double>& x,
                       const std::vector<std::vector<double>>& volts, int d, int j, double lower,
                       double upper, double start) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  const std::vector<int>& rows = data.rows_at_level[d][j];
  std::vector<double> a(rows.size()), b(rows.size()), cc(rows.size());
  for (size_t n = 0; n < rows.size(); ++n) {
    const int r = rows[n];
    double inner[2] = {x[nd], nd > 1 ? x[nd + 1] : 0.0};
    for (int i = 0; i < data.num_components; ++i) {
      inner[data.domain_of[i]] += x[2 * nd + i] * c.util_frac(r, i);
    }
    a[n] = x[d];
    b[n] = c.freq_mhz(r, d) * inner[d];
    cc[n] = -c.power_w(r);
    for (int e = 0; e < nd; ++e) {
      if (e == d) continue;
      const double ve = volts[e][data.level_of_row[e][r]];
      cc[n] += x[e] * ve + ve * ve * c.freq_mhz(r, e) * inner[e];
    }
  }
  double v = std::clamp(start, lower, upper);
  ceres::Problem problem;
  problem.AddResidualBlock(new LevelVoltageCost(a, b, cc), nullptr, &v);
  problem.SetParameterLowerBound(&v, 0, lower);
  problem.SetParameterUpperBound(&v, 0, upper);
  ceres::Solver::Options solver_options;
  solver_options.linear_solver_type = ceres::DENSE_QR;
  solver_options.logging_type = ceres::SILENT;
  solver_options.function_tolerance = 1e-10;
  solver_options.parameter_tolerance = 1e-10;
  ceres::Solver::Summary summary;
  ceres::Solve(solver_options, &problem, &summary);
  return v;
}

SolveResult SolveAlternating(const FitData& data, const CalibrationOptions& options) {
  const int nd = data.num_domains;
  const int nc = 2 * nd + data.num_components;
  // gpmTOOL starts from all coefficients = 1 and all voltages = 1.
  std::vector<double> x(nc, 1.0);
  std::vector<std::vector<double>> volts(nd);
  for (int d = 0; d < nd; ++d) volts[d].assign(data.levels[d].size(), 1.0);

  int below_count = 0;
  int iteration = 0;
  bool converged = false;
  double last_change_pct = 0.0;
  Progress progress("alternating fit", options.show_progress ? options.max_alternating_iterations : 0);
  for (; iteration < options.max_alternating_iterations; ++iteration) {
    // Phase 1: voltage of each level, domain by domain, bounded by its neighbours.
    for (int d = 0; d < nd; ++d) {
      const int m = static_cast<int>(data.levels[d].size());
      for (int j = 0; j < m; ++j) {
        if (j == data.default_level[d]) {
          volts[d][j] = 1.0;
          continue;
        }
        const double lower = j == 0 ? options.voltage_min : volts[d][j - 1];
        const double upper = j == m - 1 ? options.voltage_max : volts[d][j + 1];
        if (lower >= upper) {
          volts[d][j] = upper;
          continue;
        }
        volts[d][j] = FitLevelVoltage(data, x, volts, d, j, lower, upper, volts[d][j]);
      }
    }
    // Phase 2: coefficients by NNLS with the voltages fixed.
    const std::vector<double> old = x;
    x = SolveCoefficients(data, volts, FitResidual::kAbsolute, /*like_gpmtool=*/true);
    double change = 0.0;
    for (int j = 0; j < nc; ++j) {
      if (old[j] != 0.0) change = std::max(change, std::abs((old[j] - x[j]) / old[j]));
    }
    last_change_pct = 100.0 * change;
    progress.Tick();
    below_count = last_change_pct < options.alternating_tolerance_pct ? below_count + 1 : 0;
    if (below_count == options.alternating_patience) {
      converged = true;
      ++iteration;
      break;
    }
  }
  progress.Finish();
  SolveResult result;
  result.coefficients = x;
  result.voltages = volts;
  result.report.solver = "alternating";
  result.report.converged = converged;
  result.report.iterations = iteration;
  result.report.termination =
      converged ? fmt::format("coefficients changed < {}% in {} consecutive iterations",
                              options.alternating_tolerance_pct, options.alternating_patience)
                : fmt::format("maximum of {} iterations reached; last change {:.4f}%",
                              options.max_alternating_iterations, last_change_pct);
  return result;
}

// Cost of a solution in the joint problem's terms (for comparing optima).
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
                     const std::vector<double>& x,
                     const std::vector<std::vector<double>>& volts) {
  PowerModel model;
  model.method = FitMethodName(method);
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
    const double w =
        options.residual == FitResidual::kRelative ? 1.0 / at_default.power_w(r) : 1.0;
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
    solver_options.max_num_iterations = options.max_solver_iterations;
    ceres::Solver::Summary summary;
    ceres::Solve(solver_options, &problem, &summary);
    if (!summary.IsSolutionUsable()) throw FitError("fixed-frequency fit failed: " + summary.message);
  }
  std::vector<double> x(2 * nd + data.num_components, 0.0);
  x[0] = beta(0);
  for (int i = 0; i < data.num_components; ++i) {
    x[2 * nd + i] = beta(i + 1) / train.layout.domains[data.domain_of[i]].default_freq_mhz;
  }
  std::vector<std::vector<double>> volts(nd, std::vector<double>(1, 1.0));
  PowerModel model = MakeModel(data, at_default, FitMethod::kFixed, x, volts);
  model.trained_on = train.path;
  model.fit.solver = "nnls";
  model.fit.converged = true;
  model.fit.iterations = 1;
  model.fit.termination = "non-negative least squares (Lawson-Hanson)";
  model.fit.loss = FitLossName(options.loss);
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
    result = SolveJoint(data, options, SolveCoefficients(data, ones, options.residual), ones);
    if (options.joint_start_from_alternating) {
      CalibrationOptions alt_options = options;
      alt_options.loss = FitLoss::kL2;
      alt_options.residual = FitResidual::kAbsolute;
      const SolveResult alt = SolveAlternating(data, alt_options);
      SolveResult second = SolveJoint(data, options, alt.coefficients, alt.voltages);
      const bool keep_second = second.report.final_cost < result.report.final_cost;
      const std::string note = fmt::format(
          " [two starts: cold start cost {:.6g}, from the alternating solution {:.6g}; kept the {}]",
          result.report.final_cost, second.report.final_cost,
          keep_second ? "start from the alternating solution" : "cold start");
      if (keep_second) result = second;
      result.report.termination += note;
    }
  }
  PowerModel model = MakeModel(data, train, FitMethod::kDvfs, result.coefficients, result.voltages);
  model.fit = result.report;
  model.fit.loss = options.solver == FitSolver::kAlternating ? "l2" : FitLossName(options.loss);
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

std::string FreqPairText(const Layout& layout, const std::vector<double>& pair) {
  std::string s;
  for (size_t d = 0; d < pair.size(); ++d) {
    s += fmt::format("{}{} MHz {}", d > 0 ? ", " : "", pair[d],
                     layout.domains[d].name == "mem" ? "memory" : layout.domains[d].name);
  }
  return s;
}

}  // namespace

TrainingSelection SelectTrainingRows(const Corpus& corpus, bool keep_flagged) {
  // How many names the message lists per flag.
  constexpr size_t kMaxListed = 10;
  TrainingSelection out;
  std::vector<int> kept;
  for (int r = 0; r < corpus.rows(); ++r) {
    (!keep_flagged && IsThrottledRow(corpus, r) ? out.left_out : kept).push_back(r);
  }
  if (out.left_out.empty()) {
    out.rows = corpus;
    return out;
  }
  if (kept.empty()) {
    throw InputError(corpus.path, 0, "flags",
                     fmt::format("every one of the {} rows is flagged {} or {} (measured while the "
                                 "power cap acted or the clock moved): nothing to train on; pass "
                                 "--keep-flagged to train on them anyway",
                                 corpus.rows(), kCorpusFlagPowerCap, kCorpusFlagClockMoved));
  }
  out.rows = corpus.Subset(kept);
  // Each row is listed under power_cap when it has that flag, else under clock_moved.
  std::string groups;
  for (const char* flag : {kCorpusFlagPowerCap, kCorpusFlagClockMoved}) {
    std::vector<std::string> names;
    for (int r : out.left_out) {
      const bool listed_here = std::string(flag) == kCorpusFlagPowerCap
                                   ? HasFlag(corpus, r, kCorpusFlagPowerCap)
                                   : !HasFlag(corpus, r, kCorpusFlagPowerCap);
      if (!listed_here) continue;
      if (std::find(names.begin(), names.end(), corpus.benchmark[r]) == names.end()) {
        names.push_back(corpus.benchmark[r]);
      }
    }
    if (names.empty()) continue;
    std::string list;
    for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) list += (i > 0 ? ", " : "") + names[i];
    if (names.size() > kMaxListed) list += fmt::format(", and {} more", names.size() - kMaxListed);
    groups += fmt::format("{}{}: {}", groups.empty() ? "" : "; ", flag, list);
  }
  out.message = fmt::format("left out {} flagged row{} ({}); --keep-flagged trains on them",
                            out.left_out.size(), out.left_out.size() == 1 ? "" : "s", groups);
  return out;
}

std::vector<std::vector<double>> VfPairs(const Corpus& corpus) {
  std::set<std::vector<double>> pairs;
  for (int r = 0; r < corpus.rows(); ++r) {
    std::vector<double> pair(corpus.freq_mhz.cols());
    for (int d = 0; d < corpus.freq_mhz.cols(); ++d) pair[d] = corpus.freq_mhz(r, d);
    pairs.insert(pair);
  }
  return {pairs.begin(), pairs.end()};
}

void CheckTwoVfPairs(const Corpus& corpus, const std::string& what, const std::string& fix) {
  if (!corpus.has_freq()) return;  // PrepareFitData names the missing frequencies
  const std::vector<std::vector<double>> pairs = VfPairs(corpus);
  if (pairs.size() != 1) return;
  throw OptionError(fmt::format("{} needs at least two V-F pairs; this corpus has one ({}): {}",
                                what, FreqPairText(corpus.layout, pairs[0]), fix));
}

namespace {
// Rank of `m` (column-pivoting QR with a relative threshold).
int RankOf(const Eigen::MatrixXd& m) {
  if (m.rows() == 0 || m.cols() == 0) return 0;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-9);
  return static_cast<int>(qr.rank());
}
}  // namespace

IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method) {
  IdentifiabilityReport report;
  const int k = train.layout.num_components();
  const std::vector<std::string> names = train.layout.ComponentNames();
  const Corpus rows = method == FitMethod::kFixed && train.has_freq()
                          ? train.Subset(train.RowsAtDefault())
                          : train;
  const std::string source = train.path.empty() ? std::string("the training corpus") : train.path;
  const std::string where = method == FitMethod::kFixed ? " at the default V-F pair" : "";
  if (rows.rows() == 0 || k == 0) return report;  // PrepareFitData names these
  constexpr double kTol = 1e-12;
  // 1. Components that never vary: all zero (fixed at 0, a warning) or constant non-zero (their
  //    power cannot be told from static power; fixed at 0, a warning).
  std::vector<int> active;
  for (int i = 0; i < k; ++i) {
    const Eigen::VectorXd col = rows.util_frac.col(i);
    const double lo = col.minCoeff(), hi = col.maxCoeff();
    if (hi - lo > kTol) {
      active.push_back(i);
      continue;
    }
    report.fixed_at_zero.push_back(i);
    report.notes.push_back(
        std::abs(hi) <= kTol
            ? fmt::format("{}: component {} never varies (always 0) in {} rows{}: its coefficient "
                          "is fixed at 0 and it cannot be predicted",
                          source, names[i], rows.rows(), where)
            : fmt::format("{}: component {} is constant {:.6g} across the {} rows{}: "
                          "indistinguishable from static power; its coefficient is fixed at 0",
                          source, names[i], lo, rows.rows(), where));
  }
  // 2. Fewer independent rows (distinct utilisation vectors) than parameters: underdetermined.
  std::set<std::vector<double>> distinct_u;
  std::set<std::vector<double>> distinct_rows;
  for (int r = 0; r < rows.rows(); ++r) {
    std::vector<double> u(rows.util_frac.cols());
    for (int i = 0; i < k; ++i) u[i] = rows.util_frac(r, i);
    distinct_u.insert(u);
    if (rows.has_freq()) {
      for (int d = 0; d < rows.freq_mhz.cols(); ++d) u.push_back(rows.freq_mhz(r, d));
    }
    distinct_rows.insert(u);
  }
  const int nonzero_components = k - static_cast<int>(report.fixed_at_zero.size()) +
                                 static_cast<int>(std::count_if(
                                     report.fixed_at_zero.begin(), report.fixed_at_zero.end(),
                                     [&](int i) { return std::abs(rows.util_frac(0, i)) > kTol; }));
  const int parameters = 1 + nonzero_components;
  if (static_cast<int>(distinct_u.size()) < parameters) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: {} independent rows (distinct utilisation "
                                 "vectors{}) for {} parameters (static power and {} components "
                                 "with non-zero utilisation); add benchmarks that exercise the "
                                 "components differently",
                                 distinct_u.size(), where, parameters, nonzero_components));
  }
  if (active.empty()) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: no component's utilisation varies across "
                                 "the {} rows{} (every column is constant): only static power "
                                 "could be fitted",
                                 rows.rows(), where));
  }
  // 3. Identical columns: the later component is fixed at 0 (a warning naming both).
  std::vector<int> kept;
  for (int i : active) {
    bool duplicate = false;
    for (int j : kept) {
      if ((rows.util_frac.col(i) - rows.util_frac.col(j)).cwiseAbs().maxCoeff() <= kTol) {
        report.fixed_at_zero.push_back(i);
        report.notes.push_back(fmt::format(
            "{}: component {}'s utilisation column is identical to {}'s column in every row{}: "
            "the fit cannot tell them apart; {}'s coefficient is fixed at 0 (its power goes to {})",
            source, names[i], names[j], where, names[i], names[j]));
        duplicate = true;
        break;
      }
    }
    if (!duplicate) kept.push_back(i);
  }
  // 4. Any other exact dependency among the components left is rank deficiency: an error.
  Eigen::MatrixXd kept_design(rows.rows(), 1 + static_cast<int>(kept.size()));
  kept_design.col(0).setOnes();
  for (size_t j = 0; j < kept.size(); ++j) kept_design.col(j + 1) = rows.util_frac.col(kept[j]);
  const int kept_rank = RankOf(kept_design);
  if (kept_rank < kept_design.cols()) {
    std::string list;
    for (int i : kept) list += (list.empty() ? "" : ", ") + names[i];
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: the utilisations{} have rank {} for {} "
                                 "parameters (static power and {}): some components are a linear "
                                 "combination of others",
                                 where, kept_rank, kept_design.cols(), list));
  }
  // 5. DVFS: every frequency level adds a voltage; distinct rows must cover the parameters.
  if (method == FitMethod::kDvfs && rows.has_freq()) {
    int free_voltages = 0;
    for (int d = 0; d < rows.freq_mhz.cols(); ++d) {
      std::set<double> levels;
      for (int r = 0; r < rows.rows(); ++r) levels.insert(rows.freq_mhz(r, d));
      free_voltages += static_cast<int>(levels.size()) - 1;
    }
    const int dvfs_parameters = 2 * rows.layout.num_domains() + static_cast<int>(kept.size()) +
                                free_voltages;
    if (static_cast<int>(distinct_rows.size()) < dvfs_parameters) {
      throw InputError(source, 0, "",
                       fmt::format("underdetermined fit: {} independent rows (distinct frequency "
                                   "and utilisation rows) for {} parameters ({} coefficients and "
                                   "{} voltages)",
                                   distinct_rows.size(), dvfs_parameters,
                                   dvfs_parameters - free_voltages, free_voltages));
    }
  }
  std::sort(report.fixed_at_zero.begin(), report.fixed_at_zero.end());
  return report;
}

uint64_t BootstrapReplicateSeed(uint64_t seed, int b) {
  // splitmix64 of (seed, b): neighbouring replicates get unrelated generator states.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(b) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t UniformIndex(std::mt19937_64& gen, uint64_t n) {
  if (n <= 1) return 0;
  // Largest multiple of n that fits: draws at or above it are rejected (no modulo bias).
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  for (;;) {
    const uint64_t x = gen();
    if (x < limit) return x % n;
  }
}

double BootstrapPercentile(std::vector<double> values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double h = (static_cast<double>(values.size()) - 1.0) * std::clamp(p, 0.0, 1.0);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

CoefficientCi BootstrapFixedCoefficients(const Corpus& train, const CalibrationOptions& options) {
  CoefficientCi ci;
  const int replicates = options.bootstrap_replicates;
  if (replicates <= 0) return ci;
  // The fixed model trains on the default pair's rows: resample the benchmarks found there.
  const Corpus at_default = train.Subset(train.RowsAtDefault());
  const std::vector<std::string> names = at_default.Benchmarks();
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < names.size(); ++i) index_of[names[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> rows_of(names.size());
  for (int r = 0; r < at_default.rows(); ++r) rows_of[index_of[at_default.benchmark[r]]].push_back(r);
  const int nb = static_cast<int>(names.size());
  const int nd = at_default.layout.num_domains();
  const int nc = 2 * nd + at_default.layout.num_components();
  std::vector<std::vector<double>> coefficients(replicates);
  std::vector<std::string> failures(replicates);
  CalibrationOptions refit = options;
  refit.bootstrap_replicates = 0;
  refit.show_progress = false;
#pragma omp parallel for schedule(dynamic) num_threads(options.num_threads)
  for (int b = 0; b < replicates; ++b) {
    try {
      std::mt19937_64 gen(BootstrapReplicateSeed(options.bootstrap_seed, b));
      std::vector<int> rows;
      for (int k = 0; k < nb; ++k) {
        const std::vector<int>& drawn = rows_of[UniformIndex(gen, static_cast<uint64_t>(nb))];
        rows.insert(rows.end(), drawn.begin(), drawn.end());
      }
      coefficients[b] = CalibrateFixed(at_default.Subset(rows), refit).Coefficients();
    } catch (const std::exception& e) {
      failures[b] = e.what();
    }
  }
  for (int b = 0; b < replicates; ++b) {
    if (!failures[b].empty()) {
      throw FitError(fmt::format("bootstrap replicate {} of {} (seed {}) failed: {}", b + 1,
                                 replicates, options.bootstrap_seed, failures[b]));
    }
  }
  ci.bootstrap_replicates = replicates;
  ci.seed = options.bootstrap_seed;
  for (int j = 0; j < nc; ++j) {
    std::vector<double> values(replicates);
    for (int b = 0; b < replicates; ++b) values[b] = coefficients[b][j];
    const std::pair<double, double> interval = {BootstrapPercentile(values, 0.025),
                                                BootstrapPercentile(values, 0.975)};
    if (j < nd) {
      ci.static_w.push_back(interval);
    } else if (j < 2 * nd) {
      ci.idle_dyn_w_per_mhz.push_back(interval);
    } else {
      ci.component_w_per_mhz.push_back(interval);
    }
  }
  return ci;
}

PowerModel Calibrate(const Corpus& corpus, const CalibrationOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const TrainingSelection selection = SelectTrainingRows(corpus, options.keep_flagged);
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
    model.coefficient_ci95 = BootstrapFixedCoefficients(train, options);
  } else {
    // TPDS Eqs. 4-6 estimate one voltage per frequency level: with a single V-F pair the
    // voltages are all 1 and static power cannot be told from dynamic power.
    CheckTwoVfPairs(train);
    model = CalibrateDvfs(train, options);
    model.training_range = RangeOf(train);
  }
  model.trained_on = corpus.path;
  model.power_limit_w = options.power_limit_w > 0.0 ? options.power_limit_w : corpus.power_limit_w;
  if (!selection.message.empty()) model.training_notes.push_back(selection.message);
  if (!identifiability.fixed_at_zero.empty()) {
    std::vector<double> x = model.Coefficients();
    const int nd = model.layout.num_domains();
    for (int i : identifiability.fixed_at_zero) x[2 * nd + i] = 0.0;
    model.SetCoefficients(x);
  }
  model.training_notes.insert(model.training_notes.end(), identifiability.notes.begin(),
                              identifiability.notes.end());
  model.training_notes.insert(model.training_notes.end(), duplicates.begin(), duplicates.end());
  return model;
}

}  // namespace wattcal
