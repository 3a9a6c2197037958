// wattcal-predict: a calibrated model + application activity -> predicted power.
//
//   wattcal-predict --model MODEL.json --activity ACT.csv --out PRED.csv
//                   [--mode dvfs|fixed] [--breakdown]
//   wattcal-predict --model ACCELWATTCH.json --activity ACT.csv --out PRED.csv
//                   [--f-core-mhz F,...] [--f-mem-mhz F,...] [--active-sms K,...]
//                   [--lanes-per-warp Y,...] [--breakdown]
//   wattcal-predict --model ACCELWATTCH.json --activity TABLE.csv --out PRED.csv
//
// The model's format decides: a wattcal-accelwattch-model evaluates AccelWattch's Eq. 12 (for
// a kernel's activity, active SMs k and lanes y, at its own V-F pair or any other) or, for a
// model of per-kernel component tables, AccelWattch Eq. 13's rows.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_model.h"

#include "io/corpus_io.h"
#include "io/model_io.h"
#include "model/activity_prediction.h"
#include "model/power_limit.h"
#include "stage_common.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Predict power from component activity at any V-F pair (TPDS §3.5, §4.5)",
               "wattcal-predict"};
  std::string model_path, activity_path, out_path, mode = "dvfs";
  bool breakdown = false;
  double default_core_mhz = 0.0, default_mem_mhz = 0.0, power_limit_w = 0.0;
  std::vector<double> f_core_mhz, f_mem_mhz;
  std::vector<int> active_sms, lanes_per_warp;
  app.add_option("--model", model_path, "Model (wattcal JSON, gpmTOOL model file, or wattcal-accelwattch-model JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--activity", activity_path,
                 "Activity: gpmTOOL prediction/real file or tidy CSV (power optional); for an AccelWattch "
                 "model an activity table (wattcal-ingest --accelwattch-activity) or a component table")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "Predictions CSV to write")->check(OutputFile())->required();
  app.add_option("--mode", mode,
                 "dvfs: at each row's V-F pair, or at every pair of the model when the activity "
                 "has no frequencies; fixed: at the model's reference pair")
      ->check(CLI::IsMember({"dvfs", "fixed"}))
      ->capture_default_str();
  app.add_flag("--breakdown", breakdown, "Add per-component power columns (TPDS §4.5)");
  app.add_option("--power-limit-w", power_limit_w,
                 "The board's power limit, W (default: the activity's power_limit_w, else the "
                 "model's); predictions above it are capped (uncapped_w, capped, "
                 "capped_f_core_mhz columns)");
  app.add_option("--default-core-mhz", default_core_mhz, "Tidy inputs: default core frequency, MHz");
  app.add_option("--default-mem-mhz", default_mem_mhz, "Tidy inputs: default memory frequency, MHz");
  app.add_option("--f-core-mhz", f_core_mhz,
                 "AccelWattch: evaluate every kernel at these core clocks, MHz (default: each kernel's "
                 "own); activity per cycle is kept, voltage ~ f (§4.2)")
      ->delimiter(',');
  app.add_option("--f-mem-mhz", f_mem_mhz,
                 "AccelWattch: and at these memory clocks, MHz (default: each kernel's own)")
      ->delimiter(',');
  app.add_option("--active-sms", active_sms,
                 "AccelWattch: what-if active SM counts k (Eq. 10's static and idle terms; dynamic "
                 "activity kept per active SM)")
      ->delimiter(',');
  app.add_option("--lanes-per-warp", lanes_per_warp,
                 "AccelWattch: what-if active lanes per warp y (Eq. 4/5 static term; dynamic activity "
                 "as counted)")
      ->delimiter(',');
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (IsAccelWattchModel(model_path)) {
      if (app.count("--mode") || default_core_mhz != 0.0 || default_mem_mhz != 0.0 || power_limit_w != 0.0) {
        throw OptionError("--mode, --default-core-mhz, --default-mem-mhz and --power-limit-w are for dvfs and fixed models; "
                          "an AccelWattch model evaluates Eq. 12 at each kernel's pair or --f-core-mhz/--f-mem-mhz");
      }
      const AccelWattchModel model = ReadAccelWattchModel(model_path);
      OutputSet outputs;
      nlohmann::json options = {{"model_format", kAccelWattchModelFormat}, {"breakdown", breakdown},
                                {"f_core_mhz", f_core_mhz}, {"f_mem_mhz", f_mem_mhz},
                                {"active_sms", active_sms}, {"lanes_per_warp", lanes_per_warp}};
      size_t rows = 0;
      if (LooksLikeActivityTable(activity_path)) {
        const ActivityTable activity = ReadActivityTable(activity_path);
        const std::vector<AccelWattchPrediction> predictions =
            PredictAccelWattchActivity(model, activity, {f_core_mhz, f_mem_mhz, active_sms, lanes_per_warp});
        outputs.StageText(out_path, AccelWattchPredictionsToCsv(model, activity, predictions, breakdown));
        rows = predictions.size();
        LogInfo(fmt::format("Eq. 12 for {} kernels at {} configuration(s) each", activity.num_kernels(),
                            activity.num_kernels() ? rows / activity.num_kernels() : 0));
      } else {
        if (!f_core_mhz.empty() || !f_mem_mhz.empty() || !active_sms.empty() || !lanes_per_warp.empty()) {
          throw OptionError("--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp need an activity table (a per-kernel component "
                            "table holds power at its own clocks only)");
        }
        const ComponentTable table = ReadComponentTable(activity_path);
        outputs.StageText(out_path, ComponentPredictionsToCsv(model, table, breakdown));
        rows = table.num_kernels();
      }
      outputs.StageManifest(out_path, "predict", {model_path, activity_path}, options);
      outputs.Commit();
      LogInfo(fmt::format("wrote {} predictions to {}", rows, out_path));
      return static_cast<int>(kExitOk);
    }
    if (!f_core_mhz.empty() || !f_mem_mhz.empty() || !active_sms.empty() || !lanes_per_warp.empty()) {
      throw OptionError("--f-core-mhz, --f-mem-mhz, --active-sms and --lanes-per-warp are for AccelWattch models (a dvfs model predicts at "
                        "each row's pair, or at every pair of the model with --mode dvfs)");
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
    const PowerModel model = ReadModel(model_path);
    const Corpus activity = ReadCorpus(activity_path, read_options);
    const double limit_w = EffectivePowerLimitW(power_limit_w, activity.power_limit_w, model.power_limit_w);
    const std::vector<ActivityPrediction> rows = PredictActivity(model, activity, mode == "fixed", limit_w);
    const std::string extrapolation = ActivityExtrapolationWarning(rows);
    if (!extrapolation.empty()) LogWarning(extrapolation);
    OutputSet outputs;
    outputs.StageText(out_path, ActivityPredictionsToCsv(model, rows, breakdown, limit_w));
    nlohmann::json manifest_options = {{"mode", mode}, {"breakdown", breakdown},
                                       {"default_core_mhz", default_core_mhz},
                                       {"default_mem_mhz", default_mem_mhz}};
    if (std::isfinite(limit_w)) manifest_options["power_limit_w"] = limit_w;
    outputs.StageManifest(out_path, "predict", {model_path, activity_path}, manifest_options);
    outputs.Commit();
    LogInfo(fmt::format("wrote {} predictions for {} benchmarks to {}", rows.size(),
                        activity.Benchmarks().size(), out_path));
    return static_cast<int>(kExitOk);
  });
}
