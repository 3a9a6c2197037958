// Predicting the power of (previously unseen) applications from their activity
// (TPDS §3.5, Fig. 6), with the per-component breakdown of TPDS §4.5.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

struct ActivityPrediction {
  std::string benchmark;
  std::vector<double> freq_mhz;  // per domain
  // min(uncapped_w, the board's limit), W.
  double predicted_w = 0.0;
  // The model's power at freq_mhz, W (the breakdown sums to it).
  double uncapped_w = 0.0;
  // The 95% prediction interval of predicted_w, W (model/prediction_interval.h); NaN when the
  // model holds none (a DVFS model, a fixed one without --bootstrap, a ported one).
  double predicted_w_lo = std::numeric_limits<double>::quiet_NaN();
  double predicted_w_hi = std::numeric_limits<double>::quiet_NaN();
  // uncapped_w exceeded the board's power limit.
  bool capped = false;
  // When capped: the core clock on the model's V-F curve where P meets the limit, MHz (NaN for
  // a fixed model or when no estimated clock meets it).
  double capped_f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  // capped;clock_beyond_model:<domain>;util_beyond_training:<component>;power_beyond_training
  // (model/power_limit.h);extrapolates:<component> (model/component_trust.h).
  std::string flags;
  // The extrapolation warning of this row; "" when within the training range.
  std::string extrapolation_note;
  PowerBreakdown breakdown;
};

// Predicts every row of `activity`:
//  * fixed = true: at the model's reference pair (its single level for a fixed model, the
//    default pair for a DVFS model); a row whose own clock lies outside the model's levels is
//    flagged clock_beyond_model:<domain>;
//  * fixed = false and the file has frequencies: at each row's own V-F pair;
//  * fixed = false and no frequencies (a gpmTOOL prediction file: utilisations measured at the
//    default pair): at every V-F pair of the model, highest frequencies first.
// Each prediction is then capped by `power_limit_w` (unset: no limit), P = min(P_model, limit),
// flagged when beyond the model's training range or resting on a component it extrapolates
// (ExtrapolatesFlags), and, at the model's reference pair, given its 95% prediction interval
// when the model holds one (PredictionInterval95).
// Throws InputError naming the activity file when the layouts differ or a row's frequency
// lies outside the model's estimated range.
std::vector<ActivityPrediction> PredictActivity(const PowerModel& model, const Corpus& activity,
                                                bool fixed,
                                                std::optional<double> power_limit_w = std::nullopt);

// CSV: benchmark,f_core_mhz[,f_mem_mhz],predicted_w[,predicted_w_lo,predicted_w_hi when any row
// has an interval, a cell empty where unknown],uncapped_w,capped,capped_f_core_mhz
// (capped 0/1, always 0 when the rows were predicted without a limit; the clock empty when
// unknown), flags when any
// row has flags, and, with `breakdown`, one column per term: static_<domain>_w,
// idle_dyn_<domain>_w, <component>_w (they sum to uncapped_w).
std::string ActivityPredictionsToCsv(const PowerModel& model,
                                     const std::vector<ActivityPrediction>& rows, bool breakdown);

// One warning naming every prediction beyond the training range; "" when none is.
std::string ActivityExtrapolationWarning(const std::vector<ActivityPrediction>& rows);

}  // namespace wattcal
