#include "fit/internal/compressed_problem_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "fit/internal/fit_data.h"

namespace wattcal {
namespace fit_internal {

CompressedProblemCost::CompressedProblemCost(const FitData* data, const VoltageState* state,
                                             const ceres::LossFunction* loss, double huber_scale,
                                             FitResidual residual,
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

bool CompressedProblemCost::Evaluate(double const* const* parameters, double* residuals,
                                     double** jacobians) const {
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

bool CompressedProblemCost::EvaluateAt(double const* const* parameters, double* residuals,
                                       double** jacobians) const {
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

void CompressedProblemCost::PredictPairPower(const Pair& pr, const PairTerms& terms,
                                             const double* x) const {
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

int CompressedProblemCost::AccumulateRows(const Pair& pr, bool with_jacobians,
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

void CompressedProblemCost::AccumulateNormalEquations(const std::vector<int>& level,
                                                      const PairTerms& terms,
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

void CompressedProblemCost::SolveIntoResiduals(double s_sum, double* residuals,
                                               double** jacobians) const {
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

}  // namespace fit_internal
}  // namespace wattcal
