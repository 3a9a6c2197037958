#include "fit/calibrate.h"

#include <ceres/ceres.h>
#include <ceres/manifold.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cmath>
#include <exception>
#include <memory>
#include <map>
#include <set>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include "fit/cost_functions.h"
#include "fit/nnls.h"
#include "util/errors.h"
#include "util/row_order.h"
#include "util/logging.h"

namespace wattcal {

const char* FitMethodName(FitMethod v) { return v == FitMethod::kDvfs ? "dvfs" : "fixed"; }
const char* FitSolverName(FitSolver v) {
  return v == FitSolver::kJoint ? "joint" : "alternating";
}
const char* FitLossName(FitLoss v) {
  switch (v) {
    case FitLoss::kL2: return "l2";
    case FitLoss::kHuber: return "huber";
    case FitLoss::kCauchy: return "cauchy";
  }
  return "?";
}
bool ParseFitLoss(const std::string& name, FitLoss* loss) {
  for (FitLoss v : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
    if (name == FitLossName(v)) {
      *loss = v;
      return true;
    }
  }
  return false;
}
const char* FitResidualName(FitResidual v) {
  return v == FitResidual::kAbsolute ? "absolute" : "relative";
}

bool CalibrationOptions::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  if (!(loss_scale >= 0.0)) return fail(fmt::format("loss_scale = {} must be >= 0", loss_scale));
  if (!(voltage_min > 0.0 && voltage_min <= 1.0)) {
    return fail(fmt::format("voltage_min = {} must lie in (0, 1]", voltage_min));
  }
  if (!(voltage_max >= 1.0)) return fail(fmt::format("voltage_max = {} must be >= 1", voltage_max));
  if (max_solver_iterations < 1) {
    return fail(fmt::format("max_solver_iterations = {} must be >= 1", max_solver_iterations));
  }
  if (max_alternating_iterations < 1) {
    return fail(
        fmt::format("max_alternating_iterations = {} must be >= 1", max_alternating_iterations));
  }
  if (!(alternating_tolerance_pct > 0.0)) {
    return fail(fmt::format("alternating_tolerance_pct = {} must be > 0", alternating_tolerance_pct));
  }
  if (alternating_patience < 1) {
    return fail(fmt::format("alternating_patience = {} must be >= 1", alternating_patience));
  }
  if (num_threads < 1) return fail(fmt::format("num_threads = {} must be >= 1", num_threads));
  if (!(power_limit_w >= 0.0 && power_limit_w <= 10000.0)) {
    return fail(fmt::format("power_limit_w = {} must lie in [0, 10000] W (0 = the corpus's)",
                            power_limit_w));
  }
  if (bootstrap_replicates < 0) {
    return fail(fmt::format("bootstrap_replicates = {} must be >= 0", bootstrap_replicates));
  }
  if (bootstrap_replicates > 0 && method != FitMethod::kFixed) {
    return fail("bootstrap_replicates (--bootstrap) applies to the fixed method only "
                "(--method fixed)");
  }
  if (method == FitMethod::kDvfs && solver == FitSolver::kAlternating &&
      (loss != FitLoss::kL2 || residual != FitResidual::kAbsolute)) {
    return fail(fmt::format(
        "solver = alternating reproduces gpmTOOL and supports only loss = l2 with residual = "
        "absolute (got loss = {}, residual = {})",
        FitLossName(loss), FitResidualName(residual)));
  }
  return true;
}

double CalibrationOptions::EffectiveLossScale() const {
  if (loss_scale > 0.0) return loss_scale;
  return residual == FitResidual::kRelative ? 0.05 : 3.0;
}

namespace {

using Clock = std::chrono::steady_clock;
// The cost functions and their data live in fit/cost_functions.h so the tests can check their
// hand-written Jacobians (tests/jacobian_gradient_check_test.cc).
using fit_internal::FitData;
using fit_internal::LevelVoltageCost;
using fit_internal::LinearRowCost;
using fit_internal::RowCost;
using fit_internal::VoltageCurve;
using fit_internal::VoltageState;

FitData PrepareFitData(const Corpus& train) {
  if (!train.has_power()) {
    throw InputError(train.path, 0, "power_w", "the training file has no measured power");
  }
  if (!train.has_freq()) {
    throw InputError(train.path, 0, "f_core_mhz", "the training file has no frequencies");
  }
  if (train.rows() == 0) throw InputError(train.path, 0, "", "the training file has no rows");
  FitData data;
  data.corpus = &train;
  data.num_domains = train.layout.num_domains();
  data.num_components = train.layout.num_components();
  data.domain_of = train.layout.ComponentDomains();
  data.level_of_row.resize(data.num_domains);
  data.rows_at_level.resize(data.num_domains);
  data.util_row_major.resize(static_cast<size_t>(train.rows()) * data.num_components);
  for (int r = 0; r < train.rows(); ++r) {
    for (int i = 0; i < data.num_components; ++i) {
      data.util_row_major[static_cast<size_t>(r) * data.num_components + i] = train.util_frac(r, i);
    }
  }
  for (int d = 0; d < data.num_domains; ++d) {
    data.levels.push_back(train.FrequencyLevels(d));
    const std::vector<double>& lv = data.levels.back();
    const double f_default = train.layout.domains[d].default_freq_mhz;
    const auto it = std::find(lv.begin(), lv.end(), f_default);
    if (it == lv.end()) {
      // gpmTOOL files state the defaults on line 2; tidy files take them from the options.
      const std::string field = train.defaults_line > 0
                                    ? train.layout.domains[d].name + " default frequency"
                                    : "--default-" + train.layout.domains[d].name + "-mhz";
      throw InputError(train.path, train.defaults_line, field,
                       fmt::format("the default {} frequency {} MHz has no rows (measured: {} "
                                   "to {} MHz)",
                                   train.layout.domains[d].name, f_default, lv.front(),
                                   lv.back()));
    }
    data.default_level.push_back(static_cast<int>(it - lv.begin()));
    data.rows_at_level[d].resize(lv.size());
    data.level_of_row[d].resize(train.rows());
    for (int r = 0; r < train.rows(); ++r) {
      const int j = static_cast<int>(std::lower_bound(lv.begin(), lv.end(), train.freq_mhz(r, d)) -
                                     lv.begin());
      data.level_of_row[d][r] = j;
      data.rows_at_level[d][j].push_back(r);
    }
  }
  std::map<std::vector<int>, int> pair_index;
  for (int r = 0; r < train.rows(); ++r) {
    std::vector<int> key(data.num_domains);
    for (int d = 0; d < data.num_domains; ++d) key[d] = data.level_of_row[d][r];
    const auto inserted = pair_index.emplace(key, static_cast<int>(data.rows_of_pair.size()));
    if (inserted.second) {
      data.rows_of_pair.emplace_back();
      data.level_of_pair.push_back(key);
    }
    data.rows_of_pair[inserted.first->second].push_back(r);
  }
  if (train.RowsAtDefault().empty()) {
    std::string pair;
    for (const FrequencyDomain& dom : train.layout.domains) {
      pair += (pair.empty() ? "" : "/") + fmt::format("{}", dom.default_freq_mhz);
    }
    throw InputError(train.path, train.defaults_line,
                     train.defaults_line > 0 ? "default frequencies" : "--default-core-mhz/--default-mem-mhz",
                     "no rows at the default V-F pair " + pair + " MHz");
  }
  return data;
}

// At fixed voltages each coefficient's design column over a V-F pair's rows is scale_j times
// one column of z = [1 U] (TPDS Eqs. 5-6 are linear in the coefficients): alpha0_k -> v_k and
// alpha1_k -> v_k^2 f_k on the constant (z row 0), gamma_i -> v_k(i)^2 f_k(i) on U_i (z row
// 1 + i). The z rows, the same at every pair:
std::vector<int> CoefficientZRows(const FitData& data) {
  std::vector<int> z_row(2 * data.num_domains + data.num_components, 0);
  for (int i = 0; i < data.num_components; ++i) z_row[2 * data.num_domains + i] = 1 + i;
  return z_row;
}

// ... and the scales at a pair with voltages v and v^2 f per domain.
void CoefficientScales(const FitData& data, const double* v, const double* v2f, double* scale) {
  const int nd = data.num_domains;
  for (int d = 0; d < nd; ++d) {
    scale[d] = v[d];
    scale[nd + d] = v2f[d];
  }
  for (int i = 0; i < data.num_components; ++i) scale[2 * nd + i] = v2f[data.domain_of[i]];
}

// Builds the row of the linear design matrix for fixed voltages:
// [v_k..., v_k^2 f_k..., v^2 f U_i...], the coefficients' scales times z_n.
void DesignRow(const FitData& data, int r, const std::vector<std::vector<double>>& volts,
               double* out) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  double v[2] = {0.0, 0.0}, v2f[2] = {0.0, 0.0};
  for (int d = 0; d < nd; ++d) {
    v[d] = volts[d][data.level_of_row[d][r]];
    v2f[d] = v[d] * v[d] * c.freq_mhz(r, d);
  }
  CoefficientScales(data, v, v2f, out);
  for (int i = 0; i < data.num_components; ++i) out[2 * nd + i] *= c.util_frac(r, i);
}

