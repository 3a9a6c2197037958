#include "fit/internal/pair_cost.h"

#include <cmath>
#include <vector>

#include <Eigen/Core>

namespace wattcal {
namespace fit_internal {

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

PairCost::PairCost(const FitData* data, const VoltageState* state, int pair,
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

bool PairCost::Evaluate(double const* const* parameters, double* residuals,
                        double** jacobians) const {
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

void PairLoss::Evaluate(double /*sq_norm*/, double out[3]) const {
  out[0] = cost_->rho_sum();
  out[1] = 1.0;
  out[2] = 0.0;
}

}  // namespace fit_internal
}  // namespace wattcal
