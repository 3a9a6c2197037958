// Validating AccelWattch scaling-factor models on per-kernel tables (MICRO'21 §6-7: MAPE with
// its 95% confidence interval, Pearson r), through wattcal's own metric code.
//
//   published  x = 1 on a table: AccelWattch's own model, whose totals are the sheet's
//   model      a fitted model (AccelWattchModel file) on a held-out table
//   loko       leave-one-kernel-out re-estimation of the factors on one table
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"
#include "validate/metrics.h"
#include "validate/validation_report.h"

namespace wattcal {

struct AccelWattchValidationRequest {
  // The table to validate on: --components (published, loko) or --heldout (model).
  std::string table_path;
  // A fitted model to validate; empty for the published model and for loko.
  std::string model_path;
  // Leave-one-kernel-out re-estimation on table_path.
  bool loko = false;
  // The fit inside every loko fold.
  AccelWattchFitOptions fit;
  std::string title;
};

struct AccelWattchValidationReport {
  std::string variant;  // "published", "model" or "loko"
  std::vector<PredictionRow> rows;
  std::vector<std::string> inputs;  // files read, for manifests
  ValidationReport outcome;         // metrics, JSON and terminal table
};

// Reads the inputs, predicts, and summarises with ComputeValidationMetrics / MetricsToJson /
// FormatMetricsTable under `metrics`. The JSON drops "per_freq_pair" (the tables hold one
// unrecorded default clock; prediction rows carry frequencies 0) and adds "mode": "accelwattch", "variant", "title",
// "measurements", "model" (model only), "components" and, for loko, "cv": "loko",
// "prior_weight", "max_constraint_violation" and every fold's factors
// ("fold_x": [{"kernel", "x": [...]}, ...]); with a published table whose sim_total_W disagrees
// with its columns, "published_total_mismatches". Throws as the readers and the fit do.
AccelWattchValidationReport RunAccelWattchValidation(const AccelWattchValidationRequest& request,
                                                     const MetricsOptions& metrics);

}  // namespace wattcal
