// wattcal-calibrate: microbenchmark measurements -> a calibrated power model (JSON).
//
//   wattcal-calibrate --train TRAIN.csv --out MODEL.json [--method dvfs|fixed]
//                     [--solver joint|alternating] [--loss l2|huber|cauchy]
//                     [--export-gpmtool MODEL.csv] [--threads N]
//   wattcal-calibrate --method accelwattch --components TABLE.csv --out MODEL.json
//                     [--bounds LO:HI|NAME=LO:HI ...] [--orderings FILE] [--no-paper-orderings]
//                     [--prior MODEL.json] [--prior-weight LAMBDA]
#include <fmt/format.h>

#include "accelwattch/component_table.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"

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
  std::string train_path, components_path, out_path, gpmtool_path;
  CalibrationFlags flags;
  AccelWattchFlags accelwattch;
  app.add_option("--train", train_path,
                 "Training measurements (gpmTOOL training/real file or tidy CSV); dvfs and fixed")
      ->check(CLI::ExistingFile);
  app.add_option("--components", components_path,
                 "accelwattch: per-kernel component powers at x = 1 and measured power "
                 "(AccelWattch per_kernel_*.csv, or tidy kernel,measured_w,const_w,static_w,"
                 "idle_w,<component>_w...)")
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "Model file to write (JSON)")->required();
  app.add_option("--export-gpmtool", gpmtool_path, "Also write the model in gpmTOOL's format");
  AddCalibrationOptions(&app, &flags);
  AddAccelWattchOptions(&app, &accelwattch);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (flags.method == "accelwattch") {
      if (components_path.empty() || !train_path.empty() || !gpmtool_path.empty()) {
        throw OptionError("--method accelwattch takes --components TABLE.csv (not --train, "
                          "not --export-gpmtool)");
      }
      const AccelWattchFitOptions options = ToAccelWattchFitOptions(accelwattch, flags.max_iterations);
      const ComponentTable table = ReadComponentTable(components_path);
      LogInfo(fmt::format("read {} kernels x {} components from {}", table.num_kernels(),
                          table.num_components(), components_path));
      const AccelWattchModel model = FitAccelWattchScaling(table, options);
      OutputSet outputs;
      std::vector<std::string> inputs = {components_path};
      for (const std::string& f : AccelWattchInputFiles(accelwattch)) inputs.push_back(f);
      const nlohmann::json manifest_options = {
          {"method", "accelwattch"},
          {"accelwattch", AccelWattchFitOptionsToJson(options, accelwattch)}};
      outputs.StageText(out_path, AccelWattchModelToJson(model));
      outputs.StageManifest(out_path, "calibrate", inputs, manifest_options);
      outputs.Commit();
      LogInfo(FormatAccelWattchModelSummary(model));
      LogInfo("wrote " + out_path);
      if (!model.fit.converged) {
        for (const AccelWattchStartReport& start : model.fit.starts) {
          if (start.name != model.fit.kept_start) continue;
          LogWarning("the kept start did not converge: " + start.termination +
                     " (the model was written and records this)");
        }
        return static_cast<int>(kExitFit);
      }
      return static_cast<int>(kExitOk);
    }
    if (train_path.empty()) {
      throw OptionError("--train is required (or --method accelwattch with --components)");
    }
    if (!components_path.empty() || AccelWattchFlagsGiven(accelwattch)) {
      throw OptionError("--components, --bounds, --orderings, --prior and --prior-weight belong "
                        "to --method accelwattch");
    }
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
