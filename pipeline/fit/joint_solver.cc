#include "fit/internal/solvers.h"

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

#include "fit/internal/compressed_problem_cost.h"
#include "fit/internal/pair_cost.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {
namespace fit_internal {

using Clock = std::chrono::steady_clock;

std::unique_ptr<ceres::LossFunction> MakeLoss(const CalibrationOptions& options) {
  const double scale = options.EffectiveLossScale();
  switch (options.loss) {
    case FitLoss::kL2: return nullptr;
    case FitLoss::kHuber: return std::make_unique<ceres::HuberLoss>(scale);
    case FitLoss::kCauchy: return std::make_unique<ceres::CauchyLoss>(scale);
  }
  return nullptr;
}

namespace {

// Stopping tolerances of the joint solve (Ceres's relative cost change, projected gradient and
// step). Measured (issue 14): 1e-8 saves 15% of the iterations on the Titan X with the same
// optimum, but on a synthetic corpus with corrupted rows (calibrate_test's
// RobustLossesResistCorruptedRows) the L2 start from the alternating solution then stops on
// a plateau, cost 98858.7 instead of 98809.7, and the other start is kept. So they stay 1e-12.
constexpr double kJointFunctionTolerance = 1e-12;
// The active-set rounds' relative cost change, measured (issue 14): 1e-10 ends both Titan X
// sets on points no feasible move of 1e-5 lowers by more than 1e-11 of the cost, with the
// held-out MAPE of 1e-12 to 1e-4 point, in 35 instead of 42 iterations; 1e-9 leaves 4e-10.
constexpr double kActiveSetFunctionTolerance = 1e-10;
constexpr double kJointGradientTolerance = 1e-12;
constexpr double kJointParameterTolerance = 1e-12;

// Threads for the joint solve's evaluations over several blocks (the per-pair PairCost blocks;
// the default CompressedProblemCost is one block, which Ceres evaluates on one thread): one
// per kRowsPerThread rows, at most `requested`.
// On the Titan X (6528 rows) --threads 2 made the fit 1.25x slower (issue 14): a thread's
// share of an evaluation is shorter than starting Ceres's parallel loop. The 50000-row
// threshold is a conservative guess, not a measured crossover (this 2-core machine is shared
// and too loaded to measure one); every corpus in shared/datasets stays on one thread.
constexpr int kRowsPerThread = 50000;
int JointSolverThreads(int requested, int rows) {
  return std::max(1, std::min(requested, rows / kRowsPerThread));
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

// One bounded scalar of the joint problem: a coefficient (>= 0) or a voltage parameter s
// (in [0, 1]), as the value inside its Ceres parameter block.
struct BoundedScalar {
  double* value;
  int block;  // index into the problem's parameter blocks
  int index;  // within the block
  double lower, upper;
  bool AtBound() const { return *value <= lower || *value >= upper; }
};

// Ends a Ceres run of the active-set rounds (SolveWithActiveSet) after the first successful
// step that puts a variable not held on one of its bounds: past that point Ceres's projected
// steps stall (below).
class BoundReachedCallback : public ceres::IterationCallback {
 public:
  BoundReachedCallback(const std::vector<BoundedScalar>* scalars, const std::vector<char>* held)
      : scalars_(scalars), held_(held) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& summary) override {
    if (summary.iteration == 0 || !summary.step_is_successful) return ceres::SOLVER_CONTINUE;
    for (size_t i = 0; i < scalars_->size(); ++i) {
      if (!(*held_)[i] && (*scalars_)[i].AtBound()) {
        reached_ = true;
        return ceres::SOLVER_TERMINATE_SUCCESSFULLY;
      }
    }
    return ceres::SOLVER_CONTINUE;
  }
  bool reached() const { return reached_; }
  void Reset() { reached_ = false; }

 private:
  const std::vector<BoundedScalar>* scalars_;
  const std::vector<char>* held_;
  bool reached_ = false;
};

// Active-set rounds around Ceres (SolverSwitches::joint_active_set).
//
// Ceres keeps bounds by projecting each trust-region step onto the box, but it judges the step
// by the model decrease of the step before the projection (ceres/internal/
// trust_region_minimizer.cc; its own comment on the projected line search: "does not do
// anything illegal but is incorrect and not terribly effective", ceres-solver issue 187). When
// the unconstrained step points out of the box at a variable on its bound, every step is cut
// there, the ratio of actual to predicted decrease stays small, the radius halves at each
// iteration and the solve ends on the relative cost change, away from the minimum: on the Titan
// X the cold start spent 33 of its 63 iterations so, its projected gradient at 2.3e6 to the
// end. Such bounds are common here: a voltage step s = 0 is two equal neighbouring voltages
// (the Titan X's lowest core levels), a coefficient at 0 a component that draws nothing; 11
// of the 34 variables end on one.
//
// The rounds hold those variables instead, as active-set methods do (and as the AccelWattch
// scaling fit's passes do, accelwattch/scaling_fit.cc; Nocedal & Wright,
// "Numerical Optimization", 2nd ed., Sec. 16.5; Bertsekas, "Projected Newton methods for
// optimization problems with simple constraints", SIAM J. Control Optim. 20 (1982)): each
// round computes the gradient, holds every variable on a bound whose gradient points out of
// the box (Ceres's SubsetManifold, or the whole block constant), frees the others, and runs
// Ceres without the line search until it converges or a free variable reaches a bound
// (BoundReachedCallback). It ends when a run converges and the held set is the one the
// gradient there asks for: the first-order (KKT) conditions of the bounded problem, to Ceres's
// tolerances on the free variables.
ceres::Solver::Summary SolveWithActiveSet(ceres::Problem* problem,
                                          const std::vector<double*>& blocks,
                                          const std::vector<int>& block_sizes,
                                          const std::vector<BoundedScalar>& scalars,
                                          ceres::Solver::Options solver_options,
                                          int* total_iterations, int* rounds) {
  const int n = static_cast<int>(scalars.size());
  std::vector<char> held(n, 0);
  BoundReachedCallback bound_reached(&scalars, &held);
  solver_options.callbacks.push_back(&bound_reached);
  solver_options.update_state_every_iteration = true;  // the callback reads the values
  solver_options.max_num_line_search_step_size_iterations = 0;
  const int max_iterations = solver_options.max_num_iterations;
  ceres::Problem::EvaluateOptions evaluate;
  evaluate.parameter_blocks = blocks;
  std::vector<double> gradient;
  std::vector<int> offset(blocks.size(), 0);  // of each block in the gradient
  for (size_t b = 1; b < blocks.size(); ++b) offset[b] = offset[b - 1] + block_sizes[b - 1];
  ceres::Solver::Summary summary;
  double initial_cost = 0.0;
  *total_iterations = 0;
  *rounds = 0;
  bool last_converged = false;
  bool out_of_iterations = false;
  while (true) {
    // The gradient in the blocks' own coordinates: no manifold, nothing constant.
    for (double* block : blocks) {
      problem->SetManifold(block, nullptr);
      problem->SetParameterBlockVariable(block);
    }
    problem->Evaluate(evaluate, nullptr, nullptr, &gradient, nullptr);
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      const BoundedScalar& v = scalars[i];
      const double g = gradient[offset[v.block] + v.index];
      const char hold = (*v.value <= v.lower && g > 0.0) || (*v.value >= v.upper && g < 0.0);
      changed |= hold != held[i];
      held[i] = hold;
    }
    if (*rounds > 0 && last_converged && !changed) break;
    // Every round but one that converges at once takes a successful step, so the iterations
    // bound the rounds; the cap on rounds is a second guard.
    if (*rounds > 0 && (*total_iterations >= max_iterations || *rounds > max_iterations)) {
      out_of_iterations = true;
      break;
    }
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::vector<int> fixed;
      for (int i = 0; i < n; ++i) {
        if (scalars[i].block == static_cast<int>(b) && held[i]) fixed.push_back(scalars[i].index);
      }
      if (static_cast<int>(fixed.size()) == block_sizes[b]) {
        problem->SetParameterBlockConstant(blocks[b]);
      } else if (!fixed.empty()) {
        problem->SetManifold(blocks[b], new ceres::SubsetManifold(block_sizes[b], fixed));
      }
    }
    solver_options.max_num_iterations = std::max(1, max_iterations - *total_iterations);
    bound_reached.Reset();
    ceres::Solver::Summary round;
    ceres::Solve(solver_options, problem, &round);
    if (*rounds == 0) initial_cost = round.initial_cost;
    ++*rounds;
    *total_iterations += static_cast<int>(round.iterations.size()) - 1;
    summary = round;
    if (!round.IsSolutionUsable()) break;
    last_converged = round.termination_type == ceres::CONVERGENCE;
    if (!last_converged && !bound_reached.reached()) break;  // iterations or a failure
  }
  for (double* block : blocks) {
    problem->SetManifold(block, nullptr);
    problem->SetParameterBlockVariable(block);
  }
  summary.initial_cost = initial_cost;
  if (out_of_iterations) {
    // The iterations ran out before the held set settled: not a converged fit, whatever the
    // last round's own ending.
    summary.termination_type = ceres::NO_CONVERGENCE;
    summary.message = fmt::format(
        "Maximum number of iterations reached ({}) before the "
        "active-set rounds settled.",
        *total_iterations);
  }
  return summary;
}

