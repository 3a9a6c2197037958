// Calibrating the power model of TPDS Eqs. 4-6 (DVFS) and TPDS Eq. 9 (fixed V-F) from
// microbenchmark measurements.
//
//   joint        voltages and coefficients in one Ceres problem: coefficients >= 0, v = 1 at
//                the default pair, voltages non-decreasing with frequency within
//                [voltage_min, voltage_max] (SPEC.md; wattcal's default).
//   alternating  gpmTOOL's algorithm (TPDS Fig. 4-5): bounded 1-D voltage fits per frequency
//                level alternating with NNLS for the coefficients, until the coefficients
//                change by less than 0.05% five times running.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

enum class FitMethod { kDvfs, kFixed };
enum class FitSolver { kJoint, kAlternating };
enum class FitLoss { kL2, kHuber, kCauchy };
enum class FitResidual { kAbsolute, kRelative };

const char* FitMethodName(FitMethod v);
const char* FitSolverName(FitSolver v);
const char* FitLossName(FitLoss v);  // "l2" | "huber" | "cauchy" (the names --loss takes)
const char* FitResidualName(FitResidual v);
// The inverse of FitLossName; false (and *loss untouched) for any other text.
bool ParseFitLoss(const std::string& name, FitLoss* loss);

// The loss a fit uses unless told otherwise, the one source of that default for the library
// (CalibrationOptions::loss) and the command line (--loss): Huber for the joint DVFS solve,
// which is robust to the outliers of real data (bench/loss_study, README); L2 for the fixed
// method (TPDS Eq. 9 by least squares, as gpmTOOL) and for the alternating solver, which
// reproduces gpmTOOL and supports L2 only (TPDS Fig. 4-5).
constexpr FitLoss DefaultLoss(FitMethod method, FitSolver solver) {
  return method == FitMethod::kDvfs && solver == FitSolver::kJoint ? FitLoss::kHuber
                                                                   : FitLoss::kL2;
}