// NNLS for the coefficients with voltages fixed (TPDS Fig. 5, Problem 2). Rows are
// weighted by 1/P for relative residuals.
std::vector<double> SolveCoefficients(const FitData& data,
                                      const std::vector<std::vector<double>>& volts,
                                      FitResidual residual, bool like_gpmtool = false) {
  const Corpus& c = *data.corpus;
  const int nc = 2 * data.num_domains + data.num_components;
  Eigen::MatrixXd a(c.rows(), nc);
  Eigen::VectorXd b(c.rows());
  std::vector<double> row(nc);
  for (int r = 0; r < c.rows(); ++r) {
    DesignRow(data, r, volts, row.data());
    const double w = residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0;
    for (int j = 0; j < nc; ++j) a(r, j) = row[j] * w;
    b(r) = c.power_w(r) * w;
  }
  NnlsOptions nnls;
  // gpmTOOL's scipy NNLS works on unscaled columns: with collinear columns (a single memory
  // frequency makes alpha0_mem and alpha1_mem interchangeable) it then picks the same split.
  nnls.scale_columns = !like_gpmtool;
  const Eigen::VectorXd x = SolveNnls(a, b, nnls);
  return {x.data(), x.data() + x.size()};
}

// ---------------------------------------------------------------------------------------
// Joint solve (VoltageCurve, VoltageState and RowCost are in fit/cost_functions.h).

// What a V-F pair's rows share (TPDS Eqs. 5-6 without the components): per domain the voltage
// v, the frequency f and v^2 f at the pair's levels, and p0 = sum_d (x_d v_d + v_d^2 f_d x_nd+d).
struct PairTerms {
  double v[2], f[2], v2f[2];
  double p0 = 0.0;
};

