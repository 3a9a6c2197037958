// wattcal-validate: predictions vs. held-out measurements, or k-fold cross-validation by
// benchmark when no held-out set exists.
//   wattcal-validate --model MODEL.json --heldout HELDOUT.csv --mode dvfs|fixed|scaling
//                    --predictions PRED.csv --metrics METRICS.json
//   wattcal-validate --train TRAIN.csv --cv-folds K --mode ... --predictions ... --metrics ...
//   wattcal-validate --components TABLE.csv --mode accelwattch [--cv loko [--prior-weight L]] ...
//   wattcal-validate --model MODEL.json --heldout TABLE.csv --mode accelwattch ...
#include "commands.h"

#include "usecases/validate_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddValidateOptions(CLI::App* app, ValidateStageOptions* o) {
  app->add_option("--model", o->model_path,
                  "Model to validate (wattcal JSON or gpmTOOL model file)")
      ->check(CLI::ExistingFile);
  app->add_option("--heldout", o->heldout_path,
                  "Held-out measurements (gpmTOOL real file or tidy CSV)")
      ->check(CLI::ExistingFile);
  app->add_option("--train", o->train_path,
                  "Cross-validation: the measurements to split by benchmark")
      ->check(CLI::ExistingFile);
  app->add_option("--components", o->components_path,
                  "accelwattch: a per-kernel component table to validate "
                  "the published model (x = 1) on, or to cross-validate with --cv loko")
      ->check(CLI::ExistingFile);
  app->add_option("--cv", o->cv,
                  "accelwattch: loko = leave-one-kernel-out re-estimation of the scaling "
                  "factors on --components")
      ->check(CLI::IsMember({"loko"}));
  app->add_option("--cv-folds", o->cv_folds,
                  "Cross-validation: number of folds (whole benchmarks per fold)");
  app->add_option("--cv-seed", o->cv_seed, "Cross-validation: seed of the fold assignment")
      ->capture_default_str()
      ->check(Seed());
  BindEnumOption(app, "--mode", &o->mode, ValidateModes(), ValidateModeName,
                 "What is validated, i.e. how held-out rows are predicted: dvfs (TPDS "
                 "§4.3), fixed (default pair only, §4.2), scaling (Eq. 10, anchored at each "
                 "benchmark's measured "
                 "power at the default pair) or accelwattch (per-kernel tables, MICRO'21 Eqs. "
                 "12-14). With --cv-folds "
                 "it also sets --method's default; auto: fixed when the model is fixed or the "
                 "--cv-folds corpus has one "
                 "V-F pair among its training rows, else dvfs")
      ->required();
  app->add_option("--predictions", o->predictions_path, "Per-point predictions CSV to write")
      ->check(OutputFile())
      ->required();
  app->add_option("--metrics", o->metrics_path, "Metrics JSON to write")
      ->check(OutputFile())
      ->required();
  app->add_option("--apps-predictions", o->apps_predictions_path,
                  "Also write one row per held-out workload: "
                  "workload,measured_w,predicted_w,uncapped_w,capped,error_pct,measured_capped,f_"
                  "core_mhz,flags")
      ->check(OutputFile());
  app->add_option("--plot", o->plot_path,
                  "Also draw measured vs. predicted (PNG; an SVG twin beside it) "
                  "and the error per workload (PLOT_workloads.png)")
      ->check(OutputFile());
  app->add_flag_callback(
      "--no-workload-plot", [o] { o->workload_plot = false; },
      "With --plot: leave out the per-workload error chart");
  app->add_option("--summary-md", o->summary_md_path,
                  "Also write a Markdown summary of this validation")
      ->check(OutputFile());
  app->add_option("--truth-model", o->truth_model_path,
                  "Synthetic data: the true model, to report parameter "
                  "recovery and its own MAPE")
      ->check(CLI::ExistingFile);
  app->add_option("--title", o->title, "Title of the terminal table, figure and summary");
  app->add_option("--max-mape-pct", o->max_mape_pct,
                  "Exit with status 3 above this MAPE (0: none)");
  AddMapeCiOption(app, &o->metrics.ci_method);
  AddCalibrationOptions(app, &o->calibration);
  AddAccelWattchOptions(app, &o->accelwattch);
  app->get_option("--method")
      ->description(
          "--cv-folds only: how each fold is calibrated, dvfs (TPDS Eqs. 4-6) or fixed (Eq. 9); "
          "default: "
          "fixed for --mode fixed, else dvfs. --method fixed goes with --mode fixed only")
      ->each([o](const std::string&) { o->method_given = true; });
}

int ValidateCommand(int argc, char** argv) {
  CLI::App app{"Validate a power model on held-out measurements (MAPE with CI, RMSE, r, ...)",
               "wattcal-validate"};
  ValidateStageOptions o;
  AddValidateOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&] {
    auto r = RunValidateStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
