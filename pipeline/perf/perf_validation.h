// Predicted vs. actual run times across core frequencies, per run-time model: the MAPE
// overall, per target frequency (CRISP's Fig. 8) and per kernel (Fig. 9).
//
// Over the points of one group, with actual time a and predicted time p:
//   error = 100 (p - a) / a (%, > 0 over-predicts), APE = |error|, MAPE = mean APE.
// A kernel's points at its own base frequency are left out of every statistic: every model
// returns the measured time there (s = 1), so they would only dilute the errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/crisp_counters.h"
#include "perf/perf_models.h"

namespace wattcal {

struct TimeErrorSummary {
  int points = 0;
  double mape_pct = 0.0;
  double max_ape_pct = 0.0;
  double mean_error_pct = 0.0;  // bias
};

struct TimeErrorPoint {
  std::string kernel;
  std::string model;
  double target_mhz = 0.0;
  double predicted_time_s = 0.0;
  double actual_time_s = 0.0;
  bool at_base = false;  // left out of the statistics

  double error_pct() const { return 100.0 * (predicted_time_s - actual_time_s) / actual_time_s; }
};

struct ModelValidation {
  std::string model;
  TimeErrorSummary overall;
  std::vector<std::pair<double, TimeErrorSummary>> per_target;       // ascending frequency
  std::vector<std::pair<std::string, TimeErrorSummary>> per_kernel;  // counters' order
};

struct PerfValidationReport {
  std::vector<TimeErrorPoint> points;   // prediction order
  std::vector<ModelValidation> models;  // prediction order
};

// Joins predictions with actual times (same kernel, same frequency). Predictions without an
// actual time are left out. Throws InputError naming `actual_path` when no prediction outside
// the base frequencies has an actual time to compare with.
PerfValidationReport ValidateTimes(const std::vector<TimePrediction>& predictions,
                                   const std::vector<CrispCounters>& counters,
                                   const std::vector<ActualTime>& actual,
                                   const std::string& actual_path);

// {"excluded": "...", "models": [{"model", "points", "mape_pct", "max_ape_pct",
//   "mean_error_pct", "per_target": [{"target_mhz", ...}], "per_kernel": [{"kernel", ...}]}]}
void to_json(nlohmann::json& j, const PerfValidationReport& v);
// One model's errors: its overall summary's keys, model, per_target and per_kernel rows.
void to_json(nlohmann::json& j, const ModelValidation& m);
// points, mape_pct, max_ape_pct, mean_error_pct.
void to_json(nlohmann::json& j, const TimeErrorSummary& s);

// kernel,model,target_mhz,predicted_time_s,actual_time_s,error_pct,at_base
std::string TimeErrorsToCsv(const PerfValidationReport& v);

// MAPE per model (rows) and target frequency (columns), for the terminal.
std::string FormatPerfValidation(const PerfValidationReport& v);

}  // namespace wattcal
