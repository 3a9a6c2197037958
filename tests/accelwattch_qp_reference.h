// An independent solver for the AccelWattch scaling-factor problem (MICRO'21 Eq. 14), for
// tests only: the same objective as FitAccelWattchScaling, but solved directly in x as a convex
// quadratic programme with the orderings and bounds as general linear inequalities, by ADMM
// (Boyd et al., "Distributed Optimization and Statistical Learning via ADMM", §5.2). It shares
// no code with the Ceres fit or its reparameterisation, so agreement of the two costs certifies
// that the fit reached the global optimum.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <vector>

#include "accelwattch/component_table.h"
#include "accelwattch/scaling_model.h"

namespace wattcal::testing {

struct QpReference {
  std::vector<double> x;
  double cost = 0.0;           // 1/2 sum of squared residuals, as Ceres reports it
  double max_violation = 0.0;  // of the bounds and orderings by x
};

// Half the sum of squared residuals of `x` (relative errors on `table`, plus the pull toward
// `prior_x` with weight `prior_weight`), the objective of FitAccelWattchScaling.
inline double AccelWattchCost(const ComponentTable& table, const std::vector<double>& x,
                              const std::vector<double>& prior_x, double prior_weight) {
  double sum = 0.0;
  for (int k = 0; k < table.num_kernels(); ++k) {
    double p = table.FixedW(k);
    for (int i = 0; i < table.num_components(); ++i) p += x[i] * table.dynamic_w[k][i];
    const double r = (p - table.measured_w[k]) / table.measured_w[k];
    sum += r * r;
  }
  for (size_t i = 0; i < x.size() && prior_weight > 0.0; ++i) {
    const double r = (x[i] - prior_x[i]) / prior_x[i];
    sum += prior_weight * r * r;
  }
  return 0.5 * sum;
}

// Minimises the objective under the bounds and orderings recorded in `model` (its
// components in `table`'s order).
inline QpReference SolveAccelWattchQp(const ComponentTable& table, const AccelWattchModel& model,
                                      double prior_weight, int iterations = 200000) {
  const int n = table.num_components();
  const int kernels = table.num_kernels();
  const int rows = kernels + (prior_weight > 0.0 ? n : 0);
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, n);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(rows);
  for (int k = 0; k < kernels; ++k) {
    const double m = table.measured_w[k];
    for (int i = 0; i < n; ++i) a(k, i) = table.dynamic_w[k][i] / m;
    b(k) = (m - table.FixedW(k)) / m;
  }
  for (int i = 0; i < n && prior_weight > 0.0; ++i) {
    a(kernels + i, i) = std::sqrt(prior_weight) / model.prior_x[i];
    b(kernels + i) = std::sqrt(prior_weight);
  }
  // Constraints G x <= h: upper bounds, lower bounds, orderings.
  const int m_orders = static_cast<int>(model.orderings.size());
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(2 * n + m_orders, n);
  Eigen::VectorXd h(2 * n + m_orders);
  for (int i = 0; i < n; ++i) {
    g(i, i) = 1.0;
    h(i) = model.upper_bound[i];
    g(n + i, i) = -1.0;
    h(n + i) = -model.lower_bound[i];
  }
  for (int e = 0; e < m_orders; ++e) {
    g(2 * n + e, model.FindComponent(model.orderings[e].lower)) = 1.0;
    g(2 * n + e, model.FindComponent(model.orderings[e].upper)) = -1.0;
    h(2 * n + e) = 0.0;
  }
  // Scaled ADMM on x and z = G x with z <= h. Columns of A are equilibrated first (x = D y).
  Eigen::VectorXd d(n);
  for (int i = 0; i < n; ++i) {
    const double norm = a.col(i).norm();
    d(i) = norm > 0.0 ? 1.0 / norm : 1.0;
  }
  const Eigen::MatrixXd as = a * d.asDiagonal();
  const Eigen::MatrixXd gs = g * d.asDiagonal();
  const double rho = 1.0;
  const Eigen::LDLT<Eigen::MatrixXd> solve(as.transpose() * as + rho * gs.transpose() * gs +
                                           1e-12 * Eigen::MatrixXd::Identity(n, n));
  const Eigen::VectorXd atb = as.transpose() * b;
  Eigen::VectorXd y = solve.solve(atb);
  Eigen::VectorXd z = (gs * y).cwiseMin(h);
  Eigen::VectorXd u = Eigen::VectorXd::Zero(z.size());
  for (int it = 0; it < iterations; ++it) {
    y = solve.solve(atb + rho * gs.transpose() * (z - u));
    const Eigen::VectorXd gy = gs * y;
    z = (gy + u).cwiseMin(h);
    u += gy - z;
  }
  QpReference out;
  const Eigen::VectorXd x = d.asDiagonal() * y;
  out.x.assign(x.data(), x.data() + n);
  out.cost = AccelWattchCost(table, out.x, model.prior_x, prior_weight);
  const Eigen::VectorXd slack = g * x - h;
  out.max_violation = std::max(0.0, slack.maxCoeff());
  return out;
}

}  // namespace wattcal::testing
