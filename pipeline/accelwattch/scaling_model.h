// AccelWattch's dynamic scaling-factor model (MICRO'21 Eqs. 12-13) and its file format.
//
//   P_model(k) = sum_i x_i * P_est_i(k) + P_static(k) + P_idle(k) + P_const(k)
//
// P_est_i(k) is component i's estimated dynamic power on kernel k at x = 1 (a column of the
// per-kernel table), and the static, idle-SM and constant terms keep x = 1 (AccelWattch §5.1:
// "these components effectively have x_i = 1"). x = 1 everywhere is the published model whose
// totals are the sheets' sim_total_W.
#pragma once

#include <string>
#include <vector>

#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/orderings.h"
#include "validate/prediction.h"

namespace wattcal {

// The `format` value of the model files.
inline constexpr const char* kAccelWattchModelFormat = "wattcal-accelwattch-model";

// One Ceres run from one starting point.
struct AccelWattchStartReport {
  std::string name;             // "ones" or "prior"
  bool run = false;             // false: not run (why in `termination`)
  std::vector<double> x_start;  // the feasible start actually used (per component)
  std::vector<double> x;        // the optimum reached (per component)
  bool converged = false;
  int iterations = 0;
  double initial_cost = 0.0;  // Ceres cost: half the sum of squared residuals
  double final_cost = 0.0;
  double train_mape_pct = 0.0;
  std::string termination;  // the solver's own words
};

struct AccelWattchFitReport {
  // Residual per kernel: (P_model - P_meas) / P_meas (AccelWattch Eq. 14's relative error).
  std::string residual = "relative";
  // Tikhonov weight lambda on (x_i - prior_x_i) / prior_x_i; 0 = no pull.
  double prior_weight = 0.0;
  std::string prior_source;  // "x = 1" or the prior model's path
  std::vector<AccelWattchStartReport> starts;
  std::string kept_start;   // the start with the lower final cost
  bool converged = false;   // the kept start converged
  double final_cost = 0.0;  // the kept start's cost
  // On the training kernels, with the kept x.
  int train_kernels = 0;
  double train_mape_pct = 0.0;
  double train_max_ape_pct = 0.0;
  double train_rmse_w = 0.0;
  double train_pearson_r = 0.0;
  // Largest violation of a bound or ordering by x (0: all hold exactly).
  double max_constraint_violation = 0.0;
};

struct AccelWattchModel {
  static constexpr int kFormatVersion = 1;

  std::vector<std::string> components;  // dynamic components, in the training table's order
  std::vector<double> x;                // scaling factor of each component
  std::vector<double> lower_bound;      // bounds given for each component
  std::vector<double> upper_bound;
  std::vector<double> prior_x;      // the pull's target per component (1: none given)
  std::vector<Ordering> orderings;  // the constraints the fit enforced
  std::vector<DroppedOrdering> dropped_orderings;  // and those it dropped, with the reason
  AccelWattchFitReport fit;
  std::string trained_on;  // training table (empty for the published model)
  std::vector<std::string> training_kernels;
  // The whole AccelWattch Eq. 12 model (power_model.h), when calibrated from an activity table: the
  // initial energy estimates the factors scale (components in the same order) and the fixed
  // terms. Without them the model scales the columns of per-kernel component tables only.
  bool has_terms = false;
  AccelWattchEnergies energies;
  AccelWattchFixedTerms fixed;

  int FindComponent(const std::string& name) const;
};

// The published model for `table`: x = 1 for every component, no fit.
AccelWattchModel PublishedAccelWattchModel(const ComponentTable& table);

// Power of every kernel of `table` under `model`, W. Components are matched by name; throws
// InputError naming the table's header line when the table lacks a component of the model or
// has one the model does not scale.
std::vector<double> PredictKernelPowerW(const AccelWattchModel& model, const ComponentTable& table);

// The same as validation rows: benchmark = kernel, frequencies 0 (the tables hold default
// clocks only), line = the kernel's row, fold = -1.
std::vector<PredictionRow> PredictKernels(const AccelWattchModel& model,
                                          const ComponentTable& table);

// A few lines for the terminal: each factor (marking those at a bound or tied to the
// component an ordering binds them to), both starts' costs, the training fit.
std::string FormatAccelWattchModelSummary(const AccelWattchModel& model);

// The model as versioned JSON, keys in this order:
//   format, version, wattcal_version, trained_on, training_kernels: [...],
//   components: [{component, x, lower_bound, upper_bound, prior_x}, ...],
//   orderings: [{lower, upper, source}, ...],
//   dropped_orderings: [{lower, upper, source, reason}, ...],
//   fit: {residual, prior_weight, prior_source, kept_start, converged, final_cost,
//         train_kernels, train_mape_pct, train_max_ape_pct, train_rmse_w, train_pearson_r,
//         max_constraint_violation,
//         starts: [{name, run, converged, iterations, initial_cost, final_cost,
//                   train_mape_pct, termination, x_start: [...], x: [...]}, ...]},
//   and, for a whole AccelWattch Eq. 12 model, energies: {source, reference_f_core_mhz,
//   components: [...]}
//   and fixed_terms: {voltage_model, constant: {...}, static: {...}, idle: {...}}
//   (model_terms.h).
// Numbers round-trip exactly; non-finite ones are written as null.
void to_json(nlohmann::ordered_json& j, const AccelWattchModel& model);
// The file's text: the JSON above, indented by 2, with a final newline.
std::string AccelWattchModelToJson(const AccelWattchModel& model);

// Reads a model file. Throws InputError naming FILE:LINE and the key on a wrong format or
// version, a missing or mistyped key, a component named twice, energies whose components
// differ from the scaling factors' (or fixed terms without energies), x or a bound not finite, bounds
// with lower > upper or lower < 0, x outside its bounds, a prior x <= 0, or an ordering that
// names an unknown component or that x violates.
AccelWattchModel ReadAccelWattchModel(const std::string& path);

}  // namespace wattcal
