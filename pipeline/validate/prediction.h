// Predicting held-out measurements with a calibrated model in the three modes of TPDS §4.2-4.4.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

enum class PredictMode {
  kDvfs,     // P_model(U, f) at every row's V-F pair (TPDS §4.3)
  kFixed,    // P_model(U) at the model's reference pair (TPDS §4.2, Eq. 9): rows at that pair,
             // and a workload measured only off it (throttled) at that pair, then capped
  kScaling,  // P_model(f2)/P_model(f1) * P_meas(f1), f1 = default pair (TPDS Eq. 10)
};

const char* PredictModeName(PredictMode mode);

// One held-out point, measured vs. predicted.
struct PredictionRow {
  std::string benchmark;
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;  // 0 for single-domain GPUs
  double measured_w = 0.0;
  double predicted_w = 0.0;
  int fold = -1;     // cross-validation fold, -1 outside CV
  int64_t line = 0;  // line of the measurement in its file
  // The model's power before the board's power limit, W (= predicted_w when not capped).
  double uncapped_w = 0.0;
  // uncapped_w exceeded the power limit: predicted_w = the limit (model/power_limit.h).
  bool capped = false;
  // The clock the prediction holds for, MHz: the solved core clock where P(f) meets the
  // limit when capped (NaN when it cannot be solved: fixed model), else the evaluated clock.
  double f_run_core_mhz = std::numeric_limits<double>::quiet_NaN();
  // The measurement was flagged power_cap in the corpus.
  bool measured_capped = false;
  // Prediction flags, semicolon-separated (capped, predicted_at_reference_clock,
  // util_beyond_training:<component>, power_beyond_training); "" for none.
  std::string flags;
  // The extrapolation warning for this row (model/power_limit.h ExtrapolationMessage); "".
  std::string extrapolation_note;
  // The measured table's duration_s and energy_j (a per-workload table: its windows as they
  // ran, no settle trim); NaN when the table has none.
  double duration_s = std::numeric_limits<double>::quiet_NaN();
  double measured_energy_j = std::numeric_limits<double>::quiet_NaN();

  double error_pct() const { return 100.0 * (predicted_w - measured_w) / measured_w; }
  // predicted_w x duration_s, J, and its error against measured_energy_j, % (NaN when unknown).
  double predicted_energy_j() const { return predicted_w * duration_s; }
  double energy_error_pct() const {
    return 100.0 * (predicted_energy_j() - measured_energy_j) / measured_energy_j;
  }
};

// Predicts the rows of `heldout` so that every workload gets at least one row:
//  * dvfs: each row at its own V-F pair;
//  * fixed: each row at the model's reference pair; a workload with rows at that pair keeps
//    only those, a workload measured only off it (throttled: power cap, clock moved) is
//    predicted at the reference pair from each of its rows (flag predicted_at_reference_clock);
//  * scaling: TPDS Eq. 10 anchored at the workload's row at the default pair.
// A row flagged power_cap or clock_moved that dvfs cannot evaluate (its clock outside the
// model's levels) or scaling cannot anchor is predicted at the reference pair instead
// (flagged). Then the board's limit applies: P = min(P_model, power_limit_w) (unset: no
// limit), with uncapped_w, capped and the solved core clock; and the extrapolation flags.
// Throws InputError (naming the held-out file, the row's line, the field and the workload)
// when the layouts differ, or an unflagged row's frequency lies outside the model's
// estimated range, or (scaling) an unflagged workload has no row at the default pair.
std::vector<PredictionRow> PredictHeldout(const PowerModel& model, const Corpus& heldout,
                                          PredictMode mode,
                                          std::optional<double> power_limit_w = std::nullopt);

// One warning naming every row whose prediction lies beyond the training range (up to 10
// listed, then a count); "" when none does.
std::string ExtrapolationWarning(const std::vector<PredictionRow>& rows);

// One row per workload: the mean of its rows at the model's reference pair (else of all its
// rows; one row for most workloads, several for one measured in several windows), flags and
// the clock of the first of them:
//   workload,measured_w,predicted_w,uncapped_w,capped,error_pct,measured_capped,f_core_mhz,flags
// powers and error as %.6f, capped/measured_capped 0 or 1, f_core_mhz (the clock the
// prediction holds for, see PredictionRow::f_run_core_mhz) as %.6g or empty when unknown.
std::string AppsPredictionsToCsv(const std::vector<PredictionRow>& rows,
                                 const std::vector<double>& reference_pair_mhz);

}  // namespace wattcal
