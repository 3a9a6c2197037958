#include "accelwattch/scaling_fit.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "accelwattch/internal/scaling_cost.h"
#include "util/errors.h"
#include "util/logging.h"
#include "validate/metrics.h"

namespace wattcal {
namespace {

// ScalingCost is in accelwattch/internal/scaling_cost.h (its Jacobian is checked by the tests).
using accelwattch_internal::ScalingCost;

class ProgressCallback : public ceres::IterationCallback {
 public:
  explicit ProgressCallback(Progress* progress) : progress_(progress) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary&) override {
    progress_->Tick();
    return ceres::SOLVER_CONTINUE;
  }

 private:
  Progress* progress_;
};

double TrainMape(const AccelWattchModel& model, const ComponentTable& train) {
  return ComputeErrorMetrics(PredictKernels(model, train)).mape_pct;
}

// Outer passes of the active-set loop in RunStart, at most, and Ceres iterations per pass:
// a parameter that reaches its bound during a pass is held there from the next pass on.
constexpr int kMaxActiveSetPasses = 100;
constexpr int kIterationsPerPass = 50;

// One start: Ceres from `x_start` (made feasible first) inside an active-set loop.
//
// Ceres keeps iterates inside the boxes by clamping each step to the bounds; with a parameter
// pressed against its bound the clamped steps shrink until the step-size test stops the solve
// short of the optimum of the remaining parameters. So after each solve, every parameter at a
// bound whose gradient pushes it outward is held there (SubsetManifold) and every held one whose
// gradient now points inward is released, and Ceres runs again, until the set stops changing:
// the optimum then satisfies the bound-constrained optimality conditions in the parameters.
AccelWattchStartReport RunStart(const std::string& name, const std::vector<double>& x_start,
                                const ComponentTable& train, const OrderingForest& forest,
                                const std::vector<double>& prior_x,
                                const AccelWattchFitOptions& options, AccelWattchModel* scratch) {
  const int n = train.num_components();
  AccelWattchStartReport report;
  report.name = name;
  report.run = true;
  std::vector<double> theta = forest.FromX(x_start);
  report.x_start.resize(n);
  forest.ToX(theta.data(), report.x_start.data(), nullptr);

  // Not owned by the problems below (each pass builds its own).
  ceres::Problem::Options problem_options;
  problem_options.cost_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
  ScalingCost cost(train, forest, prior_x, options.prior_weight);
  std::vector<bool> held(n, false);
  for (int i = 0; i < n; ++i) held[i] = forest.ParameterFixed(i);

  Progress progress(fmt::format("accelwattch fit, start '{}' (iterations)", name),
                    options.show_progress ? options.max_iterations : 0);
  ProgressCallback callback(&progress);
  int passes = 0;
  bool stable = false;
  std::string message;
  while (passes < kMaxActiveSetPasses) {
    ++passes;
    ceres::Problem problem(problem_options);
    problem.AddResidualBlock(&cost, nullptr, theta.data());
    std::vector<int> fixed;
    for (int i = 0; i < n; ++i) {
      if (held[i]) {
        fixed.push_back(i);
        continue;
      }
      problem.SetParameterLowerBound(theta.data(), i, forest.ParameterLower(i));
      problem.SetParameterUpperBound(theta.data(), i, forest.ParameterUpper(i));
    }
    if (static_cast<int>(fixed.size()) == n) {
      problem.SetParameterBlockConstant(theta.data());
    } else if (!fixed.empty()) {
      problem.SetManifold(theta.data(), new ceres::SubsetManifold(n, fixed));
    }
    ceres::Solver::Options solver_options;
    // A few hundred kernels by a few dozen factors at most: dense QR is exact and cheap.
    solver_options.linear_solver_type = ceres::DENSE_QR;
    solver_options.max_num_iterations =
        std::max(1, std::min(kIterationsPerPass, options.max_iterations - report.iterations));
    solver_options.function_tolerance = 1e-12;
    solver_options.gradient_tolerance = 1e-14;
    solver_options.parameter_tolerance = 1e-12;
    solver_options.logging_type = ceres::SILENT;
    solver_options.callbacks.push_back(&callback);
    ceres::Solver::Summary summary;
    ceres::Solve(solver_options, &problem, &summary);
    if (!summary.IsSolutionUsable()) {
      throw FitError(fmt::format("AccelWattch scaling-factor fit (start '{}') failed: {}", name,
                                 summary.message));
    }
    if (passes == 1) report.initial_cost = summary.initial_cost;
    report.final_cost = summary.final_cost;
    report.iterations += std::max(0, static_cast<int>(summary.iterations.size()) - 1);
    report.converged = summary.termination_type == ceres::CONVERGENCE;
    message = summary.message;

    // The gradient J^T r at the solution decides which bounds stay active.
    const int m = cost.num_residuals();
    std::vector<double> r(m), jacobian(static_cast<size_t>(m) * n);
    const double* params[] = {theta.data()};
    double* jacobians[] = {jacobian.data()};
    cost.Evaluate(params, r.data(), jacobians);
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      if (forest.ParameterFixed(i)) continue;
      double g = 0.0;
      for (int k = 0; k < m; ++k) g += jacobian[static_cast<size_t>(k) * n + i] * r[k];
      const bool at_lower = theta[i] <= forest.ParameterLower(i);
      const bool at_upper = theta[i] >= forest.ParameterUpper(i);
      const bool pushed_out = (at_lower && g > 0.0) || (at_upper && g < 0.0);
      if (held[i] != pushed_out) {
        held[i] = pushed_out;
        changed = true;
      }
    }
    if (!changed && summary.termination_type == ceres::CONVERGENCE) {
      stable = true;
      break;
    }
    if (report.iterations >= options.max_iterations) break;
  }
  progress.Finish();
  report.converged = report.converged && stable;
  report.termination =
      fmt::format("{} ({} active-set pass{}{})", message, passes, passes == 1 ? "" : "es",
                  stable ? "" : ", active set still changing");
  report.x.resize(n);
  forest.ToX(theta.data(), report.x.data(), nullptr);
  scratch->x = report.x;
  report.train_mape_pct = TrainMape(*scratch, train);
  return report;
}

}  // namespace

