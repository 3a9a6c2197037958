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
#include "perf/what_if.h"

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

// Where each input of a capture prediction came from, for the messages: the model file, the
// first capture directory and the GPU description.
struct CapturePredictionSources {
  std::string model_path;
  std::string capture_dir;
  std::string gpu_path;
};

// The model's GPU against the capture's and the description's: "" when they agree (or either is
// unknown), else the capture's own other_gpu sentence, or the sentence naming both GPUs. A model of
// one GPU predicts another's data wrongly (other static power, other peaks), so a mismatch is an
// InputError (naming the model file, field gpu) unless `allow_other_gpu`, then a warning.
std::string CheckModelGpu(const PowerModel& model, const CaptureReport& capture,
                          const GpuDescription& gpu, const CapturePredictionSources& sources,
                          bool allow_other_gpu);

CapturePrediction PredictCapture(const PowerModel& model, const CaptureReport& capture,
                                 const GpuDescription& gpu,
                                 const CapturePredictionRequest& request);

// The what-ifs of a capture prediction (--at-clock, --at-power-limit; perf/what_if.h) along the
// model's core V-F curve: `settings`' board limit and measured clocks are filled in from
// `prediction`. The curve's source goes to *curve_source when not null.
std::vector<WhatIfRow> PredictCaptureWhatIf(const PowerModel& model,
                                            const CapturePrediction& prediction,
                                            WhatIfSettings settings, std::string* curve_source);

}  // namespace wattcal
