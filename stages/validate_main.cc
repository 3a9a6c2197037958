// wattcal-validate: predictions vs. held-out measurements, or k-fold cross-validation by
// benchmark when no held-out set exists.
//
//   wattcal-validate --model MODEL.json --heldout HELDOUT.csv --mode dvfs|fixed|scaling
//                    --predictions PRED.csv --metrics METRICS.json
//   wattcal-validate --train TRAIN.csv --cv-folds K --mode ... --predictions ... --metrics ...
//   wattcal-validate --components TABLE.csv --mode accelwattch [--cv loko [--prior-weight L]] ...
//   wattcal-validate --model MODEL.json --heldout TABLE.csv --mode accelwattch ...
#include <fmt/format.h>

#include <boost/filesystem.hpp>

#include <cmath>

#include "accelwattch/accelwattch_validation.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "report/validation_plots.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"
#include "validate/cross_validation.h"
#include "validate/metrics.h"
#include "validate/prediction.h"
#include "validate/validation_report.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Validate a power model on held-out measurements (MAPE with CI, RMSE, r, ...)",
               "wattcal-validate"};
  std::string model_path, heldout_path, train_path, components_path, cv_text, mode_text = "dvfs";
  std::string mape_ci = "student-t";
  AccelWattchFlags accelwattch;
  std::string predictions_path, metrics_path, plot_path, summary_path, truth_path, title,
      apps_predictions_path;
  int cv_folds = 0;
  unsigned cv_seed = 1;
  double max_mape_pct = 0.0;
  CalibrationFlags flags;
  app.add_option("--model", model_path, "Model to validate (wattcal JSON or gpmTOOL model file)")
      ->check(CLI::ExistingFile);
  app.add_option("--heldout", heldout_path, "Held-out measurements (gpmTOOL real file or tidy CSV)")
      ->check(CLI::ExistingFile);
  app.add_option("--train", train_path, "Cross-validation: the measurements to split by benchmark")
      ->check(CLI::ExistingFile);
  app.add_option("--components", components_path,
                 "accelwattch: a per-kernel component table to validate the published model "
                 "(x = 1) on, or to cross-validate with --cv loko")
      ->check(CLI::ExistingFile);
  app.add_option("--cv", cv_text,
                 "accelwattch: loko = leave-one-kernel-out re-estimation of the scaling factors "
                 "on --components")
      ->check(CLI::IsMember({"loko"}));
  app.add_option("--cv-folds", cv_folds, "Cross-validation: number of folds (whole benchmarks per fold)");
  app.add_option("--cv-seed", cv_seed, "Cross-validation: seed of the fold assignment")->capture_default_str();
  app.add_option("--mode", mode_text,
                 "dvfs (TPDS §4.3), fixed (default pair only, §4.2), scaling (Eq. 10, anchored at "
                 "each benchmark's measured power at the default pair) or accelwattch (per-kernel "
                 "tables, MICRO'21 Eqs. 12-14). With --cv-folds, --mode fixed also fits each "
                 "fold's fixed model unless --method says otherwise")
      ->required()
      ->check(CLI::IsMember({"dvfs", "fixed", "scaling", "accelwattch"}));
  app.add_option("--predictions", predictions_path, "Per-point predictions CSV to write")
      ->check(OutputFile())->required();
  app.add_option("--metrics", metrics_path, "Metrics JSON to write")
      ->check(OutputFile())->required();
  app.add_option("--apps-predictions", apps_predictions_path,
                 "Also write one row per held-out workload: workload,measured_w,predicted_w,"
                 "uncapped_w,capped,error_pct,measured_capped,f_core_mhz,flags")
      ->check(OutputFile());
  app.add_option("--plot", plot_path, "Also draw measured vs. predicted (PNG; an SVG twin beside it)")
      ->check(OutputFile());
  app.add_option("--summary-md", summary_path, "Also write a Markdown summary of this validation")
      ->check(OutputFile());
  app.add_option("--truth-model", truth_path,
                 "Synthetic data: the true model, to report parameter recovery and its own MAPE")
      ->check(CLI::ExistingFile);
  app.add_option("--title", title, "Title of the terminal table, figure and summary");
  app.add_option("--max-mape-pct", max_mape_pct,
                 "Exit with status 3 when the MAPE exceeds this (0: no threshold)");
  AddMapeCiOption(&app, &mape_ci);
  AddCalibrationOptions(&app, &flags);
  AddAccelWattchOptions(&app, &accelwattch);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const MetricsOptions metrics_options = ToMetricsOptions(mape_ci);
    if (!plot_path.empty() && boost::filesystem::path(plot_path).extension() != ".png") {
      throw OptionError("--plot must name a .png file (an .svg twin is written beside it)");
    }
    ValidationInputs in;
    ValidationOutcome outcome;
    std::string apps_csv;
    std::vector<std::string> inputs;
    nlohmann::json options = {{"mode", mode_text}};
    if (mode_text == "accelwattch") {
      const bool on_components = !components_path.empty();
      const bool inputs_ok = on_components ? model_path.empty() && heldout_path.empty()
                                           : !model_path.empty() && !heldout_path.empty() && cv_text.empty();
      if (!inputs_ok || !train_path.empty() || cv_folds > 0) {
        throw OptionError("--mode accelwattch takes --components TABLE.csv [--cv loko], or "
                          "--model MODEL.json --heldout TABLE.csv (not --train, --cv-folds)");
      }
      if (!truth_path.empty() || !summary_path.empty() || !apps_predictions_path.empty() ||
          flags.power_limit_w != 0.0 || flags.keep_flagged) {
        throw OptionError("--truth-model, --summary-md, --apps-predictions, --power-limit-w and "
                          "--keep-flagged are not available with --mode accelwattch");
      }
      AccelWattchValidationRequest request;
      request.table_path = on_components ? components_path : heldout_path;
      request.model_path = model_path;
      request.loko = cv_text == "loko";
      request.title = title;
      if (request.loko) {
        request.fit = ToAccelWattchFitOptions(accelwattch, flags.max_iterations);
        options["accelwattch"] = AccelWattchFitOptionsToJson(request.fit, accelwattch);
      } else if (AccelWattchFlagsGiven(accelwattch)) {
        throw OptionError("--bounds, --orderings, --prior and --prior-weight apply to --cv loko");
      }
      AccelWattchValidationRun run = RunAccelWattchValidation(request, metrics_options);
      in.rows = std::move(run.rows);
      outcome = std::move(run.outcome);
      inputs = run.inputs;
      if (request.loko) {
        for (const std::string& f : AccelWattchInputFiles(accelwattch)) inputs.push_back(f);
      }
      options["variant"] = run.variant;
    } else {
      if (!components_path.empty() || !cv_text.empty() || AccelWattchFlagsGiven(accelwattch)) {
        throw OptionError(
            "--components, --cv and the accelwattch fit options belong to --mode accelwattch");
      }
      PredictMode mode;
      ParsePredictMode(mode_text, &mode);
      const bool cv = cv_folds > 0;
      if (cv && (train_path.empty() || !model_path.empty() || !heldout_path.empty())) {
        throw OptionError("--cv-folds needs --train and takes neither --model nor --heldout");
      }
      if (!cv && (model_path.empty() || heldout_path.empty())) {
        throw OptionError("give --model and --heldout, or --train with --cv-folds K");
      }
      if (!cv && !train_path.empty()) throw OptionError("--train is only used with --cv-folds");
      const CorpusReadOptions read_options = ToCorpusReadOptions(flags);

      in.mode = mode;
      in.title = title;
      std::vector<double> reference_pair_mhz;
      if (cv) {
        // --mode says how held-out rows are predicted, --method how each fold is fitted: a
        // fixed-mode validation fits the fixed model unless --method says otherwise.
        if (mode == PredictMode::kFixed && app.count("--method") == 0) flags.method = "fixed";
        const CalibrationOptions calibration = ToCalibrationOptions(flags);
        CrossValidationOptions cv_options;
        cv_options.folds = cv_folds;
        cv_options.seed = cv_seed;
        cv_options.num_threads = calibration.num_threads;
        const Corpus train = ReadCorpus(train_path, read_options);
        LogInfo(fmt::format("{}-fold cross-validation by benchmark on {} ({} benchmarks, {} rows)",
                            cv_folds, train_path, train.Benchmarks().size(), train.rows()));
        const std::string left_out = SelectTrainingRows(train, calibration.keep_flagged).message;
        if (!left_out.empty()) LogWarning("every fold's training: " + left_out);
        for (const FrequencyDomain& d : train.layout.domains) reference_pair_mhz.push_back(d.default_freq_mhz);
        const CrossValidationResult result = CrossValidate(train, calibration, mode, cv_options);
        in.rows = result.rows;
        in.fold_benchmarks = result.fold_benchmarks;
        in.source = train_path;
        inputs = {train_path};
        options["calibration"] = CalibrationOptionsToJson(calibration);
        options["cv_folds"] = cv_folds;
        options["cv_seed"] = cv_seed;
      } else {
        if (flags.keep_flagged) throw OptionError("--keep-flagged applies to --cv-folds (training)");
        const PowerModel model = ReadModel(model_path);
        const Corpus heldout = ReadCorpus(heldout_path, read_options);
        // A duplicated held-out row counts twice in the MAPE and narrows its interval.
        for (const std::string& note : FindDuplicateRows(heldout)) LogWarning(note);
        if (mode == PredictMode::kScaling) {
          CheckTwoVfPairs(SelectTrainingRows(heldout, false).rows, "scaling (TPDS Eq. 10)",
                          "use --mode fixed");
        }
        const double limit_w =
            EffectivePowerLimitW(flags.power_limit_w, heldout.power_limit_w, model.power_limit_w);
        if (std::isfinite(limit_w)) options["power_limit_w"] = limit_w;
        reference_pair_mhz = model.DefaultFrequencies();
        in.rows = PredictHeldout(model, heldout, mode, limit_w);
        in.source = heldout_path;
        in.model_path = model_path;
        inputs = {model_path, heldout_path};
        if (!truth_path.empty()) {
          const PowerModel truth = ReadModel(truth_path);
          in.truth = CompareWithTruth(model, truth, PredictHeldout(truth, heldout, mode, limit_w));
          inputs.push_back(truth_path);
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
      if (!apps_predictions_path.empty()) {
        apps_csv = AppsPredictionsToCsv(in.rows, reference_pair_mhz);
      }
      outcome = SummariseValidation(in, metrics_options);
    }
    options["max_mape_pct"] = max_mape_pct;
    if (metrics_options.ci_method != MapeCiMethod::kStudentT) options["mape_ci"] = mape_ci;

    OutputSet outputs;
    outputs.StageText(predictions_path, PredictionsToCsv(in.rows));
    outputs.StageManifest(predictions_path, "validate", inputs, options);
    outputs.StageText(metrics_path, DumpJson(outcome.json));
    outputs.StageManifest(metrics_path, "validate", inputs, options);
    if (!apps_predictions_path.empty()) {
      outputs.StageText(apps_predictions_path, apps_csv);
      outputs.StageManifest(apps_predictions_path, "validate", inputs, options);
    }
    if (!plot_path.empty()) {
      const std::string svg_path = boost::filesystem::path(plot_path).replace_extension(".svg").string();
      WriteScatterPlot(in.rows, outcome.metrics, outcome.title, outputs.Stage(plot_path),
                       outputs.Stage(svg_path));
      outputs.StageManifest(plot_path, "validate", inputs, options);
      outputs.StageManifest(svg_path, "validate", inputs, options);
    }
    if (!summary_path.empty()) {
      outputs.StageText(summary_path, ValidationMarkdown(in, outcome, predictions_path,
                                                         metrics_path, plot_path, summary_path));
      outputs.StageManifest(summary_path, "validate", inputs, options);
    }
    outputs.Commit();
    LogInfo(outcome.table);
    if (max_mape_pct > 0.0 && outcome.metrics.overall.mape_pct > max_mape_pct) {
      LogError(fmt::format("MAPE {:.3f}% exceeds --max-mape-pct {} (outputs written)",
                           outcome.metrics.overall.mape_pct, max_mape_pct));
      return static_cast<int>(kExitFit);
    }
    return static_cast<int>(kExitOk);
  });
}
