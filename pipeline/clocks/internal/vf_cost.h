// The activity-free DVFS fit's Ceres cost (clocks/vf_fit.h), in a header of its own so that
// tests/jacobian_gradient_check_test.cc can check its hand-written Jacobian with
// ceres::GradientChecker. Internal to clocks/.
//
// One cost holds every row: residual_r = (P_model(w_r, f_r) - P_r) / sigma_r with P_model of
// clocks/vf_model.h and sigma_r = P_r (relative, so that a 50 W idle-ish run weighs as much as a
// 250 W one) or 1 W (absolute: plain least squares in watts).
// Parameter blocks: the voltage curve's fractions s (fit/cost_functions.h's VoltageCurve: v
// non-decreasing, v = 1 at the reference, within [v_min, v_max] through box bounds), {a0, c},
// and the activities g_w of every workload.
#pragma once

#include <ceres/ceres.h>

#include <vector>

#include <Eigen/Core>

#include "fit/cost_functions.h"

namespace wattcal {
namespace clocks_internal {

struct VfRow {
  int workload = 0;
  int level = 0;   // the calibrated clock at or below the one it ran at
  double t = 0.0;  // 0..1 toward the next calibrated clock (linear voltage between them)
  double f_mhz = 0.0;
  double power_w = 0.0;
};

class VfCost : public ceres::CostFunction {
 public:
  VfCost(const std::vector<VfRow>* rows, const fit_internal::VoltageCurve* curve, int num_levels,
         int num_workloads, bool relative = true)
      : rows_(rows), curve_(curve), num_levels_(num_levels), relative_(relative) {
    set_num_residuals(static_cast<int>(rows->size()));
    mutable_parameter_block_sizes()->push_back(std::max(num_levels - 1, 1));
    mutable_parameter_block_sizes()->push_back(2);
    mutable_parameter_block_sizes()->push_back(num_workloads);
  }

  bool Evaluate(double const* const* p, double* residuals, double** jacobians) const override {
    std::vector<double> v;
    Eigen::MatrixXd dv_ds;
    curve_->Evaluate(p[0], &v, &dv_ds);
    const double a0 = p[1][0], c = p[1][1];
    const int num_s = parameter_block_sizes()[0];
    const int num_w = parameter_block_sizes()[2];
    for (size_t r = 0; r < rows_->size(); ++r) {
      const VfRow& row = (*rows_)[r];
      const int k = row.level, k1 = std::min(row.level + 1, num_levels_ - 1);
      const double vr = (1.0 - row.t) * v[k] + row.t * v[k1];
      const double g = p[2][row.workload];
      const double inv = relative_ ? 1.0 / row.power_w : 1.0;
      residuals[r] = (a0 * vr + c + vr * vr * row.f_mhz * g - row.power_w) * inv;
      if (jacobians == nullptr) continue;
      if (jacobians[0] != nullptr) {
        const double dr_dv = (a0 + 2.0 * vr * row.f_mhz * g) * inv;
        for (int j = 0; j < num_s; ++j) {
          const double dv =
              j < dv_ds.cols() ? (1.0 - row.t) * dv_ds(k, j) + row.t * dv_ds(k1, j) : 0.0;
          jacobians[0][r * num_s + j] = dr_dv * dv;
        }
      }
      if (jacobians[1] != nullptr) {
        jacobians[1][r * 2 + 0] = vr * inv;
        jacobians[1][r * 2 + 1] = inv;
      }
      if (jacobians[2] != nullptr) {
        double* jw = jacobians[2] + r * num_w;
        std::fill(jw, jw + num_w, 0.0);
        jw[row.workload] = vr * vr * row.f_mhz * inv;
      }
    }
    return true;
  }

 private:
  const std::vector<VfRow>* rows_;
  const fit_internal::VoltageCurve* curve_;
  int num_levels_;
  bool relative_;
};

}  // namespace clocks_internal
}  // namespace wattcal