bool AccelWattchFitOptions::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  const auto check_bounds = [&](const std::string& field, double lo, double hi) {
    if (!(std::isfinite(lo) && lo >= 0.0)) {
      return fail(fmt::format("AccelWattchFitOptions.{} lower bound = {} must be finite and >= 0",
                              field, lo));
    }
    if (!(std::isfinite(hi) && hi >= lo)) {
      return fail(fmt::format(
          "AccelWattchFitOptions.{} upper bound = {} must be finite and >= the lower bound {}",
          field, hi, lo));
    }
    return true;
  };
  if (!check_bounds("lower_bound/upper_bound", lower_bound, upper_bound)) return false;
  for (const auto& [name, b] : component_bounds) {
    if (name.empty())
      return fail("AccelWattchFitOptions.component_bounds has an empty component name");
    if (!check_bounds(fmt::format("component_bounds[{}]", name), b.first, b.second)) return false;
  }
  for (const auto& [name, x] : prior_x) {
    if (!(std::isfinite(x) && x > 0.0)) {
      return fail(
          fmt::format("AccelWattchFitOptions.prior_x[{}] = {} must be finite and > 0", name, x));
    }
  }
  if (!(std::isfinite(prior_weight) && prior_weight >= 0.0)) {
    return fail(fmt::format("AccelWattchFitOptions.prior_weight = {} must be finite and >= 0",
                            prior_weight));
  }
  if (max_iterations < 1) {
    return fail(
        fmt::format("AccelWattchFitOptions.max_iterations = {} must be >= 1", max_iterations));
  }
  return true;
}

