// The calibrated power model: TPDS Eqs. 4-6 (cross-domain DVFS) and TPDS Eq. 9 (fixed V-F).
//
//   P = sum_k [ alpha0_k * v_k + v_k^2 * f_k * (alpha1_k + sum_{i in k} gamma_i * U_i) ]
//
// with v_k the voltage of domain k normalised to its default frequency (v = 1 there).
// A fixed-frequency model (TPDS Eq. 9, P = beta0 + sum_i omega_i * U_i) is stored in the same
// form with one frequency level per domain, v = 1, alpha0_core = beta0, alpha1 = 0 and
// gamma_i = omega_i / f_k, which is also how gpmTOOL writes it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/corpus.h"

namespace wattcal {

// Per-term power of one prediction (sums to the total).
struct PowerBreakdown {
  std::vector<double> static_w;     // alpha0_k * v_k, per domain
  std::vector<double> idle_dyn_w;   // alpha1_k * v_k^2 * f_k, per domain
  std::vector<double> component_w;  // gamma_i * v^2 * f * U_i, per component
  double total_w = 0.0;
};

// How a model was fitted: dvfs, the cross-domain model with unknown voltages (TPDS Eqs. 4-6), or
// fixed, one frequency level per domain (TPDS Eq. 9). The model file and --method spell them
// "dvfs" and "fixed" (FitMethodName, ParseFitMethod: the one place the words are written).
enum class FitMethod { kDvfs, kFixed };

const char* FitMethodName(FitMethod method);
// `name` as a method ("dvfs" or "fixed"); false, and `*method` untouched, for anything else.
bool ParseFitMethod(const std::string& name, FitMethod* method);

// A fit's loss on its residuals; "l2", "huber", "cauchy" (FitLossName: the names --loss takes and
// the model file keeps).
enum class FitLoss { kL2, kHuber, kCauchy };

const char* FitLossName(FitLoss loss);
// `name` as a loss; false, and `*loss` untouched, for anything else.
bool ParseFitLoss(const std::string& name, FitLoss* loss);

// The solver that gave a model its coefficients: the joint Ceres solve, gpmTOOL's alternating
// algorithm (both DVFS), non-negative least squares (fixed), or none: the truth of a synthetic
// GPU. The model file spells them "joint", "alternating", "nnls", "truth" (ModelSolverName).
enum class ModelSolver { kJoint, kAlternating, kNnls, kTruth };

const char* ModelSolverName(ModelSolver solver);
// `name` as a solver; false, and `*solver` untouched, for anything else.
bool ParseModelSolver(const std::string& name, ModelSolver* solver);

// What the fit reported about itself (kept in the model file).
struct FitReport {
  // Unset when the model file does not say (a gpmTOOL model file): "" in the model file.
  std::optional<ModelSolver> solver;
  std::optional<FitLoss> loss;
  double loss_scale = 0.0;  // the loss's scale (in residual units)
  std::string residual;     // "absolute" (W) or "relative" (fraction)
  bool converged = false;
  int iterations = 0;
  double initial_cost = 0.0;
  double final_cost = 0.0;
  double time_s = 0.0;      // wall time (shown, not written to model files)
  std::string termination;  // solver's own words
  // Fit statistics on the training rows.
  int train_rows = 0;
  int train_benchmarks = 0;
  double train_rmse_w = 0.0;
  double train_mape_pct = 0.0;
  double train_max_ape_pct = 0.0;
  double train_r2 = 0.0;
};

// What the training rows covered (for the extrapolation flags of model/power_limit.h).
struct TrainingRange {
  // Per component (layout order): the largest utilisation among the training rows; empty
  // when unknown (models written before wattcal recorded it, gpmTOOL model files).
  std::vector<double> max_util_frac;
  // The largest measured power among the training rows, W; NaN when unknown.
  double max_power_w = std::numeric_limits<double>::quiet_NaN();

  bool known() const { return !max_util_frac.empty(); }
};

// Bootstrap 95% confidence intervals of the coefficients (wattcal-calibrate --bootstrap N,
// fixed method): the training benchmarks (all rows of a benchmark together) resampled with
// replacement N times, the same NNLS refitted on each resample, and per coefficient the
// 2.5% and 97.5% percentiles of the N refits (linear interpolation between order
// statistics, FitBootstrapPercentile). Same units and order as the coefficients.
struct CoefficientCi {
  int bootstrap_replicates = 0;  // 0 = no intervals (the model file has no coefficient_ci95)
  uint64_t seed = 1;
  std::vector<std::pair<double, double>> static_w;             // per domain, W
  std::vector<std::pair<double, double>> idle_dyn_w_per_mhz;   // per domain, W/MHz
  std::vector<std::pair<double, double>> component_w_per_mhz;  // per component, W/MHz

  bool known() const { return bootstrap_replicates > 0; }
};

// The core voltage-frequency curve a what-if moves along (model/vf_curve.h: where it comes
// from, how power follows it).
struct VfCurve {
  // Core clocks, MHz, ascending; the last is the reference clock (v = 1).
  std::vector<double> levels_mhz;
  // v at each level, relative to the reference clock's voltage; non-decreasing, last = 1.
  std::vector<double> v_rel;
  // One sentence: where the curve came from (file, rows or windows, method).
  std::string source;

