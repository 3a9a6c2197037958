#include "fit/nnls.h"

#include <Eigen/QR>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace wattcal {

bool NnlsOptions::Check(std::string* error) const {
  if (max_iterations < 0) {
    *error = fmt::format("NnlsOptions.max_iterations = {} must be >= 0", max_iterations);
    return false;
  }
  if (!(tolerance >= 0.0)) {
    *error = fmt::format("NnlsOptions.tolerance = {} must be >= 0", tolerance);
    return false;
  }
  return true;
}

Eigen::VectorXd SolveNnls(const Eigen::MatrixXd& a_in, const Eigen::VectorXd& b_in,
                          const NnlsOptions& options, NnlsSummary* summary) {
  const int n = static_cast<int>(a_in.cols());
  // Column scaling: x = D y, A D has unit columns; y >= 0 <=> x >= 0.
  Eigen::VectorXd scale(n);
  for (int j = 0; j < n; ++j) {
    const double norm = a_in.col(j).norm();
    scale(j) = norm > 0.0 ? (options.scale_columns ? 1.0 / norm : 1.0) : 0.0;
  }
  // ||A D y - b|| = ||R y - Q^T b|| + const for the thin QR A D = Q R: the active-set
  // iterations then work on an n x n problem instead of m x n, with QR's conditioning.
  Eigen::MatrixXd a = a_in * scale.asDiagonal();
  Eigen::VectorXd b = b_in;
  if (a.rows() > n) {
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
    b = (qr.householderQ().transpose() * b).head(n).eval();
    a = qr.matrixQR().topRows(n).triangularView<Eigen::Upper>();
  }
  const int max_iterations = options.max_iterations > 0 ? options.max_iterations : 3 * n + 30;

  std::vector<bool> passive(n, false);
  Eigen::VectorXd y = Eigen::VectorXd::Zero(n);
  Eigen::VectorXd w = a.transpose() * b;
  const double tol = options.tolerance * std::max(1.0, w.cwiseAbs().maxCoeff());

  // Least squares on the passive set, zero elsewhere.
  auto solve_passive = [&](Eigen::VectorXd* z) {
    std::vector<int> idx;
    for (int j = 0; j < n; ++j) {
      if (passive[j]) idx.push_back(j);
    }
    z->setZero(n);
    if (idx.empty()) return;
    Eigen::MatrixXd ap(a.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) ap.col(static_cast<Eigen::Index>(k)) = a.col(idx[k]);
    const Eigen::VectorXd zp = ap.colPivHouseholderQr().solve(b);
    for (size_t k = 0; k < idx.size(); ++k) (*z)(idx[k]) = zp(static_cast<Eigen::Index>(k));
  };

  int iterations = 0;
  bool converged = false;
  while (iterations < max_iterations) {
    // Pick the active variable with the largest positive dual.
    int best = -1;
    double best_w = tol;
    for (int j = 0; j < n; ++j) {
      if (!passive[j] && scale(j) > 0.0 && w(j) > best_w) {
        best_w = w(j);
        best = j;
      }
    }
    if (best < 0) {
      converged = true;
      break;
    }
    ++iterations;
    passive[best] = true;
    Eigen::VectorXd z;
    for (int inner = 0; inner < 3 * n + 30; ++inner) {
      solve_passive(&z);
      bool feasible = true;
      double alpha = 1.0;
      for (int j = 0; j < n; ++j) {
        if (passive[j] && z(j) <= 0.0) {
          feasible = false;
          const double denom = y(j) - z(j);
          if (denom > 0.0) alpha = std::min(alpha, y(j) / denom);
        }
      }
      if (feasible) break;
      y += alpha * (z - y);
      for (int j = 0; j < n; ++j) {
        if (passive[j] && y(j) <= 1e-15) {
          passive[j] = false;
          y(j) = 0.0;
        }
      }
    }
    y = z;
    for (int j = 0; j < n; ++j) {
      if (!passive[j]) y(j) = 0.0;
    }
    w = a.transpose() * (b - a * y);
  }
  const Eigen::VectorXd x = scale.asDiagonal() * y;
  if (summary != nullptr) {
    summary->converged = converged;
    summary->iterations = iterations;
    summary->residual_norm = (a_in * x - b_in).norm();
  }
  return x;
}

}  // namespace wattcal
