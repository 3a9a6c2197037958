#include "stage/predict_stage.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_model.h"
#include "io/corpus_io.h"
#include "model/activity_prediction.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

namespace {

// True when `path` is a wattcal-accelwattch-model file (its "format" key says so).
bool IsAccelWattchModel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
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
    s += fmt::format("{},{:.6f},{:.6f},{:.4f}", CsvField(table.kernels[k]), power_w[k], table.measured_w[k],
                     100.0 * (power_w[k] - table.measured_w[k]) / table.measured_w[k]);
    if (breakdown) {
      double dynamic = 0.0;
      std::string parts;
      for (int i = 0; i < table.num_components(); ++i) {
        const double p = model.x[model.FindComponent(table.components[i])] * table.dynamic_w[k][i];
        dynamic += p;
        parts += fmt::format(",{:.6f}", p);
      }
      s += fmt::format(",{:.6f},{:.6f},{:.6f},{:.6f}{}", table.const_w[k], table.static_w[k], table.idle_w[k],
                       dynamic, parts);
    }
    s += "\n";
  }
  return s;
}

PredictStageReport RunAccelWattch(const PredictStageOptions& o) {
  if (o.mode_given || o.default_core_mhz != 0.0 || o.default_mem_mhz != 0.0 || o.power_limit_w != 0.0) {
    throw OptionError("--mode, --default-core-mhz, --default-mem-mhz and --power-limit-w are for dvfs and fixed models; "
                      "an AccelWattch model evaluates Eq. 12 at each kernel's pair or --f-core-mhz/--f-mem-mhz");
  }
  const AccelWattchModel model = ReadAccelWattchModel(o.model_path);
  OutputSet outputs;
  nlohmann::json options = {{"model_format", kAccelWattchModelFormat}, {"breakdown", o.breakdown},
                            {"f_core_mhz", o.f_core_mhz}, {"f_mem_mhz", o.f_mem_mhz},
                            {"active_sms", o.active_sms}, {"lanes_per_warp", o.lanes_per_warp}};
  PredictStageReport report;
  if (LooksLikeActivityTable(o.activity_path)) {
    const ActivityTable activity = ReadActivityTable(o.activity_path);
    const std::vector<AccelWattchPrediction> predictions = PredictAccelWattchActivity(
        model, activity, {o.f_core_mhz, o.f_mem_mhz, o.active_sms, o.lanes_per_warp});
    outputs.StageText(o.out_path, AccelWattchPredictionsToCsv(model, activity, predictions, o.breakdown));
    report.rows = predictions.size();
    LogInfo(fmt::format("Eq. 12 for {} kernels at {} configuration(s) each", activity.num_kernels(),
                        activity.num_kernels() ? report.rows / activity.num_kernels() : 0));
  } else {
    if (!o.f_core_mhz.empty() || !o.f_mem_mhz.empty() || !o.active_sms.empty() || !o.lanes_per_warp.empty()) {
      throw OptionError("--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp need an activity table (a per-kernel component "
                        "table holds power at its own clocks only)");
    }
    const ComponentTable table = ReadComponentTable(o.activity_path);
    outputs.StageText(o.out_path, ComponentPredictionsToCsv(model, table, o.breakdown));
    report.rows = table.num_kernels();
  }
  outputs.StageManifest(o.out_path, "predict", {o.model_path, o.activity_path}, options);
  outputs.Commit();
  LogInfo(fmt::format("wrote {} predictions to {}", report.rows, o.out_path));
  return report;
}

}  // namespace

void PredictStageOptions::Check() const {
  if (model_path.empty()) throw OptionError("--model is required");
  if (activity_path.empty()) throw OptionError("--activity is required");
  if (out_path.empty()) throw OptionError("--out is required");
  if (mode != "dvfs" && mode != "fixed") {
    throw OptionError("--mode '" + mode + "': expected dvfs or fixed");
  }
  CorpusReadOptions read_options;
  read_options.default_core_mhz = default_core_mhz;
  read_options.default_mem_mhz = default_mem_mhz;
  std::string error;
  if (!read_options.Check(&error)) throw OptionError(error);
  if (!(power_limit_w >= 0.0 && power_limit_w <= 10000.0)) {
    throw OptionError(fmt::format("--power-limit-w = {} must lie in [0, 10000] W (0 = the "
                                  "activity's, else the model's)", power_limit_w));
  }
}

PredictStageReport RunPredictStage(const PredictStageOptions& o) {
  o.Check();
  if (IsAccelWattchModel(o.model_path)) return RunAccelWattch(o);
  if (!o.f_core_mhz.empty() || !o.f_mem_mhz.empty() || !o.active_sms.empty() || !o.lanes_per_warp.empty()) {
    throw OptionError("--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp are for AccelWattch models (a dvfs model predicts at "
                      "each row's pair, or at every pair of the model with --mode dvfs)");
  }
  CorpusReadOptions read_options;
  read_options.default_core_mhz = o.default_core_mhz;
  read_options.default_mem_mhz = o.default_mem_mhz;
  const PowerModel model = ReadModel(o.model_path);
  const Corpus activity = ReadCorpus(o.activity_path, read_options);
  const double limit_w = EffectivePowerLimitW(o.power_limit_w, activity.power_limit_w, model.power_limit_w);
  const std::vector<ActivityPrediction> rows = PredictActivity(model, activity, o.mode == "fixed", limit_w);
  const std::string extrapolation = ActivityExtrapolationWarning(rows);
  if (!extrapolation.empty()) LogWarning(extrapolation);
  OutputSet outputs;
  outputs.StageText(o.out_path, ActivityPredictionsToCsv(model, rows, o.breakdown, limit_w));
  nlohmann::json manifest_options = {{"mode", o.mode}, {"breakdown", o.breakdown},
                                     {"default_core_mhz", o.default_core_mhz},
                                     {"default_mem_mhz", o.default_mem_mhz}};
  if (std::isfinite(limit_w)) manifest_options["power_limit_w"] = limit_w;
  outputs.StageManifest(o.out_path, "predict", {o.model_path, o.activity_path}, manifest_options);
  outputs.Commit();
  LogInfo(fmt::format("wrote {} predictions for {} benchmarks to {}", rows.size(),
                      activity.Benchmarks().size(), o.out_path));
  PredictStageReport report;
  report.rows = rows.size();
  return report;
}

}  // namespace wattcal