PairTerms PairTermsAt(const FitData& data, const VoltageState& state,
                      const std::vector<int>& level, const double* x) {
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
      : data_(data), state_(state), pair_(pair), loss_(loss),
        block_of_domain_(block_of_domain) {
    const Corpus& c = *data->corpus;
    const std::vector<int>& rows = data->rows_of_pair[pair];
    set_num_residuals(static_cast<int>(rows.size()));
    mutable_parameter_block_sizes()->push_back(2 * data->num_domains + data->num_components);
    for (int d = 0; d < data->num_domains; ++d) {
      if (block_of_domain_[d] >= 0) {
        mutable_parameter_block_sizes()->push_back(
            static_cast<int>(data->levels[d].size()) - 1);
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
    double* base = scratch_.data();              // nx: dP/dx with U_i left out
    double* dv_row = scratch_.data() + nx;       // the levels' dv/ds rows, domain after domain
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
  std::vector<double> util_;  // the pair's utilisations, row-major
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
// per-row residuals (CalibrationOptions::joint_compressed_pairs).
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
      : data_(data), state_(state), loss_(loss), huber_a_(huber_scale),
        huber_b_(huber_scale * huber_scale), block_of_domain_(block_of_domain) {
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
  bool EvaluateAt(double const* const* parameters, double* residuals,
                  double** jacobians) const {
    const int nd = data_->num_domains;
    const int nc = data_->num_components;
    const double* x = parameters[0];
    const double* g = x + 2 * nd;
    const int* domain_of = data_->domain_of.data();
    const bool with_jacobians = jacobians != nullptr;
    double s_sum = 0.0;
    if (with_jacobians) {
      h_.setZero();
      g_.setZero();
    }
    double* h = h_.data();
    const int np = num_params_;
    for (size_t pair = 0; pair < pairs_.size(); ++pair) {
      const Pair& pr = pairs_[pair];
      const std::vector<int>& level = data_->level_of_pair[pair];
      const int num_rows = static_cast<int>(pr.power_w.size());
      const PairTerms terms = PairTermsAt(*data_, *state_, level, x);
      const double *v = terms.v, *f = terms.f, *v2f = terms.v2f;
      // TPDS Eqs. 5-6: P = p0 + sum_i v_k(i)^2 f_k(i) gamma_i U_i, component after component
      // over the rows (each row's sum in the same order as row by row).
      double* pw = pw_.data();
      std::fill(pw, pw + num_rows, terms.p0);
      for (int i = 0; i < nc; ++i) {
        const double ci = v2f[domain_of[i]] * g[i];
        const double* uc = &pr.util_col[static_cast<size_t>(i) * num_rows];
        for (int n = 0; n < num_rows; ++n) pw[n] += ci * uc[n];
      }
      double* b = b_.data();
      if (with_jacobians) {
        b_.setZero();
        a_ = pr.a0;
      }
      double* a = a_.data();
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
      if (!with_jacobians) continue;
      if (num_reweighted > 0) {
        const Eigen::Map<const Eigen::MatrixXd> ym(y, kz, num_reweighted);
        a_.selfadjointView<Eigen::Lower>().rankUpdate(ym, -1.0);
      }
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
    if (!with_jacobians) {
      residuals[0] = std::sqrt(s_sum);
      std::fill(residuals + 1, residuals + np + 1, 0.0);
      return true;
    }
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
    return true;
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

struct SolveResult {
  std::vector<double> coefficients;
  std::vector<std::vector<double>> voltages;
  FitReport report;
};

std::unique_ptr<ceres::LossFunction> MakeLoss(const CalibrationOptions& options) {
  const double scale = options.EffectiveLossScale();
  switch (options.loss) {
    case FitLoss::kL2: return nullptr;
    case FitLoss::kHuber: return std::make_unique<ceres::HuberLoss>(scale);
    case FitLoss::kCauchy: return std::make_unique<ceres::CauchyLoss>(scale);
  }
  return nullptr;
}

// Stopping tolerances of the joint solve (Ceres's relative cost change, projected gradient and
// step). Measured (issue 14): 1e-8 saves 15% of the iterations on the Titan X with the same
// optimum, but on a synthetic corpus with corrupted rows (calibrate_test's
// RobustLossesResistCorruptedRows) the L2 start from the alternating solution then stops on
// a plateau, cost 98858.7 instead of 98809.7, and the other start is kept. So they stay 1e-12.
constexpr double kJointFunctionTolerance = 1e-12;
// The active-set rounds' relative cost change, measured (issue 14): 1e-10 ends both Titan X
// sets on points no feasible move of 1e-5 lowers by more than 1e-11 of the cost, with the
// held-out MAPE of 1e-12 to 1e-4 point, in 35 instead of 42 iterations; 1e-9 leaves 4e-10.
constexpr double kActiveSetFunctionTolerance = 1e-10;
constexpr double kJointGradientTolerance = 1e-12;
constexpr double kJointParameterTolerance = 1e-12;

// Threads for the joint solve's evaluations over several blocks (the per-pair PairCost blocks;
// the default CompressedProblemCost is one block, which Ceres evaluates on one thread): one
// per kRowsPerThread rows, at most `requested`.
// On the Titan X (6528 rows) --threads 2 made the fit 1.25x slower (issue 14): a thread's
// share of an evaluation is shorter than starting Ceres's parallel loop. The 50000-row
// threshold is a conservative guess, not a measured crossover (this 2-core machine is shared
// and too loaded to measure one); every corpus in shared/datasets stays on one thread.
constexpr int kRowsPerThread = 50000;
int JointSolverThreads(int requested, int rows) {
  return std::max(1, std::min(requested, rows / kRowsPerThread));
}

// Ticks a terminal progress line once per solver iteration.
class ProgressCallback : public ceres::IterationCallback {
 public:
  explicit ProgressCallback(Progress* progress) : progress_(progress) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& /*summary*/) override {
    progress_->Tick();
    return ceres::SOLVER_CONTINUE;
  }

 private:
  Progress* progress_;
};

// One bounded scalar of the joint problem: a coefficient (>= 0) or a voltage parameter s
// (in [0, 1]), as the value inside its Ceres parameter block.
struct BoundedScalar {
  double* value;
  int block;  // index into the problem's parameter blocks
  int index;  // within the block
  double lower, upper;
  bool AtBound() const { return *value <= lower || *value >= upper; }
};

// Ends a Ceres run of the active-set rounds (SolveWithActiveSet) after the first successful
// step that puts a variable not held on one of its bounds: past that point Ceres's projected
// steps stall (below).
class BoundReachedCallback : public ceres::IterationCallback {
 public:
  BoundReachedCallback(const std::vector<BoundedScalar>* scalars, const std::vector<char>* held)
      : scalars_(scalars), held_(held) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& summary) override {
    if (summary.iteration == 0 || !summary.step_is_successful) return ceres::SOLVER_CONTINUE;
    for (size_t i = 0; i < scalars_->size(); ++i) {
      if (!(*held_)[i] && (*scalars_)[i].AtBound()) {
        reached_ = true;
        return ceres::SOLVER_TERMINATE_SUCCESSFULLY;
      }
    }
    return ceres::SOLVER_CONTINUE;
  }
  bool reached() const { return reached_; }
  void Reset() { reached_ = false; }

 private:
  const std::vector<BoundedScalar>* scalars_;
  const std::vector<char>* held_;
  bool reached_ = false;
};

// Active-set rounds around Ceres (CalibrationOptions::joint_active_set).
//
// Ceres keeps bounds by projecting each trust-region step onto the box, but it judges the step
// by the model decrease of the step before the projection (ceres/internal/
// trust_region_minimizer.cc; its own comment on the projected line search: "does not do
// anything illegal but is incorrect and not terribly effective", ceres-solver issue 187). When
// the unconstrained step points out of the box at a variable on its bound, every step is cut
// there, the ratio of actual to predicted decrease stays small, the radius halves at each
// iteration and the solve ends on the relative cost change, away from the minimum: on the Titan
// X the cold start spent 33 of its 63 iterations so, its projected gradient at 2.3e6 to the
// end. Such bounds are common here: a voltage step s = 0 is two equal neighbouring voltages
// (the Titan X's lowest core levels), a coefficient at 0 a component that draws nothing; 11
// of the 34 variables end on one.
//
// The rounds hold those variables instead, as active-set methods do (and as the AccelWattch
// scaling fit's passes do, accelwattch/scaling_fit.cc; Nocedal & Wright,
// "Numerical Optimization", 2nd ed., Sec. 16.5; Bertsekas, "Projected Newton methods for
// optimization problems with simple constraints", SIAM J. Control Optim. 20 (1982)): each
// round computes the gradient, holds every variable on a bound whose gradient points out of
// the box (Ceres's SubsetManifold, or the whole block constant), frees the others, and runs
// Ceres without the line search until it converges or a free variable reaches a bound
// (BoundReachedCallback). It ends when a run converges and the held set is the one the
// gradient there asks for: the first-order (KKT) conditions of the bounded problem, to Ceres's
// tolerances on the free variables.
ceres::Solver::Summary SolveWithActiveSet(ceres::Problem* problem,
                                          const std::vector<double*>& blocks,
                                          const std::vector<int>& block_sizes,
                                          const std::vector<BoundedScalar>& scalars,
                                          ceres::Solver::Options solver_options,
                                          int* total_iterations, int* rounds) {
  const int n = static_cast<int>(scalars.size());
  std::vector<char> held(n, 0);
  BoundReachedCallback bound_reached(&scalars, &held);
  solver_options.callbacks.push_back(&bound_reached);
  solver_options.update_state_every_iteration = true;  // the callback reads the values
  solver_options.max_num_line_search_step_size_iterations = 0;
  const int max_iterations = solver_options.max_num_iterations;
  ceres::Problem::EvaluateOptions evaluate;
  evaluate.parameter_blocks = blocks;
  std::vector<double> gradient;
  std::vector<int> offset(blocks.size(), 0);  // of each block in the gradient
  for (size_t b = 1; b < blocks.size(); ++b) offset[b] = offset[b - 1] + block_sizes[b - 1];
  ceres::Solver::Summary summary;
  double initial_cost = 0.0;
  *total_iterations = 0;
  *rounds = 0;
  bool last_converged = false;
  bool out_of_iterations = false;
  while (true) {
    // The gradient in the blocks' own coordinates: no manifold, nothing constant.
    for (double* block : blocks) {
      problem->SetManifold(block, nullptr);
      problem->SetParameterBlockVariable(block);
    }
    problem->Evaluate(evaluate, nullptr, nullptr, &gradient, nullptr);
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      const BoundedScalar& v = scalars[i];
      const double g = gradient[offset[v.block] + v.index];
      const char hold = (*v.value <= v.lower && g > 0.0) || (*v.value >= v.upper && g < 0.0);
      changed |= hold != held[i];
      held[i] = hold;
    }
    if (*rounds > 0 && last_converged && !changed) break;
    // Every round but one that converges at once takes a successful step, so the iterations
    // bound the rounds; the cap on rounds is a second guard.
    if (*rounds > 0 && (*total_iterations >= max_iterations || *rounds > max_iterations)) {
      out_of_iterations = true;
      break;
    }
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::vector<int> fixed;
      for (int i = 0; i < n; ++i) {
        if (scalars[i].block == static_cast<int>(b) && held[i]) fixed.push_back(scalars[i].index);
      }
      if (static_cast<int>(fixed.size()) == block_sizes[b]) {
        problem->SetParameterBlockConstant(blocks[b]);
      } else if (!fixed.empty()) {
        problem->SetManifold(blocks[b], new ceres::SubsetManifold(block_sizes[b], fixed));
      }
    }
    solver_options.max_num_iterations = std::max(1, max_iterations - *total_iterations);
    bound_reached.Reset();
    ceres::Solver::Summary round;
    ceres::Solve(solver_options, problem, &round);
    if (*rounds == 0) initial_cost = round.initial_cost;
    ++*rounds;
    *total_iterations += static_cast<int>(round.iterations.size()) - 1;
    summary = round;
    if (!round.IsSolutionUsable()) break;
    last_converged = round.termination_type == ceres::CONVERGENCE;
    if (!last_converged && !bound_reached.reached()) break;  // iterations or a failure
  }
  for (double* block : blocks) {
    problem->SetManifold(block, nullptr);
    problem->SetParameterBlockVariable(block);
  }
  summary.initial_cost = initial_cost;
  if (out_of_iterations) {
    // The iterations ran out before the held set settled: not a converged fit, whatever the
    // last round's own ending.
    summary.termination_type = ceres::NO_CONVERGENCE;
    summary.message = fmt::format("Maximum number of iterations reached ({}) before the "
                                  "active-set rounds settled.",
                                  *total_iterations);
  }
  return summary;
}

// `moments`: PairMoments(data, options.residual) (read by the compressed problem only).
SolveResult SolveJoint(const FitData& data, const CalibrationOptions& options,
                       const std::vector<double>& initial_coefficients,
                       const std::vector<std::vector<double>>& initial_voltages,
                       const std::vector<Eigen::MatrixXd>& moments) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  std::vector<double> x = initial_coefficients;
  std::vector<VoltageCurve> curves;
  std::vector<std::vector<double>> s(nd);
  std::vector<int> block_of_domain(nd, -1);
  int next_block = 1;
  for (int d = 0; d < nd; ++d) {
    curves.emplace_back(static_cast<int>(data.levels[d].size()), data.default_level[d],
                        options.voltage_min, options.voltage_max);
    s[d] = curves[d].Invert(initial_voltages[d]);
    if (curves[d].num_params() > 0) block_of_domain[d] = next_block++;
  }
  std::vector<double*> s_ptrs;
  std::vector<double> empty_s(1, 0.0);
  for (int d = 0; d < nd; ++d) s_ptrs.push_back(s[d].empty() ? empty_s.data() : s[d].data());
  VoltageState state(curves, s_ptrs);

  ceres::Problem::Options problem_options;
  problem_options.evaluation_callback = &state;
  problem_options.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
  ceres::Problem problem(problem_options);
  std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
  std::vector<std::unique_ptr<PairLoss>> pair_losses;  // one per PairCost block (not owned by problem)
  std::vector<double*> blocks = {x.data()};
  std::vector<int> block_sizes = {static_cast<int>(x.size())};
  std::vector<BoundedScalar> scalars;
  for (int j = 0; j < static_cast<int>(x.size()); ++j) {
    scalars.push_back({&x[j], 0, j, 0.0, std::numeric_limits<double>::infinity()});
  }
  for (int d = 0; d < nd; ++d) {
    if (block_of_domain[d] < 0) continue;
    blocks.push_back(s[d].data());
    block_sizes.push_back(static_cast<int>(s[d].size()));
    for (int k = 0; k < static_cast<int>(s[d].size()); ++k) {
      scalars.push_back({&s[d][k], block_of_domain[d], k, 0.0, 1.0});
    }
  }
  if (options.reference_solver) {
    for (int r = 0; r < c.rows(); ++r) {
      const double sigma = options.residual == FitResidual::kRelative ? c.power_w(r) : 1.0;
      problem.AddResidualBlock(new RowCost(&data, &state, r, sigma, block_of_domain), loss.get(),
                               blocks);
    }
  } else if (options.joint_compressed_pairs) {
    problem.AddResidualBlock(
        new CompressedProblemCost(
            &data, &state, loss.get(),
            options.loss == FitLoss::kHuber ? options.EffectiveLossScale() : 0.0,
            options.residual, block_of_domain, moments),
        nullptr, blocks);
  } else {
    for (int pair = 0; pair < static_cast<int>(data.rows_of_pair.size()); ++pair) {
      auto* cost = new PairCost(&data, &state, pair, loss.get(), options.residual, block_of_domain);
      if (loss != nullptr) pair_losses.push_back(std::make_unique<PairLoss>(cost));
      problem.AddResidualBlock(cost, loss != nullptr ? pair_losses.back().get() : nullptr, blocks);
    }
  }
  for (const BoundedScalar& v : scalars) {
    problem.SetParameterLowerBound(blocks[v.block], v.index, v.lower);
    if (std::isfinite(v.upper)) problem.SetParameterUpperBound(blocks[v.block], v.index, v.upper);
  }

  ceres::Solver::Options solver_options;
  // The normal equations are np x np (np ~ 40 parameters), and Jacobi scaling keeps them well
  // conditioned despite MHz-scaled columns (FORMATS.md §6.1).
  solver_options.linear_solver_type = ceres::DENSE_NORMAL_CHOLESKY;
  solver_options.max_num_iterations = options.max_solver_iterations;
  const bool active_set = options.joint_active_set && !options.reference_solver;
  if (options.reference_solver) {
    solver_options.function_tolerance = 1e-12;  // as kJoint*Tolerance
    solver_options.gradient_tolerance = 1e-12;
    solver_options.parameter_tolerance = 1e-12;
    solver_options.num_threads = options.num_threads;
  } else {
    // Without the active-set rounds, Ceres's own bounds handling: a line search along each
    // projected step (Armijo, cubic interpolation, evaluating the gradient at every trial
    // point) unless joint_bounds_line_search is off.
    if (!options.joint_bounds_line_search) solver_options.max_num_line_search_step_size_iterations = 0;
    solver_options.function_tolerance =
        options.joint_active_set ? kActiveSetFunctionTolerance : kJointFunctionTolerance;
    solver_options.gradient_tolerance = kJointGradientTolerance;
    solver_options.parameter_tolerance = kJointParameterTolerance;
    solver_options.num_threads = JointSolverThreads(options.num_threads, c.rows());
  }
  solver_options.logging_type = ceres::SILENT;
  Progress progress("joint fit (iterations)", options.show_progress ? options.max_solver_iterations : 0);
  ProgressCallback callback(&progress);
  solver_options.callbacks.push_back(&callback);
  ceres::Solver::Summary summary;
  SolveResult result;
  int rounds = 0;
  if (active_set) {
    summary = SolveWithActiveSet(&problem, blocks, block_sizes, scalars, solver_options,
                                 &result.report.iterations, &rounds);
  } else {
    ceres::Solve(solver_options, &problem, &summary);
    result.report.iterations = static_cast<int>(summary.iterations.size()) - 1;
  }
  progress.Finish();
  if (!summary.IsSolutionUsable()) {
    throw FitError("joint DVFS fit failed: " + summary.message);
  }
  state.Update();
  result.coefficients = x;
  result.voltages = state.voltages();
  result.report.solver = "joint";
  result.report.converged = summary.termination_type == ceres::CONVERGENCE;
  result.report.initial_cost = summary.initial_cost;
  result.report.final_cost = summary.final_cost;
  result.report.termination = summary.message;
  if (active_set) {
    int on_bounds = 0;
    for (const BoundedScalar& v : scalars) on_bounds += v.AtBound() ? 1 : 0;
    result.report.termination +=
        fmt::format(" ({} active-set round{}; {} of {} variables on a bound)", rounds,
                    rounds == 1 ? "" : "s", on_bounds, scalars.size());
  }
  return result;
}

// ---------------------------------------------------------------------------------------
// gpmTOOL's alternating algorithm (TPDS Fig. 4).

double FitLevelVoltage(const FitData& data, const std::vector<double>& x,
                       const std::vector<std::vector<double>>& volts, int d, int j, double lower,
                       double upper, double start) {
  const Corpus& c = *data.corpus;
  const int nd = data.num_domains;
  const std::vector<int>& rows = data.rows_at_level[d][j];
  std::vector<double> a(rows.size()), b(rows.size()), cc(rows.size());
  for (size_t n = 0; n < rows.size(); ++n) {
    const int r = rows[n];
    double inner[2] = {x[nd], nd > 1 ? x[nd + 1] : 0.0};
    for (int i = 0; i < data.num_components; ++i) {
      inner[data.domain_of[i]] += x[2 * nd + i] * c.util_frac(r, i);
    }
    a[n] = x[d];
    b[n] = c.freq_mhz(r, d) * inner[d];
    cc[n] = -c.power_w(r);
    for (int e = 0; e < nd; ++e) {
      if (e == d) continue;
      const double ve = volts[e][data.level_of_row[e][r]];
      cc[n] += x[e] * ve + ve * ve * c.freq_mhz(r, e) * inner[e];
    }
  }
  double v = std::clamp(start, lower, upper);
  ceres::Problem problem;
  problem.AddResidualBlock(new LevelVoltageCost(a, b, cc), nullptr, &v);
  problem.SetParameterLowerBound(&v, 0, lower);
  problem.SetParameterUpperBound(&v, 0, upper);
  ceres::Solver::Options solver_options;
  solver_options.linear_solver_type = ceres::DENSE_QR;
  solver_options.logging_type = ceres::SILENT;
  solver_options.function_tolerance = 1e-10;
  solver_options.parameter_tolerance = 1e-10;
  ceres::Solver::Summary summary;
  ceres::Solve(solver_options, &problem, &summary);
  return v;
}

// Second moments of [1, U_1..U_n, P] / sigma over the rows of each V-F pair (sigma = 1 for
// absolute residuals, the measured power for relative ones): every sum the alternating
// solver's voltage step needs is a quadratic form of them (the coefficients and the other
// domain's voltage are constant across a pair's rows), and so are the normal equations of the
// coefficients at fixed voltages (SolveCoefficientsFromMoments) and the joint problem's A_0
// (CompressedProblemCost).
std::vector<Eigen::MatrixXd> PairMoments(const FitData& data,
                                         FitResidual residual = FitResidual::kAbsolute) {
  const Corpus& c = *data.corpus;
  const int nc = data.num_components;
  std::vector<Eigen::MatrixXd> moments;
  Eigen::VectorXd z(nc + 2);
  for (const std::vector<int>& rows : data.rows_of_pair) {
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(nc + 2, nc + 2);
    for (int r : rows) {
      const double w = residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0;
      z(0) = w;
      for (int i = 0; i < nc; ++i) z(1 + i) = w * data.util_row_major[static_cast<size_t>(r) * nc + i];
      z(nc + 1) = w * c.power_w(r);
      m.selfadjointView<Eigen::Lower>().rankUpdate(z);
    }
    moments.push_back(m.selfadjointView<Eigen::Lower>());
  }
  return moments;
}

// SolveCoefficients(data, volts, residual, like_gpmtool) from the pairs' moments (PairMoments
// of that residual): a pair's design column j is s_j z_(r_j) (CoefficientScales,
// CoefficientZRows), so
//   (A^T A)_jk = sum_pairs s_j s_k M_(r_j r_k),   (A^T b)_j = sum_pairs s_j M_(r_j, P),
// M the pair's moments of [1 U P]: O(pairs x n^2) per call instead of a QR of every row.
// NNLS from the normal equations (Bro & De Jong 1997; SolveNnlsNormal), with unscaled duals
// as gpmTOOL's scipy NNLS where like_gpmtool.
std::vector<double> SolveCoefficientsFromMoments(const FitData& data,
                                                 const std::vector<Eigen::MatrixXd>& moments,
                                                 const std::vector<std::vector<double>>& volts,
                                                 bool like_gpmtool = true) {
  const int nd = data.num_domains;
  const int nc = data.num_components;
  const int nx = 2 * nd + nc;
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(nx, nx);
  Eigen::VectorXd atb = Eigen::VectorXd::Zero(nx);
  const std::vector<int> z_row = CoefficientZRows(data);
  std::vector<double> sj(nx);
  for (size_t pair = 0; pair < moments.size(); ++pair) {
    double v[2] = {0.0, 0.0}, v2f[2] = {0.0, 0.0};
    for (int d = 0; d < nd; ++d) {
      const int level = data.level_of_pair[pair][d];
      v[d] = volts[d][level];
      v2f[d] = v[d] * v[d] * data.levels[d][level];
    }
    CoefficientScales(data, v, v2f, sj.data());
    const Eigen::MatrixXd& m = moments[pair];
    for (int j = 0; j < nx; ++j) {
      atb(j) += sj[j] * m(z_row[j], nc + 1);
      for (int k = j; k < nx; ++k) gram(k, j) += sj[j] * sj[k] * m(z_row[k], z_row[j]);
    }
  }
  gram.triangularView<Eigen::StrictlyUpper>() = gram.transpose();
  NnlsOptions nnls;
  nnls.scale_columns = !like_gpmtool;  // as SolveCoefficients
  const Eigen::VectorXd x = SolveNnlsNormal(gram, atb, nnls);
  return {x.data(), x.data() + x.size()};
}

// TPDS Fig. 5, Problem 1 in closed form: the level's cost sum_n (a V + b_n V^2 + c_n)^2 is the
// quartic g(V) = S_bb V^4 + 2 a S_b V^3 + (a^2 N + 2 S_bc) V^2 + 2 a S_c V + const, whose sums
// come from the pairs' moments. Returns the local minimum that a descent from `start` reaches
// inside [lower, upper] (the point the bounded iterative fit converges to): the first zero of
// g' downhill from the start, or the bound.
double MinimizeLevelVoltage(const FitData& data, const std::vector<Eigen::MatrixXd>& moments,
                            const std::vector<double>& x,
                            const std::vector<std::vector<double>>& volts, int d, int j,
                            double lower, double upper, double start) {
  const int nd = data.num_domains;
  const int nc = data.num_components;
  const double f_d = data.levels[d][j];
  const double a = x[d];
  Eigen::VectorXd w = Eigen::VectorXd::Zero(nc + 2);
  w(0) = x[nd + d];
  for (int i = 0; i < nc; ++i) {
    if (data.domain_of[i] == d) w(1 + i) = x[2 * nd + i];
  }
  double s_bb = 0.0, s_b = 0.0, s_bc = 0.0, s_c = 0.0, n = 0.0;
  Eigen::VectorXd q(nc + 2);
  for (size_t pair = 0; pair < moments.size(); ++pair) {
    if (data.level_of_pair[pair][d] != j) continue;
    // c_n = q . z_n: the other domains' power at this pair minus the measured power.
    q.setZero();
    q(nc + 1) = -1.0;
    for (int e = 0; e < nd; ++e) {
      if (e == d) continue;
      const int level = data.level_of_pair[pair][e];
      const double ve = volts[e][level];
      const double v2f = ve * ve * data.levels[e][level];
      q(0) += x[e] * ve + v2f * x[nd + e];
      for (int i = 0; i < nc; ++i) {
        if (data.domain_of[i] == e) q(1 + i) = v2f * x[2 * nd + i];
      }
    }
    const Eigen::MatrixXd& m = moments[pair];
    const Eigen::VectorXd mw = m * w;
    s_bb += f_d * f_d * w.dot(mw);
    s_b += f_d * mw(0);
    s_bc += f_d * mw.dot(q);
    s_c += m.row(0).dot(q);
    n += m(0, 0);
  }
  const double c3 = 4.0 * s_bb, c2 = 6.0 * a * s_b, c1 = 2.0 * (a * a * n + 2.0 * s_bc),
               c0 = 2.0 * a * s_c;
  auto slope = [&](double v) { return ((c3 * v + c2) * v + c1) * v + c0; };
  double v0 = std::clamp(start, lower, upper);
  const double g0 = slope(v0);
  if (g0 == 0.0) return v0;
  const bool right = g0 < 0.0;
  const double end = right ? upper : lower;
  // g' is monotone between the zeros of g'' = 3 c3 v^2 + 2 c2 v + c1: split the way there.
  std::vector<double> cuts;
  const double qa = 3.0 * c3, qb = 2.0 * c2, qc = c1;
  if (qa != 0.0) {
    const double disc = qb * qb - 4.0 * qa * qc;
    if (disc >= 0.0) {
      const double root = std::sqrt(disc);
      const double t = -0.5 * (qb + (qb >= 0.0 ? root : -root));
      if (t != 0.0) cuts.push_back(t / qa);
      if (t != 0.0) cuts.push_back(qc / t);
    }
  } else if (qb != 0.0) {
    cuts.push_back(-qc / qb);
  }
  std::vector<double> stops;
  for (double t : cuts) {
    if (right ? (t > v0 && t < end) : (t < v0 && t > end)) stops.push_back(t);
  }
  std::sort(stops.begin(), stops.end());
  if (!right) std::reverse(stops.begin(), stops.end());
  stops.push_back(end);
  double from = v0;
  for (double to : stops) {
    const double g_to = slope(to);
    if (right ? g_to >= 0.0 : g_to <= 0.0) {
      // One zero of g' in (from, to]: bisection to the last representable step.
      double lo = from, hi = to;  // slope(lo) downhill, slope(hi) not
      for (int it = 0; it < 200; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (mid == lo || mid == hi) break;
        const double g = slope(mid);
        if (right ? g < 0.0 : g > 0.0) lo = mid; else hi = mid;
      }
      return slope(hi) == 0.0 ? hi : 0.5 * (lo + hi);
    }
    from = to;
  }
  return end;
}

SolveResult SolveAlternating(const FitData& data, const CalibrationOptions& options) {
  const int nd = data.num_domains;
  const int nc = 2 * nd + data.num_components;
  // gpmTOOL starts from all coefficients = 1 and all voltages = 1.
  std::vector<double> x(nc, 1.0);
  std::vector<std::vector<double>> volts(nd);
  for (int d = 0; d < nd; ++d) volts[d].assign(data.levels[d].size(), 1.0);

  int below_count = 0;
  int iteration = 0;
  bool converged = false;
  double last_change_pct = 0.0;
  const std::vector<Eigen::MatrixXd> moments =
      options.reference_solver ? std::vector<Eigen::MatrixXd>() : PairMoments(data);
  Progress progress("alternating fit", options.show_progress ? options.max_alternating_iterations : 0);
  for (; iteration < options.max_alternating_iterations; ++iteration) {
    // Phase 1: voltage of each level, domain by domain, bounded by its neighbours.
    for (int d = 0; d < nd; ++d) {
      const int m = static_cast<int>(data.levels[d].size());
      for (int j = 0; j < m; ++j) {
        if (j == data.default_level[d]) {
          volts[d][j] = 1.0;
          continue;
        }
        const double lower = j == 0 ? options.voltage_min : volts[d][j - 1];
        const double upper = j == m - 1 ? options.voltage_max : volts[d][j + 1];
        if (lower >= upper) {
          volts[d][j] = upper;
          continue;
        }
        volts[d][j] = options.reference_solver
                          ? FitLevelVoltage(data, x, volts, d, j, lower, upper, volts[d][j])
                          : MinimizeLevelVoltage(data, moments, x, volts, d, j, lower, upper,
                                                 volts[d][j]);
      }
    }
    // Phase 2: coefficients by NNLS with the voltages fixed.
    const std::vector<double> old = x;
    x = options.reference_solver
            ? SolveCoefficients(data, volts, FitResidual::kAbsolute, /*like_gpmtool=*/true)
            : SolveCoefficientsFromMoments(data, moments, volts);
    double change = 0.0;
    for (int j = 0; j < nc; ++j) {
      if (old[j] != 0.0) change = std::max(change, std::abs((old[j] - x[j]) / old[j]));
    }
    last_change_pct = 100.0 * change;
    progress.Tick();
    below_count = last_change_pct < options.alternating_tolerance_pct ? below_count + 1 : 0;
    if (below_count == options.alternating_patience) {
      converged = true;
      ++iteration;
      break;
    }
  }
  progress.Finish();
  SolveResult result;
  result.coefficients = x;
  result.voltages = volts;
  result.report.solver = "alternating";
  result.report.converged = converged;
  result.report.iterations = iteration;
  result.report.termination =
      converged ? fmt::format("coefficients changed < {}% in {} consecutive iterations",
                              options.alternating_tolerance_pct, options.alternating_patience)
                : fmt::format("maximum of {} iterations reached; last change {:.4f}%",
                              options.max_alternating_iterations, last_change_pct);
  return result;
}

// Cost of a solution in the joint problem's terms (for comparing optima).
double Cost(const FitData& data, const CalibrationOptions& options, const PowerModel& model) {
  const Corpus& c = *data.corpus;
  std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
  double cost = 0.0;
  for (int r = 0; r < c.rows(); ++r) {
    const Eigen::VectorXd u = c.util_frac.row(r).transpose();
    const Eigen::VectorXd f = c.freq_mhz.row(r).transpose();
    double e = model.Predict(u.data(), f.data()) - c.power_w(r);
    if (options.residual == FitResidual::kRelative) e /= c.power_w(r);
    double rho[3] = {e * e, 1.0, 0.0};
    if (loss) loss->Evaluate(e * e, rho);
    cost += 0.5 * rho[0];
  }
  return cost;
}

void FillTrainingStats(const Corpus& c, PowerModel* model) {
  double sq = 0.0, ape_sum = 0.0, ape_max = 0.0, mean = c.power_w.mean(), ss_tot = 0.0;
  for (int r = 0; r < c.rows(); ++r) {
    const Eigen::VectorXd u = c.util_frac.row(r).transpose();
    const Eigen::VectorXd f = c.freq_mhz.row(r).transpose();
    const double e = model->Predict(u.data(), f.data()) - c.power_w(r);
    sq += e * e;
    const double ape = 100.0 * std::abs(e) / c.power_w(r);
    ape_sum += ape;
    ape_max = std::max(ape_max, ape);
    ss_tot += (c.power_w(r) - mean) * (c.power_w(r) - mean);
  }
  model->fit.train_rows = c.rows();
  model->fit.train_benchmarks = static_cast<int>(c.Benchmarks().size());
  model->fit.train_rmse_w = std::sqrt(sq / c.rows());
  model->fit.train_mape_pct = ape_sum / c.rows();
  model->fit.train_max_ape_pct = ape_max;
  model->fit.train_r2 = ss_tot > 0.0 ? 1.0 - sq / ss_tot : 0.0;
}

PowerModel MakeModel(const FitData& data, const Corpus& train, FitMethod method,
                     const std::vector<double>& x,
                     const std::vector<std::vector<double>>& volts) {
  PowerModel model;
  model.method = FitMethodName(method);
  model.layout = train.layout;
  model.freq_levels_mhz = data.levels;
  model.voltage_rel = volts;
  model.SetCoefficients(x);
  model.trained_on = train.path;
  return model;
}

PowerModel CalibrateFixed(const Corpus& train, const CalibrationOptions& options) {
  const Clock::time_point start = Clock::now();
  PrepareFitData(train);  // checks power, frequencies and the default pair
  const Corpus at_default = train.Subset(train.RowsAtDefault());
  const FitData data = PrepareFitData(at_default);
  const int nd = data.num_domains;
  // TPDS Eq. 9: P = beta0 + sum_i omega_i U_i at one V-F pair, by NNLS (beta0 stored as
  // alpha0_core, omega_i as gamma_i * f_k, so TPDS Eq. 4 evaluates to the same power).
  const int n = data.num_components + 1;
  Eigen::MatrixXd a(at_default.rows(), n);
  Eigen::VectorXd b(at_default.rows());
  for (int r = 0; r < at_default.rows(); ++r) {
    const double w =
        options.residual == FitResidual::kRelative ? 1.0 / at_default.power_w(r) : 1.0;
    a(r, 0) = w;
    for (int i = 0; i < data.num_components; ++i) a(r, i + 1) = at_default.util_frac(r, i) * w;
    b(r) = at_default.power_w(r) * w;
  }
  Eigen::VectorXd beta = SolveNnls(a, b);
  // Robust losses: refine the NNLS start with Ceres (the model is linear; bounds >= 0).
  if (options.loss != FitLoss::kL2) {
    ceres::Problem::Options problem_options;
    problem_options.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
    ceres::Problem problem(problem_options);
    std::unique_ptr<ceres::LossFunction> loss = MakeLoss(options);
    for (int r = 0; r < at_default.rows(); ++r) {
      problem.AddResidualBlock(new LinearRowCost(a.row(r).transpose(), b(r)), loss.get(),
                               beta.data());
    }
    for (int j = 0; j < n; ++j) problem.SetParameterLowerBound(beta.data(), j, 0.0);
    ceres::Solver::Options solver_options;
    solver_options.linear_solver_type = ceres::DENSE_QR;
    solver_options.logging_type = ceres::SILENT;
    solver_options.max_num_iterations = options.max_solver_iterations;
    ceres::Solver::Summary summary;
    ceres::Solve(solver_options, &problem, &summary);
    if (!summary.IsSolutionUsable()) throw FitError("fixed-frequency fit failed: " + summary.message);
  }
  std::vector<double> x(2 * nd + data.num_components, 0.0);
  x[0] = beta(0);
  for (int i = 0; i < data.num_components; ++i) {
    x[2 * nd + i] = beta(i + 1) / train.layout.domains[data.domain_of[i]].default_freq_mhz;
  }
  std::vector<std::vector<double>> volts(nd, std::vector<double>(1, 1.0));
  PowerModel model = MakeModel(data, at_default, FitMethod::kFixed, x, volts);
  model.trained_on = train.path;
  model.fit.solver = "nnls";
  model.fit.converged = true;
  model.fit.iterations = 1;
  model.fit.termination = "non-negative least squares (Lawson-Hanson)";
  model.fit.loss = FitLossName(options.loss);
  model.fit.residual = FitResidualName(options.residual);
  FillTrainingStats(at_default, &model);
  model.fit.time_s = std::chrono::duration<double>(Clock::now() - start).count();
  return model;
}

PowerModel CalibrateDvfs(const Corpus& train, const CalibrationOptions& options) {

  const Clock::time_point start = Clock::now();
  const FitData data = PrepareFitData(train);
  SolveResult result;
  if (options.solver == FitSolver::kAlternating) {
    result = SolveAlternating(data, options);
  } else {
    // Start: every voltage 1, coefficients by NNLS at those voltages.
    std::vector<std::vector<double>> ones(data.num_domains);
    for (int d = 0; d < data.num_domains; ++d) ones[d].assign(data.levels[d].size(), 1.0);
    const std::vector<Eigen::MatrixXd> moments =
        options.reference_solver ? std::vector<Eigen::MatrixXd>() : PairMoments(data, options.residual);
    // The two starts are independent. With two threads or more they run side by side: the
    // cold start on one, gpmTOOL's alternating solution and the start from it on the other.
    // Each is deterministic, so the model does not depend on the thread count; only the cold
    // start draws a progress line then.
    const bool side_by_side = options.joint_start_from_alternating && options.num_threads >= 2;
    SolveResult second;
    auto cold_start = [&]() {
      const std::vector<double> cold =
          options.reference_solver
              ? SolveCoefficients(data, ones, options.residual)
              : SolveCoefficientsFromMoments(data, moments, ones, /*like_gpmtool=*/false);
      result = SolveJoint(data, options, cold, ones, moments);
    };
    auto alternating_start = [&]() {
      CalibrationOptions alt_options = options;
      alt_options.loss = FitLoss::kL2;
      alt_options.residual = FitResidual::kAbsolute;
      CalibrationOptions second_options = options;
      if (side_by_side) alt_options.show_progress = second_options.show_progress = false;
      const SolveResult alt = SolveAlternating(data, alt_options);
      second = SolveJoint(data, second_options, alt.coefficients, alt.voltages, moments);
    };
    if (side_by_side) {
      std::exception_ptr failure[2];
#pragma omp parallel sections num_threads(2)
      {
#pragma omp section
        {
          try {
            cold_start();
          } catch (...) {
            failure[0] = std::current_exception();
          }
        }
#pragma omp section
        {
          try {
            alternating_start();
          } catch (...) {
            failure[1] = std::current_exception();
          }
        }
      }
      for (const std::exception_ptr& f : failure) {
        if (f) std::rethrow_exception(f);
      }
    } else {
      cold_start();
      if (options.joint_start_from_alternating) alternating_start();
    }
    if (options.joint_start_from_alternating) {
      const bool keep_second = second.report.final_cost < result.report.final_cost;
      const std::string note = fmt::format(
          " [two starts: cold start cost {:.6g}, from the alternating solution {:.6g}; kept the {}]",
          result.report.final_cost, second.report.final_cost,
          keep_second ? "start from the alternating solution" : "cold start");
      if (keep_second) result = second;
      result.report.termination += note;
    }
  }
  PowerModel model = MakeModel(data, train, FitMethod::kDvfs, result.coefficients, result.voltages);
  model.fit = result.report;
  model.fit.loss = options.solver == FitSolver::kAlternating ? "l2" : FitLossName(options.loss);
  model.fit.loss_scale = options.loss == FitLoss::kL2 ? 0.0 : options.EffectiveLossScale();
  model.fit.residual = FitResidualName(options.residual);
  if (options.solver == FitSolver::kAlternating) {
    model.fit.initial_cost = 0.0;
    model.fit.final_cost = Cost(data, options, model);
  }
  FillTrainingStats(train, &model);
  model.fit.time_s = std::chrono::duration<double>(Clock::now() - start).count();
  return model;
}

// Largest utilisation per component and largest power over `rows`.
TrainingRange RangeOf(const Corpus& rows) {
  TrainingRange range;
  range.max_util_frac.assign(rows.layout.num_components(), 0.0);
  for (int r = 0; r < rows.rows(); ++r) {
    for (int i = 0; i < rows.layout.num_components(); ++i) {
      range.max_util_frac[i] = std::max(range.max_util_frac[i], rows.util_frac(r, i));
    }
  }
  if (rows.has_power() && rows.rows() > 0) range.max_power_w = rows.power_w.maxCoeff();
  return range;
}

std::string FreqPairText(const Layout& layout, const std::vector<double>& pair) {
  std::string s;
  for (size_t d = 0; d < pair.size(); ++d) {
    s += fmt::format("{}{} MHz {}", d > 0 ? ", " : "", pair[d],
                     layout.domains[d].name == "mem" ? "memory" : layout.domains[d].name);
  }
  return s;
}

}  // namespace

TrainingSelection SelectTrainingRows(const Corpus& corpus, bool keep_flagged) {
  // How many names the message lists per flag.
  constexpr size_t kMaxListed = 10;
  TrainingSelection out;
  std::vector<int> kept;
  for (int r = 0; r < corpus.rows(); ++r) {
    const bool left_out = IsThrottledRow(corpus, r) || HasFlag(corpus, r, kCorpusFlagSampleGap) ||
                          HasFlag(corpus, r, kCorpusFlagDataToggle);
    (!keep_flagged && left_out ? out.left_out : kept).push_back(r);
  }
  if (out.left_out.empty()) {
    out.rows = corpus;
    return out;
  }
  if (kept.empty()) {
    throw InputError(corpus.path, 0, "flags",
                     fmt::format("every one of the {} rows is flagged {}, {}, {} or {} (measured while the "
                                 "power cap acted, the clock moved or the power log had a gap, or data toggling "
                                 "unlike the rest): nothing to train on; pass --keep-flagged to train on them anyway",
                                 corpus.rows(), kCorpusFlagPowerCap, kCorpusFlagClockMoved, kCorpusFlagSampleGap,
                                 kCorpusFlagDataToggle));
  }
  out.rows = corpus.Subset(kept);
  // Each row is listed under the first of its flags in this order.
  const char* const kOrder[] = {kCorpusFlagPowerCap, kCorpusFlagClockMoved, kCorpusFlagSampleGap,
                                kCorpusFlagDataToggle};
  auto first_flag = [&](int r) -> std::string {
    for (const char* f : kOrder) {
      if (HasFlag(corpus, r, f)) return f;
    }
    return kCorpusFlagSampleGap;  // not reached: a left-out row has one of them
  };
  std::string groups;
  for (const char* flag : kOrder) {
    std::vector<std::string> names;
    for (int r : out.left_out) {
      if (first_flag(r) != flag) continue;
      if (std::find(names.begin(), names.end(), corpus.benchmark[r]) == names.end()) {
        names.push_back(corpus.benchmark[r]);
      }
    }
    if (names.empty()) continue;
    std::string list;
    for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) list += (i > 0 ? ", " : "") + names[i];
    if (names.size() > kMaxListed) list += fmt::format(", and {} more", names.size() - kMaxListed);
    groups += fmt::format("{}{}: {}", groups.empty() ? "" : "; ", flag, list);
  }
  out.message = fmt::format("left out {} flagged row{} ({}); --keep-flagged trains on them",
                            out.left_out.size(), out.left_out.size() == 1 ? "" : "s", groups);
  return out;
}

