// Putting a validation together: metrics, the JSON document, the terminal table, the
// Markdown summary, and (on synthetic data) how close the calibration came to the truth.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/power_model.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {

// How a calibrated model compares with the model that generated the data.
struct TruthComparison {
  bool present = false;
  // Largest |fitted - true| / true over the component and idle-dynamic coefficients.
  double max_coefficient_rel_error = 0.0;
  std::string worst_coefficient;
  // Total static power sum_k alpha0_k, fitted and true (W). With two domains its split
  // between them is weakly identified (both terms barely change over the V-F pairs), so it
  // is judged as a total.
  double static_total_w = 0.0;
  double true_static_total_w = 0.0;
  // Largest |fitted - true| over every voltage level (normalised units).
  double max_voltage_abs_error = 0.0;
  std::string worst_voltage;
  // The true model's own predictions on the same held-out measurements.
  std::vector<PredictionRow> truth_rows;
  ErrorMetrics truth_metrics;
};

// Compares coefficient by coefficient and level by level (layouts and levels must match;
// throws InputError naming the truth file otherwise).
TruthComparison CompareWithTruth(const PowerModel& fitted, const PowerModel& truth,
                                 std::vector<PredictionRow> truth_rows);

struct ValidationInputs {
  PredictMode mode = PredictMode::kDvfs;
  std::string title;
  std::string source;      // held-out (or cross-validated) measurements
  std::string model_path;  // empty under cross-validation
  std::vector<PredictionRow> rows;
  std::vector<std::vector<std::string>> fold_benchmarks;  // cross-validation only
  TruthComparison truth;
};

struct ValidationReport {
  std::string title;
  ValidationMetrics metrics;
  nlohmann::json json;
  std::string table;
};

ValidationReport SummariseValidation(const ValidationInputs& in,
                                     const MetricsOptions& options = MetricsOptions());

// A Markdown page: inputs, the metrics table, the scatter, the per-workload error table
// (validate/workload_errors.h) with its bar chart when `workload_plot_path` names one (drawn by
// report/validation_plots.h WriteWorkloadErrorPlot), and the per-V-F-pair table. Paths are
// written relative to the summary's folder; empty plot paths are left out.
std::string ValidationMarkdown(const ValidationInputs& in, const ValidationReport& outcome,
                               const std::string& predictions_path, const std::string& metrics_path,
                               const std::string& plot_path, const std::string& summary_path,
                               const std::string& workload_plot_path = "");

}  // namespace wattcal
