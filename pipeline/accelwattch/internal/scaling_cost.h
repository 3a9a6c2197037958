// AccelWattch's scaling-factor cost (MICRO'21 §5.4, Eq. 14), moved out of scaling_fit.cc's
// anonymous namespace unchanged so that tests/jacobian_gradient_check_test.cc can check its
// hand-written Jacobian against numeric differentiation (ceres::GradientChecker). Internal to
// accelwattch/: nothing outside scaling_fit.cc and the tests should use it.
#pragma once

#include <ceres/ceres.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "accelwattch/component_table.h"
#include "accelwattch/orderings.h"

namespace wattcal {
namespace accelwattch_internal {

// Relative residuals of every kernel, then (lambda > 0) the pull of every factor, as
// functions of the forest's parameters theta (one block of one entry per component).
class ScalingCost : public ceres::CostFunction {
 public:
  ScalingCost(const ComponentTable& table, const OrderingForest& forest,
              const std::vector<double>& prior_x, double prior_weight)
      : table_(table), forest_(forest), prior_x_(prior_x), sqrt_weight_(std::sqrt(prior_weight)) {
    n_ = table.num_components();
    set_num_residuals(table.num_kernels() + (prior_weight > 0.0 ? n_ : 0));
    mutable_parameter_block_sizes()->push_back(n_);
  }

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    std::vector<double> x(n_), dx(static_cast<size_t>(n_) * n_);
    const bool want_jacobian = jacobians != nullptr && jacobians[0] != nullptr;
    forest_.ToX(parameters[0], x.data(), want_jacobian ? dx.data() : nullptr);
    const int kernels = table_.num_kernels();
    for (int k = 0; k < kernels; ++k) {
      const double m = table_.measured_w[k];
      const std::vector<double>& p = table_.dynamic_w[k];
      double model_w = table_.FixedW(k);
      for (int i = 0; i < n_; ++i) model_w += x[i] * p[i];
      residuals[k] = (model_w - m) / m;
      if (!want_jacobian) continue;
      double* row = jacobians[0] + static_cast<size_t>(k) * n_;
      std::fill(row, row + n_, 0.0);
      for (int i = 0; i < n_; ++i) {
        if (p[i] == 0.0) continue;
        const double w = p[i] / m;
        const double* dxi = dx.data() + static_cast<size_t>(i) * n_;
        for (int j = 0; j < n_; ++j) row[j] += w * dxi[j];
      }
    }
    if (num_residuals() > kernels) {
      for (int i = 0; i < n_; ++i) {
        residuals[kernels + i] = sqrt_weight_ * (x[i] - prior_x_[i]) / prior_x_[i];
        if (!want_jacobian) continue;
        double* row = jacobians[0] + static_cast<size_t>(kernels + i) * n_;
        const double w = sqrt_weight_ / prior_x_[i];
        const double* dxi = dx.data() + static_cast<size_t>(i) * n_;
        for (int j = 0; j < n_; ++j) row[j] = w * dxi[j];
      }
    }
    return true;
  }

 private:
  const ComponentTable& table_;
  const OrderingForest& forest_;
  const std::vector<double>& prior_x_;
  double sqrt_weight_;
  int n_ = 0;
};

}  // namespace accelwattch_internal
}  // namespace wattcal
