#include "usecases/predict_stage.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_model.h"
#include "clocks/vf_model.h"
#include "ingest/capture.h"
#include "io/gpu_description.h"
#include "io/corpus_io.h"
#include "model/activity_prediction.h"
#include "model/app_prediction.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "model/vf_curve.h"
#include "perf/what_if.h"
#include "model/prediction_interval.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/logging.h"
#include "usecases/capture_prediction.h"
#include "util/output.h"

namespace wattcal {

namespace {

// True when `path` is a wattcal-accelwattch-model file (its "format" key says so).
bool IsAccelWattchModel(const std::string& path) {
  const nlohmann::json j = ReadJsonFileOrDiscarded(path);
  return j.is_object() && j.contains("format") && j["format"] == kAccelWattchModelFormat;
}

// The component-table form: AccelWattch Eq. 13's rows under the model's factors.
std::string ComponentPredictionsToCsv(const AccelWattchModel& model, const ComponentTable& table,
                                      bool breakdown) {
  const std::vector<double> power_w = PredictKernelPowerW(model, table);
  std::string s = "kernel,predicted_w,measured_w,error_pct";
  if (breakdown) {
    s += ",const_w,static_w,idle_w,dynamic_w";
    for (const std::string& c : table.components) s += "," + c + "_w";
  }
  s += "\n";
  for (int k = 0; k < table.num_kernels(); ++k) {
    s += fmt::format("{},{:.6f},{:.6f},{:.4f}", CsvField(table.kernels[k]), power_w[k],
                     table.measured_w[k],
                     100.0 * (power_w[k] - table.measured_w[k]) / table.measured_w[k]);
    if (breakdown) {
      double dynamic = 0.0;
      std::string parts;
      for (int i = 0; i < table.num_components(); ++i) {
        const double p = model.x[model.FindComponent(table.components[i])] * table.dynamic_w[k][i];
        dynamic += p;
        parts += fmt::format(",{:.6f}", p);
      }
      s += fmt::format(",{:.6f},{:.6f},{:.6f},{:.6f}{}", table.const_w[k], table.static_w[k],
                       table.idle_w[k], dynamic, parts);
    }
    s += "\n";
  }
  return s;
}

PredictStageReport RunAccelWattch(const PredictStageOptions& o) {
  if (o.mode_given || o.default_core_mhz != 0.0 || o.default_mem_mhz != 0.0 || o.power_limit_w) {
    throw OptionError(
        "--mode, --default-core-mhz, --default-mem-mhz and --power-limit-w are for dvfs and fixed "
        "models; "
        "an AccelWattch model evaluates Eq. 12 at each kernel's pair or --f-core-mhz/--f-mem-mhz");
  }
  const AccelWattchModel model = ReadAccelWattchModel(o.model_path);
  OutputSet outputs;
  nlohmann::json options = {{"model_format", kAccelWattchModelFormat},
                            {"breakdown", o.breakdown},
                            {"f_core_mhz", o.f_core_mhz},
                            {"f_mem_mhz", o.f_mem_mhz},
                            {"active_sms", o.active_sms},
                            {"lanes_per_warp", o.lanes_per_warp}};
  PredictStageReport report;
  if (LooksLikeActivityTable(o.activity_path)) {
    const ActivityTable activity = ReadActivityTable(o.activity_path);
    const std::vector<AccelWattchPrediction> predictions = PredictAccelWattchActivity(
        model, activity, {o.f_core_mhz, o.f_mem_mhz, o.active_sms, o.lanes_per_warp});
    outputs.StageText(o.out_path,
                      AccelWattchPredictionsToCsv(model, activity, predictions, o.breakdown));
    report.rows = predictions.size();
    LogInfo(fmt::format("Eq. 12 for {} kernels at {} configuration(s) each", activity.num_kernels(),
                        activity.num_kernels() ? report.rows / activity.num_kernels() : 0));
  } else {
    if (!o.f_core_mhz.empty() || !o.f_mem_mhz.empty() || !o.active_sms.empty() ||
        !o.lanes_per_warp.empty()) {
      throw OptionError(
          "--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp need an activity table (a "
          "per-kernel component "
          "table holds power at its own clocks only)");
    }
    const ComponentTable table = ReadComponentTable(o.activity_path);
    outputs.StageText(o.out_path, ComponentPredictionsToCsv(model, table, o.breakdown));
    report.rows = table.num_kernels();
  }
  outputs.StageProvenance(o.out_path, "predict", {o.model_path, o.activity_path}, options);
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(fmt::format("wrote {} predictions to {}", report.rows, o.out_path));
  return report;
}

// --vf-curve: a wattcal-clocks vf_model.json's voltages up to its reference clock, which must be
// the model's reference core clock (InputError naming the file otherwise).
VfCurve CurveFromVfModel(const std::string& path, const PowerModel& model) {
  const VfModel vf = VfModelFromJson(ReadJsonFile(path, "V-F model"), path);
  const double reference = model.layout.domains[0].default_freq_mhz;
  if (vf.reference_mhz != reference) {
    throw InputError(path, 0, "reference_mhz",
                     fmt::format("the curve's reference clock is {} MHz, the model's core clock {} "
                                 "MHz: a curve of another GPU or setting",
                                 vf.reference_mhz, reference));
  }
  VfCurve curve;
  for (size_t i = 0; i < vf.clocks_mhz.size() && vf.clocks_mhz[i] <= reference; ++i) {
    curve.levels_mhz.push_back(vf.clocks_mhz[i]);
    curve.v_rel.push_back(vf.v_rel[i]);
  }
  const std::string problem = curve.Problem();
  if (!problem.empty()) throw InputError(path, 0, "voltages", problem);
  curve.source =
      fmt::format("wattcal-clocks' voltages in {} ({} clocks, {:.0f} to {:.0f} MHz)", path,
                  curve.levels_mhz.size(), curve.lowest_mhz(), curve.reference_mhz());
  return curve;
}

bool WantsWhatIf(const PredictStageOptions& o) {
  return !o.at_clock_mhz.empty() || !o.at_power_limit_w.empty();
}

// --at-clock / --at-power-limit: the what-if table, staged in `outputs` with its provenance.
void StageWhatIf(const PredictStageOptions& o, const PowerModel& model,
                 const CapturePrediction& prediction, const std::vector<std::string>& inputs,
                 nlohmann::json manifest_options, OutputSet* outputs) {
  WhatIfSettings settings;
  settings.clocks_mhz = o.at_clock_mhz;
  settings.limits_w = o.at_power_limit_w;
  if (o.max_slowdown_pct >= 0.0) settings.max_slowdown_pct = o.max_slowdown_pct;
  if (!o.crisp_counters_path.empty()) settings.crisp = ReadCrispCounters(o.crisp_counters_path);
  std::string curve_source;
  const std::vector<WhatIfRow> what_if =
      PredictCaptureWhatIf(model, prediction, settings, &curve_source);
  LogInfo("what-if V-F curve: " + curve_source);
  manifest_options["vf_curve_source"] = curve_source;
  manifest_options["at_clock_mhz"] = o.at_clock_mhz;
  manifest_options["at_power_limit_w"] = o.at_power_limit_w;
  if (o.max_slowdown_pct >= 0.0) manifest_options["max_slowdown_pct"] = o.max_slowdown_pct;
  std::vector<std::string> what_if_inputs = inputs;
  if (!o.vf_curve_path.empty()) what_if_inputs.push_back(o.vf_curve_path);
  if (!o.crisp_counters_path.empty()) what_if_inputs.push_back(o.crisp_counters_path);
  const std::string label = !o.vf_curve_path.empty()
                                ? "vf_model:" + o.vf_curve_path
                                : (model.vf_curve.known() ? "model_vf_curve:" + o.model_path
                                                          : "model_voltages:" + o.model_path);
  outputs->StageText(o.what_if_out_path, WhatIfToCsv(what_if, label));
  outputs->StageProvenance(o.what_if_out_path, "predict", what_if_inputs, manifest_options,
                           "what_if");
}

// --capture: the applications' workloads from their counters, predicted at the model's
// reference pair, with their measured power where the capture has a log.
PredictStageReport RunCapture(const PredictStageOptions& o) {
  PowerModel model = ReadModel(o.model_path);
  if (!o.vf_curve_path.empty()) model.vf_curve = CurveFromVfModel(o.vf_curve_path, model);
  CaptureOptions capture_options;
  capture_options.require_power_log = false;
  capture_options.allow_other_gpu = o.allow_other_gpu;
  // An ncu description, or a field set (the capture's gpm_fields.csv).
  const CaptureReport capture = IngestCapturesDescribedBy(o.captures, o.gpu_path, capture_options);
  const GpuDescription gpu = PredictionDescription(capture, o.gpu_path);
  for (const std::string& w : capture.warnings) LogWarning(w);
  const std::string other_gpu = CheckModelGpu(
      model, capture, gpu, {o.model_path, o.captures.front(), o.gpu_path}, o.allow_other_gpu);
  CapturePredictionRequest request;
  request.power_limit_w = o.power_limit_w;
  for (const std::string& d : o.captures)
    request.source += (request.source.empty() ? "" : ", ") + d;
  request.other_gpu = other_gpu;
  const CapturePrediction prediction = PredictCapture(model, capture, gpu, request);
  const std::vector<AppPrediction>& rows = prediction.rows;
  const std::optional<double> limit_w = prediction.limit_w;

  OutputSet outputs;
  std::vector<std::string> inputs = {o.model_path, o.gpu_path};
  inputs.insert(inputs.end(), capture.inputs.begin(), capture.inputs.end());
  for (const std::string& path : capture.inputs)
    RegisterInputFile("--capture", path);  // at any depth
  nlohmann::json manifest_options = {{"capture", o.captures},
                                     {"gpu", o.gpu_path},
                                     {"reference_f_core_mhz", rows.front().prediction.freq_mhz[0]}};
  if (limit_w) manifest_options["power_limit_w"] = *limit_w;
  if (!other_gpu.empty()) manifest_options["other_gpu"] = other_gpu;
  outputs.StageText(o.out_path, AppPredictionsToCsv(rows));
  outputs.StageProvenance(o.out_path, "predict", inputs, manifest_options, "apps_predictions");
  if (!o.breakdown_out_path.empty()) {
    outputs.StageText(o.breakdown_out_path, AppBreakdownToCsv(model, rows));
    outputs.StageProvenance(o.breakdown_out_path, "predict", inputs, manifest_options,
                            "apps_breakdown");
  }
  if (WantsWhatIf(o)) StageWhatIf(o, model, prediction, inputs, manifest_options, &outputs);
  outputs.Commit();
  PredictStageReport report;
  report.written = outputs.Outputs();
  report.rows = rows.size();
  double sum = 0.0;
  for (const AppPrediction& p : rows) {
    if (!std::isfinite(p.error_pct)) continue;
    ++report.measured;
    sum += std::fabs(p.error_pct);
  }
  if (report.measured > 0) report.measured_mape_pct = sum / static_cast<double>(report.measured);
  LogInfo(AppPredictionSummary(model, rows, limit_w));
  LogInfo(fmt::format("wrote {}{}", o.out_path,
                      o.breakdown_out_path.empty() ? "" : " and " + o.breakdown_out_path));
  return report;
}

// One warning naming the rows predicted at the reference pair although their own clock lies
// outside the model's levels (flagged clock_beyond_model); "" when none is.
std::string ClockBeyondModelWarning(const PowerModel& model, const Corpus& activity,
                                    const std::vector<ActivityPrediction>& rows) {
  std::vector<std::string> named;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].flags.find(kPredictionFlagClockBeyondModel) == std::string::npos) continue;
    const int r = static_cast<int>(i);  // --mode fixed: one prediction per row
    named.push_back(fmt::format("{} (line {}, {} MHz)", rows[i].benchmark, activity.line[i],
                                activity.freq_mhz(r, 0)));
  }
  if (named.empty()) return "";
  std::string levels;
  for (size_t d = 0; d < model.freq_levels_mhz.size(); ++d) {
    levels += fmt::format("{}{} {}-{} MHz", d > 0 ? ", " : "", model.layout.domains[d].name,
                          model.freq_levels_mhz[d].front(), model.freq_levels_mhz[d].back());
  }
  return fmt::format(
      "{}: {} row(s) ran at a clock outside the model's levels ({}) and are predicted at its "
      "reference pair ({} MHz) instead, flagged {}: {}",
      activity.path, named.size(), levels, rows.front().freq_mhz[0],
      kPredictionFlagClockBeyondModel, fmt::join(named, ", "));
}

}  // namespace

