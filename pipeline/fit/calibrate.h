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
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

struct TrainingSelection;  // fit/training_rows.h
enum class FitSolver { kJoint, kAlternating };
enum class FitResidual { kAbsolute, kRelative };

const char* FitSolverName(FitSolver v);
const char* FitResidualName(FitResidual v);

// The loss a fit uses unless told otherwise, the one source of that default for the library
// (CalibrationOptions::loss) and the command line (--loss): Huber for the joint DVFS solve,
// which is robust to the outliers of real data (bench/loss_study, README); L2 for the fixed
// method (TPDS Eq. 9 by least squares, as gpmTOOL) and for the alternating solver, which
// reproduces gpmTOOL and supports L2 only (TPDS Fig. 4-5).
constexpr FitLoss DefaultLoss(FitMethod method, FitSolver solver) {
  return method == FitMethod::kDvfs && solver == FitSolver::kJoint ? FitLoss::kHuber : FitLoss::kL2;
}

// Switches of the solvers' formulation that exist for the tests and benchmarks that compare
// the fast default with the former formulation (calibrate_speed_equivalence_test,
// bench/calibrate_bench); production code leaves them at their defaults.
struct SolverSwitches {
  // Joint solver: active-set rounds around Ceres's bounds handling (joint_solver.cc).
  bool joint_active_set = true;
  // Joint solver without the rounds: Ceres's line search along each projected step.
  bool joint_bounds_line_search = true;
  // Joint solver: the whole problem as one compressed Ceres block (CompressedProblemCost,
  // fit/internal/compressed_problem_cost.h); off: one block per V-F pair (PairCost).
  bool joint_compressed_pairs = true;
  // The former formulation: one Ceres block per row with Ceres's loss and bounds handling
  // (joint), a Ceres fit per level and NNLS on every row (alternating).
  bool reference_solver = false;
};

struct CalibrationOptions {
  // dvfs: the cross-domain model with unknown voltages (TPDS Eqs. 4-6); fixed: TPDS Eq. 9.
  FitMethod method = FitMethod::kDvfs;
  // How the DVFS model is estimated: joint (Ceres) or gpmTOOL's alternating algorithm.
  FitSolver solver = FitSolver::kJoint;
  // Residual: absolute (W) or relative to the measured power.
  FitResidual residual = FitResidual::kAbsolute;
  // Loss of each residual; DefaultLoss(method, solver) for the pair set (alternating: l2 only).
  FitLoss loss = DefaultLoss(FitMethod::kDvfs, FitSolver::kJoint);
  // Scale of the Huber/Cauchy loss in residual units; 0 picks 3 W (absolute) or 0.05 (relative).
  double loss_scale = 0.0;
  // Bounds of every normalised voltage.
  double voltage_min = 0.5;
  double voltage_max = 2.0;
  // Iterations of each solve: Ceres's of the joint and fixed solves, the alternating solver's
  // outer ones (gpmTOOL: 500).
  int max_iterations = 500;
  // The alternating solver stops when no coefficient changes by more than this, in percent ...
  double alternating_tolerance_pct = 0.05;
  // ... this many iterations running.
  int alternating_patience = 5;
  // Joint solver: also start from the alternating solution and keep the lower cost.
  bool start_from_alternating = true;
  // Threads (2 or more run the joint solver's two starts side by side, same result).
  int threads = 1;
  // Draw progress lines on a terminal (cross-validation turns this off inside its folds).
  bool show_progress = true;
  // Train on rows flagged power_cap, clock_moved, sample_gap, data_toggle or metric_absent too.
  bool keep_flagged = false;
  // The board's power limit recorded in the model, W (--power-limit-w); unset: the training
  // corpus's, if it states one (ResolvePowerLimitW, model/power_limit.h).
  std::optional<double> power_limit_w;
  // Fixed method: bootstrap intervals of the coefficients from this many resamples (0 = none).
  int bootstrap_replicates = 0;
  // Seed of the bootstrap (replicate b draws from BootstrapReplicateSeed(seed, b)).
  uint64_t bootstrap_seed = 1;
  // Test and benchmark switches of the formulation (SolverSwitches).
  SolverSwitches internal;

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
// The same on rows already selected: `selection` is SelectTrainingRows(train,
// options.keep_flagged) (fit/training_rows.h), made once by a caller that needs it too (the
// calibrate use case: --method auto, the identifiability notes).
PowerModel Calibrate(const Corpus& train, const TrainingSelection& selection,
                     const CalibrationOptions& options);

}  // namespace wattcal
