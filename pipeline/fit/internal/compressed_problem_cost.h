// The joint DVFS solve's default Ceres cost (fit/joint_solver.cc's SolveJoint): the whole problem
// compressed to one block with the per-row Gauss-Newton terms. Checked by
// tests/jacobian_gradient_check_test.cc.
#pragma once

#include <ceres/ceres.h>

#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "fit/calibrate.h"
#include "fit/cost_functions.h"
#include "fit/internal/pair_cost.h"

namespace wattcal {
namespace fit_internal {

// The whole joint problem compressed to one Ceres block with the Gauss-Newton terms of the
// per-row residuals (SolverSwitches::joint_compressed_pairs).
//
// For the losses used here (L2, Huber, Cauchy) rho'' <= 0 everywhere, so Ceres's corrector
// (ceres/internal/corrector.cc; Triggs et al., "Bundle Adjustment: a Modern Synthesis",
// Sec. 4.3) scales row n's residual and Jacobian by sqrt(rho'_n) alone: the solver sees
// H = sum_n rho'_n J_n^T J_n, g = sum_n rho'_n J_n^T e_n and the cost C = 1/2 sum_n rho(e_n^2).
// A row's Jacobian is t_n z_n^T M with z_n = [1 U_n], t_n = sqrt(rho'_n) / sigma_n and M
// ((nc + 1) x parameters) shared by the rows of a V-F pair (TPDS Eqs. 5-6 are linear in U at
// fixed voltages, and so is dP/dv). So a pair adds M^T A M to H and M^T b to g, with
// A = sum_n t_n^2 z_n z_n^T and b = sum_n t_n sqrt(rho'_n) e_n z_n.
//
// M is sparse and never formed: the column of alpha0_k or alpha1_k has one entry, in the
// constant's row (v_k, v_k^2 f_k); gamma_i's has one, in U_i's row (v_k^2 f_k); the voltage
// parameters s of domain k have the rank-one columns w_k dv_k/ds, with w_k = dP/dv_k on z
// (alpha0_k + 2 v_k f_k alpha1_k on the constant, 2 v_k f_k gamma_i on U_i of domain k). A
// pair's share of H then costs O(np^2), and Ceres's normal equations are np x np whatever the
// number of rows (np parameters: 2 nd + nc coefficients and the voltage parameters).
//
// With H = P^T L D L^T P (pivoted LDL^T) the block returns the Jacobian [0; D^1/2 L^T P] and
// the residuals [sqrt(S - |q|^2); q], q = D^-1/2 L^-1 P g, S = sum_n rho(e_n^2): J^T J = H,
// J^T r = g and |r|^2 = S (g lies in H's range; |q|^2 = g^T H^+ g is at most sum rho' e^2 <= S
// for these losses). Ceres's steps, model cost change, Jacobi scaling (column norms of J, i.e.
// diag(H)) and gradient are those of the per-row blocks up to rounding: on the Titan X the
// same 58 iterations to the same cost as one block per row (calibrate_speed_equivalence_test).
// Evaluations without Jacobians (trial points) need the cost only: sqrt(S) and zeros.
class CompressedProblemCost : public ceres::CostFunction {
 public:
  // `moments`: PairMoments(*data, residual).
  CompressedProblemCost(const FitData* data, const VoltageState* state,
                        const ceres::LossFunction* loss, double huber_scale, FitResidual residual,
                        const std::vector<int>& block_of_domain,
                        const std::vector<Eigen::MatrixXd>& moments);

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override;

 private:
  struct Pair;

  // The residuals [sqrt(S - |q|^2), q] at `parameters` and, when `jacobians`, their Jacobian
  // (one accumulation of H and g over the pairs, then one LDLT).
  bool EvaluateAt(double const* const* parameters, double* residuals, double** jacobians) const;

  // pw_: the pair's predicted powers.
  void PredictPairPower(const Pair& pr, const PairTerms& terms, const double* x) const;

  // Each of the pair's rows' loss into *s_sum and, `with_jacobians`, b_ and A's start a_ = A_0
  // with the reweighted rows' scaled z_n as the columns of y_. Returns how many rows were
  // reweighted. Kept out of line: in its own frame the row loop keeps its pointers in registers
  // (inlined into EvaluateAt they spilled to the stack: BM_CalibrateDefault 5% slower).
  __attribute__((noinline)) int AccumulateRows(const Pair& pr, bool with_jacobians,
                                               double* s_sum_out) const;

  // The pair's terms of H's lower triangle and of g, from A (a_), b_ and M's entries at `level`.
  void AccumulateNormalEquations(const std::vector<int>& level, const PairTerms& terms,
                                 const double* x) const;

  // From H (h_) and g (g_): LDLT, the residuals [sqrt(S - |q|^2), q] and the Jacobians
  // J^T = sqrt(D) L^T P; pivots at rounding level drop out.
  void SolveIntoResiduals(double s_sum, double* residuals, double** jacobians) const;

  struct Pair {
    std::vector<double> power_w, inv_sigma;
    std::vector<double> util_row;  // row-major
    std::vector<double> util_col;  // column-major
    Eigen::MatrixXd a0;            // sum_n z_n z_n^T / sigma_n^2
  };
  const FitData* data_;
  const VoltageState* state_;
  const ceres::LossFunction* loss_;
  double huber_a_, huber_b_;  // loss_ is ceres::HuberLoss(huber_a_) where huber_a_ > 0
  std::vector<int> block_of_domain_;
  int s_col_[2] = {-1, -1};  // first column of each domain's voltage parameters
  int s_size_[2] = {0, 0};
  int nx_ = 0;
  int num_params_ = 0;
  std::vector<int> z_row_;
  std::vector<Pair> pairs_;
  // Per-evaluation buffers, sized once (the block is evaluated by one thread at a time).
  mutable std::vector<double> pw_, y_, m_, w_[2], aw_[2], dvr_[2];
  // The last Jacobian evaluation: its parameters (blocks one after the other), residuals and
  // every block's Jacobian.
  mutable bool cache_valid_ = false;
  mutable std::vector<double> cache_parameters_, cache_residuals_;
  mutable std::vector<std::vector<double>> cache_jacobians_;
  mutable std::vector<double*> cache_jacobian_ptrs_;  // into cache_jacobians_, for EvaluateAt
  mutable Eigen::MatrixXd a_, h_, pm_, jt_;
  mutable Eigen::VectorXd b_, g_, q_;
  mutable Eigen::LDLT<Eigen::MatrixXd> ldlt_;
};

}  // namespace fit_internal
}  // namespace wattcal
