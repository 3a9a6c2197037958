// Per-workload error of a validation: one row per held-out workload (benchmark) with its
// measured and predicted power and its signed and absolute percentage error, sorted by the
// absolute error, worst first. Every validation report shows it as a table (wattcal-validate's
// Markdown summary, wattcal-report's index) and as a bar chart (report/validation_plots.h
// WriteWorkloadErrorPlot).
//
// Over the n_w points of workload w (one point for a fixed-frequency validation, one per V-F
// pair for dvfs and scaling), with the definitions of validate/metrics.h:
//   measured_w        = mean_j m_j                     (W)
//   predicted_w       = mean_j p_j                     (W)
//   error_pct         = mean_j 100 (p_j - m_j) / m_j   (signed, %; > 0 over-predicts: the bias)
//   abs_error_pct     = |error_pct|                    (%; the length of the workload's bar)
//   mape_pct          = mean_j |error_j|               (%; the workload's MAPE)
//   max_abs_error_pct = max_j |error_j|                (%)
// For a single point the first four are that point's measured power, prediction, error and
// |error|, and the last two equal abs_error_pct.
#pragma once

#include <string>
#include <vector>

#include "validate/prediction.h"

namespace wattcal {

struct WorkloadError {
  std::string workload;
  int points = 0;
  double measured_w = 0.0;
  double predicted_w = 0.0;
  double error_pct = 0.0;
  double abs_error_pct = 0.0;
  double mape_pct = 0.0;
  double max_abs_error_pct = 0.0;
};

// One entry per workload of `rows`, sorted by abs_error_pct descending (ties: by name).
// Throws std::invalid_argument for a row whose measured power is not > 0 or whose powers are
// not finite (its benchmark and line named).
std::vector<WorkloadError> ComputeWorkloadErrors(const std::vector<PredictionRow>& rows);

// The table as Markdown (header and one line per workload, in the given order):
//   | workload | points | measured W | predicted W | error % | abs error % | MAPE % | max abs error % |
// the last two columns only when some workload has more than one point; powers and errors with 2
// decimals, a sign on the signed error; '|' in a name escaped.
std::string WorkloadErrorsMarkdown(const std::vector<WorkloadError>& errors);

}  // namespace wattcal
