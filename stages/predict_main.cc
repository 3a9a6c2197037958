// wattcal-predict: a calibrated model + application activity -> predicted power.
//
//   wattcal-predict --model MODEL.json --activity ACT.csv --out PRED.csv
//                   [--mode dvfs|fixed] [--breakdown]
#include <fmt/format.h>

#include "io/corpus_io.h"
#include "io/model_io.h"
#include "model/activity_prediction.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Predict power from component activity at any V-F pair (TPDS §3.5, §4.5)",
               "wattcal-predict"};
  std::string model_path, activity_path, out_path, mode = "dvfs";
  bool breakdown = false;
  double default_core_mhz = 0.0, default_mem_mhz = 0.0;
  app.add_option("--model", model_path, "Model (wattcal JSON or gpmTOOL model file)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--activity", activity_path,
                 "Activity: gpmTOOL prediction/real file or tidy CSV (power optional)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "Predictions CSV to write")->required();
  app.add_option("--mode", mode,
                 "dvfs: at each row's V-F pair, or at every pair of the model when the activity "
                 "has no frequencies; fixed: at the model's reference pair")
      ->check(CLI::IsMember({"dvfs", "fixed"}))
      ->capture_default_str();
  app.add_flag("--breakdown", breakdown, "Add per-component power columns (TPDS §4.5)");
  app.add_option("--default-core-mhz", default_core_mhz, "Tidy inputs: default core frequency, MHz");
  app.add_option("--default-mem-mhz", default_mem_mhz, "Tidy inputs: default memory frequency, MHz");
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    CorpusReadOptions read_options;
    read_options.default_core_mhz = default_core_mhz;
    read_options.default_mem_mhz = default_mem_mhz;
    std::string error;
    if (!read_options.Check(&error)) throw OptionError(error);
    const PowerModel model = ReadModel(model_path);
    const Corpus activity = ReadCorpus(activity_path, read_options);
    const std::vector<ActivityPrediction> rows = PredictActivity(model, activity, mode == "fixed");
    OutputSet outputs;
    outputs.StageText(out_path, ActivityPredictionsToCsv(model, rows, breakdown));
    outputs.StageManifest(out_path, "predict", {model_path, activity_path},
                          {{"mode", mode}, {"breakdown", breakdown},
                           {"default_core_mhz", default_core_mhz},
                           {"default_mem_mhz", default_mem_mhz}});
    outputs.Commit();
    LogInfo(fmt::format("wrote {} predictions for {} benchmarks to {}", rows.size(),
                        activity.Benchmarks().size(), out_path));
    return static_cast<int>(kExitOk);
  });
}
