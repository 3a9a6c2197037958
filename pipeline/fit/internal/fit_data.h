// The calibration's rows arranged for fitting (FitData, fit/cost_functions.h) and what every
// solver shares at fixed voltages: the linear design of TPDS Eqs. 5-6 and its NNLS solve
// (TPDS Fig. 5, Problem 2), from the rows or from per-V-F-pair moments. Internal to fit/.
#pragma once

#include <vector>

#include <Eigen/Core>

#include "fit/calibrate.h"
#include "fit/cost_functions.h"

namespace wattcal {
namespace fit_internal {

// Arranges `train` for fitting; InputError when it has no power, no frequencies or no row at
// the default pair.
FitData PrepareFitData(const Corpus& train);

// At fixed voltages each coefficient's design column over a V-F pair's rows is scale_j times one
// column of z = [1 U]: the z row of each coefficient (the same at every pair) ...
std::vector<int> CoefficientZRows(const FitData& data);
// ... and the scales at a pair with voltages v and v^2 f per domain.
void CoefficientScales(const FitData& data, const double* v, const double* v2f, double* scale);
// The row of the linear design matrix at fixed voltages: [v_k..., v_k^2 f_k..., v^2 f U_i...].
void DesignRow(const FitData& data, int r, const std::vector<std::vector<double>>& volts,
               double* out);

// NNLS for the coefficients with voltages fixed (TPDS Fig. 5, Problem 2); rows weighted by 1/P
// for relative residuals; like_gpmtool: unscaled columns, as gpmTOOL's scipy NNLS.
std::vector<double> SolveCoefficients(const FitData& data,
                                      const std::vector<std::vector<double>>& volts,
                                      FitResidual residual, bool like_gpmtool = false);

// Second moments of [1, U_1..U_n, P] / sigma over the rows of each V-F pair.
std::vector<Eigen::MatrixXd> PairMoments(const FitData& data,
                                         FitResidual residual = FitResidual::kAbsolute);

// SolveCoefficients from the pairs' moments (PairMoments of that residual).
std::vector<double> SolveCoefficientsFromMoments(const FitData& data,
                                                 const std::vector<Eigen::MatrixXd>& moments,
                                                 const std::vector<std::vector<double>>& volts,
                                                 bool like_gpmtool = true);

}  // namespace fit_internal
}  // namespace wattcal
