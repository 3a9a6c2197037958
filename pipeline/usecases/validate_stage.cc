#include "usecases/validate_stage.h"

#include <cmath>
#include <optional>

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

const char* ValidateModeName(ValidateMode mode) {
  switch (mode) {
    case ValidateMode::kDvfs: return "dvfs";
    case ValidateMode::kFixed: return "fixed";
    case ValidateMode::kScaling: return "scaling";
    case ValidateMode::kAccelWattch: return "accelwattch";
    case ValidateMode::kAuto: return "auto";
  }
  return "dvfs";
}

const std::vector<ValidateMode>& ValidateModes() {
  static const std::vector<ValidateMode> kAll = {ValidateMode::kDvfs, ValidateMode::kFixed,
                                                 ValidateMode::kScaling, ValidateMode::kAccelWattch,
                                                 ValidateMode::kAuto};
  return kAll;
}

namespace {

// The PredictMode of --mode dvfs | fixed | scaling (kDvfs for accelwattch and auto).
PredictMode ToPredictMode(ValidateMode mode) {
  if (mode == ValidateMode::kFixed) return PredictMode::kFixed;
  if (mode == ValidateMode::kScaling) return PredictMode::kScaling;
  return PredictMode::kDvfs;
}

// --cv-folds with the mode known (given, or picked by auto): each fold's calibration method
// against the mode, and its options converted into checked->folds.
void CheckFolds(const ValidateStageOptions& o, ValidateCheckedOptions* checked) {
  const CalibrationFlags folds = o.FoldCalibration();
  if (folds.method == CalibrationMethod::kAccelWattch) {
    throw OptionError(
        "--method accelwattch cannot calibrate --cv-folds' folds: validate an "
        "AccelWattch model with --mode accelwattch (--cv loko re-estimates it)");
  }
  if (folds.method == CalibrationMethod::kFixed && o.mode != ValidateMode::kFixed) {
    throw OptionError(std::string("--method fixed with --mode ") + ValidateModeName(o.mode) +
                      ": a fixed model (TPDS Eq. 9) "
                      "describes the default V-F pair only and cannot predict at other pairs; "
                      "use --mode fixed, or --method dvfs");
  }
  checked->folds = ToCalibrationOptions(folds);  // throws OptionError naming the flag
}

}  // namespace

CalibrationFlags ValidateStageOptions::FoldCalibration() const {
  CalibrationFlags flags = calibration;
  // --mode says how held-out rows are predicted, --method how each fold is fitted: a
  // fixed-mode validation fits the fixed model unless --method says otherwise.
  if (mode == ValidateMode::kFixed && !method_given) flags.method = CalibrationMethod::kFixed;
  return flags;
}

