// DVFS-aware constant power (AccelWattch, MICRO'21 §4.2, Eq. 3):
//
//   P(f) = beta * f^3 + tau * f + P_const          (V ~ k f, so dynamic ~ f^3, static ~ f)
//
// fitted to every microbenchmark's power over a core-clock sweep, jointly with ONE shared
// P_const and per-curve beta, tau. AccelWattch Eq. 3 is linear in its coefficients, so the joint
// fit is an ordinary least-squares problem, solved in closed form (no iterations, nothing to
// converge): by the Frisch-Waugh-Lovell theorem, with r1_j and ry_j the residuals of regressing a
// column of ones and curve j's powers on [f^3, f] within curve j,
//
//   P_const = sum_j <r1_j, ry_j> / sum_j <r1_j, r1_j>,   Var(P_const) = s^2 / sum_j <r1_j, r1_j>
//
// with s^2 = RSS / (n - 1 - 2 C) over n points and C curves; then each curve's (beta, tau) is
// its own least squares on P - P_const. Clocks enter in GHz internally for conditioning.
//
// Beside it, for every curve: AccelWattch Eq. 3 with its own P_const, and the straight line
// GPUWattch extrapolates to f = 0 (P = a + b f; "a" is GPUWattch's static + constant estimate,
// which AccelWattch §4.2 says goes negative on a GPU with DVFS); curves whose a < 0 are flagged.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/sweep.h"

namespace wattcal {

// The points of one (benchmark, active SMs, lanes per warp) over the core clock.
struct SweepCurve {
  std::string benchmark;
  std::string category;
  int active_sms = 0;      // 0 = unknown
  int lanes_per_warp = 0;  // 0 = unknown
  std::vector<double> f_core_mhz;
  std::vector<double> power_w;
  std::vector<int64_t> lines;  // lines in the sweep file
  int DistinctFrequencies() const;
};

// Groups a sweep's points into curves, sorted by benchmark, active SMs, lanes; points in file
// order. A curve's category is its first point's (InputError when its points disagree).
std::vector<SweepCurve> GroupCurves(const Sweep& sweep);

// One curve's fit and its quality.
struct Eq3Fit {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double p_const_w = kNaN;
  double beta_w_per_mhz3 = kNaN;
  double tau_w_per_mhz = kNaN;
  double pearson_r = kNaN;  // measured vs fitted
  double rmse_w = kNaN;
  double mape_pct = kNaN;
  double max_abs_error_w = kNaN;
};

// AccelWattch Eq. 3 with P_const held at `p_const_w` (needs >= 2 distinct clocks).
Eq3Fit FitEq3FixedConstant(const SweepCurve& curve, double p_const_w);
// AccelWattch Eq. 3 with the curve's own P_const (needs >= 3 distinct clocks).
Eq3Fit FitEq3FreeConstant(const SweepCurve& curve);

// GPUWattch's straight line P = intercept + slope * f.
struct LinearFit {
  double intercept_w = Eq3Fit::kNaN;  // the extrapolation to f = 0
  double slope_w_per_mhz = Eq3Fit::kNaN;
  double pearson_r = Eq3Fit::kNaN;
  double rmse_w = Eq3Fit::kNaN;
};
LinearFit FitLinear(const SweepCurve& curve);

enum class ConstantCiMethod {
  kCovariance,  // Student t on the joint least-squares covariance (homoscedastic errors)
  kBootstrap,   // percentile bootstrap over curves resampled with replacement
};
const char* ConstantCiMethodName(ConstantCiMethod method);  // "covariance", "bootstrap"
// Parses a ConstantCiMethodName; false for anything else.
bool ParseConstantCiMethod(const std::string& name, ConstantCiMethod* method);

struct ConstantPowerOptions {
  // Two-sided confidence level of the P_const interval, in (0, 1).
  double confidence_level = 0.95;
  // How the interval is computed (see ConstantCiMethod).
  ConstantCiMethod ci_method = ConstantCiMethod::kCovariance;
  // Bootstrap resamples (ci_method = kBootstrap), >= 100.
  int bootstrap_samples = 2000;
  // Seed of the bootstrap's draws (same seed, same interval).
  unsigned bootstrap_seed = 1;
  // A curve joins the fit only with at least this many distinct core clocks (>= 3:
  // AccelWattch Eq. 3 with its own constant has three coefficients); others are listed as excluded.
  int min_frequencies = 3;
  // Only these benchmarks' curves (empty: all).
  std::vector<std::string> benchmarks;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

struct CurveReport {
  SweepCurve curve;
  double f_core_min_mhz = 0.0;
  double f_core_max_mhz = 0.0;
  Eq3Fit joint;  // beta, tau with the shared P_const
  Eq3Fit own;    // AccelWattch Eq. 3 with the curve's own P_const
  LinearFit linear;
  bool linear_intercept_negative = false;
};

struct ExcludedCurve {
  std::string benchmark;
  int active_sms = 0;
  int lanes_per_warp = 0;
  std::string reason;
};

struct ConstantPowerReport {
  double p_const_w = Eq3Fit::kNaN;
  double p_const_se_w = Eq3Fit::kNaN;  // from the covariance
  double p_const_ci_low_w = Eq3Fit::kNaN;
  double p_const_ci_high_w = Eq3Fit::kNaN;
  int points = 0;
  int dof = 0;                          // n - 1 - 2 C
  double residual_sd_w = Eq3Fit::kNaN;  // s
  double pearson_r = Eq3Fit::kNaN;      // all points, joint fit
  double rmse_w = Eq3Fit::kNaN;
  double mape_pct = Eq3Fit::kNaN;
  int negative_linear_curves = 0;
  // GPUWattch's line with one intercept shared by all curves (P = a + b_j f), the linear
  // counterpart of the joint P_const.
  double linear_joint_intercept_w = Eq3Fit::kNaN;
  std::vector<CurveReport> curves;
  std::vector<ExcludedCurve> excluded;
};

// Fits the joint model. Throws OptionError for invalid options and InputError (naming the
// sweep file and f_core_mhz) when no curve has enough distinct clocks.
ConstantPowerReport FitConstantPower(const Sweep& sweep, const ConstantPowerOptions& options);

// The JSON written by wattcal-constant (units in every key; NaN as null).
nlohmann::json ConstantPowerToJson(const ConstantPowerReport& result, const Sweep& sweep,
                                   const ConstantPowerOptions& options);

// The effective options, for manifests.
void to_json(nlohmann::json& j, const ConstantPowerOptions& options);

}  // namespace wattcal
