#include "usecases/capture_prediction.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ingest/capture_gpu.h"
#include "model/power_limit.h"
#include "model/prediction_interval.h"
#include "model/vf_curve.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

namespace {

// The workloads of `capture` in the model's components. The optional components of the
// description (TENSOR INT, DMMA) may differ between the two: one the model has no term for (it was
// trained on a capture without the metric) is left out, and each workload that uses it
// (utilisation above 0.001) is flagged no_model_term:<component>, its prediction lacking that power;
// one the capture has no metric for is taken as 0 for every workload. Each case is warned once. A
// required component that differs stays a layout mismatch (PredictApps refuses it).
struct ModelWorkloads {
  std::vector<AppActivity> apps;
  GpuDescription gpu;
  std::map<std::string, std::string> flags;  // workload -> its no_model_term flags
};

ModelWorkloads WorkloadsForModel(const PowerModel& model, const CaptureReport& capture,
                                 const GpuDescription& description) {
  const std::vector<std::string> in_model = model.layout.ComponentNames();
  auto has = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::string> optional_not_in_model;
  for (const ComponentCounters& c : description.components) {
    if (c.optional && !has(in_model, c.component)) optional_not_in_model.push_back(c.component);
  }
  ModelWorkloads w{capture.Workloads(), description.Without(optional_not_in_model), {}};
  std::vector<std::string> in_capture;
  for (const ComponentCounters& c : capture.gpu.components) in_capture.push_back(c.component);
  for (size_t j = 0; j < in_capture.size(); ++j) {
    if (!has(optional_not_in_model, in_capture[j])) continue;
    const std::string& name = in_capture[j];
    std::vector<std::string> users;
    double max_u = 0.0;
    for (const AppActivity& a : w.apps) {
      const double u = j < a.util_frac.size() ? a.util_frac[j] : 0.0;
      if (!(u > 1e-3)) continue;
      users.push_back(a.workload);
      max_u = std::max(max_u, u);
      std::string& f = w.flags[a.workload];
      f += (f.empty() ? "" : ";") + ("no_model_term:" + name);
    }
    LogWarning(fmt::format(
        "the model has no {} term (it was trained on a capture without the component's metric): {} "
        "left out of "
        "the prediction{}",
        name, name,
        users.empty() ? "; no workload uses it"
                      : fmt::format("; {} workload(s) use it (up to utilisation {:.3f}: {}), "
                                    "flagged no_model_term:{}, "
                                    "their predictions lack its power",
                                    users.size(), max_u, fmt::join(users, ", "), name)));
  }
  // Each target component's column in the capture's utilisations (-1: the capture lacks it).
  std::vector<int> column;
  for (const ComponentCounters& c : w.gpu.components) {
    const auto it = std::find(in_capture.begin(), in_capture.end(), c.component);
    column.push_back(it == in_capture.end() ? -1 : static_cast<int>(it - in_capture.begin()));
    if (it == in_capture.end() && c.optional) {
      LogWarning(fmt::format(
          "the capture has no {} metric (its ncu did not collect it): {} utilisation taken as 0 "
          "for every workload, so their {} power is not predicted",
          c.component, c.component, c.component));
    }
  }
  for (AppActivity& a : w.apps) {
    std::vector<double> u;
    for (int col : column)
      u.push_back(col >= 0 && col < static_cast<int>(a.util_frac.size()) ? a.util_frac[col] : 0.0);
    a.util_frac = u;
  }
  return w;
}

}  // namespace

CapturePrediction PredictCapture(const PowerModel& model, const CaptureReport& capture,
                                 const GpuDescription& gpu,
                                 const CapturePredictionRequest& request) {
  CapturePrediction out;
  out.limit_w =
      ResolvePowerLimitW(request.power_limit_w, capture.power_limit_w, model.power_limit_w);
  const std::string below = PowerLimitBelowIdleWarning(model, out.limit_w);
  if (!below.empty()) LogWarning(below);
  const std::string no_interval = NoPredictionIntervalReason(model);
  if (!no_interval.empty()) LogWarning(no_interval);
  const ModelWorkloads workloads = WorkloadsForModel(model, capture, gpu);
  out.rows =
      PredictApps(model, workloads.apps, workloads.gpu.ToLayout(), out.limit_w, request.source);
  for (AppPrediction& p : out.rows) {
    std::string& f = p.prediction.flags;
    const auto it = workloads.flags.find(p.app.workload);
    if (it != workloads.flags.end()) f += (f.empty() ? "" : ";") + it->second;
    if (!request.other_gpu.empty())
      f += (f.empty() ? "" : ";") + std::string(kPredictionFlagOtherGpu);
  }
  std::vector<std::string> notes;
  for (const AppPrediction& p : out.rows) notes.push_back(p.prediction.extrapolation_note);
  const std::string extrapolation = ExtrapolationWarningFromNotes(notes);
  if (!extrapolation.empty()) LogWarning(extrapolation);
  return out;
}

namespace {

// The model's GPU against the capture's and the description's: "" when they agree (or either is
// unknown), else the sentence naming both.
std::string ModelGpuMismatch(const PowerModel& model, const CaptureReport& capture,
                             const GpuDescription& gpu, const CapturePredictionSources& sources) {
  if (model.gpu.empty()) return "";
  const CaptureGpu& on = capture.recorded_on;
  if (!on.name.empty() && !SameGpuProduct(model.gpu, on.name)) {
    return fmt::format(
        "the model {} was trained on data of {}, but the capture {} was recorded on {}",
        sources.model_path, model.gpu, sources.capture_dir, DescribeCaptureGpu(on));
  }
  if (!DescriptionDescribes(gpu, model.gpu)) {
    return fmt::format(
        "the model {} was trained on data of {}, but the GPU description {} is of '{}'",
        sources.model_path, model.gpu, sources.gpu_path, gpu.name);
  }
  return "";
}

}  // namespace

std::string CheckModelGpu(const PowerModel& model, const CaptureReport& capture,
                          const GpuDescription& gpu, const CapturePredictionSources& sources,
                          bool allow_other_gpu) {
  const std::string other_gpu = ModelGpuMismatch(model, capture, gpu, sources);
  if (!other_gpu.empty() && !allow_other_gpu) {
    throw InputError(sources.model_path, 0, "gpu",
                     other_gpu +
                         ": a model predicts the GPU it was trained on only. Use that "
                         "GPU's model, or --allow-other-gpu to predict anyway (every row "
                         "then flagged " +
                         std::string(kPredictionFlagOtherGpu) + ")");
  }
  if (!other_gpu.empty()) LogWarning(other_gpu + ": predicted anyway (--allow-other-gpu)");
  return other_gpu.empty() ? capture.other_gpu : other_gpu;
}

std::vector<WhatIfRow> PredictCaptureWhatIf(const PowerModel& model,
                                            const CapturePrediction& prediction,
                                            WhatIfSettings settings, std::string* curve_source) {
  settings.board_limit_w = prediction.limit_w;
  for (const AppPrediction& p : prediction.rows) {
    if (std::isfinite(p.app.measured_f_core_mhz))
      settings.measured_f_core_mhz[p.app.workload] = p.app.measured_f_core_mhz;
  }
  const VfCurve curve = CoreCurveOf(model);
  if (curve_source != nullptr) *curve_source = curve.source;
  return PredictWhatIf(model, curve, prediction.rows, settings);
}

}  // namespace wattcal
