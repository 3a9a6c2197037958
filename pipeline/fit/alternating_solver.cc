#include "fit/internal/solvers.h"

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

#include "fit/cost_functions.h"
#include "fit/internal/fit_data.h"
#include "fit/nnls.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {
namespace fit_internal {
namespace {

using Clock = std::chrono::steady_clock;

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
        if (right ? g < 0.0 : g > 0.0)
          lo = mid;
        else
          hi = mid;
      }
      return slope(hi) == 0.0 ? hi : 0.5 * (lo + hi);
    }
    from = to;
  }
  return end;
}

}  // namespace

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
      options.internal.reference_solver ? std::vector<Eigen::MatrixXd>() : PairMoments(data);
  Progress progress("alternating fit", options.show_progress ? options.max_iterations : 0);
  for (; iteration < options.max_iterations; ++iteration) {
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
        volts[d][j] =
            options.internal.reference_solver
                ? FitLevelVoltage(data, x, volts, d, j, lower, upper, volts[d][j])
                : MinimizeLevelVoltage(data, moments, x, volts, d, j, lower, upper, volts[d][j]);
      }
    }
    // Phase 2: coefficients by NNLS with the voltages fixed.
    const std::vector<double> old = x;
    x = options.internal.reference_solver
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
  result.report.solver = ModelSolver::kAlternating;
  result.report.converged = converged;
  result.report.iterations = iteration;
  result.report.termination =
      converged ? fmt::format("coefficients changed < {}% in {} consecutive iterations",
                              options.alternating_tolerance_pct, options.alternating_patience)
                : fmt::format("maximum of {} iterations reached; last change {:.4f}%",
                              options.max_iterations, last_change_pct);
  return result;
}

}  // namespace fit_internal
}  // namespace wattcal