void PredictStageOptions::Check() const {
  if (model_path.empty()) throw OptionError("--model is required");
  if (!captures.empty()) {
    if (!activity_path.empty()) throw OptionError("--capture and --activity: give one of them");
    if (gpu_path.empty()) {
      throw OptionError(
          "--capture needs --gpu DESC.json (microbench_specs/gpus/*.json): it turns the counters "
          "into utilisations");
    }
    if (mode_given || breakdown || default_core_mhz != 0.0 || default_mem_mhz != 0.0 ||
        !f_core_mhz.empty() || !f_mem_mhz.empty() || !active_sms.empty() ||
        !lanes_per_warp.empty()) {
      throw OptionError(
          "--capture predicts every workload at the model's reference pair: --mode, --breakdown "
          "(use --breakdown-out FILE), --default-core-mhz, --default-mem-mhz and the AccelWattch "
          "what-ifs do not apply");
    }
    const bool what_if = !at_clock_mhz.empty() || !at_power_limit_w.empty();
    if (what_if != !what_if_out_path.empty()) {
      throw OptionError(
          "--at-clock / --at-power-limit and --what-if-out FILE go together (the what-if table "
          "is written there)");
    }
    if (!what_if && (max_slowdown_pct >= 0.0 || !crisp_counters_path.empty())) {
      throw OptionError(
          "--max-slowdown-pct and --crisp-counters go with --at-clock or --at-power-limit");
    }
    for (double f : at_clock_mhz) {
      if (!(f > 0.0 && f <= 10000.0))
        throw OptionError(fmt::format("--at-clock {} must lie in (0, 10000] MHz", f));
    }
    for (double w : at_power_limit_w) {
      if (!(w > 0.0 && w <= 10000.0))
        throw OptionError(fmt::format("--at-power-limit {} must lie in (0, 10000] W", w));
    }
  } else {
    if (activity_path.empty()) throw OptionError("--activity (or --capture) is required");
    if (!at_clock_mhz.empty() || !at_power_limit_w.empty() || !what_if_out_path.empty() ||
        !vf_curve_path.empty() || max_slowdown_pct >= 0.0 || !crisp_counters_path.empty()) {
      throw OptionError(
          "--at-clock, --at-power-limit, --what-if-out, --vf-curve, --max-slowdown-pct and "
          "--crisp-counters go with --capture");
    }
    if (!gpu_path.empty()) throw OptionError("--gpu goes with --capture");
    if (allow_other_gpu) throw OptionError("--allow-other-gpu goes with --capture");
    if (!breakdown_out_path.empty())
      throw OptionError("--breakdown-out goes with --capture (use --breakdown)");
  }
  if (out_path.empty()) throw OptionError("--out is required");
  if (mode != PredictMode::kDvfs && mode != PredictMode::kFixed) {
    throw OptionError(std::string("--mode '") + PredictModeName(mode) +
                      "': expected dvfs or fixed");
  }
  CorpusReadOptions read_options;
  read_options.default_core_mhz = default_core_mhz;
  read_options.default_mem_mhz = default_mem_mhz;
  std::string error;
  if (!read_options.Check(&error)) throw OptionError(error);
  if (power_limit_w && !(*power_limit_w > 0.0 && *power_limit_w <= 10000.0)) {
    throw OptionError(
        fmt::format("--power-limit-w = {} must lie in (0, 10000] W (unset: the "
                    "activity's, else the model's)",
                    *power_limit_w));
  }
}

