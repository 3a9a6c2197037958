// Calibrating the power model of TPDS Eqs. 4-6 (DVFS) and Eq. 9 (fixed V-F) from
// microbenchmark measurements.
//
//   joint        voltages and coefficients in one Ceres problem: coefficients >= 0, v = 1 at
//                the default pair, voltages non-decreasing with frequency within
//                [voltage_min, voltage_max] (SPEC.md; wattcal's default).
//   alternating  gpmTOOL's algorithm (TPDS Fig. 4-5): bounded 1-D voltage fits per frequency
//                level alternating with NNLS for the coefficients, until the coefficients
//                change by less than 0.05% five times running.
#pragma once

#include <string>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

enum class FitMethod { kDvfs, kFixed };
enum class FitSolver { kJoint, kAlternating };
enum class FitLoss { kL2, kHuber, kCauchy };
enum class FitResidual { kAbsolute, kRelative };

const char* FitMethodName(FitMethod v);
const char* FitSolverName(FitSolver v);
const char* FitLossName(FitLoss v);
const char* FitResidualName(FitResidual v);

struct CalibrationOptions {
  // dvfs: cross-domain model with unknown voltages; fixed: Eq. 9 at the default pair.
  FitMethod method = FitMethod::kDvfs;
  // How the DVFS model is estimated (ignored by the fixed method).
  FitSolver solver = FitSolver::kJoint;
  // Residual: absolute (W) or relative to the measured power (fraction).
  FitResidual residual = FitResidual::kAbsolute;
  // Loss applied to each row's residual (alternating supports l2 only, as gpmTOOL).
  FitLoss loss = FitLoss::kHuber;
  // Scale of the Huber/Cauchy loss in residual units; 0 picks 0.05 (relative) or 3 W.
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
  // Threads for the Ceres evaluations.
  int num_threads = 1;
  // Draw progress lines on a terminal (cross-validation turns this off inside its folds).
  bool show_progress = true;

  bool Check(std::string* error) const;
  // The loss scale actually used.
  double EffectiveLossScale() const;
};

// Fits a model to `train`. Throws InputError when the corpus cannot support the fit (no
// power column, no rows at the default pair, a default frequency that is never measured)
// and FitError when the solver returns no usable solution.
PowerModel Calibrate(const Corpus& train, const CalibrationOptions& options);

}  // namespace wattcal
