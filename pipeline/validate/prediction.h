// Predicting held-out measurements with a calibrated model in the three modes of TPDS §4.2-4.4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

enum class PredictMode {
  kDvfs,     // P_model(U, f) at every row's V-F pair (TPDS §4.3)
  kFixed,    // P_model(U) at the model's reference pair, rows at that pair only (TPDS §4.2, Eq. 9)
  kScaling,  // P_model(f2)/P_model(f1) * P_meas(f1), f1 = default pair (TPDS Eq. 10)
};

const char* PredictModeName(PredictMode mode);
// Parses "dvfs" | "fixed" | "scaling"; false otherwise.
bool ParsePredictMode(const std::string& text, PredictMode* mode);

// One held-out point, measured vs. predicted.
struct PredictionRow {
  std::string benchmark;
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;   // 0 for single-domain GPUs
  double measured_w = 0.0;
  double predicted_w = 0.0;
  int fold = -1;            // cross-validation fold, -1 outside CV
  int64_t line = 0;         // line of the measurement in its file

  double error_pct() const { return 100.0 * (predicted_w - measured_w) / measured_w; }
};

// Predicts every row of `heldout` that `mode` applies to. Throws InputError (naming the
// held-out file, the row's line and the field) when the layouts differ, a frequency lies
// outside the model's estimated range, or (scaling) a benchmark has no row at the default pair.
std::vector<PredictionRow> PredictHeldout(const PowerModel& model, const Corpus& heldout,
                                          PredictMode mode);

}  // namespace wattcal