PredictStageReport RunPredictStage(const PredictStageOptions& o) {
  o.Check();
  if (!o.captures.empty()) {
    if (IsAccelWattchModel(o.model_path)) {
      throw OptionError("--capture takes a dvfs or fixed model (wattcal-calibrate); " +
                        o.model_path + " is an AccelWattch model");
    }
    return RunCapture(o);
  }
  if (IsAccelWattchModel(o.model_path)) return RunAccelWattch(o);
  if (!o.f_core_mhz.empty() || !o.f_mem_mhz.empty() || !o.active_sms.empty() ||
      !o.lanes_per_warp.empty()) {
    throw OptionError(
        "--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp are for AccelWattch models "
        "(a dvfs model predicts at "
        "each row's pair, or at every pair of the model with --mode dvfs)");
  }
  CorpusReadOptions read_options;
  read_options.default_core_mhz = o.default_core_mhz;
  read_options.default_mem_mhz = o.default_mem_mhz;
  const PowerModel model = ReadModel(o.model_path);
  const Corpus activity = ReadCorpus(o.activity_path, read_options);
  const std::optional<double> limit_w =
      ResolvePowerLimitW(o.power_limit_w, activity.power_limit_w, model.power_limit_w);
  const std::vector<ActivityPrediction> rows =
      PredictActivityRows(model, activity, o.mode == PredictMode::kFixed, o.power_limit_w);
  OutputSet outputs;
  outputs.StageText(o.out_path, ActivityPredictionsToCsv(model, rows, o.breakdown));
  nlohmann::json manifest_options = {{"mode", PredictModeName(o.mode)},
                                     {"breakdown", o.breakdown},
                                     {"default_core_mhz", o.default_core_mhz},
                                     {"default_mem_mhz", o.default_mem_mhz}};
  if (limit_w) manifest_options["power_limit_w"] = *limit_w;
  outputs.StageProvenance(o.out_path, "predict", {o.model_path, o.activity_path}, manifest_options);
  outputs.Commit();
  LogInfo(fmt::format("wrote {} predictions for {} benchmarks to {}", rows.size(),
                      activity.Benchmarks().size(), o.out_path));
  PredictStageReport report;
  report.written = outputs.Outputs();
  report.rows = rows.size();
  return report;
}

std::vector<ActivityPrediction> PredictActivityRows(const PowerModel& model, const Corpus& activity,
                                                    bool fixed,
                                                    std::optional<double> power_limit_w) {
  const std::optional<double> limit_w =
      ResolvePowerLimitW(power_limit_w, activity.power_limit_w, model.power_limit_w);
  const std::string below = PowerLimitBelowIdleWarning(model, limit_w);
  if (!below.empty()) LogWarning(below);
  std::vector<ActivityPrediction> rows = PredictActivity(model, activity, fixed, limit_w);
  const std::string extrapolation = ActivityExtrapolationWarning(rows);
  if (!extrapolation.empty()) LogWarning(extrapolation);
  const std::string off_clock = ClockBeyondModelWarning(model, activity, rows);
  if (!off_clock.empty()) LogWarning(off_clock);
  return rows;
}

}  // namespace wattcal
