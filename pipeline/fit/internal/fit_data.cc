#include "fit/internal/fit_data.h"

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

#include "fit/nnls.h"
#include "util/errors.h"
#include "util/row_order.h"

namespace wattcal {
namespace fit_internal {

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
                                   train.layout.domains[d].name, f_default, lv.front(), lv.back()));
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
    throw InputError(
        train.path, train.defaults_line,
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
                                      FitResidual residual, bool like_gpmtool) {
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

// Second moments of [1, U_1..U_n, P] / sigma over the rows of each V-F pair (sigma = 1 for
// absolute residuals, the measured power for relative ones): every sum the alternating
// solver's voltage step needs is a quadratic form of them (the coefficients and the other
// domain's voltage are constant across a pair's rows), and so are the normal equations of the
// coefficients at fixed voltages (SolveCoefficientsFromMoments) and the joint problem's A_0
// (CompressedProblemCost).
std::vector<Eigen::MatrixXd> PairMoments(const FitData& data, FitResidual residual) {
  const Corpus& c = *data.corpus;
  const int nc = data.num_components;
  std::vector<Eigen::MatrixXd> moments;
  Eigen::VectorXd z(nc + 2);
  for (const std::vector<int>& rows : data.rows_of_pair) {
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(nc + 2, nc + 2);
    for (int r : rows) {
      const double w = residual == FitResidual::kRelative ? 1.0 / c.power_w(r) : 1.0;
      z(0) = w;
      for (int i = 0; i < nc; ++i)
        z(1 + i) = w * data.util_row_major[static_cast<size_t>(r) * nc + i];
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
                                                 bool like_gpmtool) {
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

}  // namespace fit_internal
}  // namespace wattcal
