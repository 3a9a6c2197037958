#include "fit/nnls.h"

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "util/option_rule.h"

namespace wattcal {

bool NnlsOptions::Check(std::string* error) const {
  if (max_iterations < 0)
    return RejectOption(error, "NnlsOptions.max_iterations = {} must be >= 0", max_iterations);
  if (!(tolerance >= 0.0))
    return RejectOption(error, "NnlsOptions.tolerance = {} must be >= 0", tolerance);
  return true;
}

namespace {

// Lawson & Hanson's active-set iterations (NNLS, Ch. 23) in the scaled variables y (x = D y),
// shared by the QR and the normal-equations forms: `w` holds the duals at y = 0 on entry;
// solve_passive(passive, &z) gives the least-squares solution on the passive set (zero
// elsewhere) and dual(y) the duals at y. A variable with scale 0 (an all-zero column) never
// enters.
template <typename SolvePassive, typename Dual>
Eigen::VectorXd LawsonHanson(const Eigen::VectorXd& scale, Eigen::VectorXd w,
                             const NnlsOptions& options, const SolvePassive& solve_passive,
                             const Dual& dual, int* iterations, bool* converged) {
  const int n = static_cast<int>(scale.size());
  const int max_iterations = options.max_iterations > 0 ? options.max_iterations : 3 * n + 30;
  std::vector<bool> passive(n, false);
  Eigen::VectorXd y = Eigen::VectorXd::Zero(n);
  const double tol = options.tolerance * std::max(1.0, w.cwiseAbs().maxCoeff());
  *iterations = 0;
  *converged = false;
  while (*iterations < max_iterations) {
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
      *converged = true;
      break;
    }
    ++*iterations;
    passive[best] = true;
    Eigen::VectorXd z;
    for (int inner = 0; inner < 3 * n + 30; ++inner) {
      solve_passive(passive, &z);
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
    w = dual(y);
  }
  return y;
}

// The indices of the passive variables.
std::vector<int> PassiveIndices(const std::vector<bool>& passive) {
  std::vector<int> idx;
  for (int j = 0; j < static_cast<int>(passive.size()); ++j) {
    if (passive[j]) idx.push_back(j);
  }
  return idx;
}

}  // namespace

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
  // Least squares on the passive set, zero elsewhere.
  auto solve_passive = [&](const std::vector<bool>& passive, Eigen::VectorXd* z) {
    const std::vector<int> idx = PassiveIndices(passive);
    z->setZero(n);
    if (idx.empty()) return;
    Eigen::MatrixXd ap(a.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) ap.col(static_cast<Eigen::Index>(k)) = a.col(idx[k]);
    const Eigen::VectorXd zp = ap.colPivHouseholderQr().solve(b);
    for (size_t k = 0; k < idx.size(); ++k) (*z)(idx[k]) = zp(static_cast<Eigen::Index>(k));
  };
  auto dual = [&](const Eigen::VectorXd& y) -> Eigen::VectorXd {
    return a.transpose() * (b - a * y);
  };
  int iterations = 0;
  bool converged = false;
  const Eigen::VectorXd y =
      LawsonHanson(scale, a.transpose() * b, options, solve_passive, dual, &iterations, &converged);
  const Eigen::VectorXd x = scale.asDiagonal() * y;
  if (summary != nullptr) {
    summary->converged = converged;
    summary->iterations = iterations;
    summary->residual_norm = (a_in * x - b_in).norm();
  }
  return x;
}

Eigen::VectorXd SolveNnlsNormal(const Eigen::MatrixXd& gram_in, const Eigen::VectorXd& atb_in,
                                const NnlsOptions& options, NnlsSummary* summary) {
  const int n = static_cast<int>(gram_in.cols());
  // x = D y as in SolveNnls; the passive solves use the unit-column system whatever
  // scale_columns says, since G squares A's conditioning.
  Eigen::VectorXd scale(n), unit(n);
  for (int j = 0; j < n; ++j) {
    const double norm = std::sqrt(std::max(0.0, gram_in(j, j)));
    scale(j) = norm > 0.0 ? (options.scale_columns ? 1.0 / norm : 1.0) : 0.0;
    unit(j) = norm > 0.0 ? 1.0 / norm : 0.0;
  }
  const Eigen::MatrixXd gram = scale.asDiagonal() * gram_in * scale.asDiagonal();
  const Eigen::VectorXd atb = scale.asDiagonal() * atb_in;
  // Passive solves on the unit-column system: G_u = U G U with U = unit / scale.
  Eigen::VectorXd to_unit(n);
  for (int j = 0; j < n; ++j) to_unit(j) = scale(j) > 0.0 ? unit(j) / scale(j) : 0.0;

  // min ||A_P z - b|| from G_PP z = c_P on the unit-column G_PP (where the passive columns are
  // dependent, a rank-revealing QR gives a basic solution, as SolveNnls's QR).
  auto solve_passive = [&](const std::vector<bool>& passive, Eigen::VectorXd* z) {
    const std::vector<int> idx = PassiveIndices(passive);
    z->setZero(n);
    if (idx.empty()) return;
    const Eigen::Index k = static_cast<Eigen::Index>(idx.size());
    Eigen::MatrixXd gp(k, k);
    Eigen::VectorXd cp(k);
    for (Eigen::Index r = 0; r < k; ++r) {
      cp(r) = atb(idx[r]) * to_unit(idx[r]);
      for (Eigen::Index c = 0; c < k; ++c) {
        gp(r, c) = gram(idx[r], idx[c]) * to_unit(idx[r]) * to_unit(idx[c]);
      }
    }
    // Cholesky where G_PP is well conditioned (the usual case, a tenth of the QR's time): with
    // unit diagonal, its pivots L_ii^2 are at least 1 / cond(G_PP); the rank-revealing QR
    // otherwise.
    const Eigen::LLT<Eigen::MatrixXd> llt(gp);
    bool well_conditioned = llt.info() == Eigen::Success;
    if (well_conditioned) {
      const Eigen::MatrixXd& l = llt.matrixLLT();
      for (Eigen::Index r = 0; r < k; ++r) well_conditioned &= l(r, r) * l(r, r) > 1e-10;
    }
    const Eigen::VectorXd zp = well_conditioned
                                   ? Eigen::VectorXd(llt.solve(cp))
                                   : Eigen::VectorXd(gp.colPivHouseholderQr().solve(cp));
    for (Eigen::Index r = 0; r < k; ++r) (*z)(idx[r]) = zp(r) * to_unit(idx[r]);
  };
  auto dual = [&](const Eigen::VectorXd& y) -> Eigen::VectorXd { return atb - gram * y; };
  int iterations = 0;
  bool converged = false;
  const Eigen::VectorXd y =
      LawsonHanson(scale, atb, options, solve_passive, dual, &iterations, &converged);
  if (summary != nullptr) {
    summary->converged = converged;
    summary->iterations = iterations;
    summary->residual_norm = 0.0;
  }
  return scale.asDiagonal() * y;
}

}  // namespace wattcal