// Ceres's options for the joint fit over `num_rows` rows: tolerances, iterations and threads
// (the reference solver's tight ones, or the active-set rounds' or Ceres's own bounds handling).
ceres::Solver::Options JointSolverOptions(const CalibrationOptions& options, int num_rows) {
  ceres::Solver::Options solver_options;
  // The normal equations are np x np (np ~ 40 parameters), and Jacobi scaling keeps them well
  // conditioned despite MHz-scaled columns (FORMATS.md §6.1).
  solver_options.linear_solver_type = ceres::DENSE_NORMAL_CHOLESKY;
  solver_options.max_num_iterations = options.max_iterations;
  if (options.internal.reference_solver) {
    solver_options.function_tolerance = 1e-12;  // as kJoint*Tolerance
    solver_options.gradient_tolerance = 1e-12;
    solver_options.parameter_tolerance = 1e-12;
    solver_options.num_threads = options.threads;
  } else {
    // Without the active-set rounds, Ceres's own bounds handling: a line search along each
    // projected step (Armijo, cubic interpolation, evaluating the gradient at every trial
    // point) unless joint_bounds_line_search is off.
    if (!options.internal.joint_bounds_line_search)
      solver_options.max_num_line_search_step_size_iterations = 0;
    solver_options.function_tolerance =
        options.internal.joint_active_set ? kActiveSetFunctionTolerance : kJointFunctionTolerance;
    solver_options.gradient_tolerance = kJointGradientTolerance;
    solver_options.parameter_tolerance = kJointParameterTolerance;
    solver_options.num_threads = JointSolverThreads(options.threads, num_rows);
  }
  return solver_options;
}