ValidateCheckedOptions ValidateStageOptions::Check() const {
  ValidateCheckedOptions checked;
  if (predictions_path.empty()) throw OptionError("--predictions is required");
  if (metrics_path.empty()) throw OptionError("--metrics is required");
  checked.predict_mode = ToPredictMode(mode);
  if (calibration.method == CalibrationMethod::kAuto && mode != ValidateMode::kAuto) {
    throw OptionError("--method auto goes with --mode auto (the method follows the mode it picks)");
  }
  checked.metrics = metrics;
  if (!plot_path.empty() && boost::filesystem::path(plot_path).extension() != ".png") {
    throw OptionError("--plot must name a .png file (an .svg twin is written beside it)");
  }
  if (!cv.empty() && cv != "loko") throw OptionError("--cv '" + cv + "': expected loko");
  if (mode == ValidateMode::kAccelWattch) {
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
        calibration.options.power_limit_w || calibration.options.keep_flagged) {
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
    if (cv == "loko") {
      checked.accelwattch =
          ToAccelWattchFitOptions(accelwattch, calibration.options.max_iterations);
    }
    return checked;
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
  checked.corpus = ToCorpusReadOptions(calibration);
  if (!cross_validate) {
    if (calibration.options.keep_flagged)
      throw OptionError("--keep-flagged applies to --cv-folds (training)");
    if (method_given) {
      throw OptionError(fmt::format(
          "--method {} is the calibration method of --cv-folds; with --model the model is "
          "already calibrated (--mode {} says how it predicts)",
          CalibrationMethodName(calibration.method), ValidateModeName(mode)));
    }
    return checked;
  }
  if (mode != ValidateMode::kAuto) CheckFolds(*this, &checked);  // auto: once it is picked
  return checked;
}

namespace {

// --cv-folds' training corpus, read once, and its training rows, selected once: --mode auto, the
// checks before the folds and the left-out note use them (each fold selects its own rows).
struct FoldsTraining {
  Corpus corpus;
  TrainingSelection selection;
};

// What the validation produced, before anything is written.
struct ValidationRun {
  ValidationInputs in;
  ValidationReport outcome;
  std::string apps_csv;
  std::vector<std::string> inputs;
  nlohmann::json options;
};

// --mode auto: the model's own method, or (--cv-folds) the one its corpus supports; --method
// follows. Returns the options with the mode resolved, and completes `checked` for it.
ValidateStageOptions ResolveAutoMode(const ValidateStageOptions& o, const FoldsTraining* train,
                                     ValidateCheckedOptions* checked) {
  ValidateStageOptions resolved = o;
  std::string why;
  FitMethod method = FitMethod::kDvfs;
  if (o.cv_folds > 0) {
    method = AutoFitMethod(train->selection, &why);
    why = "--mode " + why.substr(why.find("auto"));
  } else {
    method = ReadModel(o.model_path).method;
    why = fmt::format("--mode auto: {} (the model's method)", FitMethodName(method));
  }
  resolved.mode = method == FitMethod::kFixed ? ValidateMode::kFixed : ValidateMode::kDvfs;
  if (o.calibration.method == CalibrationMethod::kAuto) {
    resolved.calibration.method = ToCalibrationMethod(method);
    resolved.method_given = false;
  }
  checked->predict_mode = ToPredictMode(resolved.mode);
  if (o.cv_folds > 0) CheckFolds(resolved, checked);
  LogInfo(why);
  return resolved;
}

// --mode accelwattch: the published model on a component table, its leave-one-kernel-out
// re-estimation (--cv loko), or a fitted model on a held-out table (MICRO'21 Eqs. 12-14).
void ValidateAccelWattch(const ValidateStageOptions& o, const ValidateCheckedOptions& checked,
                         ValidationRun* run) {
  const bool on_components = !o.components_path.empty();
  AccelWattchValidationRequest request;
  request.table_path = on_components ? o.components_path : o.heldout_path;
  request.model_path = o.model_path;
  request.loko = o.cv == "loko";
  request.title = o.title;
  if (request.loko) {
    request.fit = checked.accelwattch;
    run->options["accelwattch"] = AccelWattchFitOptionsToJson(request.fit, o.accelwattch);
  }
  AccelWattchValidationReport result = RunAccelWattchValidation(request, checked.metrics);
  run->in.rows = std::move(result.rows);
  run->outcome = std::move(result.outcome);
  run->inputs = result.inputs;
  if (request.loko) {
    for (const std::string& f : AccelWattchInputFiles(o.accelwattch)) run->inputs.push_back(f);
  }
  run->options["variant"] = result.variant;
}

// --cv-folds: k-fold cross-validation by benchmark on --train; returns the default V-F pair.
std::vector<double> CrossValidateFolds(const ValidateStageOptions& o, const FoldsTraining& folds,
                                       const ValidateCheckedOptions& checked, ValidationRun* run) {
  const CalibrationOptions& calibration = checked.folds;
  CrossValidationOptions cv_options;
  cv_options.folds = o.cv_folds;
  cv_options.seed = o.cv_seed;
  cv_options.threads = calibration.threads;
  const Corpus& train = folds.corpus;
  LogInfo(fmt::format("{}-fold cross-validation by benchmark on {} ({} benchmarks, {} rows)",
                      o.cv_folds, o.train_path, train.Benchmarks().size(), train.rows()));
  const std::string& left_out = folds.selection.message;
  if (!left_out.empty()) LogWarning("every fold's training: " + left_out);
  std::vector<double> reference_pair_mhz;
  for (const FrequencyDomain& d : train.layout.domains)
    reference_pair_mhz.push_back(d.default_freq_mhz);
  const CrossValidationReport result =
      CrossValidate(train, folds.selection, calibration, checked.predict_mode, cv_options);
  if (result.unscored_rows > 0) {
    LogWarning(fmt::format(
        "{} rows flagged {} are neither trained on nor scored (--keep-flagged keeps them)",
        result.unscored_rows, kCorpusFlagDataToggle));
  }
  run->in.rows = result.rows;
  run->in.fold_benchmarks = result.fold_benchmarks;
  run->in.source = o.train_path;
  run->inputs = {o.train_path};
  run->options["calibration"] = calibration;
  run->options["cv_folds"] = o.cv_folds;
  run->options["cv_seed"] = o.cv_seed;
  return reference_pair_mhz;
}

// --model on --heldout (and --truth-model on the same rows); returns the model's default pair.
std::vector<double> PredictHeldoutRows(const ValidateStageOptions& o,
                                       const ValidateCheckedOptions& checked, ValidationRun* run) {
  const PredictMode mode = checked.predict_mode;
  const PowerModel model = ReadModel(o.model_path);
  const Corpus heldout = ReadCorpus(o.heldout_path, checked.corpus);
  // A duplicated held-out row counts twice in the MAPE and narrows its interval.
  for (const std::string& note : FindDuplicateRows(heldout)) LogWarning(note);
  if (mode == PredictMode::kScaling) {
    CheckTwoVfPairs(SelectTrainingRows(heldout, false).rows, "scaling (TPDS Eq. 10)",
                    "use --mode fixed");
  }
  const std::optional<double> limit_w = ResolvePowerLimitW(
      o.calibration.options.power_limit_w, heldout.power_limit_w, model.power_limit_w);
  if (limit_w) run->options["power_limit_w"] = *limit_w;
  const std::string below = PowerLimitBelowIdleWarning(model, limit_w);
  if (!below.empty()) LogWarning(below);
  run->in.rows = PredictHeldout(model, heldout, mode, limit_w);
  run->in.source = o.heldout_path;
  run->in.model_path = o.model_path;
  run->inputs = {o.model_path, o.heldout_path};
  if (!o.truth_model_path.empty()) {
    const PowerModel truth = ReadModel(o.truth_model_path);
    run->in.truth = CompareWithTruth(model, truth, PredictHeldout(truth, heldout, mode, limit_w));
    run->inputs.push_back(o.truth_model_path);
  }
  return model.DefaultFrequencies();
}

// --mode dvfs | fixed | scaling: cross-validation or held-out prediction, then the summary.
void ValidateTpdsModel(const ValidateStageOptions& o, const FoldsTraining* folds,
                       const ValidateCheckedOptions& checked, ValidationRun* run) {
  run->in.mode = checked.predict_mode;
  run->in.title = o.title;
  const std::vector<double> reference_pair_mhz =
      folds ? CrossValidateFolds(o, *folds, checked, run) : PredictHeldoutRows(o, checked, run);
  const std::string extrapolation = ExtrapolationWarning(run->in.rows);
  if (!extrapolation.empty()) LogWarning(extrapolation);
  int capped = 0;
  for (const PredictionRow& row : run->in.rows) capped += row.capped ? 1 : 0;
  if (capped > 0) {
    LogInfo(fmt::format("{} of {} predictions capped at the board's power limit", capped,
                        run->in.rows.size()));
  }
  if (!o.apps_predictions_path.empty()) {
    run->apps_csv = AppsPredictionsToCsv(run->in.rows, reference_pair_mhz);
  }
  run->outcome = SummariseValidation(run->in, checked.metrics);
}

// Stages every output of the run with its provenance, all or none, and commits them.
ValidateStageReport WriteValidation(const ValidateStageOptions& o,
                                    const ValidateCheckedOptions& checked,
                                    const ValidationRun& run) {
  ValidateStageReport report;
  OutputSet outputs;
  auto stage_manifest = [&](const std::string& path, const std::string& role) {
    outputs.StageProvenance(path, "validate", run.inputs, run.options, role);
  };
  outputs.StageText(o.predictions_path, PredictionsToCsv(run.in.rows));
  stage_manifest(o.predictions_path, "predictions");
  outputs.StageText(o.metrics_path, DumpJson(run.outcome.json));
  stage_manifest(o.metrics_path, "metrics");
  if (!o.apps_predictions_path.empty()) {
    outputs.StageText(o.apps_predictions_path, run.apps_csv);
    stage_manifest(o.apps_predictions_path, "apps_predictions");
  }
  std::string workload_plot_path;
  if (!o.plot_path.empty()) {
    ValidationFigureOptions figures;
    figures.workload_errors = o.workload_plot;
    workload_plot_path =
        StageValidationFigures(run.in.rows, run.outcome.metrics, run.outcome.title, o.plot_path,
                               run.inputs, run.options, &outputs, figures, checked.metrics);
  }
  if (!o.summary_md_path.empty()) {
    outputs.StageText(o.summary_md_path,
                      ValidationMarkdown(run.in, run.outcome, o.predictions_path, o.metrics_path,
                                         o.plot_path, o.summary_md_path, workload_plot_path));
    stage_manifest(o.summary_md_path, "summary");
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  return report;
}

}  // namespace

ValidateStageReport RunValidateStage(const ValidateStageOptions& options) {
  ValidateCheckedOptions checked = options.Check();
  std::optional<FoldsTraining> folds;
  if (options.cv_folds > 0 && options.mode != ValidateMode::kAccelWattch) {
    folds.emplace();
    folds->corpus = ReadCorpus(options.train_path, checked.corpus);
    folds->selection = SelectTrainingRows(folds->corpus, options.calibration.options.keep_flagged);
  }
  const ValidateStageOptions o = options.mode == ValidateMode::kAuto
                                     ? ResolveAutoMode(options, folds ? &*folds : nullptr, &checked)
                                     : options;
  ValidationRun run;
  run.options = {{"mode", ValidateModeName(o.mode)}};
  if (o.mode == ValidateMode::kAccelWattch) {
    ValidateAccelWattch(o, checked, &run);
  } else {
    ValidateTpdsModel(o, folds ? &*folds : nullptr, checked, &run);
  }
  run.options["max_mape_pct"] = o.max_mape_pct;
  if (checked.metrics.ci_method != MapeCiMethod::kStudentT)
    run.options["mape_ci"] = MapeCiMethodName(checked.metrics.ci_method);

  ValidateStageReport report = WriteValidation(o, checked, run);
  LogInfo(run.outcome.table);
  report.mape_pct = run.outcome.metrics.overall.mape_pct;
  if (o.max_mape_pct > 0.0 && run.outcome.metrics.overall.mape_pct > o.max_mape_pct) {
    LogError(fmt::format("MAPE {:.3f}% exceeds --max-mape-pct {} (outputs written)",
                         run.outcome.metrics.overall.mape_pct, o.max_mape_pct));
    report.exit_code = static_cast<int>(kExitFit);
  }
  return report;
}

}  // namespace wattcal
