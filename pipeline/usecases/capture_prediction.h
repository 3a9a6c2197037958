// The predict-a-capture use case in memory: a model, the applications' capture (ingested) and the
// GPU description in, the applications' predictions at the model's reference pair out. The
// capture's components are matched to the model's here (optional components either lacks are
// left out or taken as 0, each warned once), the board's power limit resolved (one rule:
// ResolvePowerLimitW) and the rows flagged. wattcal-predict --capture (usecases/predict_stage.h)
// reads, calls PredictCapture and writes; the Python module calls it on what it holds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ingest/capture.h"
#include "io/gpu_description.h"
#include "model/app_prediction.h"
#include "model/power_model.h"

namespace wattcal {

struct CapturePredictionRequest {
  // --power-limit-w: the board's limit (unset: the capture's, else the model's).
  std::optional<double> power_limit_w;
  // The rows' source: the capture directories, ", "-separated.
  std::string source;
  // When not empty, the model's GPU differs from the capture's (this sentence says how): every row
  // is flagged other_gpu.
  std::string other_gpu;
};

struct CapturePrediction {
  // One row per workload, flagged no_model_term:<component> where the model lacks a term the
  // workload uses, and other_gpu (see the request).
  std::vector<AppPrediction> rows;
  // The board's power limit the predictions are capped at (unset: none known).
  std::optional<double> limit_w;
};

CapturePrediction PredictCapture(const PowerModel& model, const CaptureReport& capture,
                                 const GpuDescription& gpu,
                                 const CapturePredictionRequest& request);

}  // namespace wattcal
