#include "accelwattch/constant_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <Eigen/Dense>

#include "util/errors.h"
#include "util/json_check.h"
#include "util/option_rule.h"
#include "util/rng.h"
#include "util/stats.h"
#include "validate/metrics.h"

namespace wattcal {

int SweepCurve::DistinctFrequencies() const {
  std::set<double> f(f_core_mhz.begin(), f_core_mhz.end());
  return static_cast<int>(f.size());
}

std::vector<SweepCurve> GroupCurves(const Sweep& sweep) {
  std::map<std::tuple<std::string, int, int>, SweepCurve> curves;
  for (const SweepPoint& p : sweep.points) {
    SweepCurve& c = curves[{p.benchmark, p.active_sms, p.lanes_per_warp}];
    if (c.f_core_mhz.empty()) {
      c.benchmark = p.benchmark;
      c.category = p.category;
      c.active_sms = p.active_sms;
      c.lanes_per_warp = p.lanes_per_warp;
    } else if (c.category != p.category) {
      throw InputError(sweep.path, p.line, "category",
                       fmt::format("'{}' here but '{}' on line {} for the same benchmark {}",
                                   p.category, c.category, c.lines.front(), p.benchmark));
    }
    c.f_core_mhz.push_back(p.f_core_mhz);
    c.power_w.push_back(p.power_w);
    c.lines.push_back(p.line);
  }
  std::vector<SweepCurve> out;
  for (auto& [key, c] : curves) out.push_back(std::move(c));
  return out;
}

namespace {

constexpr double kMhzPerGhz = 1000.0;

// Quality of `fitted` against the curve's measurements.
void FillQuality(const SweepCurve& curve, const std::vector<double>& fitted, Eq3Fit* fit) {
  std::vector<PredictionRow> rows;
  double max_abs = 0.0;
  for (size_t i = 0; i < fitted.size(); ++i) {
    PredictionRow r;
    r.benchmark = curve.benchmark;
    r.f_core_mhz = curve.f_core_mhz[i];
    r.measured_w = curve.power_w[i];
    r.predicted_w = fitted[i];
    rows.push_back(r);
    max_abs = std::max(max_abs, std::abs(fitted[i] - curve.power_w[i]));
  }
  const ErrorMetrics m = ComputeErrorMetrics(rows);
  fit->pearson_r = m.pearson_r;
  fit->rmse_w = m.rmse_w;
  fit->mape_pct = m.mape_pct;
  fit->max_abs_error_w = max_abs;
}

// Design matrix of one curve: columns x^3, x (and a leading 1 when `with_constant`), x in GHz.
Eigen::MatrixXd Design(const SweepCurve& curve, bool with_constant) {
  const int n = static_cast<int>(curve.f_core_mhz.size());
  Eigen::MatrixXd a(n, with_constant ? 3 : 2);
  for (int i = 0; i < n; ++i) {
    const double x = curve.f_core_mhz[i] / kMhzPerGhz;
    int c = 0;
    if (with_constant) a(i, c++) = 1.0;
    a(i, c++) = x * x * x;
    a(i, c) = x;
  }
  return a;
}

Eigen::VectorXd Powers(const SweepCurve& curve) {
  return Eigen::Map<const Eigen::VectorXd>(curve.power_w.data(),
                                           static_cast<Eigen::Index>(curve.power_w.size()));
}

Eigen::VectorXd LeastSquares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  return a.colPivHouseholderQr().solve(b);
}

nlohmann::json Count(int v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

Eq3Fit FitEq3FixedConstant(const SweepCurve& curve, double p_const_w) {
  const Eigen::MatrixXd a = Design(curve, false);
  const Eigen::VectorXd y = Powers(curve).array() - p_const_w;
  const Eigen::VectorXd c = LeastSquares(a, y);
  Eq3Fit fit;
  fit.p_const_w = p_const_w;
  fit.beta_w_per_mhz3 = c(0) / (kMhzPerGhz * kMhzPerGhz * kMhzPerGhz);
  fit.tau_w_per_mhz = c(1) / kMhzPerGhz;
  const Eigen::VectorXd fitted = (a * c).array() + p_const_w;
  FillQuality(curve, std::vector<double>(fitted.data(), fitted.data() + fitted.size()), &fit);
  return fit;
}

Eq3Fit FitEq3FreeConstant(const SweepCurve& curve) {
  const Eigen::MatrixXd a = Design(curve, true);
  const Eigen::VectorXd c = LeastSquares(a, Powers(curve));
  Eq3Fit fit;
  fit.p_const_w = c(0);
  fit.beta_w_per_mhz3 = c(1) / (kMhzPerGhz * kMhzPerGhz * kMhzPerGhz);
  fit.tau_w_per_mhz = c(2) / kMhzPerGhz;
  const Eigen::VectorXd fitted = a * c;
  FillQuality(curve, std::vector<double>(fitted.data(), fitted.data() + fitted.size()), &fit);
  return fit;
}

LinearFit FitLinear(const SweepCurve& curve) {
  const int n = static_cast<int>(curve.f_core_mhz.size());
  Eigen::MatrixXd a(n, 2);
  for (int i = 0; i < n; ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = curve.f_core_mhz[i] / kMhzPerGhz;
  }
  const Eigen::VectorXd c = LeastSquares(a, Powers(curve));
  LinearFit fit;
  fit.intercept_w = c(0);
  fit.slope_w_per_mhz = c(1) / kMhzPerGhz;
  const Eigen::VectorXd fitted = a * c;
  Eq3Fit quality;
  FillQuality(curve, std::vector<double>(fitted.data(), fitted.data() + fitted.size()), &quality);
  fit.pearson_r = quality.pearson_r;
  fit.rmse_w = quality.rmse_w;
  return fit;
}

const char* ConstantCiMethodName(ConstantCiMethod method) {
  return method == ConstantCiMethod::kBootstrap ? "bootstrap" : "covariance";
}

bool ParseConstantCiMethod(const std::string& name, ConstantCiMethod* method) {
  if (name == "covariance") {
    *method = ConstantCiMethod::kCovariance;
  } else if (name == "bootstrap") {
    *method = ConstantCiMethod::kBootstrap;
  } else {
    return false;
  }
  return true;
}

bool ConstantPowerOptions::Check(std::string* error) const {
  if (!(confidence_level > 0.0 && confidence_level < 1.0))
    return RejectOption(error, "confidence_level = {} must be in (0, 1)", confidence_level);
  if (ci_method == ConstantCiMethod::kBootstrap && bootstrap_samples < 100)
    return RejectOption(error, "bootstrap_samples = {} must be >= 100", bootstrap_samples);
  if (min_frequencies < 3)
    return RejectOption(error, "min_frequencies = {} must be >= 3 (Eq. 3 has three coefficients)",
                        min_frequencies);
  return true;
}

namespace {

// The sweep's curves to fit: those of the chosen benchmarks (all when none is) with enough
// distinct clocks; the others go to `excluded`. A chosen benchmark the sweep lacks, or no curve
// left, is refused.
std::vector<SweepCurve> CurvesToFit(const Sweep& sweep, const ConstantPowerOptions& options,
                                    std::vector<ExcludedCurve>* excluded) {
  const std::set<std::string> wanted(options.benchmarks.begin(), options.benchmarks.end());
  std::vector<SweepCurve> used;
  for (SweepCurve& c : GroupCurves(sweep)) {
    if (!wanted.empty() && !wanted.count(c.benchmark)) continue;
    const int distinct = c.DistinctFrequencies();
    if (distinct < options.min_frequencies) {
      excluded->push_back({c.benchmark, c.active_sms, c.lanes_per_warp,
                           fmt::format("{} distinct core clocks, fewer than {}", distinct,
                                       options.min_frequencies)});
      continue;
    }
    used.push_back(std::move(c));
  }
  for (const std::string& b : wanted) {
    if (std::none_of(used.begin(), used.end(),
                     [&](const SweepCurve& c) { return c.benchmark == b; }) &&
        std::none_of(excluded->begin(), excluded->end(),
                     [&](const ExcludedCurve& c) { return c.benchmark == b; })) {
      throw OptionError("benchmarks: '" + b + "' is not in the sweep " + sweep.path);
    }
  }
  if (used.empty()) {
    throw InputError(sweep.path, 0, "f_core_mhz",
                     fmt::format("no curve (benchmark, active SMs, lanes) has {} or more distinct "
                                 "core clocks: Eq. 3 cannot be fitted",
                                 options.min_frequencies));
  }
  return used;
}

// Each curve with [x^3, x] partialled out (Frisch-Waugh-Lovell): the residual ones r1 and
// powers ry, a = |r1|^2 and b = r1 . ry; P_const = sum b / sum a.
struct PartialledCurves {
  std::vector<double> a, b;
  std::vector<Eigen::VectorXd> r1, ry;
  int points = 0;
};

PartialledCurves PartialOut(const std::vector<SweepCurve>& used) {
  const int num_curves = static_cast<int>(used.size());
  PartialledCurves p;
  p.a.resize(num_curves);
  p.b.resize(num_curves);
  p.r1.resize(num_curves);
  p.ry.resize(num_curves);
  for (int j = 0; j < num_curves; ++j) {
    const Eigen::MatrixXd x = Design(used[j], false);
    const Eigen::VectorXd ones = Eigen::VectorXd::Ones(x.rows());
    const Eigen::VectorXd y = Powers(used[j]);
    p.r1[j] = ones - x * LeastSquares(x, ones);
    p.ry[j] = y - x * LeastSquares(x, y);
    p.a[j] = p.r1[j].squaredNorm();
    p.b[j] = p.r1[j].dot(p.ry[j]);
    p.points += static_cast<int>(x.rows());
  }
  return p;
}

// P_const's confidence interval: from its standard error (covariance) or from resampling the
// curves (bootstrap).
void ConstantCi(const PartialledCurves& p, const ConstantPowerOptions& options,
                ConstantPowerReport* result) {
  const int num_curves = static_cast<int>(p.a.size());
  const double alpha_half = 0.5 * (1.0 + options.confidence_level);
  if (options.ci_method == ConstantCiMethod::kCovariance) {
    if (result->dof > 0) {
      const boost::math::students_t t(static_cast<double>(result->dof));
      const double half = boost::math::quantile(t, alpha_half) * result->p_const_se_w;
      result->p_const_ci_low_w = result->p_const_w - half;
      result->p_const_ci_high_w = result->p_const_w + half;
    }
    return;
  }
  Rng rng(options.bootstrap_seed);
  std::vector<double> draws;
  draws.reserve(options.bootstrap_samples);
  for (int s = 0; s < options.bootstrap_samples; ++s) {
    double sa = 0.0, sb = 0.0;
    for (int j = 0; j < num_curves; ++j) {
      const int k = rng.Index(num_curves);
      sa += p.a[k];
      sb += p.b[k];
    }
    if (sa > 0.0) draws.push_back(sb / sa);
  }
  if (!draws.empty()) {
    result->p_const_ci_low_w = Quantile(draws, 1.0 - alpha_half);
    result->p_const_ci_high_w = Quantile(draws, alpha_half);
  }
}

// The shared P_const of AccelWattch Eq. 3 over the curves, each with its own beta and tau,
// with its standard error and confidence interval.
void FitSharedConstant(const Sweep& sweep, const std::vector<SweepCurve>& used,
                       const ConstantPowerOptions& options, ConstantPowerReport* result) {
  const int num_curves = static_cast<int>(used.size());
  const PartialledCurves p = PartialOut(used);
  result->points += p.points;
  double sum_a = 0.0, sum_b = 0.0;
  for (int j = 0; j < num_curves; ++j) {
    sum_a += p.a[j];
    sum_b += p.b[j];
  }
  if (!(sum_a > 0.0)) {
    throw InputError(sweep.path, 0, "f_core_mhz",
                     "the curves' clocks leave P_const undetermined (each curve's powers are "
                     "explained by beta f^3 + tau f alone)");
  }
  result->p_const_w = sum_b / sum_a;
  double rss = 0.0;
  for (int j = 0; j < num_curves; ++j) rss += (p.ry[j] - result->p_const_w * p.r1[j]).squaredNorm();
  result->dof = result->points - 1 - 2 * num_curves;
  if (result->dof > 0) {
    result->residual_sd_w = std::sqrt(rss / result->dof);
    result->p_const_se_w = result->residual_sd_w / std::sqrt(sum_a);
  }
  ConstantCi(p, options, result);
}

// The shared-intercept line, by the same partialling out of [f] per curve; false when the
// clocks leave it undetermined.
bool LinearJointIntercept(const std::vector<SweepCurve>& used, double* intercept_w) {
  double lin_a = 0.0, lin_b = 0.0;
  for (const SweepCurve& c : used) {
    Eigen::MatrixXd x(c.f_core_mhz.size(), 1);
    for (size_t i = 0; i < c.f_core_mhz.size(); ++i) x(i, 0) = c.f_core_mhz[i] / kMhzPerGhz;
    const Eigen::VectorXd ones = Eigen::VectorXd::Ones(x.rows());
    const Eigen::VectorXd y = Powers(c);
    const Eigen::VectorXd r1 = ones - x * LeastSquares(x, ones);
    lin_a += r1.squaredNorm();
    lin_b += r1.dot(y - x * LeastSquares(x, y));
  }
  if (!(lin_a > 0.0)) return false;
  *intercept_w = lin_b / lin_a;
  return true;
}

// Each curve's report (the joint, own-constant and linear fits) and the joint fit's error
// metrics over every point; the curves move into the report.
void ReportCurves(std::vector<SweepCurve>* used, ConstantPowerReport* result) {
  std::vector<PredictionRow> all;
  for (SweepCurve& c : *used) {
    CurveReport report;
    report.f_core_min_mhz = *std::min_element(c.f_core_mhz.begin(), c.f_core_mhz.end());
    report.f_core_max_mhz = *std::max_element(c.f_core_mhz.begin(), c.f_core_mhz.end());
    report.joint = FitEq3FixedConstant(c, result->p_const_w);
    report.own = FitEq3FreeConstant(c);
    report.linear = FitLinear(c);
    report.linear_intercept_negative = report.linear.intercept_w < 0.0;
    if (report.linear_intercept_negative) ++result->negative_linear_curves;
    for (size_t i = 0; i < c.f_core_mhz.size(); ++i) {
      const double f = c.f_core_mhz[i];
      PredictionRow r;
      r.benchmark = c.benchmark;
      r.f_core_mhz = f;
      r.measured_w = c.power_w[i];
      r.predicted_w = result->p_const_w + report.joint.beta_w_per_mhz3 * f * f * f +
                      report.joint.tau_w_per_mhz * f;
      all.push_back(r);
    }
    report.curve = std::move(c);
    result->curves.push_back(std::move(report));
  }
  const ErrorMetrics m = ComputeErrorMetrics(all);
  result->pearson_r = m.pearson_r;
  result->rmse_w = m.rmse_w;
  result->mape_pct = m.mape_pct;
}

}  // namespace

ConstantPowerReport FitConstantPower(const Sweep& sweep, const ConstantPowerOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  ConstantPowerReport result;
  std::vector<SweepCurve> used = CurvesToFit(sweep, options, &result.excluded);
  FitSharedConstant(sweep, used, options, &result);
  double intercept_w = 0.0;
  if (LinearJointIntercept(used, &intercept_w)) result.linear_joint_intercept_w = intercept_w;
  ReportCurves(&used, &result);
  return result;
}

void to_json(nlohmann::json& j, const ConstantPowerOptions& options) {
  j = {{"confidence_level", options.confidence_level},
       {"ci_method", ConstantCiMethodName(options.ci_method)},
       {"min_frequencies", options.min_frequencies},
       {"benchmarks", options.benchmarks}};
  if (options.ci_method == ConstantCiMethod::kBootstrap) {
    j["bootstrap_samples"] = options.bootstrap_samples;
    j["bootstrap_seed"] = options.bootstrap_seed;
  }
}

nlohmann::json ConstantPowerToJson(const ConstantPowerReport& r, const Sweep& sweep,
                                   const ConstantPowerOptions& options) {
  nlohmann::json j;
  j["model"] =
      "AccelWattch MICRO'21 Eq. 3: P = beta f^3 + tau f + p_const, one p_const shared by "
      "all curves, beta and tau per curve (closed-form joint least squares)";
  j["p_const_w"] = FiniteOrNull(r.p_const_w);
  j["p_const_se_w"] = FiniteOrNull(r.p_const_se_w);
  j["p_const_ci_low_w"] = FiniteOrNull(r.p_const_ci_low_w);
  j["p_const_ci_high_w"] = FiniteOrNull(r.p_const_ci_high_w);
  j["ci_method"] =
      options.ci_method == ConstantCiMethod::kCovariance
          ? "covariance: Student t (dof = points - 1 - 2 curves) on the joint least-squares "
            "covariance, assuming independent equal-variance errors"
          : fmt::format(
                "bootstrap: {} resamples of the curves with replacement (seed {}), "
                "percentile interval",
                options.bootstrap_samples, options.bootstrap_seed);
  j["confidence_level"] = options.confidence_level;
  j["fit"] = {{"points", r.points},
              {"curves", static_cast<int>(r.curves.size())},
              {"dof", r.dof},
              {"residual_sd_w", FiniteOrNull(r.residual_sd_w)},
              {"pearson_r", FiniteOrNull(r.pearson_r)},
              {"rmse_w", FiniteOrNull(r.rmse_w)},
              {"mape_pct", FiniteOrNull(r.mape_pct)}};
  j["linear_extrapolation"] = {
      {"model", "GPUWattch: P = intercept + slope f per curve, extrapolated to f = 0"},
      {"curves", static_cast<int>(r.curves.size())},
      {"negative_intercept_curves", r.negative_linear_curves},
      {"joint_intercept_w", FiniteOrNull(r.linear_joint_intercept_w)}};
  nlohmann::json curves = nlohmann::json::array();
  for (const CurveReport& c : r.curves) {
    curves.push_back({{"benchmark", c.curve.benchmark},
                      {"category", c.curve.category},
                      {"active_sms", Count(c.curve.active_sms)},
                      {"lanes_per_warp", Count(c.curve.lanes_per_warp)},
                      {"points", static_cast<int>(c.curve.f_core_mhz.size())},
                      {"f_core_min_mhz", c.f_core_min_mhz},
                      {"f_core_max_mhz", c.f_core_max_mhz},
                      {"beta_w_per_mhz3", FiniteOrNull(c.joint.beta_w_per_mhz3)},
                      {"tau_w_per_mhz", FiniteOrNull(c.joint.tau_w_per_mhz)},
                      {"pearson_r", FiniteOrNull(c.joint.pearson_r)},
                      {"rmse_w", FiniteOrNull(c.joint.rmse_w)},
                      {"mape_pct", FiniteOrNull(c.joint.mape_pct)},
                      {"own_p_const_w", FiniteOrNull(c.own.p_const_w)},
                      {"own_beta_w_per_mhz3", FiniteOrNull(c.own.beta_w_per_mhz3)},
                      {"own_tau_w_per_mhz", FiniteOrNull(c.own.tau_w_per_mhz)},
                      {"own_pearson_r", FiniteOrNull(c.own.pearson_r)},
                      {"own_rmse_w", FiniteOrNull(c.own.rmse_w)},
                      {"linear_intercept_w", FiniteOrNull(c.linear.intercept_w)},
                      {"linear_slope_w_per_mhz", FiniteOrNull(c.linear.slope_w_per_mhz)},
                      {"linear_pearson_r", FiniteOrNull(c.linear.pearson_r)},
                      {"linear_rmse_w", FiniteOrNull(c.linear.rmse_w)},
                      {"linear_intercept_negative", c.linear_intercept_negative}});
  }
  j["curves"] = curves;
  nlohmann::json excluded = nlohmann::json::array();
  for (const ExcludedCurve& e : r.excluded) {
    excluded.push_back({{"benchmark", e.benchmark},
                        {"active_sms", Count(e.active_sms)},
                        {"lanes_per_warp", Count(e.lanes_per_warp)},
                        {"reason", e.reason}});
  }
  j["excluded_curves"] = excluded;
  j["sweep"] = sweep;
  return j;
}

}  // namespace wattcal