struct CalibrationOptions {
  // dvfs: cross-domain model with unknown voltages; fixed: TPDS Eq. 9 at the default pair.
  FitMethod method = FitMethod::kDvfs;
  // How the DVFS model is estimated (ignored by the fixed method).
  FitSolver solver = FitSolver::kJoint;
  // Residual: absolute (W) or relative to the measured power (fraction).
  FitResidual residual = FitResidual::kAbsolute;
  // Loss applied to each row's residual (alternating supports l2 only, as gpmTOOL).
  // DefaultLoss(method, solver) of the default method and solver: code that changes
  // `method` or `solver` sets `loss = DefaultLoss(method, solver)` for that pair's default.
  FitLoss loss = DefaultLoss(FitMethod::kDvfs, FitSolver::kJoint);
  // Scale of the Huber/Cauchy loss, in residual units: W for absolute residuals, a fraction
  // of the measured power for relative ones; 0 picks 3 W (absolute) or 0.05 (relative).
  // One spelling everywhere: --loss-scale, CalibrationFlags::loss_scale, "loss_scale" in
  // manifests and model files.
  double loss_scale = 0.0;
  // Bounds of every normalised voltage.
  double voltage_min = 0.5;
  double voltage_max = 2.0;
  // Ceres iterations for the joint solve.
  int max_solver_iterations = 500;
  // Outer iterations of the alternating solver (gpmTOOL: 500).
  int max_alternating_iterations = 500;
  // Alternating stop rule: largest relative coefficient change below this, in percent ...
  double alternating_tolerance_pct = 0.05;
  // ... this many iterations running.
  int alternating_patience = 5;
  // Joint solver: besides the cold start (v = 1, NNLS coefficients), also start from
  // gpmTOOL's alternating solution and keep the optimum of lower cost. The problem has
  // several local minima (the static power's split between the domains is weakly
  // identified); on the Titan X data the second start lowers the cost and the held-out error
  // (bench/loss_study).
  bool joint_start_from_alternating = true;
  // Threads. 2 or more: the joint solver's two starts run side by side (the same model as one
  // thread, bit for bit; the Titan X default fit takes 18 ms of wall time instead of 28).
  // Also the Ceres evaluations where the joint problem has several blocks (per-pair or
  // per-row: joint_compressed_pairs off, reference_solver; fewer where more do not pay, one
  // per 50000 training rows); the default compressed problem is one block, evaluated on one
  // thread.
  int num_threads = 1;
  // Joint solver: active-set rounds around Ceres (calibrate.cc, SolveWithActiveSet): the
  // variables on a bound whose gradient points out of the box are held there and Ceres solves
  // for the others, round after round, until the first-order conditions hold. Off: Ceres's own
  // bounds handling, which projects each step onto the box and judges it by the unprojected
  // step's model, so it stalls next to a bound (on the Titan X the cold start ended with a
  // projected gradient of 2.3e6 after 30 iterations of halving steps; issue 14). The rounds
  // reach lower costs (Titan X 11 components 124061.0 instead of 125201.1, 7 components
  // 54415.7 instead of 55118.8) in fewer iterations, from both starts.
  bool joint_active_set = true;
  // Joint solver without the active-set rounds: Ceres's line search along each projected step
  // (Armijo, cubic interpolation), as the former default. Off, the default Titan X fit took
  // 0.63x the CPU time but ended the 7-component set elsewhere (cost 54989.7 instead of
  // 55118.8). The rounds never use it.
  bool joint_bounds_line_search = true;
  // Joint solver: the whole problem as one Ceres block with the Gauss-Newton Hessian, gradient
  // and cost of the per-row residuals with the loss applied (calibrate.cc,
  // CompressedProblemCost: np + 1 residuals for np parameters, the rows summed per V-F pair),
  // so Ceres follows the path of the per-row formulation up to rounding (Titan X 11/7
  // components without the rounds: the same 58/61 iterations, final costs 1e-11 apart). Off:
  // one block per V-F pair returning every row (PairCost).
  bool joint_compressed_pairs = true;
  // The former solver formulation, kept as the reference the fast default is tested against:
  // joint: one Ceres residual block per row with Ceres's loss, Ceres's bounds handling with its
  // line search, no active-set rounds; alternating: a bounded Ceres fit per frequency level and
  // NNLS on every row instead of the closed-form minimum from per-V-F-pair moments and NNLS
  // from the normal equations. Slower; the alternating solver reaches the same optimum, the
  // joint solver stops where Ceres's projected steps stall (joint_active_set).
  bool reference_solver = false;
  // Draw progress lines on a terminal (cross-validation turns this off inside its folds).
  bool show_progress = true;
  // Train on rows flagged power_cap or clock_moved too (by default they are left out and
  // named: their power or clock is not the one the model describes).
  bool keep_flagged = false;
  // The board's power limit recorded in the model, W; 0 = the training corpus's (if any).
  double power_limit_w = 0.0;
  // Fixed method only: bootstrap confidence intervals of the coefficients from this many
  // resamples of the training benchmarks (0 = none; PowerModel::coefficient_ci95).
  int bootstrap_replicates = 0;
  // Seed of the bootstrap resampling (replicate b draws from mt19937_64 seeded by
  // BootstrapReplicateSeed(seed, b), so the intervals do not depend on the thread count).
  uint64_t bootstrap_seed = 1;

  bool Check(std::string* error) const;
  // The loss scale actually used.
  double EffectiveLossScale() const;
};

// Fits a model to `train` (TrainingSelection's rows unless options.keep_flagged). Records in
// the model the board's power limit (options.power_limit_w, else the corpus's), the training
// range (largest utilisation per component, largest power) and the left-out rows' message in
// training_notes. Throws OptionError for a DVFS fit on one V-F pair, InputError when the
// corpus cannot support the fit (no power column, no rows at the default pair, a default
// frequency that is never measured, every row flagged) and FitError when the solver returns no
// usable solution. Runs CheckIdentifiability first: its warnings go to
// training_notes and its components are fitted with coefficient 0.
PowerModel Calibrate(const Corpus& train, const CalibrationOptions& options);

}  // namespace wattcal
