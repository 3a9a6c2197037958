// The joint DVFS solve's Ceres costs (fit/joint_solver.h): one block per V-F pair returning its
// rows (PairCost, with PairLoss carrying its robust loss), and the whole problem compressed to
// one block with the per-row Gauss-Newton terms (CompressedProblemCost, the default). In a
// header so that tests/jacobian_gradient_check_test.cc reaches every hand-written Jacobian.
// Internal to fit/.
#pragma once

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include "fit/calibrate.h"
#include "fit/cost_functions.h"
#include "fit/fit_data.h"

namespace wattcal {
namespace fit_internal {

// ---------------------------------------------------------------------------------------
// Joint solve (VoltageCurve, VoltageState and RowCost are in fit/cost_functions.h).

// What a V-F pair's rows share (TPDS Eqs. 5-6 without the components): per domain the voltage
// v, the frequency f and v^2 f at the pair's levels, and p0 = sum_d (x_d v_d + v_d^2 f_d x_nd+d).
struct PairTerms {
  double v[2], f[2], v2f[2];
  double p0 = 0.0;
};

PairTerms PairTermsAt(const FitData& data, const VoltageState& state, const std::vector<int>& level,
                      const double* x) {
  const int nd = data.num_domains;
  PairTerms t;
  for (int d = 0; d < nd; ++d) {
    t.v[d] = state.v(d, level[d]);
    t.f[d] = data.levels[d][level[d]];
    t.v2f[d] = t.v[d] * t.v[d] * t.f[d];
    t.p0 += x[d] * t.v[d] + t.v2f[d] * x[nd + d];
  }
  return t;
}

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
           const std::vector<int>& block_of_domain)
      : data_(data), state_(state), pair_(pair), loss_(loss), block_of_domain_(block_of_domain) {
    const Corpus& c = *data->corpus;
    const std::vector<int>& rows = data->rows_of_pair[pair];
    set_num_residuals(static_cast<int>(rows.size()));
    mutable_parameter_block_sizes()->push_back(2 * data->num_domains + data->num_components);
    for (int d = 0; d < data->num_domains; ++d) {
      if (block_of_domain_[d] >= 0) {
        mutable_parameter_block_sizes()->push_back(static_cast<int>(data->levels[d].size()) - 1);
      }
    }
    const int nc = data->num_components;
    for (int r : rows) {
      power_w_.push_back(c.power_w(r));
      inv_sigma_.push_back(residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0);
      const double* u = &data->util_row_major[static_cast<size_t>(r) * nc];
      util_.insert(util_.end(), u, u + nc);
    }
    int scratch = 2 * data->num_domains + nc;
    for (int d = 0; d < data->num_domains; ++d) scratch += static_cast<int>(data->levels[d].size());
    scratch_.resize(scratch);
  }

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const int nd = data_->num_domains;
    const int nc = data_->num_components;
    const int nx = 2 * nd + nc;
    const double* x = parameters[0];
    const int* domain_of = data_->domain_of.data();
    const std::vector<int>& level = data_->level_of_pair[pair_];
    const int num_rows = static_cast<int>(power_w_.size());
    // Shared by the pair's rows: voltages, v^2 f, the Jacobian's coefficient columns before
    // the utilisations, and the rows of dv/ds at the pair's levels.
    const PairTerms terms = PairTermsAt(*data_, *state_, level, x);
    const double *v = terms.v, *f = terms.f, *v2f = terms.v2f;
    const double p0 = terms.p0;
    double* base = scratch_.data();         // nx: dP/dx with U_i left out
    double* dv_row = scratch_.data() + nx;  // the levels' dv/ds rows, domain after domain
    for (int d = 0; d < nd; ++d) {
      base[d] = v[d];
      base[nd + d] = v2f[d];
    }
    for (int i = 0; i < nc; ++i) base[2 * nd + i] = v2f[domain_of[i]];
    int dv_at[2] = {0, 0};
    for (int d = 0, at = 0; d < nd; ++d) {
      dv_at[d] = at;
      const Eigen::MatrixXd& dv = state_->dv(d);
      for (int k = 0; k < dv.cols(); ++k) dv_row[at + k] = dv(level[d], k);
      at += static_cast<int>(dv.cols());
    }
    const double* g = x + 2 * nd;
    double rho_sum = 0.0;
    for (int n = 0; n < num_rows; ++n) {
      const double* u = &util_[static_cast<size_t>(n) * nc];
      double inner[2] = {0.0, 0.0};
      for (int i = 0; i < nc; ++i) inner[domain_of[i]] += g[i] * u[i];
      double p = p0;
      for (int d = 0; d < nd; ++d) p += v2f[d] * inner[d];
      const double e = (p - power_w_[n]) * inv_sigma_[n];
      double scale = inv_sigma_[n];  // d residual / d P
      if (loss_ == nullptr) {
        residuals[n] = e;
      } else {
        // Ceres's Corrector for a one-residual block with squared norm sq = e^2.
        const double sq = e * e;
        double rho[3];
        loss_->Evaluate(sq, rho);
        rho_sum += rho[0];
        const double sqrt_rho1 = std::sqrt(rho[1]);
        if (sq == 0.0 || rho[2] <= 0.0) {
          residuals[n] = sqrt_rho1 * e;
          scale *= sqrt_rho1;
        } else {
          const double alpha = 1.0 - std::sqrt(1.0 + 2.0 * sq * rho[2] / rho[1]);
          residuals[n] = sqrt_rho1 / (1.0 - alpha) * e;
          scale *= sqrt_rho1 * (1.0 - alpha);  // J - (alpha / sq) e e^T J for one residual
        }
      }
      if (jacobians == nullptr) continue;
      if (jacobians[0] != nullptr) {
        double* jx = jacobians[0] + static_cast<size_t>(n) * nx;
        for (int j = 0; j < 2 * nd; ++j) jx[j] = base[j] * scale;
        for (int i = 0; i < nc; ++i) jx[2 * nd + i] = base[2 * nd + i] * u[i] * scale;
      }
      for (int d = 0; d < nd; ++d) {
        const int block = block_of_domain_[d];
        if (block < 0 || jacobians[block] == nullptr) continue;
        const double dp_dv = (x[d] + 2.0 * v[d] * f[d] * (x[nd + d] + inner[d])) * scale;
        const int cols = static_cast<int>(data_->levels[d].size()) - 1;
        double* js = jacobians[block] + static_cast<size_t>(n) * cols;
        const double* dvr = dv_row + dv_at[d];
        for (int k = 0; k < cols; ++k) js[k] = dp_dv * dvr[k];
      }
    }
    rho_sum_ = rho_sum;
    return true;
  }

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
  void Evaluate(double /*sq_norm*/, double out[3]) const override {
    out[0] = cost_->rho_sum();
    out[1] = 1.0;
    out[2] = 0.0;
  }

 private:
  const PairCost* cost_;
};

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
                        const std::vector<Eigen::MatrixXd>& moments)
      : data_(data),
        state_(state),
        loss_(loss),
        huber_a_(huber_scale),
        huber_b_(huber_scale * huber_scale),
        block_of_domain_(block_of_domain) {
    const Corpus& c = *data->corpus;
    const int nd = data->num_domains;
    const int nc = data->num_components;
    nx_ = 2 * nd + nc;
    num_params_ = nx_;
    mutable_parameter_block_sizes()->push_back(nx_);
    for (int d = 0; d < nd; ++d) {
      if (block_of_domain_[d] >= 0) {
        const int m = static_cast<int>(data->levels[d].size()) - 1;
        mutable_parameter_block_sizes()->push_back(m);
        s_col_[d] = num_params_;
        s_size_[d] = m;
        num_params_ += m;
      }
    }
    set_num_residuals(num_params_ + 1);
    // The z row of each coefficient's single entry in M.
    z_row_ = CoefficientZRows(*data);
    size_t max_rows = 0;
    for (const std::vector<int>& rows : data->rows_of_pair) {
      Pair p;
      const int n = static_cast<int>(rows.size());
      p.util_row.reserve(static_cast<size_t>(n) * nc);
      for (int r : rows) {
        p.power_w.push_back(c.power_w(r));
        p.inv_sigma.push_back(residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0);
        const double* u = &data->util_row_major[static_cast<size_t>(r) * nc];
        p.util_row.insert(p.util_row.end(), u, u + nc);
      }
      p.util_col.resize(static_cast<size_t>(n) * nc);
      for (int k = 0; k < n; ++k) {
        for (int i = 0; i < nc; ++i) {
          p.util_col[static_cast<size_t>(i) * n + k] = p.util_row[static_cast<size_t>(k) * nc + i];
        }
      }
      p.a0 = moments[pairs_.size()].topLeftCorner(nc + 1, nc + 1);
      max_rows = std::max(max_rows, rows.size());
      pairs_.push_back(std::move(p));
    }
    pw_.resize(max_rows);
    y_.resize(max_rows * (nc + 1));
    m_.resize(nx_);
    for (int d = 0; d < 2; ++d) {
      w_[d].resize(nc + 1);
      aw_[d].resize(nc + 1);
      dvr_[d].resize(std::max(s_size_[d], 1));
    }
    pm_.resize(num_params_, num_params_);
    cache_parameters_.resize(num_params_);
    cache_residuals_.resize(num_params_ + 1);
    for (int size : parameter_block_sizes()) {
      cache_jacobians_.emplace_back(static_cast<size_t>(num_params_ + 1) * size);
    }
    for (std::vector<double>& j : cache_jacobians_) cache_jacobian_ptrs_.push_back(j.data());
    a_.resize(nc + 1, nc + 1);
    b_.resize(nc + 1);
    h_.resize(num_params_, num_params_);
    g_.resize(num_params_);
    q_.resize(num_params_);
    jt_.resize(num_params_, num_params_);
    ldlt_ = Eigen::LDLT<Eigen::MatrixXd>(num_params_);
  }

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    if (jacobians == nullptr) return EvaluateAt(parameters, residuals, nullptr);
    // Between two active-set rounds the Jacobian is asked for three times at the same point
    // (Ceres's accepted step, the rounds' gradient, the next round's iteration zero): the last
    // Jacobian evaluation is kept and handed out again at the same parameters.
    const int num_blocks = static_cast<int>(parameter_block_sizes().size());
    bool same = cache_valid_;
    for (int b = 0, at = 0; b < num_blocks && same; ++b) {
      const int size = parameter_block_sizes()[b];
      same = std::equal(parameters[b], parameters[b] + size, cache_parameters_.begin() + at);
      at += size;
    }
    if (!same) {
      cache_valid_ = false;
      for (int b = 0, at = 0; b < num_blocks; ++b) {
        const int size = parameter_block_sizes()[b];
        std::copy(parameters[b], parameters[b] + size, cache_parameters_.begin() + at);
        at += size;
      }
      if (!EvaluateAt(parameters, cache_residuals_.data(), cache_jacobian_ptrs_.data())) {
        return false;
      }
      cache_valid_ = true;
    }
    std::copy(cache_residuals_.begin(), cache_residuals_.end(), residuals);
    for (int b = 0; b < num_blocks; ++b) {
      if (jacobians[b] != nullptr) {
        std::copy(cache_jacobians_[b].begin(), cache_jacobians_[b].end(), jacobians[b]);
      }
    }
    return true;
  }

 private:
  struct Pair;

  // The residuals [sqrt(S - |q|^2), q] at `parameters` and, when `jacobians`, their Jacobian
  // (one accumulation of H and g over the pairs, then one LDLT).
  bool EvaluateAt(double const* const* parameters, double* residuals, double** jacobians) const {
    const double* x = parameters[0];
    const bool with_jacobians = jacobians != nullptr;
    double s_sum = 0.0;
    if (with_jacobians) {
      h_.setZero();
      g_.setZero();
    }
    for (size_t pair = 0; pair < pairs_.size(); ++pair) {
      const Pair& pr = pairs_[pair];
      const std::vector<int>& level = data_->level_of_pair[pair];
      const PairTerms terms = PairTermsAt(*data_, *state_, level, x);
      PredictPairPower(pr, terms, x);
      const int num_reweighted = AccumulateRows(pr, with_jacobians, &s_sum);
      if (!with_jacobians) continue;
      if (num_reweighted > 0) {
        const int kz = data_->num_components + 1;
        const Eigen::Map<const Eigen::MatrixXd> ym(y_.data(), kz, num_reweighted);
        a_.selfadjointView<Eigen::Lower>().rankUpdate(ym, -1.0);
      }
      AccumulateNormalEquations(level, terms, x);
    }
    if (!with_jacobians) {
      residuals[0] = std::sqrt(s_sum);
      std::fill(residuals + 1, residuals + num_params_ + 1, 0.0);
      return true;
    }
    SolveIntoResiduals(s_sum, residuals, jacobians);
    return true;
  }

  // pw_: the pair's predicted powers.
  void PredictPairPower(const Pair& pr, const PairTerms& terms, const double* x) const {
    const int nc = data_->num_components;
    const double* g = x + 2 * data_->num_domains;
    const int* domain_of = data_->domain_of.data();
    const int num_rows = static_cast<int>(pr.power_w.size());
    const double* v2f = terms.v2f;
    // TPDS Eqs. 5-6: P = p0 + sum_i v_k(i)^2 f_k(i) gamma_i U_i, component after component
    // over the rows (each row's sum in the same order as row by row).
    double* pw = pw_.data();
    std::fill(pw, pw + num_rows, terms.p0);
    for (int i = 0; i < nc; ++i) {
      const double ci = v2f[domain_of[i]] * g[i];
      const double* uc = &pr.util_col[static_cast<size_t>(i) * num_rows];
      for (int n = 0; n < num_rows; ++n) pw[n] += ci * uc[n];
    }
  }

  // Each of the pair's rows' loss into *s_sum and, `with_jacobians`, b_ and A's start a_ = A_0
  // with the reweighted rows' scaled z_n as the columns of y_. Returns how many rows were
  // reweighted. Kept out of line: in its own frame the row loop keeps its pointers in registers
  // (inlined into EvaluateAt they spilled to the stack: BM_CalibrateDefault 5% slower).
  __attribute__((noinline)) int AccumulateRows(const Pair& pr, bool with_jacobians,
                                               double* s_sum_out) const {
    const int nc = data_->num_components;
    const int num_rows = static_cast<int>(pr.power_w.size());
    const double* pw = pw_.data();
    double s_sum = *s_sum_out;
    double* b = b_.data();
    if (with_jacobians) {
      b_.setZero();
      a_ = pr.a0;
    }
    const int kz = nc + 1;
    double* y = y_.data();
    int num_reweighted = 0;
    for (int n = 0; n < num_rows; ++n) {
      const double e = (pw[n] - pr.power_w[n]) * pr.inv_sigma[n];
      double rho1 = 1.0;
      if (loss_ == nullptr) {
        s_sum += e * e;
      } else if (huber_a_ > 0.0) {
        // ceres::HuberLoss::Evaluate (ceres/internal/loss_function.cc), inline.
        const double sq = e * e;
        if (sq > huber_b_) {
          const double r = std::sqrt(sq);
          s_sum += 2.0 * huber_a_ * r - huber_b_;
          rho1 = std::max(std::numeric_limits<double>::min(), huber_a_ / r);
        } else {
          s_sum += sq;
        }
      } else {
        double rho[3];
        loss_->Evaluate(e * e, rho);
        s_sum += rho[0];
        rho1 = rho[1];
      }
      if (!with_jacobians) continue;
      const double* u = &pr.util_row[static_cast<size_t>(n) * nc];
      // t_n sqrt(rho'_n) e_n = rho'_n e_n / sigma_n
      const double tr = rho1 * e * pr.inv_sigma[n];
      b[0] += tr;
      for (int i = 0; i < nc; ++i) b[1 + i] += tr * u[i];
      if (rho1 != 1.0) {
        // A = A_0 - sum_n (1 - rho'_n) / sigma_n^2 z_n z_n^T over the reweighted rows: their
        // scaled z_n gathered as the columns of Y, then one rank-k update (below).
        const double t = std::sqrt(1.0 - rho1) * pr.inv_sigma[n];
        double* yc = y + static_cast<size_t>(num_reweighted++) * kz;
        yc[0] = t;
        for (int i = 0; i < nc; ++i) yc[1 + i] = t * u[i];
      }
    }
    *s_sum_out = s_sum;
    return num_reweighted;
  }

  // The pair's terms of H's lower triangle and of g, from A (a_), b_ and M's entries at `level`.
  void AccumulateNormalEquations(const std::vector<int>& level, const PairTerms& terms,
                                 const double* x) const {
    const int nd = data_->num_domains;
    const int nc = data_->num_components;
    const double* g = x + 2 * nd;
    const int* domain_of = data_->domain_of.data();
    const double *v = terms.v, *f = terms.f, *v2f = terms.v2f;
    const int kz = nc + 1;
    const int np = num_params_;
    double* h = h_.data();
    const double* a = a_.data();
    const double* b = b_.data();
    // M's entries: the coefficients' single entries m_j (row z_row_[j]) ...
    double* m = m_.data();
    CoefficientScales(*data_, v, v2f, m);
    auto a_at = [&](int r, int k) {  // A from its lower triangle
      return r >= k ? a[static_cast<size_t>(k) * kz + r] : a[static_cast<size_t>(r) * kz + k];
    };
    // ... and per domain with voltage parameters w_k, A w_k and dv_k/ds at the pair's level.
    double* w[2] = {w_[0].data(), w_[1].data()};
    double* aw[2] = {aw_[0].data(), aw_[1].data()};
    double* dvr[2] = {dvr_[0].data(), dvr_[1].data()};
    bool has_s[2] = {false, false};
    for (int d = 0; d < nd; ++d) {
      if (block_of_domain_[d] < 0) continue;
      has_s[d] = true;
      const double two_vf = 2.0 * v[d] * f[d];
      w[d][0] = x[d] + two_vf * x[nd + d];
      for (int i = 0; i < nc; ++i) w[d][1 + i] = domain_of[i] == d ? two_vf * g[i] : 0.0;
      for (int r = 0; r < kz; ++r) {
        double acc = 0.0;
        for (int k = 0; k < kz; ++k) acc += a_at(r, k) * w[d][k];
        aw[d][r] = acc;
      }
      const Eigen::MatrixXd& dv = state_->dv(d);
      for (int k = 0; k < s_size_[d]; ++k) dvr[d][k] = dv(level[d], k);
    }
    // H's lower triangle (column-major: h[col * np + row], row >= col) and g.
    for (int j = 0; j < nx_; ++j) {
      const double mj = m[j];
      const int rj = z_row_[j];
      g_(j) += mj * b[rj];
      double* hc = h + static_cast<size_t>(j) * np;
      for (int k = j; k < nx_; ++k) hc[k] += mj * m[k] * a_at(z_row_[k], rj);
      for (int d = 0; d < nd; ++d) {
        if (!has_s[d]) continue;
        const double c = mj * aw[d][rj];
        for (int k = 0; k < s_size_[d]; ++k) hc[s_col_[d] + k] += c * dvr[d][k];
      }
    }
    for (int d = 0; d < nd; ++d) {
      if (!has_s[d]) continue;
      double wb = 0.0;
      for (int r = 0; r < kz; ++r) wb += w[d][r] * b[r];
      for (int k = 0; k < s_size_[d]; ++k) g_(s_col_[d] + k) += wb * dvr[d][k];
      for (int e = d; e < nd; ++e) {
        if (!has_s[e]) continue;
        double wawe = 0.0;  // w_d^T A w_e
        for (int r = 0; r < kz; ++r) wawe += w[d][r] * aw[e][r];
        for (int k = 0; k < s_size_[d]; ++k) {
          double* hc = h + static_cast<size_t>(s_col_[d] + k) * np;
          const double c = wawe * dvr[d][k];
          for (int l = (e == d ? k : 0); l < s_size_[e]; ++l) hc[s_col_[e] + l] += c * dvr[e][l];
        }
      }
    }
  }

  // From H (h_) and g (g_): LDLT, the residuals [sqrt(S - |q|^2), q] and the Jacobians
  // J^T = sqrt(D) L^T P; pivots at rounding level drop out.
  void SolveIntoResiduals(double s_sum, double* residuals, double** jacobians) const {
    const int nd = data_->num_domains;
    const int np = num_params_;
    ldlt_.compute(h_);  // reads the lower triangle
    const Eigen::VectorXd& dvec = ldlt_.vectorD();
    const double d_max = dvec.maxCoeff();
    // Pivots at rounding level of the largest are directions H does not have (a component
    // fixed at 0, a voltage no row sees): no Jacobian and no residual there.
    const double d_tol = d_max * np * std::numeric_limits<double>::epsilon();
    // jt = L^T P, row k then scaled by sqrt(D_k).
    const Eigen::Transpositions<Eigen::Dynamic>& tp = ldlt_.transpositionsP();
    pm_.setIdentity();
    pm_ = tp * pm_;
    jt_.noalias() = ldlt_.matrixL().transpose() * pm_;
    q_.noalias() = tp * g_;
    ldlt_.matrixL().solveInPlace(q_);
    double q_sq = 0.0;
    for (int k = 0; k < np; ++k) {
      if (dvec(k) > d_tol) {
        const double sd = std::sqrt(dvec(k));
        jt_.row(k) *= sd;
        q_(k) /= sd;
        q_sq += q_(k) * q_(k);
      } else {
        jt_.row(k).setZero();
        q_(k) = 0.0;
      }
    }
    residuals[0] = std::sqrt(std::max(0.0, s_sum - q_sq));
    for (int k = 0; k < np; ++k) residuals[1 + k] = q_(k);
    if (jacobians[0] != nullptr) {
      double* jx = jacobians[0];
      std::fill(jx, jx + nx_, 0.0);
      for (int k = 0; k < np; ++k) {
        for (int j = 0; j < nx_; ++j) jx[(k + 1) * nx_ + j] = jt_(k, j);
      }
    }
    for (int d = 0; d < nd; ++d) {
      const int block = block_of_domain_[d];
      if (block < 0 || jacobians[block] == nullptr) continue;
      const int cols = s_size_[d];
      double* js = jacobians[block];
      std::fill(js, js + cols, 0.0);
      for (int k = 0; k < np; ++k) {
        for (int j = 0; j < cols; ++j) js[(k + 1) * cols + j] = jt_(k, s_col_[d] + j);
      }
    }
  }

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
