#include "stage/validate_stage.h"

#include <cmath>

#include <boost/filesystem.hpp>
#include <fmt/format.h>

#include "accelwattch/accelwattch_validation.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "report/validation_plots.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"
#include "crossval/cross_validation.h"
#include "fit/calibrate.h"
#include "fit/training_rows.h"
#include "validate/metrics.h"
#include "validate/prediction.h"
#include "validate/validation_report.h"

namespace wattcal {

CalibrationFlags ValidateStageOptions::FoldCalibration() const {
  CalibrationFlags flags = calibration;
  // --mode says how held-out rows are predicted, --method how each fold is fitted: a
  // fixed-mode validation fits the fixed model unless --method says otherwise.
  if (mode == "fixed" && !method_given) flags.method = "fixed";
  return flags;
}

void ValidateStageOptions::Check() const {
  if (predictions_path.empty()) throw OptionError("--predictions is required");
  if (metrics_path.empty()) throw OptionError("--metrics is required");
  PredictMode predict_mode;
  if (mode != "accelwattch" && mode != "auto" && !ParsePredictMode(mode, &predict_mode)) {
    throw OptionError("--mode '" + mode + "': expected dvfs, fixed, scaling, accelwattch or auto");
  }
  if (calibration.method == "auto" && mode != "auto") {
    throw OptionError("--method auto goes with --mode auto (the method follows the mode it picks)");
  }
  ToMetricsOptions(mape_ci);
  if (!plot_path.empty() && boost::filesystem::path(plot_path).extension() != ".png") {
    throw OptionError("--plot must name a .png file (an .svg twin is written beside it)");
  }
  if (!cv.empty() && cv != "loko") throw OptionError("--cv '" + cv + "': expected loko");
  if (mode == "accelwattch") {
    const bool on_components = !components_path.empty();
    const bool inputs_ok = on_components
                               ? model_path.empty() && heldout_path.empty()
                               : !model_path.empty() && !heldout_path.empty() && cv.empty();
    if (!inputs_ok || !train_path.empty() || cv_folds > 0) {
      throw OptionError(
          "--mode accelwattch takes --components TABLE.csv [--cv loko], or "
          "--model MODEL.json --heldout TABLE.csv (not --train, --cv-folds)");
    }
    if (!truth_model_path.empty() || !summary_md_path.empty() || !apps_predictions_path.empty() ||
        calibration.power_limit_w != 0.0 || calibration.keep_flagged) {
      throw OptionError(
          "--truth-model, --summary-md, --apps-predictions, --power-limit-w and "
          "--keep-flagged are not available with --mode accelwattch");
    }
    if (cv != "loko" && AccelWattchFlagsGiven(accelwattch)) {
      throw OptionError("--bounds, --orderings, --prior and --prior-weight apply to --cv loko");
    }
    if (method_given) {
      throw OptionError(
          "--method is the calibration method of --cv-folds; --mode accelwattch "
          "validates AccelWattch's scaling factors (re-estimated with --cv loko)");
    }
    return;
  }
  if (!components_path.empty() || !cv.empty() || AccelWattchFlagsGiven(accelwattch)) {
    throw OptionError(
        "--components, --cv and the accelwattch fit options belong to --mode accelwattch");
  }
  const bool cross_validate = cv_folds > 0;
  if (cross_validate && (train_path.empty() || !model_path.empty() || !heldout_path.empty())) {
    throw OptionError("--cv-folds needs --train and takes neither --model nor --heldout");
  }
  if (!cross_validate && (model_path.empty() || heldout_path.empty())) {
    throw OptionError("give --model and --heldout, or --train with --cv-folds K");
  }
  if (!cross_validate && !train_path.empty())
    throw OptionError("--train is only used with --cv-folds");
  ToCorpusReadOptions(calibration);
  if (!cross_validate) {
    if (calibration.keep_flagged)
      throw OptionError("--keep-flagged applies to --cv-folds (training)");
    if (method_given) {
      throw OptionError("--method " + calibration.method +
                        " is the calibration method of "
                        "--cv-folds; with --model the model is already calibrated (--mode " +
                        mode + " says how it predicts)");
    }
    return;
  }
  if (mode == "auto") return;  // checked again once the mode is chosen (RunValidateStage)
  const CalibrationFlags folds = FoldCalibration();
  if (folds.method == "accelwattch") {
    throw OptionError(
        "--method accelwattch cannot calibrate --cv-folds' folds: validate an "
        "AccelWattch model with --mode accelwattch (--cv loko re-estimates it)");
  }
  if (folds.method == "fixed" && mode != "fixed") {
    throw OptionError("--method fixed with --mode " + mode +
                      ": a fixed model (TPDS Eq. 9) "
                      "describes the default V-F pair only and cannot predict at other pairs; "
                      "use --mode fixed, or --method dvfs");
  }
  ToCalibrationOptions(folds);  // throws OptionError naming the flag
}

ValidateStageReport RunValidateStage(const ValidateStageOptions& o) {
  o.Check();
  if (o.mode == "auto") {
    // The model's own method, or (--cv-folds) the one its corpus supports; --method follows.
    ValidateStageOptions resolved = o;
    std::string why;
    if (o.cv_folds > 0) {
      resolved.mode = AutoFitMethod(ReadCorpus(o.train_path, ToCorpusReadOptions(o.calibration)),
                                    o.calibration.keep_flagged, &why);
      why = "--mode " + why.substr(why.find("auto"));
    } else {
      resolved.mode = ReadModel(o.model_path).method == "fixed" ? "fixed" : "dvfs";
      why = fmt::format("--mode auto: {} (the model's method)", resolved.mode);
    }
    if (o.calibration.method == "auto") {
      resolved.calibration.method = resolved.mode;
      resolved.method_given = false;
    }
    LogInfo(why);
    return RunValidateStage(resolved);
  }
  const MetricsOptions metrics_options = ToMetricsOptions(o.mape_ci);
  ValidationInputs in;
  ValidationReport outcome;
  std::string apps_csv;
  std::vector<std::string> inputs;
  nlohmann::json options = {{"mode", o.mode}};
  if (o.mode == "accelwattch") {
    const bool on_components = !o.components_path.empty();
    AccelWattchValidationRequest request;
    request.table_path = on_components ? o.components_path : o.heldout_path;
    request.model_path = o.model_path;
    request.loko = o.cv == "loko";
    request.title = o.title;
    if (request.loko) {
      request.fit = ToAccelWattchFitOptions(o.accelwattch, o.calibration.max_iterations);
      options["accelwattch"] = AccelWattchFitOptionsToJson(request.fit, o.accelwattch);
    }
    AccelWattchValidationReport run = RunAccelWattchValidation(request, metrics_options);
    in.rows = std::move(run.rows);
    outcome = std::move(run.outcome);
    inputs = run.inputs;
    if (request.loko) {
      for (const std::string& f : AccelWattchInputFiles(o.accelwattch)) inputs.push_back(f);
    }
    options["variant"] = run.variant;
  } else {
    PredictMode mode;
    ParsePredictMode(o.mode, &mode);
    const bool cv = o.cv_folds > 0;
    const CorpusReadOptions read_options = ToCorpusReadOptions(o.calibration);
    in.mode = mode;
    in.title = o.title;
    std::vector<double> reference_pair_mhz;
    if (cv) {
      const CalibrationOptions calibration = ToCalibrationOptions(o.FoldCalibration());
      CrossValidationOptions cv_options;
      cv_options.folds = o.cv_folds;
      cv_options.seed = o.cv_seed;
      cv_options.num_threads = calibration.num_threads;
      const Corpus train = ReadCorpus(o.train_path, read_options);
      LogInfo(fmt::format("{}-fold cross-validation by benchmark on {} ({} benchmarks, {} rows)",
                          o.cv_folds, o.train_path, train.Benchmarks().size(), train.rows()));
      const std::string left_out = SelectTrainingRows(train, calibration.keep_flagged).message;
      if (!left_out.empty()) LogWarning("every fold's training: " + left_out);
      for (const FrequencyDomain& d : train.layout.domains)
        reference_pair_mhz.push_back(d.default_freq_mhz);
      const CrossValidationReport result = CrossValidate(train, calibration, mode, cv_options);
      if (result.unscored_rows > 0) {
        LogWarning(fmt::format(
            "{} rows flagged {} are neither trained on nor scored (--keep-flagged keeps them)",
            result.unscored_rows, kCorpusFlagDataToggle));
      }
      in.rows = result.rows;
      in.fold_benchmarks = result.fold_benchmarks;
      in.source = o.train_path;
      inputs = {o.train_path};
      options["calibration"] = calibration;
      options["cv_folds"] = o.cv_folds;
      options["cv_seed"] = o.cv_seed;
    } else {
      const PowerModel model = ReadModel(o.model_path);
      const Corpus heldout = ReadCorpus(o.heldout_path, read_options);
      // A duplicated held-out row counts twice in the MAPE and narrows its interval.
      for (const std::string& note : FindDuplicateRows(heldout)) LogWarning(note);
      if (mode == PredictMode::kScaling) {
        CheckTwoVfPairs(SelectTrainingRows(heldout, false).rows, "scaling (TPDS Eq. 10)",
                        "use --mode fixed");
      }
      const double limit_w = EffectivePowerLimitW(o.calibration.power_limit_w,
                                                  heldout.power_limit_w, model.power_limit_w);
      if (std::isfinite(limit_w)) options["power_limit_w"] = limit_w;
      const std::string below = PowerLimitBelowIdleWarning(model, limit_w);
      if (!below.empty()) LogWarning(below);
      reference_pair_mhz = model.DefaultFrequencies();
      in.rows = PredictHeldout(model, heldout, mode, limit_w);
      in.source = o.heldout_path;
      in.model_path = o.model_path;
      inputs = {o.model_path, o.heldout_path};
      if (!o.truth_model_path.empty()) {
        const PowerModel truth = ReadModel(o.truth_model_path);
        in.truth = CompareWithTruth(model, truth, PredictHeldout(truth, heldout, mode, limit_w));
        inputs.push_back(o.truth_model_path);
      }
    }
    const std::string extrapolation = ExtrapolationWarning(in.rows);
    if (!extrapolation.empty()) LogWarning(extrapolation);
    int capped = 0;
    for (const PredictionRow& row : in.rows) capped += row.capped ? 1 : 0;
    if (capped > 0) {
      LogInfo(fmt::format("{} of {} predictions capped at the board's power limit", capped,
                          in.rows.size()));
    }
    if (!o.apps_predictions_path.empty()) {
      apps_csv = AppsPredictionsToCsv(in.rows, reference_pair_mhz);
    }
    outcome = SummariseValidation(in, metrics_options);
  }
  options["max_mape_pct"] = o.max_mape_pct;
  if (metrics_options.ci_method != MapeCiMethod::kStudentT) options["mape_ci"] = o.mape_ci;

  ValidateStageReport report;
  OutputSet outputs;
  auto stage_manifest = [&](const std::string& path, const std::string& role) {
    outputs.StageProvenance(path, "validate", inputs, options, role);
    report.written.push_back(path);
  };
  outputs.StageText(o.predictions_path, PredictionsToCsv(in.rows));
  stage_manifest(o.predictions_path, "predictions");
  outputs.StageText(o.metrics_path, DumpJson(outcome.json));
  stage_manifest(o.metrics_path, "metrics");
  if (!o.apps_predictions_path.empty()) {
    outputs.StageText(o.apps_predictions_path, apps_csv);
    stage_manifest(o.apps_predictions_path, "apps_predictions");
  }
  std::string workload_plot_path;
  if (!o.plot_path.empty()) {
    ValidationFigureOptions figures;
    figures.workload_errors = o.workload_plot;
    workload_plot_path =
        StageValidationFigures(in.rows, outcome.metrics, outcome.title, o.plot_path, inputs,
                               options, &outputs, figures, metrics_options);
    for (const std::string& png : {o.plot_path, workload_plot_path}) {
      if (png.empty()) continue;
      report.written.push_back(png);
      report.written.push_back(boost::filesystem::path(png).replace_extension(".svg").string());
    }
  }
  if (!o.summary_md_path.empty()) {
    outputs.StageText(o.summary_md_path,
                      ValidationMarkdown(in, outcome, o.predictions_path, o.metrics_path,
                                         o.plot_path, o.summary_md_path, workload_plot_path));
    stage_manifest(o.summary_md_path, "summary");
  }
  outputs.Commit();
  LogInfo(outcome.table);
  report.mape_pct = outcome.metrics.overall.mape_pct;
  if (o.max_mape_pct > 0.0 && outcome.metrics.overall.mape_pct > o.max_mape_pct) {
    LogError(fmt::format("MAPE {:.3f}% exceeds --max-mape-pct {} (outputs written)",
                         outcome.metrics.overall.mape_pct, o.max_mape_pct));
    report.exit_code = static_cast<int>(kExitFit);
  }
  return report;
}

}  // namespace wattcal
