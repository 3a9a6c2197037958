// Predicting the power of (previously unseen) applications from their activity
// (TPDS §3.5, Fig. 6), with the per-component breakdown of §4.5.
#pragma once

#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

struct ActivityPrediction {
  std::string benchmark;
  std::vector<double> freq_mhz;  // per domain
  double predicted_w = 0.0;
  PowerBreakdown breakdown;
};

// Predicts every row of `activity`:
//  * fixed = true: at the model's reference pair (its single level for a fixed model, the
//    default pair for a DVFS model);
//  * fixed = false and the file has frequencies: at each row's own V-F pair;
//  * fixed = false and no frequencies (a gpmTOOL prediction file: utilisations measured at the
//    default pair): at every V-F pair of the model, highest frequencies first.
// Throws InputError naming the activity file when the layouts differ or a row's frequency
// lies outside the model's estimated range.
std::vector<ActivityPrediction> PredictActivity(const PowerModel& model, const Corpus& activity,
                                                bool fixed);

// CSV: benchmark,f_core_mhz[,f_mem_mhz],predicted_w and, with `breakdown`, one column per
// term: static_<domain>_w, idle_dyn_<domain>_w, <component>_w.
std::string ActivityPredictionsToCsv(const PowerModel& model,
                                     const std::vector<ActivityPrediction>& rows, bool breakdown);

}  // namespace wattcal
