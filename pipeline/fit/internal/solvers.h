// The two DVFS solvers of TPDS Eqs. 4-6 and the two calibration paths, internal to fit/:
//   joint_solver.cc        voltages and coefficients in one Ceres problem (wattcal's default),
//                          with active-set rounds around Ceres's bounds handling;
//   alternating_solver.cc  gpmTOOL's algorithm (TPDS Figs. 4-5): per-level voltage fits
//                          alternating with NNLS for the coefficients;
//   calibrate.cc           the fixed model (TPDS Eq. 9) and the DVFS path that runs them.
#pragma once

#include <memory>
#include <vector>

#include <ceres/ceres.h>
#include <Eigen/Core>

#include "fit/calibrate.h"
#include "fit/cost_functions.h"

namespace wattcal {
namespace fit_internal {

struct SolveResult {
  std::vector<double> coefficients;
  std::vector<std::vector<double>> voltages;
  FitReport report;
};

// The robust loss of `options` (nullptr for L2).
std::unique_ptr<ceres::LossFunction> MakeLoss(const CalibrationOptions& options);

// The joint solve from one start; `moments`: PairMoments(data, options.residual).
SolveResult SolveJoint(const FitData& data, const CalibrationOptions& options,
                       const std::vector<double>& initial_coefficients,
                       const std::vector<std::vector<double>>& initial_voltages,
                       const std::vector<Eigen::MatrixXd>& moments);

// gpmTOOL's alternating algorithm from all coefficients and voltages = 1.
SolveResult SolveAlternating(const FitData& data, const CalibrationOptions& options);

// TPDS Eq. 9 at the default pair (the bootstrap refits it on each resample) and the DVFS path.
PowerModel CalibrateFixed(const Corpus& train, const CalibrationOptions& options);
PowerModel CalibrateDvfs(const Corpus& train, const CalibrationOptions& options);

}  // namespace fit_internal
}  // namespace wattcal
