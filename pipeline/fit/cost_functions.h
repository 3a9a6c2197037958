// The calibration's Ceres cost functions and the data they read, moved out of calibrate.cc's
// anonymous namespace unchanged so that tests/jacobian_gradient_check_test.cc can check their
// hand-written Jacobians against numeric differentiation (ceres::GradientChecker). Internal to
// fit/: nothing outside calibrate.cc and the tests should use them.
#pragma once

#include <ceres/ceres.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "io/corpus.h"

namespace wattcal {
namespace fit_internal {

// The rows of a corpus arranged for fitting: per row the level index of each domain.
struct FitData {
  const Corpus* corpus = nullptr;
  int num_domains = 0;
  int num_components = 0;
  std::vector<int> domain_of;                                // per component
  std::vector<std::vector<double>> levels;                   // per domain, ascending
  std::vector<int> default_level;                            // per domain
  std::vector<std::vector<int>> level_of_row;                // [domain][row]
  std::vector<std::vector<std::vector<int>>> rows_at_level;  // [domain][level] -> rows
  std::vector<double> util_row_major;  // [row * num_components + i], for speed
  // Rows grouped by V-F pair (one level per domain), pairs in order of first appearance.
  std::vector<std::vector<int>> rows_of_pair;
  std::vector<std::vector<int>> level_of_pair;  // [pair][domain]
};

// Monotone voltages through non-negative increments: for levels above the default one,
// v_j = v_{j-1} + s_j (v_max - v_{j-1}); below it, v_j = v_{j+1} - s_j (v_{j+1} - v_min);
// with 0 <= s_j <= 1 each increment is non-negative and a fraction of the room left to the
// bound, so v is non-decreasing, v_default = 1 and v_min <= v <= v_max hold exactly through
// box bounds alone (Ceres supports only bounds, FORMATS.md §6.1).
class VoltageCurve {
 public:
  VoltageCurve(int num_levels, int default_level, double v_min, double v_max)
      : m_(num_levels), k_(default_level), v_min_(v_min), v_max_(v_max) {}

  int num_params() const { return m_ - 1; }
  // Parameter index of level j (j != default).
  int ParamOf(int j) const { return j < k_ ? j : j - 1; }

  // Voltages and their Jacobian dv/ds (m x (m-1)).
  void Evaluate(const double* s, std::vector<double>* v, Eigen::MatrixXd* dv_ds) const {
    v->assign(m_, 1.0);
    dv_ds->setZero(m_, std::max(m_ - 1, 0));
    for (int j = k_ + 1; j < m_; ++j) {
      const double sj = s[ParamOf(j)];
      (*v)[j] = (*v)[j - 1] + sj * (v_max_ - (*v)[j - 1]);
      dv_ds->row(j) = (1.0 - sj) * dv_ds->row(j - 1);
      (*dv_ds)(j, ParamOf(j)) = v_max_ - (*v)[j - 1];
    }
    for (int j = k_ - 1; j >= 0; --j) {
      const double sj = s[ParamOf(j)];
      (*v)[j] = (*v)[j + 1] - sj * ((*v)[j + 1] - v_min_);
      dv_ds->row(j) = (1.0 - sj) * dv_ds->row(j + 1);
      (*dv_ds)(j, ParamOf(j)) = -((*v)[j + 1] - v_min_);
    }
  }

  // Parameters that reproduce voltages `v` (clamped into the feasible set).
  std::vector<double> Invert(const std::vector<double>& v) const {
    std::vector<double> s(std::max(m_ - 1, 0), 0.0);
    std::vector<double> w(m_, 1.0);
    for (int j = k_ + 1; j < m_; ++j) {
      const double room = v_max_ - w[j - 1];
      double sj = room > 0.0 ? (v[j] - w[j - 1]) / room : 0.0;
      sj = std::clamp(sj, 0.0, 1.0);
      s[ParamOf(j)] = sj;
      w[j] = w[j - 1] + sj * room;
    }
    for (int j = k_ - 1; j >= 0; --j) {
      const double room = w[j + 1] - v_min_;
      double sj = room > 0.0 ? (w[j + 1] - v[j]) / room : 0.0;
      sj = std::clamp(sj, 0.0, 1.0);
      s[ParamOf(j)] = sj;
      w[j] = w[j + 1] - sj * room;
    }
    return s;
  }

 private:
  int m_, k_;
  double v_min_, v_max_;
};

// Voltages of every domain computed once per evaluation point, shared by all rows.
class VoltageState : public ceres::EvaluationCallback {
 public:
  VoltageState(std::vector<VoltageCurve> curves, std::vector<double*> params)
      : curves_(std::move(curves)), params_(std::move(params)) {
    v_.resize(curves_.size());
    dv_.resize(curves_.size());
    Update();
  }
  void PrepareForEvaluation(bool /*evaluate_jacobians*/, bool new_evaluation_point) override {
    if (new_evaluation_point) Update();
  }
  void Update() {
    for (size_t d = 0; d < curves_.size(); ++d) curves_[d].Evaluate(params_[d], &v_[d], &dv_[d]);
  }
  double v(int d, int j) const { return v_[d][j]; }
  const Eigen::MatrixXd& dv(int d) const { return dv_[d]; }
  const std::vector<std::vector<double>>& voltages() const { return v_; }

