// Non-negative least squares: min ||A x - b||_2 subject to x >= 0 (Lawson & Hanson,
// "Solving Least Squares Problems", 1974, Ch. 23, algorithm NNLS), the linear step of
// gpmTOOL's alternating solver (TPDS Fig. 5, Optimization Problem 2) and of the
// fixed-frequency model (TPDS Eq. 9).
#pragma once

#include <Eigen/Core>

namespace wattcal {

struct NnlsOptions {
  // Maximum number of outer (active-set) iterations; 0 means 3 * columns.
  int max_iterations = 0;
  // A dual variable must exceed this (relative to max |A^T b|) to free a variable.
  double tolerance = 1e-12;
  // Scale the columns of A to unit norm before solving (better conditioned). The solution
  // is the same unless columns are collinear; then the choice among the equivalent optima
  // follows the scaled duals. Off, the choice is that of scipy.optimize.nnls (gpmTOOL).
  bool scale_columns = true;
  bool Check(std::string* error) const;
};

struct NnlsSummary {
  bool converged = false;
  int iterations = 0;
  double residual_norm = 0.0;  // ||A x - b||_2
};

// Solves the problem (see NnlsOptions::scale_columns).
Eigen::VectorXd SolveNnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                          const NnlsOptions& options = NnlsOptions(),
                          NnlsSummary* summary = nullptr);

}  // namespace wattcal
