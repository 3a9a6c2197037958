// Predicting a user's applications, one row per workload, from their counters alone (SPEC.md
// "Real GPUs": a user's applications are predicted without any power log, with what lies
// outside the training range flagged). The power is the model's at its reference pair
// (TPDS Eq. 9 for a fixed model; TPDS Eqs. 4-6 at the default pair for a DVFS model), capped at the
// board's limit; the energy is that power over the run's duration as it ran (its windows' summed
// length), and per step when the program reported its steps. When the workload was also
// measured, its measured power and energy and their errors stand beside the prediction.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/activity_prediction.h"
#include "model/power_model.h"

namespace wattcal {

// One workload to predict.
struct AppActivity {
  std::string workload;
  // Component utilisations (TPDS Eqs. 7-8), in the order of the layout's components.
  std::vector<double> util_frac;
  // Summed kernel time of the workload's profiled launches, s (NaN when unknown). The profiled run
  // may run a few steps only (WATTCAL_PROFILING): this is not the run's duration.
  double kernel_time_s = std::numeric_limits<double>::quiet_NaN();
  // The run's duration: its windows' summed length (end - start, no settle trim), s (NaN when
  // unknown).
  double duration_s = std::numeric_limits<double>::quiet_NaN();
  // Measured energy over those same whole windows, J (NaN when not measured).
  double measured_energy_j = std::numeric_limits<double>::quiet_NaN();
  // Steps the program reported over its windows (their sum); 0 when any window lacks them.
  int64_t steps = 0;
  // Measured mean power over its windows (their summed energy over their summed duration), W;
  // NaN when the workload was not measured.
  double measured_w = std::numeric_limits<double>::quiet_NaN();
  // The measured windows' flags (power_cap, clock_moved, ...), each once; "" for none.
  std::string measured_flags;
  // The measured windows' time-weighted core clock, MHz (NaN when not measured): the clock the
  // run ran at, which a power cap may have held below the reference.
  double measured_f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  // Windows the workload was recorded in.
  int windows = 0;
};

struct AppPrediction {
  AppActivity app;
  // The model's prediction at its reference pair: predicted_w, uncapped_w, capped, the capped
  // clock, flags (capped; util_beyond_training:<component>; power_beyond_training) and the
  // per-term breakdown (TPDS §4.5).
  ActivityPrediction prediction;
  // The clock the prediction holds for, MHz: the capped clock when known, else the reference.
  double f_core_mhz = 0.0;
  // predicted_w x app.duration_s, J: the run's predicted energy (NaN when the duration is unknown).
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  // The 95% interval of the power (prediction.predicted_w_lo / _hi) over the same time as
  // energy_j, J: energy_j x predicted_w_lo / predicted_w (NaN when either is unknown).
  double energy_j_lo = std::numeric_limits<double>::quiet_NaN();
  double energy_j_hi = std::numeric_limits<double>::quiet_NaN();
  // energy_j / app.steps, J (NaN without steps).
  double energy_per_step_j = std::numeric_limits<double>::quiet_NaN();
  // 100 (predicted - measured) / measured, % (NaN when not measured).
  double error_pct = std::numeric_limits<double>::quiet_NaN();
  // 100 (energy_j - measured_energy_j) / measured_energy_j, % (NaN when not measured).
  double energy_error_pct = std::numeric_limits<double>::quiet_NaN();
};

// Predicts every workload at the model's reference pair. `layout` (the GPU description's)
// orders util_frac and must be the model's (else InputError naming `source` and the first
// difference); an unset `power_limit_w` = no limit.
std::vector<AppPrediction> PredictApps(const PowerModel& model,
                                       const std::vector<AppActivity>& apps, const Layout& layout,
                                       std::optional<double> power_limit_w,
                                       const std::string& source);

// workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,duration_s,
// energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,measured_energy_j,energy_error_pct,
// steps,energy_per_step_j,kernel_time_s,measured_f_core_mhz,measured_flags,windows: powers,
// times and energies %.6f, clocks %.6g, capped 0/1; a cell that is unknown (an interval the model
// does not hold; measured_w, error_pct, measured_energy_j, energy_error_pct, measured_f_core_mhz
// without a power log; steps and energy_per_step_j when the program reported none) is empty. The
// first 12 columns (workload .. flags) are the prediction and never depend on the power log.
std::string AppPredictionsToCsv(const std::vector<AppPrediction>& rows);

// workload,predicted_w,static_<domain>_w...,idle_dyn_<domain>_w...,<component>_w...: the
// uncapped model's terms (they sum to uncapped_w; TPDS §4.5), %.6f.
std::string AppBreakdownToCsv(const PowerModel& model, const std::vector<AppPrediction>& rows);

// "12 workloads predicted at 1980 MHz (board limit 700 W): 2 capped, 3 beyond training" and,
// when measured, "measured: 12 of them, MAPE 6.10% (energy MAPE 5.20%)".
std::string AppPredictionSummary(const PowerModel& model, const std::vector<AppPrediction>& rows,
                                 std::optional<double> power_limit_w);

}  // namespace wattcal
