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

// The same problem given by its normal equations, G = A^T A and c = A^T b (the "fast NNLS"
// of Bro & De Jong, "A fast non-negativity-constrained least squares algorithm",
// J. Chemometrics 11 (1997) 393-401): Lawson & Hanson's active-set iterations with the duals
// c - G y and the passive-set solves from G, so a problem whose Gram matrix is formed from
// sums (e.g. per V-F pair moments) costs O(n^3) per solve instead of a QR of every row.
// Columns are scaled to unit norm for the passive solves (conditioning); the duals, hence the
// choice of the entering variable, follow options.scale_columns as SolveNnls does.
// summary->residual_norm is left at 0 (||b|| is not known here).
Eigen::VectorXd SolveNnlsNormal(const Eigen::MatrixXd& gram, const Eigen::VectorXd& atb,
                                const NnlsOptions& options = NnlsOptions(),
                                NnlsSummary* summary = nullptr);

}  // namespace wattcal
