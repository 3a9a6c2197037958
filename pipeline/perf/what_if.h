// What an application would draw, take and spend at another core clock or under another power
// cap, from one profiled run (wattcal-predict --capture --at-clock / --at-power-limit).
//
// Power along the core V-F curve (model/vf_curve.h, TPDS Eqs. 4-6). A cap settles at the clock
// where the predicted power meets it (bisection, model/power_limit.h SettleClockMhz); a requested
// clock whose power exceeds the board's limit settles lower the same way.
//
// Run time against the run as recorded (its duration from its windows, at the clock the plain
// prediction gives it, f0):
//   crisp: with CRISP counters for the workload (--crisp-counters), CRISP's prediction at f over
//     its prediction at f0 (CRISP Eqs. 1-4, perf/perf_models.h);
//   memory_split: else CRISP Eq. 2's linear model with the memory share m taken from the counters:
//     m = min(1, sum of the memory domain's utilisations) (the DRAM busy share of the run, which
//     the core clock does not shorten), T(f) = T0 (m + (1 - m) f0 / f).
// Energy = power x run time; changes are in % of the recorded run's (prediction at f0).
#pragma once

#include <limits>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "model/app_prediction.h"
#include "model/power_model.h"
#include "perf/crisp_counters.h"

namespace wattcal {

struct WhatIfSettings {
  std::vector<double> clocks_mhz;  // --at-clock
  std::vector<double> limits_w;    // --at-power-limit
  // --max-slowdown-pct: mark, per workload, the setting of least energy whose run time is within
  // this % of the recorded one (NaN: none marked).
  double max_slowdown_pct = std::numeric_limits<double>::quiet_NaN();
  // The board's power limit for --at-clock (unset: none).
  std::optional<double> board_limit_w;
  // CRISP counters per workload (kernel = workload name); others use the memory split.
  std::vector<CrispCounters> crisp;
  // With a power log: each workload's measured clock (its windows' time-weighted core clock),
  // MHz, written beside the as-recorded row's predicted one.
  std::map<std::string, double> measured_f_core_mhz;
};

struct WhatIfRow {
  std::string workload;
  std::string setting;  // "as_recorded", "clock" or "power_limit"
  double setting_value = std::numeric_limits<double>::quiet_NaN();  // MHz or W
  double f_core_mhz = 0.0;
  double predicted_w = 0.0;
  double run_time_s = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double power_change_pct = 0.0, time_change_pct = 0.0, energy_change_pct = 0.0;
  std::string time_model;  // "crisp" or "memory_split(m=0.26)"
  std::string flags;       // capped; below_curve; least_energy_within_<P>pct
  // as_recorded rows with a power log: the clock the run was measured at, MHz (else NaN).
  double measured_f_core_mhz = std::numeric_limits<double>::quiet_NaN();
};

// The memory share m of the memory_split time model for `util_frac` in `model`'s layout.
double MemoryShare(const PowerModel& model, const std::vector<double>& util_frac);

// One row per workload as recorded, then one per workload and setting (clocks, then limits).
// `curve` must be known (VfCurve::known); a clock outside [curve lowest, reference] and a cap the
// workload cannot meet at the lowest clock searched are OptionErrors naming the curve's source and
// what recording would give the data (WhatIfRoute()).
std::vector<WhatIfRow> PredictWhatIf(const PowerModel& model, const VfCurve& curve,
                                     const std::vector<AppPrediction>& apps,
                                     const WhatIfSettings& settings);

// What to record for a curve (for refusals and docs).
std::string WhatIfRoute();

// workload,setting,setting_value,f_core_mhz,measured_f_core_mhz,predicted_w,run_time_s,energy_j,
// power_change_pct,time_change_pct,energy_change_pct,time_model,vf_source,flags (%.6f; unknown
// cells empty).
std::string WhatIfToCsv(const std::vector<WhatIfRow>& rows, const std::string& vf_source);

}  // namespace wattcal