 private:
  std::vector<VoltageCurve> curves_;
  std::vector<double*> params_;
  std::vector<std::vector<double>> v_;
  std::vector<Eigen::MatrixXd> dv_;
};

// Residual of one measured row: (P_model - P_meas) / sigma with sigma = 1 W (absolute) or
// P_meas (relative). Parameter blocks: coefficients, then the s-vector of every domain
// with more than one level.
class RowCost : public ceres::CostFunction {
 public:
  RowCost(const FitData* data, const VoltageState* state, int row, double sigma,
          const std::vector<int>& block_of_domain)
      : data_(data),
        state_(state),
        row_(row),
        inv_sigma_(1.0 / sigma),
        block_of_domain_(block_of_domain) {
    set_num_residuals(1);
    mutable_parameter_block_sizes()->push_back(2 * data->num_domains + data->num_components);
    for (int d = 0; d < data->num_domains; ++d) {
      if (block_of_domain_[d] >= 0) {
        mutable_parameter_block_sizes()->push_back(static_cast<int>(data->levels[d].size()) - 1);
      }
    }
  }

  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const Corpus& c = *data_->corpus;
    const int nd = data_->num_domains;
    const int nc = data_->num_components;
    const double* x = parameters[0];
    const double* u = &data_->util_row_major[static_cast<size_t>(row_) * nc];
    const int* domain_of = data_->domain_of.data();
    double v[2], f[2], inner[2];
    for (int d = 0; d < nd; ++d) {
      v[d] = state_->v(d, data_->level_of_row[d][row_]);
      f[d] = c.freq_mhz(row_, d);
      inner[d] = x[nd + d];  // alpha1_k
    }
    for (int i = 0; i < nc; ++i) inner[domain_of[i]] += x[2 * nd + i] * u[i];
    // TPDS Eqs. 5-6: P = sum_k alpha0_k v_k + v_k^2 f_k (alpha1_k + sum_i gamma_i U_i).
    double p = 0.0;
    for (int d = 0; d < nd; ++d) p += x[d] * v[d] + v[d] * v[d] * f[d] * inner[d];
    residuals[0] = (p - c.power_w(row_)) * inv_sigma_;
    if (jacobians == nullptr) return true;
    if (jacobians[0] != nullptr) {
      double* jx = jacobians[0];
      for (int d = 0; d < nd; ++d) {
        jx[d] = v[d] * inv_sigma_;
        jx[nd + d] = v[d] * v[d] * f[d] * inv_sigma_;
      }
      for (int i = 0; i < nc; ++i) {
        const int d = domain_of[i];
        jx[2 * nd + i] = jx[nd + d] * u[i];
      }
    }
    for (int d = 0; d < nd; ++d) {
      const int block = block_of_domain_[d];
      if (block < 0 || jacobians[block] == nullptr) continue;
      const double dp_dv = x[d] + 2.0 * v[d] * f[d] * inner[d];
      const Eigen::MatrixXd& dv = state_->dv(d);
      const int j = data_->level_of_row[d][row_];
      for (int k = 0; k < dv.cols(); ++k) jacobians[block][k] = dp_dv * dv(j, k) * inv_sigma_;
    }
    return true;
  }

 private:
  const FitData* data_;
  const VoltageState* state_;
  int row_;
  double inv_sigma_;
  std::vector<int> block_of_domain_;
};

// Residuals of one frequency level for its voltage V (TPDS Fig. 5, Problem 1):
// r = a V + b V^2 + c - P per row, with the other domain's power folded into c.
class LevelVoltageCost : public ceres::CostFunction {
 public:
  LevelVoltageCost(std::vector<double> a, std::vector<double> b, std::vector<double> c)
      : a_(std::move(a)), b_(std::move(b)), c_(std::move(c)) {
    set_num_residuals(static_cast<int>(a_.size()));
    mutable_parameter_block_sizes()->push_back(1);
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const double v = parameters[0][0];
    for (size_t i = 0; i < a_.size(); ++i) {
      residuals[i] = a_[i] * v + b_[i] * v * v + c_[i];
      if (jacobians != nullptr && jacobians[0] != nullptr) {
        jacobians[0][i] = a_[i] + 2.0 * b_[i] * v;
      }
    }
    return true;
  }

 private:
  std::vector<double> a_, b_, c_;
};

// One row of a linear least-squares problem: r = a . y - b.
class LinearRowCost : public ceres::CostFunction {
 public:
  LinearRowCost(Eigen::VectorXd a, double b) : a_(std::move(a)), b_(b) {
    set_num_residuals(1);
    mutable_parameter_block_sizes()->push_back(static_cast<int>(a_.size()));
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    residuals[0] = -b_;
    for (int j = 0; j < a_.size(); ++j) residuals[0] += a_(j) * parameters[0][j];
    if (jacobians != nullptr && jacobians[0] != nullptr) {
      for (int j = 0; j < a_.size(); ++j) jacobians[0][j] = a_(j);
    }
    return true;
  }

 private:
  Eigen::VectorXd a_;
  double b_;
};
}  // namespace fit_internal
}  // namespace wattcal