std::vector<std::vector<double>> VfPairs(const Corpus& corpus) {
  const int nd = static_cast<int>(corpus.freq_mhz.cols());
  std::vector<double> keys(static_cast<size_t>(corpus.rows()) * nd);
  for (int r = 0; r < corpus.rows(); ++r) {
    for (int d = 0; d < nd; ++d) keys[static_cast<size_t>(r) * nd + d] = corpus.freq_mhz(r, d);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, nd);
  std::vector<std::vector<double>> pairs;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && RowEquivalent(keys, nd, order[k - 1], order[k])) continue;
    const double* row = keys.data() + static_cast<size_t>(order[k]) * nd;
    pairs.emplace_back(row, row + nd);
  }
  return pairs;
}

std::string AutoFitMethod(const Corpus& corpus, bool keep_flagged, std::string* why) {
  const TrainingSelection selection = SelectTrainingRows(corpus, keep_flagged);
  const std::vector<std::vector<double>> pairs =
      selection.rows.has_freq() ? VfPairs(selection.rows) : std::vector<std::vector<double>>();
  if (pairs.size() <= 1) {
    *why = pairs.empty() ? fmt::format("--method auto: fixed (the {} training rows carry no clocks)",
                                       selection.rows.rows())
                         : fmt::format("--method auto: fixed (TPDS Eq. 9): one V-F pair ({}) among the {} "
                                       "training rows",
                                       FreqPairText(corpus.layout, pairs[0]), selection.rows.rows());
    return "fixed";
  }
  *why = fmt::format("--method auto: dvfs (TPDS Eqs. 4-6): {} V-F pairs among the {} training rows",
                     pairs.size(), selection.rows.rows());
  return "dvfs";
}