AccelWattchModel FitAccelWattchScaling(const ComponentTable& train,
                                       const AccelWattchFitOptions& options, bool quiet_drops) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const int n = train.num_components();
  const auto& known = AccelWattchComponentNames();

  std::vector<double> lower(n, options.lower_bound), upper(n, options.upper_bound);
  for (const auto& [name, b] : options.component_bounds) {
    const int i = train.FindComponent(name);
    if (i < 0) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        throw OptionError(
            fmt::format("bounds: '{}' is neither a component of {} nor an AccelWattch component",
                        name, train.path));
      }
      if (!quiet_drops)
        LogInfo(
            fmt::format("bounds for {} ignored: {} has no {}_W column", name, train.path, name));
      continue;
    }
    lower[i] = b.first;
    upper[i] = b.second;
  }

  std::vector<Ordering> orderings;
  if (options.paper_orderings) orderings = PaperOrderings();
  orderings.insert(orderings.end(), options.extra_orderings.begin(), options.extra_orderings.end());
  const OrderingForest forest(train.components, orderings, lower, upper);
  if (!quiet_drops) {
    for (const DroppedOrdering& d : forest.dropped()) {
      LogInfo(fmt::format("ordering {} ({}) dropped: {}", d.ordering.Text(), d.ordering.Source(),
                          d.reason));
    }
  }

  std::vector<double> prior(n, 1.0);
  std::vector<std::string> without_prior;
  for (int i = 0; i < n; ++i) {
    const auto it = options.prior_x.find(train.components[i]);
    if (it != options.prior_x.end()) {
      prior[i] = it->second;
    } else if (!options.prior_x.empty()) {
      without_prior.push_back(train.components[i]);
    }
  }
  if (!without_prior.empty() && !quiet_drops) {
    LogInfo(fmt::format("the prior model has no factor for {}: prior 1 for these",
                        fmt::join(without_prior, ", ")));
  }

  AccelWattchModel model;
  model.components = train.components;
  model.lower_bound = lower;
  model.upper_bound = upper;
  model.prior_x = prior;
  model.orderings = forest.used();
  model.dropped_orderings = forest.dropped();
  model.trained_on = train.path;
  model.training_kernels = train.kernels;
  model.x.assign(n, 1.0);

  AccelWattchFitReport& fit = model.fit;
  fit.prior_weight = options.prior_weight;
  fit.prior_source = options.prior_x.empty()
                         ? "x = 1"
                         : (options.prior_source.empty() ? "prior model" : options.prior_source);
  AccelWattchModel scratch = model;
  fit.starts.push_back(
      RunStart("ones", std::vector<double>(n, 1.0), train, forest, prior, options, &scratch));
  if (!options.prior_x.empty() && options.start_from_prior) {
    fit.starts.push_back(RunStart("prior", prior, train, forest, prior, options, &scratch));
  } else {
    AccelWattchStartReport skipped;
    skipped.name = "prior";
    skipped.termination =
        options.prior_x.empty()
            ? "not run: no prior model given (the prior is x = 1, the first start)"
            : "not run: start_from_prior = false";
    fit.starts.push_back(skipped);
  }
  const AccelWattchStartReport* kept = &fit.starts[0];
  if (fit.starts[1].run && fit.starts[1].final_cost < kept->final_cost) kept = &fit.starts[1];
  fit.kept_start = kept->name;
  fit.converged = kept->converged;
  fit.final_cost = kept->final_cost;
  model.x = kept->x;

  const ErrorMetrics train_metrics = ComputeErrorMetrics(PredictKernels(model, train));
  fit.train_kernels = train.num_kernels();
  fit.train_mape_pct = train_metrics.mape_pct;
  fit.train_max_ape_pct = train_metrics.max_ape_pct;
  fit.train_rmse_w = train_metrics.rmse_w;
  fit.train_pearson_r = train_metrics.pearson_r;
  fit.max_constraint_violation = forest.MaxViolation(model.x);
  return model;
}

AccelWattchLokoReport LeaveOneKernelOut(const ComponentTable& table,
                                        const AccelWattchFitOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (table.num_kernels() < 2) {
    throw InputError(table.path, 0, "", "leave-one-kernel-out needs at least 2 kernels");
  }
  AccelWattchFitOptions fold_options = options;
  fold_options.show_progress = false;
  AccelWattchLokoReport result;
  Progress progress("leave-one-kernel-out (folds)",
                    options.show_progress ? table.num_kernels() : 0);
  for (int k = 0; k < table.num_kernels(); ++k) {
    std::vector<int> others;
    for (int j = 0; j < table.num_kernels(); ++j) {
      if (j != k) others.push_back(j);
    }
    AccelWattchModel model = FitAccelWattchScaling(table.Subset(others), fold_options, k > 0);
    PredictionRow row = PredictKernels(model, table.Subset({k})).front();
    row.fold = k;
    result.rows.push_back(row);
    result.max_constraint_violation =
        std::max(result.max_constraint_violation, model.fit.max_constraint_violation);
    result.fold_models.push_back(std::move(model));
    progress.Tick();
  }
  progress.Finish();
  return result;
}

}  // namespace wattcal
