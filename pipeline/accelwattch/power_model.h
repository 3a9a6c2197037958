// AccelWattch's whole power model evaluated for a kernel (MICRO'21 Eq. 12, i.e. AccelWattch Eq. 10
// with the dynamic term of AccelWattch Eq. 11 corrected by the scaling factors):
//
//   P(k SMs, y lanes, f) = sum_i x_i * a_i * E-hat_i(V) / T    dynamic, per component
//                        + P_static,yLanes,N(c) / N * k * V/V_s active SMs (AccelWattch Eqs. 4-5,9)
//                        + P_perIdleSM * (N - k) * V/V_d       idle SMs (AccelWattch Eqs. 6-8)
//                        + P_const                             (AccelWattch Eq. 3)
//
// where c is the kernel's instruction-mix category (AccelWattch §4.5), V/V_s and V/V_d the core
// voltage relative to the clocks the static and idle terms were measured at (V ~ f,
// AccelWattch §4.2, unless the model carries a measured V-f curve; model_terms.h), and E-hat_i(V) =
// E-hat_i (V / V_ref)^2 for voltage-scaled components (E-hat_i otherwise).
//
// Evaluating at another V-F pair than the one the counts were taken at keeps the activity per
// cycle: a component's event rate a_i / T scales with its clock (core or memory). That is
// exact for work bound by that clock and is the assumption under which a DVFS power model
// needs no performance model; for memory-bound kernels at a lower core clock it overstates
// the core-side rates (a performance model such as wattcal-perf's CRISP says by how much).
#pragma once

#include <string>
#include <vector>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/scaling_model.h"

namespace wattcal {

struct AccelWattchBreakdown {
  std::vector<double> dynamic_w;  // per component of the energies, x applied
  double dynamic_total_w = 0.0;
  double static_w = 0.0;  // active SMs
  double idle_w = 0.0;    // idle SMs
  double const_w = 0.0;
  std::string static_category;  // category whose static model was used
  double total_w() const { return dynamic_total_w + static_w + idle_w + const_w; }
};

// AccelWattch Eq. 12 for `kernel` at (f_core_mhz, f_mem_mhz) with scaling factors `x` (one per
// component of `energies`, in its order). f_mem_mhz <= 0 keeps the kernel's memory clock. Throws
// InputError naming `activity_path`, the kernel's line and the field for a clock outside the
// model's voltage curve, more active SMs than
// the model's GPU has, more lanes than a warp, a kernel whose category (or the default) has no
// static model, a missing count of a counter the model needs, or a memory-clock component
// evaluated at another memory clock when the kernel's is not known.
AccelWattchBreakdown EvaluateAccelWattch(const AccelWattchEnergies& energies,
                                         const AccelWattchFixedTerms& fixed,
                                         const std::vector<double>& x, const KernelActivity& kernel,
                                         const std::string& activity_path, double f_core_mhz,
                                         double f_mem_mhz);

// The per-kernel component table of AccelWattch Eq. 13 (dynamic estimates at x = 1 and the fixed
// terms, each kernel at its own V-F pair) that wattcal-calibrate --method accelwattch fits and
// wattcal-validate --mode accelwattch scores. Components are the energies' in order. Throws
// InputError as EvaluateAccelWattch, and naming mean_power_w for a kernel without a measured
// power.
ComponentTable BuildComponentTable(const ActivityTable& activity,
                                   const AccelWattchEnergies& energies,
                                   const AccelWattchFixedTerms& fixed);

// One kernel evaluated at one V-F pair (and SM and lane count).
struct AccelWattchPrediction {
  int kernel = 0;  // index in the activity table
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;         // 0 = the kernel's, not known
  int active_sms = 0;             // k used
  int lanes_per_warp = 0;         // y used
  bool at_measured_pair = false;  // the pair, k and y the counts (and power) were taken at
  AccelWattchBreakdown breakdown;
};

// Where to evaluate: every combination of the lists; an empty list keeps the kernel's own.
struct AccelWattchEvaluationGrid {
  std::vector<double> f_core_mhz;
  std::vector<double> f_mem_mhz;
  // What-if SM and lane counts (AccelWattch §4.3-4.6: what does the first SM, an idle SM, a
  // divergent warp cost?). AccelWattch Eq. 10's static and idle terms follow k and y; the dynamic
  // activity is kept per active SM (counts scaled by k / k_measured) and taken as counted for the
  // lanes (give counts measured at y for y's dynamic power).
  std::vector<int> active_sms;
  std::vector<int> lanes_per_warp;
};

// Every kernel of `activity` under a whole AccelWattch Eq. 12 model (model.has_terms), at its own
// pair when both lists are empty, else at every pair of `f_core_mhz` x `f_mem_mhz` (an empty list
// keeps the kernel's own clock of that domain). Kernel-major order. Throws OptionError when
// the model has no energies and fixed terms or a clock is not > 0, InputError as
// EvaluateAccelWattch.
std::vector<AccelWattchPrediction> PredictAccelWattchActivity(const AccelWattchModel& model,
                                                              const ActivityTable& activity,
                                                              const std::vector<double>& f_core_mhz,
                                                              const std::vector<double>& f_mem_mhz);
// The same over a grid of clocks, SM counts and lane counts (OptionError for counts < 1).
std::vector<AccelWattchPrediction> PredictAccelWattchActivity(
    const AccelWattchModel& model, const ActivityTable& activity,
    const AccelWattchEvaluationGrid& grid);

// CSV: kernel,benchmark,category,static_category,active_sms,lanes_per_warp,f_core_mhz,
// f_mem_mhz,predicted_w,measured_w,error_pct, and with `breakdown`
// const_w,static_w,idle_w,dynamic_w,<component>_w... (they sum to predicted_w). measured_w
// and error_pct are empty unless the kernel was measured and is evaluated at its own pair, k
// and y. active_sms and lanes_per_warp are the ones evaluated.
std::string AccelWattchPredictionsToCsv(const AccelWattchModel& model,
                                        const ActivityTable& activity,
                                        const std::vector<AccelWattchPrediction>& predictions,
                                        bool breakdown);

}  // namespace wattcal
