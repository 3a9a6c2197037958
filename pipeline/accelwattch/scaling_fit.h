// Fitting AccelWattch's dynamic scaling factors (MICRO'21 §5.4, Eq. 14) with Ceres:
//
//   minimise  sum_k ((P_model(k) - P_meas(k)) / P_meas(k))^2
//           + lambda * sum_i ((x_i - prior_x_i) / prior_x_i)^2
//   s.t.      L_i <= x_i <= U_i  (0.001 and 1000 by default, per component on request)
//             x_a <= x_b         for the paper's orderings and the user's (orderings.h)
//
// with P_model of scaling_model.h. The first term is the relative error of AccelWattch Eq. 14 (the
// paper prints AccelWattch Eq. 14 as a quadratic form but states it minimises the relative error;
// AccelWattch §5.4); the second is an optional Tikhonov pull toward a prior model (lambda = 0:
// none). The model is linear in x, so one solve replaces the paper's re-iterations through the
// simulator (the per-kernel tables are the simulator's output at x = 1). Orderings are encoded
// exactly through box bounds (OrderingForest), which makes the problem bilinear in its parameters,
// so, as in the paper, it is solved from two starting points, all ones and the prior model
// (each made feasible first), and the lower-cost optimum is kept; both are reported.
//
// A component with no power in any training kernel leaves its factor undetermined by the data
// (a leave-one-kernel-out fold without the only tensor-core kernel, say). Without a pull it
// keeps the place the encoding gives it at the start: the same fraction of the room its
// ordering parent leaves, so it moves with that parent (1 when it is ordered against nothing);
// with a pull it goes to its prior.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "accelwattch/component_table.h"
#include "accelwattch/orderings.h"
#include "accelwattch/scaling_model.h"
#include "validate/prediction.h"

namespace wattcal {

struct AccelWattchFitOptions {
  // Lower bound of every scaling factor without its own bounds (AccelWattch Eq. 14: 0.001); >= 0.
  double lower_bound = 0.001;
  // Upper bound of every scaling factor without its own bounds (AccelWattch Eq. 14: 1000).
  double upper_bound = 1000.0;
  // Bounds of single components by name, {lower, upper}; lower == upper pins the factor.
  std::map<std::string, std::pair<double, double>> component_bounds;
  // Enforce the paper's orderings (orderings.h, PaperOrderings()).
  bool paper_orderings = true;
  // Further orderings, e.g. from ReadOrderingsFile(); applied after the paper's.
  std::vector<Ordering> extra_orderings;
  // The prior model's factors by component: the second starting point and the target of the
  // pull. Empty: the prior is x = 1 (the published model) and there is no second start.
  // Components missing here have prior 1; names the table lacks are ignored. Each > 0.
  std::map<std::string, double> prior_x;
  // Where prior_x came from, for the report ("x = 1" when empty).
  std::string prior_source;
  // Tikhonov weight lambda on the relative deviation from the prior (>= 0; 0: no pull), in
  // the units of the data term: lambda = 1 weighs a 100% deviation of one factor like a 100%
  // error on one kernel.
  double prior_weight = 0.0;
  // Also start from the prior model (when prior_x is not empty) and keep the better optimum.
  bool start_from_prior = true;
  // Ceres iterations per start.
  int max_iterations = 1000;
  // Draw a progress line on a terminal (leave-one-kernel-out turns it off in its folds).
  bool show_progress = true;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

// Fits the scaling factors to `train` (every kernel). Throws OptionError when the options
// are invalid or leave a component no feasible value, InputError for an ordering that names
// an unknown component or closes a cycle (naming its file and line), FitError when Ceres
// returns no usable solution. Dropped orderings are reported once through LogInfo unless
// `quiet_drops`.
AccelWattchModel FitAccelWattchScaling(const ComponentTable& train,
                                       const AccelWattchFitOptions& options,
                                       bool quiet_drops = false);

// Leave-one-kernel-out cross-validation: for each kernel, the factors fitted on all the
// others predict it. Rows in table order with fold = the kernel's index.
struct AccelWattchLokoReport {
  std::vector<PredictionRow> rows;
  std::vector<AccelWattchModel> fold_models;  // the model that predicted each kernel
  double max_constraint_violation = 0.0;      // over every fold's x
};
AccelWattchLokoReport LeaveOneKernelOut(const ComponentTable& table,
                                        const AccelWattchFitOptions& options);

}  // namespace wattcal