// `moments`: PairMoments(data, options.residual) (read by the compressed problem only).
}  // namespace

SolveResult SolveJoint(const FitData& data, const CalibrationOptions& options,
                       const std::vector<double>& initial_coefficients,
                       const std::vector<std::vector<double>>& initial_voltages,
                       const std::vector<Eigen::MatrixXd>& moments) {
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
  std::vector<std::unique_ptr<PairLoss>>
      pair_losses;  // one per PairCost block (not owned by problem)
  std::vector<double*> blocks = {x.data()};
  std::vector<int> block_sizes = {static_cast<int>(x.size())};
  std::vector<BoundedScalar> scalars;
  for (int j = 0; j < static_cast<int>(x.size()); ++j) {
    scalars.push_back({&x[j], 0, j, 0.0, std::numeric_limits<double>::infinity()});
  }
  for (int d = 0; d < nd; ++d) {
    if (block_of_domain[d] < 0) continue;
    blocks.push_back(s[d].data());
    block_sizes.push_back(static_cast<int>(s[d].size()));
    for (int k = 0; k < static_cast<int>(s[d].size()); ++k) {
      scalars.push_back({&s[d][k], block_of_domain[d], k, 0.0, 1.0});
    }
  }
  if (options.internal.reference_solver) {
    for (int r = 0; r < c.rows(); ++r) {
      const double sigma = options.residual == FitResidual::kRelative ? c.power_w(r) : 1.0;
      problem.AddResidualBlock(new RowCost(&data, &state, r, sigma, block_of_domain), loss.get(),
                               blocks);
    }
  } else if (options.internal.joint_compressed_pairs) {
    problem.AddResidualBlock(
        new CompressedProblemCost(
            &data, &state, loss.get(),
            options.loss == FitLoss::kHuber ? options.EffectiveLossScale() : 0.0, options.residual,
            block_of_domain, moments),
        nullptr, blocks);
  } else {
    for (int pair = 0; pair < static_cast<int>(data.rows_of_pair.size()); ++pair) {
      auto* cost = new PairCost(&data, &state, pair, loss.get(), options.residual, block_of_domain);
      if (loss != nullptr) pair_losses.push_back(std::make_unique<PairLoss>(cost));
      problem.AddResidualBlock(cost, loss != nullptr ? pair_losses.back().get() : nullptr, blocks);
    }
  }
  for (const BoundedScalar& v : scalars) {
    problem.SetParameterLowerBound(blocks[v.block], v.index, v.lower);
    if (std::isfinite(v.upper)) problem.SetParameterUpperBound(blocks[v.block], v.index, v.upper);
  }

  ceres::Solver::Options solver_options = JointSolverOptions(options, c.rows());
  const bool active_set = options.internal.joint_active_set && !options.internal.reference_solver;
  solver_options.logging_type = ceres::SILENT;
  Progress progress("joint fit (iterations)", options.show_progress ? options.max_iterations : 0);
  ProgressCallback callback(&progress);
  solver_options.callbacks.push_back(&callback);
  ceres::Solver::Summary summary;
  SolveResult result;
  int rounds = 0;
  if (active_set) {
    summary = SolveWithActiveSet(&problem, blocks, block_sizes, scalars, solver_options,
                                 &result.report.iterations, &rounds);
  } else {
    ceres::Solve(solver_options, &problem, &summary);
    result.report.iterations = static_cast<int>(summary.iterations.size()) - 1;
  }
  progress.Finish();
  if (!summary.IsSolutionUsable()) {
    throw FitError("joint DVFS fit failed: " + summary.message);
  }
  state.Update();
  result.coefficients = x;
  result.voltages = state.voltages();
  result.report.solver = ModelSolver::kJoint;
  result.report.converged = summary.termination_type == ceres::CONVERGENCE;
  result.report.initial_cost = summary.initial_cost;
  result.report.final_cost = summary.final_cost;
  result.report.termination = summary.message;
  if (active_set) {
    int on_bounds = 0;
    for (const BoundedScalar& v : scalars) on_bounds += v.AtBound() ? 1 : 0;
    result.report.termination +=
        fmt::format(" ({} active-set round{}; {} of {} variables on a bound)", rounds,
                    rounds == 1 ? "" : "s", on_bounds, scalars.size());
  }
  return result;
}

}  // namespace fit_internal
}  // namespace wattcal
