// wattcal-calibrate: microbenchmark measurements -> a calibrated power model (JSON).
//
//   wattcal-calibrate --train TRAIN.csv --out MODEL.json [--method dvfs|fixed]
//                     [--solver joint|alternating] [--loss l2|huber|cauchy]
//                     [--export-gpmtool MODEL.csv] [--threads N]
#include <fmt/format.h>

#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "io/model_io.h"
#include "model/model_summary.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Calibrate a GPU power model from microbenchmark measurements (TPDS Eqs. 4-6, 9)",
               "wattcal-calibrate"};
  std::string train_path, out_path, gpmtool_path;
  CalibrationFlags flags;
  app.add_option("--train", train_path, "Training measurements (gpmTOOL training/real file or tidy CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "Model file to write (JSON)")->required();
  app.add_option("--export-gpmtool", gpmtool_path, "Also write the model in gpmTOOL's format");
  AddCalibrationOptions(&app, &flags);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const CalibrationOptions options = ToCalibrationOptions(flags);
    const Corpus train = ReadCorpus(train_path, ToCorpusReadOptions(flags));
    LogInfo(fmt::format("read {} rows ({} benchmarks) from {}", train.rows(),
                        train.Benchmarks().size(), train_path));
    const PowerModel model = Calibrate(train, options);

    OutputSet outputs;
    nlohmann::json manifest_options = CalibrationOptionsToJson(options);
    manifest_options["threads"] = options.num_threads;
    outputs.StageText(out_path, ModelToJson(model));
    outputs.StageManifest(out_path, "calibrate", {train_path}, manifest_options);
    if (!gpmtool_path.empty()) {
      outputs.StageText(gpmtool_path, ModelToGpmtoolCsv(model));
      outputs.StageManifest(gpmtool_path, "calibrate", {train_path}, manifest_options);
    }
    outputs.Commit();
    LogInfo(FormatModelSummary(model));
    LogInfo("wrote " + out_path + (gpmtool_path.empty() ? "" : " and " + gpmtool_path));
    if (!model.fit.converged) {
      LogWarning("the fit did not converge: " + model.fit.termination +
                 " (the model was written and records this)");
      return static_cast<int>(kExitFit);
    }
    return static_cast<int>(kExitOk);
  });
}