void CheckTwoVfPairs(const Corpus& corpus, const std::string& what, const std::string& fix) {
  if (!corpus.has_freq()) return;  // PrepareFitData names the missing frequencies
  const std::vector<std::vector<double>> pairs = VfPairs(corpus);
  if (pairs.size() != 1) return;
  throw OptionError(fmt::format("{} needs at least two V-F pairs; this corpus has one ({}): {}",
                                what, FreqPairText(corpus.layout, pairs[0]), fix));
}

namespace {
// Rank of `m` (column-pivoting QR with a relative threshold).
int RankOf(const Eigen::MatrixXd& m) {
  if (m.rows() == 0 || m.cols() == 0) return 0;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-9);
  return static_cast<int>(qr.rank());
}
}  // namespace

IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method) {
  IdentifiabilityReport report;
  const int k = train.layout.num_components();
  const std::vector<std::string> names = train.layout.ComponentNames();
  const Corpus rows = method == FitMethod::kFixed && train.has_freq()
                          ? train.Subset(train.RowsAtDefault())
                          : train;
  const std::string source = train.path.empty() ? std::string("the training corpus") : train.path;
  const std::string where = method == FitMethod::kFixed ? " at the default V-F pair" : "";
  if (rows.rows() == 0 || k == 0) return report;  // PrepareFitData names these
  constexpr double kTol = 1e-12;
  // 1. Components that never vary: all zero (fixed at 0, a warning) or constant non-zero (their
  //    power cannot be told from static power; fixed at 0, a warning).
  std::vector<int> active;
  for (int i = 0; i < k; ++i) {
    const Eigen::VectorXd col = rows.util_frac.col(i);
    const double lo = col.minCoeff(), hi = col.maxCoeff();
    if (hi - lo > kTol) {
      active.push_back(i);
      continue;
    }
    report.fixed_at_zero.push_back(i);
    report.notes.push_back(
        std::abs(hi) <= kTol
            ? fmt::format("{}: component {} never varies (always 0) in {} rows{}: its coefficient "
                          "is fixed at 0 and it cannot be predicted",
                          source, names[i], rows.rows(), where)
            : fmt::format("{}: component {} is constant {:.6g} across the {} rows{}: "
                          "indistinguishable from static power; its coefficient is fixed at 0",
                          source, names[i], lo, rows.rows(), where));
  }
  // 2. Fewer independent rows (distinct utilisation vectors) than parameters: underdetermined.
  // Rows as (U, f): sorted so, rows with equal U are adjacent too.
  const int nf = rows.has_freq() ? static_cast<int>(rows.freq_mhz.cols()) : 0;
  const int width = k + nf;
  std::vector<double> keys(static_cast<size_t>(rows.rows()) * width);
  for (int r = 0; r < rows.rows(); ++r) {
    double* key = keys.data() + static_cast<size_t>(r) * width;
    for (int i = 0; i < k; ++i) key[i] = rows.util_frac(r, i);
    for (int d = 0; d < nf; ++d) key[k + d] = rows.freq_mhz(r, d);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, width);
  const size_t distinct_rows = CountDistinctRows(keys, width, order);
  std::vector<int> distinct_u_rows;  // the first row of every distinct U, in sorted order
  for (size_t j = 0; j < order.size(); ++j) {
    const double* a = keys.data() + static_cast<size_t>(order[j]) * width;
    const double* b = j > 0 ? keys.data() + static_cast<size_t>(order[j - 1]) * width : nullptr;
    if (b == nullptr || std::lexicographical_compare(b, b + k, a, a + k)) {
      distinct_u_rows.push_back(order[j]);
    }
  }
  const size_t distinct_u = distinct_u_rows.size();
  const int nonzero_components = k - static_cast<int>(report.fixed_at_zero.size()) +
                                 static_cast<int>(std::count_if(
                                     report.fixed_at_zero.begin(), report.fixed_at_zero.end(),
                                     [&](int i) { return std::abs(rows.util_frac(0, i)) > kTol; }));
  const int parameters = 1 + nonzero_components;
  if (static_cast<int>(distinct_u) < parameters) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: {} independent rows (distinct utilisation "
                                 "vectors{}) for {} parameters (static power and {} components "
                                 "with non-zero utilisation); add benchmarks that exercise the "
                                 "components differently",
                                 distinct_u, where, parameters, nonzero_components));
  }
  if (active.empty()) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: no component's utilisation varies across "
                                 "the {} rows{} (every column is constant): only static power "
                                 "could be fitted",
                                 rows.rows(), where));
  }
  // 3. Identical columns: the later component is fixed at 0 (a warning naming both).
  std::vector<int> kept;
  for (int i : active) {
    bool duplicate = false;
    for (int j : kept) {
      if ((rows.util_frac.col(i) - rows.util_frac.col(j)).cwiseAbs().maxCoeff() <= kTol) {
        report.fixed_at_zero.push_back(i);
        report.notes.push_back(fmt::format(
            "{}: component {}'s utilisation column is identical to {}'s column in every row{}: "
            "the fit cannot tell them apart; {}'s coefficient is fixed at 0 (its power goes to {})",
            source, names[i], names[j], where, names[i], names[j]));
        duplicate = true;
        break;
      }
    }
    if (!duplicate) kept.push_back(i);
  }
  // 4. Any other exact dependency among the components left is rank deficiency: an error.
  // On the distinct utilisation vectors: repeated rows add no rank (102 rows instead of 6528
  // on the Titan X).
  Eigen::MatrixXd kept_design(static_cast<Eigen::Index>(distinct_u_rows.size()),
                              1 + static_cast<int>(kept.size()));
  kept_design.col(0).setOnes();
  for (size_t r = 0; r < distinct_u_rows.size(); ++r) {
    for (size_t j = 0; j < kept.size(); ++j) {
      kept_design(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j + 1)) =
          rows.util_frac(distinct_u_rows[r], kept[j]);
    }
  }
  const int kept_rank = RankOf(kept_design);
  if (kept_rank < kept_design.cols()) {
    std::string list;
    for (int i : kept) list += (list.empty() ? "" : ", ") + names[i];
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: the utilisations{} have rank {} for {} "
                                 "parameters (static power and {}): some components are a linear "
                                 "combination of others",
                                 where, kept_rank, kept_design.cols(), list));
  }
  // 5. DVFS: every frequency level adds a voltage; distinct rows must cover the parameters.
  if (method == FitMethod::kDvfs && rows.has_freq()) {
    int free_voltages = 0;
    for (int d = 0; d < rows.freq_mhz.cols(); ++d) {
      std::set<double> levels;
      for (int r = 0; r < rows.rows(); ++r) levels.insert(rows.freq_mhz(r, d));
      free_voltages += static_cast<int>(levels.size()) - 1;
    }
    const int dvfs_parameters = 2 * rows.layout.num_domains() + static_cast<int>(kept.size()) +
                                free_voltages;
    if (static_cast<int>(distinct_rows) < dvfs_parameters) {
      throw InputError(source, 0, "",
                       fmt::format("underdetermined fit: {} independent rows (distinct frequency "
                                   "and utilisation rows) for {} parameters ({} coefficients and "
                                   "{} voltages)",
                                   distinct_rows, dvfs_parameters,
                                   dvfs_parameters - free_voltages, free_voltages));
    }
  }
  std::sort(report.fixed_at_zero.begin(), report.fixed_at_zero.end());
  return report;
}