  bool known() const { return levels_mhz.size() >= 2; }
  double lowest_mhz() const { return levels_mhz.empty() ? 0.0 : levels_mhz.front(); }
  double reference_mhz() const { return levels_mhz.empty() ? 0.0 : levels_mhz.back(); }
  // v(f): linear between levels, held at the lowest level's value below it (the voltage floor,
  // as wattcal-clocks' VfModel), NaN above the reference clock.
  double VoltageAt(double f_mhz) const;
  // "" when the curve is well formed: >= 2 levels, ascending, v in (0, 1], non-decreasing,
  // v = 1 at the last level; else the first broken rule.
  std::string Problem() const;
};

// What a 95% prediction interval of a fixed model's prediction needs (wattcal-calibrate
// --bootstrap N, fixed method; model/prediction_interval.h evaluates it): the N bootstrap
// replicates' coefficient vectors (the resamples of CoefficientCi, in Coefficients() order) and
// the distribution of the out-of-bag ratios measured / predicted: each replicate predicts the
// training rows of the benchmarks its resample left out (about 37% of them), which is a
// cross-validated error of the model on benchmarks it did not see. Kept as the ratios'
// quantiles at 0.5%, 1.0%, ..., 99.5% (kOobRatioQuantiles of them).
struct PredictionIntervalData {
  static constexpr int kOobRatioQuantiles = 199;
  // Per replicate: static_w (per domain), idle_dyn_w_per_mhz (per domain), component_w_per_mhz.
  std::vector<std::vector<double>> replicate_coefficients;
  // Quantile k (k = 0..198) at probability (k + 1) / 200 of measured / predicted out of bag.
  std::vector<double> oob_ratio_quantiles;
  // How many out-of-bag predictions the quantiles summarise.
  int oob_predictions = 0;

  bool known() const {
    return !replicate_coefficients.empty() &&
           oob_ratio_quantiles.size() == static_cast<size_t>(kOobRatioQuantiles);
  }
};

struct PowerModel {
  static constexpr int kFormatVersion = 1;

  FitMethod method = FitMethod::kDvfs;
  Layout layout;
  // Per domain: the frequency levels the voltages were estimated at, ascending.
  std::vector<std::vector<double>> freq_levels_mhz;
  // Per domain: voltage at each level, normalised to the default frequency's voltage.
  std::vector<std::vector<double>> voltage_rel;
  // alpha0 per domain: static power at v = 1, W.
  std::vector<double> static_w;
  // alpha1 per domain: component-independent dynamic power per MHz at v = 1, W/MHz.
  std::vector<double> idle_dyn_w_per_mhz;
  // gamma_i per component: dynamic power per MHz at full utilisation and v = 1, W/MHz.
  std::vector<double> component_w_per_mhz;
  FitReport fit;
  // The board's power limit in W (--power-limit-w, else the training corpus's: ResolvePowerLimitW
  // in model/power_limit.h); unset when neither gives one. Predictions above it are capped.
  std::optional<double> power_limit_w;
  // What the training rows covered.
  TrainingRange training_range;
  // Sentences about the training data, in the order found: flagged rows left out,
  // unidentifiable rows (kept in the model file and shown in its summary).
  std::vector<std::string> training_notes;
  // Bootstrap confidence intervals of the coefficients; empty unless --bootstrap N > 0.
  CoefficientCi coefficient_ci95;
  // The core V-F curve for what-ifs at other clocks or caps (model/vf_curve.h); empty when the
  // training data held none (a fixed model without capped rows).
  VfCurve vf_curve;
  // The bootstrap replicates and out-of-bag errors a prediction interval is made of; empty
  // unless --bootstrap N > 0 (fixed method).
  PredictionIntervalData prediction_interval;
  // Training file the model came from (informational). A model carried to another GPU or node
  // (port/) appends kPortedMarker or kScaledMarker and keeps its base fit's FitReport: its
  // training statistics are the base model's, not its own (Derived()).
  std::string trained_on;
  // The GPU the training rows were measured on, its product name (the training corpus's, from
  // the capture: "NVIDIA H100 80GB HBM3"); "" when unknown (gpmTOOL data, a ported model). A
  // capture of another GPU is refused by wattcal-predict --capture (io/gpu_description.h
  // SameGpuProduct).
  std::string gpu;
  static constexpr const char* kPortedMarker = " (ported from ";
  static constexpr const char* kScaledMarker = " (scaled to another node";
  bool Derived() const {
    return trained_on.find(kPortedMarker) != std::string::npos ||
           trained_on.find(kScaledMarker) != std::string::npos;
  }

  // Number of coefficients: 2 per domain + one per component.
  int num_coefficients() const;
  // Coefficients in gpmTOOL's order: [alpha0_k..., alpha1_k..., gamma_i...].
  std::vector<double> Coefficients() const;
  void SetCoefficients(const std::vector<double>& x);

  // Voltage of domain d at frequency f (linear interpolation between estimated levels).
  // Returns false when f lies outside the estimated levels.
  bool VoltageAt(int d, double f_mhz, double* v) const;
  // True when f is within the estimated range of domain d.
  bool Covers(int d, double f_mhz) const;

  // Power at utilisations `util_frac` (num_components) and frequencies `freq_mhz`
  // (num_domains). Frequencies must be covered (checked by the caller with Covers()).
  double Predict(const double* util_frac, const double* freq_mhz,
                 PowerBreakdown* breakdown = nullptr) const;
  // Power at the default pair (v = 1).
  double PredictAtDefault(const double* util_frac, PowerBreakdown* breakdown = nullptr) const;

  // Default frequency of every domain.
  std::vector<double> DefaultFrequencies() const;

  // "the model (trained on X) was calibrated for another GPU layout: <mismatch>".
  std::string LayoutMismatchMessage(const std::string& mismatch) const;
};

}  // namespace wattcal
