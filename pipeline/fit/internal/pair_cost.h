// The joint DVFS solve's per-pair Ceres cost (fit/joint_solver.cc's SolveJoint with
// SolverSwitches::joint_compressed_pairs off): one block per V-F pair returning its rows
// (PairCost), with PairLoss carrying its robust loss; and what a pair's rows share (PairTerms),
// which CompressedProblemCost reads too. Checked by tests/jacobian_gradient_check_test.cc.
#pragma once

#include <ceres/ceres.h>

#include <vector>

#include "fit/calibrate.h"
#include "fit/cost_functions.h"

namespace wattcal {
namespace fit_internal {

// What a V-F pair's rows share (TPDS Eqs. 5-6 without the components): per domain the voltage
// v, the frequency f and v^2 f at the pair's levels, and p0 = sum_d (x_d v_d + v_d^2 f_d x_nd+d).
struct PairTerms {
  double v[2], f[2], v2f[2];
  double p0 = 0.0;
};

// The terms of the V-F pair at `level` (one level index per domain) for coefficients `x`.
PairTerms PairTermsAt(const FitData& data, const VoltageState& state, const std::vector<int>& level,
                      const double* x);

// Residuals of every row measured at one V-F pair: one Ceres block per pair instead of one per
// row (with 6528 one-row blocks, Ceres's per-block bookkeeping was half the Titan X fit's time,
// issue 14). The rows share the pair's voltages and their Jacobian dv/ds.
//
// Each row keeps its own loss, exactly as Ceres treats a loss on a one-row block: the block
// returns every row's residual and Jacobian through Ceres's corrector (Triggs et al.,
// "Bundle Adjustment: a Modern Synthesis", Sec. 4.3; ceres/internal/corrector.cc), so the
// trust-region steps are those of the one-row formulation, and records sum_n rho(e_n^2),
// which its PairLoss hands to Ceres as the block's cost. (Returning sqrt(rho) per row
// instead gives the same cost but other steps: on the Titan X they end in another local
// minimum.)
class PairCost : public ceres::CostFunction {
 public:
  PairCost(const FitData* data, const VoltageState* state, int pair,
           const ceres::LossFunction* loss, FitResidual residual,
           const std::vector<int>& block_of_domain);

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override;

  // The block's cost 2 C = sum_n rho(e_n^2) at the last evaluated point (its PairLoss reads it).
  double rho_sum() const { return rho_sum_; }

 private:
  const FitData* data_;
  const VoltageState* state_;
  int pair_;
  const ceres::LossFunction* loss_;
  std::vector<int> block_of_domain_;
  std::vector<double> power_w_, inv_sigma_;
  std::vector<double> util_;             // the pair's utilisations, row-major
  mutable std::vector<double> scratch_;  // per evaluation (a block is evaluated by one thread)
  mutable double rho_sum_ = 0.0;
};

// The loss of a PairCost block: Ceres evaluates it right after the block's residuals and
// takes 0.5 rho as the block's cost; rho = sum_n rho(e_n^2) as recorded by the block, and
// rho' = 1, rho'' = 0 so that Ceres leaves the already corrected residuals and Jacobian as
// they are.
class PairLoss : public ceres::LossFunction {
 public:
  explicit PairLoss(const PairCost* cost) : cost_(cost) {}
  void Evaluate(double /*sq_norm*/, double out[3]) const override;

 private:
  const PairCost* cost_;
};

}  // namespace fit_internal
}  // namespace wattcal