uint64_t BootstrapReplicateSeed(uint64_t seed, int b) {
  // splitmix64 of (seed, b): neighbouring replicates get unrelated generator states.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(b) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t UniformIndex(std::mt19937_64& gen, uint64_t n) {
  if (n <= 1) return 0;
  // Largest multiple of n that fits: draws at or above it are rejected (no modulo bias).
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  for (;;) {
    const uint64_t x = gen();
    if (x < limit) return x % n;
  }
}

double BootstrapPercentile(std::vector<double> values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double h = (static_cast<double>(values.size()) - 1.0) * std::clamp(p, 0.0, 1.0);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

CoefficientCi BootstrapFixedCoefficients(const Corpus& train, const CalibrationOptions& options) {
  CoefficientCi ci;
  const int replicates = options.bootstrap_replicates;
  if (replicates <= 0) return ci;
  // The fixed model trains on the default pair's rows: resample the benchmarks found there.
  const Corpus at_default = train.Subset(train.RowsAtDefault());
  const std::vector<std::string> names = at_default.Benchmarks();
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < names.size(); ++i) index_of[names[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> rows_of(names.size());
  for (int r = 0; r < at_default.rows(); ++r) rows_of[index_of[at_default.benchmark[r]]].push_back(r);
  const int nb = static_cast<int>(names.size());
  const int nd = at_default.layout.num_domains();
  const int nc = 2 * nd + at_default.layout.num_components();
  std::vector<std::vector<double>> coefficients(replicates);
  std::vector<std::string> failures(replicates);
  CalibrationOptions refit = options;
  refit.bootstrap_replicates = 0;
  refit.show_progress = false;
#pragma omp parallel for schedule(dynamic) num_threads(options.num_threads)
  for (int b = 0; b < replicates; ++b) {
    try {
      std::mt19937_64 gen(BootstrapReplicateSeed(options.bootstrap_seed, b));
      std::vector<int> rows;
      for (int k = 0; k < nb; ++k) {
        const std::vector<int>& drawn = rows_of[UniformIndex(gen, static_cast<uint64_t>(nb))];
        rows.insert(rows.end(), drawn.begin(), drawn.end());
      }
      coefficients[b] = CalibrateFixed(at_default.Subset(rows), refit).Coefficients();
    } catch (const std::exception& e) {
      failures[b] = e.what();
    }
  }
  for (int b = 0; b < replicates; ++b) {
    if (!failures[b].empty()) {
      throw FitError(fmt::format("bootstrap replicate {} of {} (seed {}) failed: {}", b + 1,
                                 replicates, options.bootstrap_seed, failures[b]));
    }
  }
  ci.bootstrap_replicates = replicates;
  ci.seed = options.bootstrap_seed;
  for (int j = 0; j < nc; ++j) {
    std::vector<double> values(replicates);
    for (int b = 0; b < replicates; ++b) values[b] = coefficients[b][j];
    const std::pair<double, double> interval = {BootstrapPercentile(values, 0.025),
                                                BootstrapPercentile(values, 0.975)};
    if (j < nd) {
      ci.static_w.push_back(interval);
    } else if (j < 2 * nd) {
      ci.idle_dyn_w_per_mhz.push_back(interval);
    } else {
      ci.component_w_per_mhz.push_back(interval);
    }
  }
  return ci;
}

PowerModel Calibrate(const Corpus& corpus, const CalibrationOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const TrainingSelection selection = SelectTrainingRows(corpus, options.keep_flagged);
  const IdentifiabilityReport identifiability =
      selection.rows.has_power() ? CheckIdentifiability(selection.rows, options.method)
                                 : IdentifiabilityReport();
  for (const std::string& note : identifiability.notes) LogWarning(note);
  const std::vector<std::string> duplicates = FindDuplicateRows(corpus);
  for (const std::string& note : duplicates) LogWarning(note);
  // Components that cannot be identified are fitted as zero columns (coefficient 0).
  Corpus masked = selection.rows;
  for (int i : identifiability.fixed_at_zero) masked.util_frac.col(i).setZero();
  const Corpus& train = identifiability.fixed_at_zero.empty() ? selection.rows : masked;
  PowerModel model;
  if (options.method == FitMethod::kFixed) {
    model = CalibrateFixed(train, options);
    // The fixed model (TPDS Eq. 9) is trained on the rows at the default pair only.
    model.training_range = RangeOf(train.Subset(train.RowsAtDefault()));
    model.coefficient_ci95 = BootstrapFixedCoefficients(train, options);
  } else {
    // TPDS Eqs. 4-6 estimate one voltage per frequency level: with a single V-F pair the
    // voltages are all 1 and static power cannot be told from dynamic power.
    CheckTwoVfPairs(train);
    model = CalibrateDvfs(train, options);
    model.training_range = RangeOf(train);
  }
  model.trained_on = corpus.path;
  model.power_limit_w = options.power_limit_w > 0.0 ? options.power_limit_w : corpus.power_limit_w;
  if (!selection.message.empty()) model.training_notes.push_back(selection.message);
  if (!identifiability.fixed_at_zero.empty()) {
    std::vector<double> x = model.Coefficients();
    const int nd = model.layout.num_domains();
    for (int i : identifiability.fixed_at_zero) x[2 * nd + i] = 0.0;
    model.SetCoefficients(x);
  }
  model.training_notes.insert(model.training_notes.end(), identifiability.notes.begin(),
                              identifiability.notes.end());
  model.training_notes.insert(model.training_notes.end(), duplicates.begin(), duplicates.end());
  return model;
}

}  // namespace wattcal
